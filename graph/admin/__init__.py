"""The graph admin: one module per concern, each registering its ModelAdmins on import.

Adding admin for a new concern: a module here with its ``@admin.register`` classes, imported
below. Each model is registered once, by the app that owns its use cases: kb declares the
base admins of Bank, Entry and Operation (``kb.admin``, ``kb.admin_audit``) without
registering them, and graph registers its subclasses (banks, entries, operations) that add
the graph parts. Nothing here unregisters or patches another module's admin; the site itself
(index page, entry autocomplete) is ``config.admin_site.KnowledgeBankSite``.
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
