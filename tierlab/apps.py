"""The project package as an app: base templates, system checks, the `seed` command."""

from django.apps import AppConfig


class TierlabConfig(AppConfig):
    name = "tierlab"
    verbose_name = "tierlab"

    def ready(self):
        from tierlab import auth, checks  # noqa: F401  (registers the checks and auth's signals)
