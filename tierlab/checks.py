"""System checks for configuration problems that would otherwise show as blank pages."""

from pathlib import Path

from django.conf import settings
from django.core.checks import Error, register


@register()
def check_vite_manifest(app_configs=None, **kwargs):
    """tierlab.E001: the front end's Vite manifest must exist unless Vite runs in dev mode."""
    config = settings.DJANGO_VITE["default"]
    if config.get("dev_mode"):
        return []
    path = Path(config["manifest_path"])
    if path.is_file():
        return []
    return [Error(
        f"The front end is not built: Vite manifest {path} is missing, so pages would "
        "load without their scripts and styles.",
        hint="Build it: cd frontend && npm ci && npm run build (./scripts/start does this), "
             "or set VITE_DEV_MODE=1 while `npm run dev` serves the assets.",
        id="tierlab.E001",
    )]
