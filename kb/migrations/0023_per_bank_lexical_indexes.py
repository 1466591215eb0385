"""Each bank already past ``KB_BANK_VECTOR_INDEX_AT`` vectors gets its own lexical indexes
(full text, title trigrams and their short-title tiers, ``WHERE bank_id = <bank>``), as it got
its own HNSW indexes in 0010; later banks get them from the ``kb.ensure_bank_vector_indexes``
job with the HNSW ones."""

from django.db import migrations


def build_for_large_banks(apps, schema_editor):
    from kb.services.vector_index import index_threshold, lexical_indexes

    with schema_editor.connection.cursor() as cur:
        cur.execute(
            "SELECT bank_id FROM kb_entryembedding GROUP BY bank_id HAVING count(*) >= %s",
            [index_threshold()],
        )
        for (bank_id,) in cur.fetchall():
            for name, using in lexical_indexes(int(bank_id)).items():
                cur.execute(f"CREATE INDEX IF NOT EXISTS {name} ON kb_entry USING {using}")


def drop_per_bank(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'kb_entry'"
            " AND indexname ~ '^kb_entry_(tsv|trgm[0-9]*)_bank_[0-9]+$'"
        )
        for (name,) in cur.fetchall():
            cur.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("kb", "0022_title_trigram_tiers")]
    operations = [migrations.RunPython(build_for_large_banks, drop_per_bank)]
