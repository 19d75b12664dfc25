from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from accounts.services import organisation_create
from lib.commands import CommandWithoutChecks


class Command(CommandWithoutChecks):
    help = "Create an organisation (a tenant)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args, slug: str, name: str, **options):
        try:
            organisation = organisation_create(slug=slug, name=name)
        except ValidationError as error:
            raise CommandError(error.message_dict) from error
        self.stdout.write(f"Created organisation {organisation.slug} ({organisation.id})")
