"""manage.py seed: catalog, local admin, examples; idempotent; runs only with --run."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tierlab.catalog.models import HardwareItem
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Run, Scenario

pytestmark = pytest.mark.django_db


def test_it_seeds_everything_once(settings):
    settings.DEBUG = True
    call_command("seed")
    call_command("seed")
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password("admin")
    assert [s.name for s in Scenario.objects.order_by("pk")] == [e["name"] for e in examples()]
    assert all(s.owner == admin for s in Scenario.objects.all())
    assert HardwareItem.objects.count() == 84
    assert Run.objects.count() == 0


def test_it_queues_one_run_per_example_when_asked(settings):
    settings.DEBUG = True
    call_command("seed", run=True)
    call_command("seed", run=True)
    assert Run.objects.count() == 4
    assert set(Run.objects.values_list("scenario", flat=True)) == set(Scenario.objects.values_list("pk", flat=True))


def test_it_creates_no_admin_without_debug(settings):
    settings.DEBUG = False
    call_command("seed")
    assert not get_user_model().objects.exists()
    assert not Scenario.objects.exists()


def test_every_example_is_valid():
    from tierlab.scenarios.services import resolve

    for example in examples():
        resolve(example["scenario"])
