"""The site as one ASGI app: Django for every path, and the MCP server at ``/mcp``
(``mcpserver.asgi.SiteRouter``, which also runs the MCP session manager's lifespan)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_asgi_application()

from mcpserver.asgi import SiteRouter  # noqa: E402  (needs the apps loaded above)

application = SiteRouter(django_application)
