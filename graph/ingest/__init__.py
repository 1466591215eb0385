"""Ingest: the graph's import line types, backfills from the corpus and the Debian importer."""
