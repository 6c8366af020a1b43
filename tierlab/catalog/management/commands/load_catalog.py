from django.core.management.base import BaseCommand

from tierlab.catalog.loader import load_catalog


class Command(BaseCommand):
    help = ("Load the shipped catalog (84 sourced hardware items + the engine's model, node and "
            "accelerator presets). Idempotent.")

    def add_arguments(self, parser):
        parser.add_argument("--keep-existing", action="store_true",
                            help="only add missing entries; keep rows edited in the admin")

    def handle(self, *args, keep_existing=False, **options):
        counts = load_catalog(keep_existing=keep_existing)
        for part, c in counts.items():
            self.stdout.write(f"{part}: {c['created']} created, {c['updated']} updated, {c['kept']} kept")
