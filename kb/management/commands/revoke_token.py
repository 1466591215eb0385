"""``manage.py revoke_token PREFIX…``: the ``RevokeTokens`` action as this command."""

from django.core.management.base import CommandError

from kb.actions.tokens import RevokeTokens
from kb.management.commands._base import KbCommand
from kb.models import AgentToken
from kb.services.tokens import TOKEN_PREFIX


class Command(KbCommand):
    help = (
        "Revoke agent tokens by prefix (the visible part, kb_<prefix>_…), by the raw token, or "
        "every token of a name. Revoked tokens stop working at once; the rows stay."
    )
    command_name = "revoke_token"

    def add_arguments(self, parser):
        parser.add_argument("token", nargs="*", help="Prefix or raw token (repeatable).")
        parser.add_argument("--name", help="Revoke every token with this name.")

    def handle_kb(self, *args, **options):
        prefixes = []
        for value in options["token"]:
            value = value.strip()
            if value.startswith(TOKEN_PREFIX) and value.count("_") >= 2:
                value = value[len(TOKEN_PREFIX) :].split("_", 1)[0]
            prefixes.append(value)
        tokens = list(AgentToken.objects.filter(prefix__in=prefixes))
        missing = sorted(set(prefixes) - {t.prefix for t in tokens})
        if missing:
            raise CommandError(f"No token with prefix {', '.join(missing)}.")
        if options["name"]:
            named = list(AgentToken.objects.filter(name=options["name"]))
            if not named:
                raise CommandError(f"No token named {options['name']!r}.")
            tokens += named
        if not tokens:
            raise CommandError("Name the tokens to revoke: a prefix, a raw token or --name.")
        result = self.run_action(RevokeTokens, None, body={"ids": [t.pk for t in tokens]})
        self.stdout.write(
            f"Revoked {len(result.revoked)} token(s)"
            + (f": {', '.join(result.revoked)}" if result.revoked else "")
            + (f"; already revoked: {', '.join(result.already)}" if result.already else "")
            + "."
        )
