"""A fixed flat ranking for fold and answer tests (the ranking itself is tested in kb)."""

from kb.services.embedding import embed_query


def ranked_and_embedded(fake_rank):
    """``fake_rank(bank, query, *, limit, **options) -> hits`` as execute_query calls the search
    (kb.services.search.rank_and_embed): the hits and the query's vector (the one given, else
    the embedder's; tests use the hashing embedder)."""

    def rank_and_embed(bank, query, *, limit, query_vector=None, **options):
        hits = fake_rank(bank, query, limit=limit, **options)
        return hits, query_vector if query_vector is not None else embed_query(query)

    return rank_and_embed
