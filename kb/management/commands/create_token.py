"""``manage.py create_token NAME --bank SLUG``: the ``CreateToken`` action as this command."""

from datetime import timedelta

from django.core.management.base import CommandError
from django.utils import timezone

from kb.actions.tokens import CreateToken
from kb.management.commands._base import KbCommand
from kb.models import Bank
from kb.services.tokens import parse_scopes


class Command(KbCommand):
    help = "Create an agent token; prints the raw token alone on the last line (shown once)."
    command_name = "create_token"

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--bank", action="append", required=True, help="Bank slug (repeatable)."
        )
        parser.add_argument("--scopes", default="read", help="Comma-separated: read,write,curate.")
        parser.add_argument(
            "--expires-in-days",
            type=float,
            default=None,
            help="The token stops working after this many days (default: never).",
        )

    def handle_kb(self, *args, **options):
        slugs = options["bank"]
        missing = sorted(
            set(slugs) - set(Bank.objects.filter(slug__in=slugs).values_list("slug", flat=True))
        )
        if missing:
            raise CommandError(
                f"No such bank: {', '.join(missing)}. Create it with create_bank first."
            )
        days = options["expires_in_days"]
        expires_at = timezone.now() + timedelta(days=days) if days is not None else None
        created = self.run_action(
            CreateToken,
            None,
            body={
                "name": options["name"],
                "banks": slugs,
                "scopes": parse_scopes(options["scopes"]),
                "expires_at": expires_at.isoformat() if expires_at else None,
            },
        )
        token = created.token
        self.stdout.write(
            f"Token {token.name!r} ({token.prefix}) for {', '.join(slugs)} with scopes {','.join(token.scopes)}"
            + (f", expiring {token.expires_at.isoformat()}." if token.expires_at else ".")
        )
        self.stdout.write("Store it now; it is not shown again:")
        self.stdout.write(created.raw)
