"""`manage.py seed [--run]`: catalog, local admin user, example scenarios. Idempotent."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from simulation import ScenarioError
from tierlab.scenarios import services
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Scenario


class Command(BaseCommand):
    help = ("Load the catalog (keeping admin edits), create the local superuser admin/admin "
            "when DEBUG is on and none exists, and save the example scenarios.")

    def add_arguments(self, parser):
        parser.add_argument("--run", action="store_true",
                            help="queue one run (through Celery) for each example that has none")

    def handle(self, *args, run=False, **options):
        call_command("load_catalog", keep_existing=True, stdout=self.stdout)
        owner = self._owner()
        if owner is None:
            self.stdout.write("No superuser to own the examples (DEBUG is off): skipped. "
                              "Create one with manage.py createsuperuser, then seed again.")
            return
        for example in examples():
            scenario, created = Scenario.objects.get_or_create(
                owner=owner, name=example["name"], defaults={"spec": example["scenario"]})
            self.stdout.write(f"{'created' if created else 'kept'} example: {scenario.name}")
            if run and not scenario.runs.exists():
                try:
                    r = services.start_run(scenario)
                except ScenarioError as exc:
                    self.stderr.write(f"  cannot run: {exc}")
                else:
                    self.stdout.write(f"  run #{r.pk}: {r.status}")

    def _owner(self):
        User = get_user_model()
        superusers = User.objects.filter(is_superuser=True).order_by("pk")
        if not superusers.exists() and settings.DEBUG:
            User.objects.create_superuser("admin", "admin@localhost", "admin")
            self.stdout.write(self.style.WARNING(
                "Created local superuser admin / admin (DEBUG is on; never use it in production)."))
        return superusers.filter(username="admin").first() or superusers.first()
