import secrets

from django.db import transaction

from accounts.models import Membership, Organisation, User
from lib.commands import CommandWithoutChecks


class Command(CommandWithoutChecks):
    help = "Create the first administrator, once, with a random password printed a single time."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--username", default="admin")

    def handle(self, *args, url: str, username: str, **options):
        if User.objects.filter(is_superuser=True).exists():
            return
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            organisation, _ = Organisation.objects.get_or_create(slug="default", defaults={"name": "Default"})
            user = User.objects.create_superuser(username=username, email="", password=password)
            Membership.objects.create(organisation=organisation, user=user, role=Membership.Role.OWNER)
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "  First run: an administrator was created.",
                    f"  Log in at {url}/admin/ as '{username}' with password: {password}",
                    "  This password is shown once; change it after logging in.",
                    "",
                ]
            )
        )
