"""Trigram indexes of the short titles only, for the lexical arm's short queries.

A title can reach a query's trigram similarity of t only if it has at most |query| / t
distinct trigrams (similarity = shared / union, and the union is at least the title's). The
index of every title cannot tell: for a one-word query ("data", 5 trigrams) it returns each
title holding 3 of them, and each is fetched from the heap to be rejected (54,000 of a
100k-entry bank: 364 ms). These partial indexes hold only the titles that short queries can
match: at most 16 distinct trigrams (queries of up to 7 at t = 0.45) and at most 40 (up to 18).
``kb.services.search.TITLE_TRIGRAM_TIERS`` names the same bounds; a test checks both agree.
"""

from django.db import migrations

FORWARD = """
CREATE INDEX kb_entry_title_trgm_16 ON kb_entry USING gin (title gin_trgm_ops)
    WHERE cardinality(show_trgm(title)) <= 16;
CREATE INDEX kb_entry_title_trgm_40 ON kb_entry USING gin (title gin_trgm_ops)
    WHERE cardinality(show_trgm(title)) <= 40;
"""

BACKWARD = """
DROP INDEX IF EXISTS kb_entry_title_trgm_40;
DROP INDEX IF EXISTS kb_entry_title_trgm_16;
"""


class Migration(migrations.Migration):
    dependencies = [("kb", "0021_operation_kinds_configure_tokens")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
