"""The committed OpenAPI schema (docs/openapi.yaml) is the API's contract: it must match what
the code generates, so every change to the API shows up in review as a change to that file."""

import difflib

import pytest
from django.core.management import call_command

from tests.conftest import ROOT

SNAPSHOT = ROOT / "docs" / "openapi.yaml"
UPDATE = "python manage.py spectacular --file docs/openapi.yaml --validate --fail-on-warn"


@pytest.mark.django_db
def test_the_schema_matches_the_committed_snapshot(tmp_path):
    generated = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(generated), "--validate", "--fail-on-warn")
    new = generated.read_text()
    old = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
    if new != old:
        diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "docs/openapi.yaml (committed)",
                                         "generated from the code", lineterm="", n=2))
        shown = "\n".join(diff[:80]) + (f"\n... {len(diff) - 80} more diff lines" if len(diff) > 80 else "")
        pytest.fail(f"The API no longer matches its committed schema, docs/openapi.yaml.\n"
                    f"If the change is intended, regenerate the snapshot and commit it with the change:\n\n"
                    f"    {UPDATE}\n\n"
                    f"(with the virtual environment's python, e.g. .venv/bin/python; add --skip-checks if the "
                    f"front end is not built)\n\n{shown}", pytrace=False)
