"""The lexical arm reads compound words by their parts (issue 21).

PostgreSQL's parser keeps ``lockout/tagout``, ``read/write``, ``config.yaml`` or
``kb.services.search`` as one token, so a query naming the parts ("lockout tagout") found no
entry, and a query naming the compound found no entry that wrote the parts apart.
``kb_compound_parts`` returns the parts of every compound of a text (words joined by ``/ . : \\
_ -``) and the compound written closed (``fail-over`` -> ``fail over failover``), and
``search_tsv`` indexes them beside the compound itself: the parts of the title's
compounds with weight A, of the other fields' with C. Other words are not repeated, so the
full-text rank of queries without compounds is unchanged. The query side splits its own
compounds the same way (``kb.services.search``). Rewrites ``kb_entry`` once (about a second per
10k entries); the GIN index is rebuilt with it.
"""

from django.db import migrations

FUNCTION = r"""
CREATE OR REPLACE FUNCTION kb_compound_parts(value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
SET search_path = pg_catalog
AS $$
    SELECT coalesce(string_agg(
               translate(m[1], '/.:\_-', '      ') || ' ' || translate(m[1], '/.:\_-', ''),
               ' '), '')
      FROM regexp_matches(value, '(\w+(?:[/.:\\_-]+\w+)+)', 'g') AS m
$$;
"""

OLD = """
    setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') ||
    setweight(to_tsvector('english'::regconfig, coalesce(summary, '') || ' ' || coalesce(useful_for, '')), 'B') ||
    setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'C') ||
    setweight(to_tsvector('simple'::regconfig, coalesce(content, '') || ' ' || coalesce(title, '')), 'D')
"""

NEW = (
    OLD
    + """ ||
    setweight(to_tsvector('english'::regconfig, kb_compound_parts(coalesce(title, ''))), 'A') ||
    setweight(to_tsvector('english'::regconfig, kb_compound_parts(
        coalesce(summary, '') || ' ' || coalesce(useful_for, '') || ' ' || coalesce(content, '')
    )), 'C')
"""
)

FORWARD = FUNCTION + f"ALTER TABLE kb_entry ALTER COLUMN search_tsv SET EXPRESSION AS ({NEW});"
BACKWARD = (
    f"ALTER TABLE kb_entry ALTER COLUMN search_tsv SET EXPRESSION AS ({OLD});"
    "DROP FUNCTION IF EXISTS kb_compound_parts(text);"
)


class Migration(migrations.Migration):
    dependencies = [("kb", "0018_operation_request_id")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
