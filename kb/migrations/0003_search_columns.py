"""Full-text and trigram search columns for the lexical arm.

``search_tsv`` is a generated column (always in step with the row, no trigger to forget);
title and content also get trigram indexes for fuzzy matches of rare tokens.
"""

from django.db import migrations

FORWARD = """
ALTER TABLE kb_entry ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') ||
    setweight(to_tsvector('english'::regconfig, coalesce(summary, '') || ' ' || coalesce(useful_for, '')), 'B') ||
    setweight(to_tsvector('english'::regconfig, coalesce(content, '')), 'C') ||
    setweight(to_tsvector('simple'::regconfig, coalesce(content, '') || ' ' || coalesce(title, '')), 'D')
) STORED;
CREATE INDEX kb_entry_search_tsv ON kb_entry USING gin (search_tsv);
CREATE INDEX kb_entry_title_trgm ON kb_entry USING gin (title gin_trgm_ops);
"""

BACKWARD = """
DROP INDEX IF EXISTS kb_entry_title_trgm;
DROP INDEX IF EXISTS kb_entry_search_tsv;
ALTER TABLE kb_entry DROP COLUMN IF EXISTS search_tsv;
"""


class Migration(migrations.Migration):
    dependencies = [("kb", "0002_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
