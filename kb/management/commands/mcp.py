"""``manage.py mcp --token TOKEN`` (or ``KB_TOKEN``): the MCP server over stdio."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from config.environment import Environment
from kb.services.tokens import authenticate_token


class Command(BaseCommand):
    help = "Serve the Knowledge Bank MCP tools over stdio with an agent token."

    def add_arguments(self, parser):
        parser.add_argument("--token", default=None, help="Agent token (default: $KB_TOKEN).")

    def handle(self, *args, **options):
        raw = options["token"] or Environment()["KB_TOKEN"]
        if not raw:
            raise CommandError("Give the agent token with --token or KB_TOKEN.")
        if authenticate_token(raw) is None:
            raise CommandError("Unknown or revoked token.")
        from django.db import close_old_connections

        close_old_connections()
        import anyio

        from mcpserver.stdio import serve_stdio

        anyio.run(serve_stdio, raw)
