import json
from pathlib import Path

from kb.management.commands._base import KbCommand
from kb.models import BankKind, Entry
from kb.services.bulk import import_bank
from kb.services.embedding import embed_entries

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
# (bank slug, name, kind, files in load order). Files that a later part of the product
# reads (edges, aliases) are loaded only once their line types are registered.
DEMO_BANKS = [
    (
        "eng",
        "Larkspur Freight engineering",
        BankKind.ENGINEERING,
        ["engineering.jsonl", "engineering_edges.jsonl"],
    ),
    ("biz", "Larkspur Freight business", BankKind.BUSINESS, ["business.jsonl"]),
]


class Command(KbCommand):
    help = (
        "Load the demo banks: add only what they never had (curators' edits, deletions, merges "
        "and unlinks stay as they are; re-running changes nothing) and embed them."
    )
    command_name = "load_demo"

    def handle_kb(self, *args, **options):
        from kb.services.bulk import LINE_TYPES

        for slug, name, kind, files in DEMO_BANKS:
            bank, _ = self.ensure_bank(slug, name=name, kind=kind)
            for filename in files:
                path = DEMO_DIR / filename
                text = path.read_text(encoding="utf-8")
                types = {json.loads(line).get("type") for line in text.splitlines() if line.strip()}
                if not types <= set(LINE_TYPES):
                    self.stdout.write(
                        f"{slug}: skipping {filename} (needs line types {sorted(types - set(LINE_TYPES))})."
                    )
                    continue
                result = import_bank(bank, text, reason=f"demo data {filename}", missing_only=True)
                changed = ", ".join(
                    f"{k} {v}"
                    for k, v in result.items()
                    if v
                    and k not in ("operation", "lines", "skipped")
                    and not k.endswith("unchanged")
                )
                self.stdout.write(
                    f"{slug} ← {filename}: {changed or 'already loaded, nothing changed'}."
                )
            written = embed_entries(Entry.objects.filter(bank=bank))
            self.stdout.write(
                f"{slug}: {Entry.objects.filter(bank=bank).count()} entries, {written} embedded now."
            )
