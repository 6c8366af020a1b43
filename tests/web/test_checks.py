"""System check tierlab.E001: a missing Vite manifest is an error, not a blank page."""

from django.core.management import call_command
from django.core.management.base import SystemCheckError

from tierlab.checks import check_vite_manifest


def vite(settings, **changes):
    settings.DJANGO_VITE = {"default": {**settings.DJANGO_VITE["default"], **changes}}


def test_it_reports_a_missing_manifest(settings, tmp_path):
    vite(settings, manifest_path=tmp_path / "nope" / "manifest.json", dev_mode=False)
    errors = check_vite_manifest()
    assert [e.id for e in errors] == ["tierlab.E001"]
    assert "npm run build" in errors[0].hint


def test_it_stops_manage_py_check(settings, tmp_path):
    vite(settings, manifest_path=tmp_path / "manifest.json", dev_mode=False)
    try:
        call_command("check")
    except SystemCheckError as exc:
        assert "tierlab.E001" in str(exc)
    else:
        raise AssertionError("check passed without a manifest")


def test_it_passes_with_a_manifest(settings, tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text("{}")
    vite(settings, manifest_path=path, dev_mode=False)
    assert check_vite_manifest() == []


def test_it_passes_in_vite_dev_mode(settings, tmp_path):
    vite(settings, manifest_path=tmp_path / "missing.json", dev_mode=True)
    assert check_vite_manifest() == []


def test_migrations_match_the_models(db):
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
