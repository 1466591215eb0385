"""The graph admin: one module per concern, each registering its ModelAdmins on import.

Adding admin for a new concern: a module here with its ``@admin.register`` classes, imported
below. kb never imports graph, so ``entries`` and ``operations`` re-register kb's Entry and
Operation admins with subclasses that add the graph parts.
"""

from graph.admin import (  # noqa: F401  (imported for their registrations)
    aliases,
    banks,
    communities,
    edges,
    entries,
    extraction,
    operations,
    proposals,
)
