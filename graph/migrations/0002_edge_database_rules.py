"""Rules PostgreSQL enforces on edges, whatever writes them (services, admin, raw SQL).

- Both ends in the edge's bank: composite foreign keys (entry id, bank) → kb_entry(id, bank).
- One believed row per (from, to, type) at any valid time: an exclusion constraint over the
  valid interval among rows whose transaction interval is open. Two concurrent writers of the
  same triple cannot both commit.
- An alias names an entry of its own bank.
"""

from django.db import migrations

FORWARD = """
ALTER TABLE graph_edge
  ADD CONSTRAINT edge_from_same_bank FOREIGN KEY (from_entry_id, bank_id)
      REFERENCES kb_entry (id, bank_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  ADD CONSTRAINT edge_to_same_bank FOREIGN KEY (to_entry_id, bank_id)
      REFERENCES kb_entry (id, bank_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  ADD CONSTRAINT edge_one_believed_row_per_triple EXCLUDE USING gist (
      from_entry_id WITH =, to_entry_id WITH =, type_id WITH =,
      tstzrange(valid_from, valid_to, '[)') WITH &&
  ) WHERE (invalidated_at IS NULL);
ALTER TABLE graph_alias
  ADD CONSTRAINT alias_entry_same_bank FOREIGN KEY (entry_id, bank_id)
      REFERENCES kb_entry (id, bank_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
"""

BACKWARD = """
ALTER TABLE graph_alias DROP CONSTRAINT IF EXISTS alias_entry_same_bank;
ALTER TABLE graph_edge DROP CONSTRAINT IF EXISTS edge_one_believed_row_per_triple;
ALTER TABLE graph_edge DROP CONSTRAINT IF EXISTS edge_to_same_bank;
ALTER TABLE graph_edge DROP CONSTRAINT IF EXISTS edge_from_same_bank;
"""


class Migration(migrations.Migration):
    dependencies = [("graph", "0001_initial"), ("kb", "0005_entry_id_bank_unique")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
