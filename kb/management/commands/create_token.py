from datetime import timedelta

from django.core.management.base import CommandError
from django.utils import timezone

from kb.management.commands._base import KbCommand
from kb.models import Bank
from kb.services.tokens import create_token


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
        banks = list(Bank.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {b.slug for b in banks})
        if missing:
            raise CommandError(
                f"No such bank: {', '.join(missing)}. Create it with create_bank first."
            )
        days = options["expires_in_days"]
        expires_at = timezone.now() + timedelta(days=days) if days is not None else None
        token, raw = create_token(
            options["name"],
            banks,
            options["scopes"],
            created_by="command:create_token",
            expires_at=expires_at,
        )
        self.stdout.write(
            f"Token {token.name!r} ({token.prefix}) for {', '.join(slugs)} with scopes {','.join(token.scopes)}"
            + (f", expiring {token.expires_at.isoformat()}." if token.expires_at else ".")
        )
        self.stdout.write("Store it now; it is not shown again:")
        self.stdout.write(raw)
