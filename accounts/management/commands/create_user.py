from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from accounts.models import Membership, Organisation
from accounts.services import user_create
from lib.commands import CommandWithoutChecks


class Command(CommandWithoutChecks):
    help = "Create an account holder in an organisation with a role."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--org", required=True)
        parser.add_argument("--role", required=True, choices=Membership.Role.values)
        parser.add_argument("--password", default=None)

    def handle(self, *args, username: str, org: str, role: str, password: str | None, **options):
        organisation = Organisation.objects.filter(slug=org).first()
        if organisation is None:
            raise CommandError(f"No organisation with slug {org!r}.")
        try:
            user = user_create(username=username, organisation=organisation, role=role, password=password)
        except ValidationError as error:
            raise CommandError(error.message_dict) from error
        self.stdout.write(f"Created {role} {user.username} in {organisation.slug}")
