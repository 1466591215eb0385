"""The edge note's English tsvector as a stored generated column (not a model field).

The fold ranks a result's candidate neighbours by, among others, the full-text rank of the
edge's note against the query; computing ``to_tsvector`` of every candidate's note per query
was a third of the neighbour statement (0.7 ms of 2.4 at 100k entries, bench/fold.py).
PostgreSQL keeps the column current on every insert and update, COPY included; the ORM never
names it (every insert lists its columns), and only the fold's and the facts search's SQL read
it. A later migration that alters ``Edge.note`` must drop this column first and add it back
after (PostgreSQL refuses to alter a column a generated column uses).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("graph", "0010_edge_ends_composite_fk_only"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE graph_edge ADD COLUMN note_tsv tsvector "
            "GENERATED ALWAYS AS (to_tsvector('english'::regconfig, note)) STORED",
            "ALTER TABLE graph_edge DROP COLUMN note_tsv",
        ),
    ]
