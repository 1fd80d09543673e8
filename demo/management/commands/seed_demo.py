"""`python manage.py seed_demo`: create the synthetic demo images, labels, scores and demo accounts."""
from django.core.management.base import BaseCommand, CommandError

from demo import seeding as demo


class Command(BaseCommand):
    help = "Create the demo data (drawn stand-in images, model and human labels, scores, demo logins). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="Seed even though DEBUG is off (creates accounts with published passwords).")

    def handle(self, *args, force: bool = False, **options):
        try:
            demo.seed(force=force, log=self.stdout.write)
        except demo.DemoRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(demo.logins_text())
