"""Per-bank vector search (issue 12): the three HNSW indexes that spanned every bank go; each
bank already past the threshold gets partial HNSW indexes of its own here (later banks get
theirs from the ``kb.ensure_bank_vector_indexes`` job once they grow past it)."""

from django.db import migrations


def build_for_large_banks(apps, schema_editor):
    from kb.services.vector_index import DIMENSIONS, index_name, index_threshold

    threshold = index_threshold()
    with schema_editor.connection.cursor() as cur:
        cur.execute(
            "SELECT bank_id FROM kb_entryembedding GROUP BY bank_id HAVING count(*) >= %s",
            [threshold],
        )
        banks = [row[0] for row in cur.fetchall()]
        for bank_id in banks:
            for dim in DIMENSIONS:
                cur.execute(
                    f"CREATE INDEX IF NOT EXISTS {index_name(int(bank_id), dim)} ON kb_entryembedding"
                    f" USING hnsw ({dim} vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
                    f" WHERE bank_id = {int(bank_id)}"
                )


def drop_per_bank(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'kb_entryembedding'"
            " AND indexname LIKE 'kb\\_emb\\_%%\\_bank\\_%%'"
        )
        for (name,) in cur.fetchall():
            cur.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("kb", "0009_operation_renote"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="entryembedding", name="emb_content_hnsw"),
        migrations.RemoveIndex(model_name="entryembedding", name="emb_useful_hnsw"),
        migrations.RemoveIndex(model_name="entryembedding", name="emb_context_hnsw"),
        migrations.RunPython(build_for_large_banks, drop_per_bank),
    ]
