"""Ingest: the graph's import line types, backfills from the corpus, the Debian importer and the
edge extractors (``extract``).

Must not live here: a second import path: lines go through ``kb.services.bulk.import_bank``
and write with ``kb.history_rows`` inside its one operation.
"""
