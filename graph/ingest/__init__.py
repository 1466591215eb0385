"""Ingest: the graph's import line types, backfills from the corpus, the Debian importer and the
edge extractors (``extract``)."""
