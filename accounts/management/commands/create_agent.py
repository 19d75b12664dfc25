from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from accounts.models import Organisation
from accounts.services import agent_create
from lib.commands import CommandWithoutChecks


class Command(CommandWithoutChecks):
    help = "Create an agent and print its bearer token, alone on the last line (shown once)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--org", required=True)

    def handle(self, *args, name: str, org: str, **options):
        organisation = Organisation.objects.filter(slug=org).first()
        if organisation is None:
            raise CommandError(f"No organisation with slug {org!r}.")
        try:
            agent, raw = agent_create(organisation=organisation, name=name)
        except ValidationError as error:
            raise CommandError(error.message_dict) from error
        self.stdout.write(f"Created agent {agent.name} in {organisation.slug}. Its token is shown once:")
        self.stdout.write(raw)
