import os
import secrets

from django.contrib.auth import get_user_model

from config.environment import Environment
from kb.management.commands._base import KbCommand


class Command(KbCommand):
    help = "Create the admin user once (password from KB_ADMIN_PASSWORD or generated) and print the login."
    command_name = "ensure_admin"

    def add_arguments(self, parser):
        parser.add_argument("--username", default=Environment()["KB_ADMIN_USER"])
        parser.add_argument("--password-file", default=".run/admin-password")

    def handle_kb(self, *args, **options):
        User = get_user_model()
        username = options["username"]
        path = options["password_file"]
        user = User.objects.filter(username=username).first()
        password = Environment()["KB_ADMIN_PASSWORD"]
        if user is None:
            password = password or secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username, email="", password=password)
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w") as fh:
                fh.write(password + "\n")
            os.chmod(path, 0o600)
        elif password:
            user.set_password(password)
            user.save()
        elif os.path.exists(path):
            password = open(path).read().strip()
        shown = password or "(unchanged; set KB_ADMIN_PASSWORD to reset it)"
        self.stdout.write(f"Admin login: user {username!r}, password {shown!r}")
