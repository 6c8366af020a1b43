"""A name past 200 characters on the server-rendered forms (plan, sweep, cluster profile)
is the field's error, as the API's 400 words it, and nothing is saved: the inputs carry no
``maxlength``, with which a browser cut a pasted name to 200 characters silently. The
comparison made from the scenario list's ticks refuses one too (it was a database error)."""

import re

import pytest

from tests.web.dashboard_helpers import spec
from tierlab.dashboard.models import Comparison, Sweep
from tierlab.scenarios.models import ClusterProfile, Scenario

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("vite_manifest")]
TOO_LONG = "Ensure this field has no more than 200 characters. This one has 500."


def name_input(html: str) -> str:
    return re.search(r'<input[^>]*name="name"[^>]*>', html).group()


@pytest.mark.parametrize("url", ["/plans/new/", "/sweeps/new/", "/profiles/"])
def test_the_name_input_has_no_maxlength(client, owner, url):
    client.force_login(owner)
    Scenario.objects.create(owner=owner, name="base", spec=spec())     # the sweep form's base
    tag = name_input(client.get(url).content.decode())
    assert "maxlength" not in tag


def test_the_sweep_form_shows_a_long_name_on_its_field(client, owner):
    client.force_login(owner)
    base = Scenario.objects.create(owner=owner, name="base", spec=spec())
    form = {"scenario": base.pk, "axis1_path": "cluster.num_nodes", "axis1_values": "1, 2",
            "axis2_path": "", "axis2_values": "", "name": "n" * 500}
    html = client.post("/sweeps/new/", form).content.decode()
    assert re.search(r'data-error-for="name">' + re.escape(TOO_LONG), html), html[-3000:]
    assert Sweep.objects.count() == 0


def test_the_profile_form_shows_a_long_name_on_its_field(client, owner):
    client.force_login(owner)
    html = client.post("/profiles/", {"name": "n" * 500, "node": "dgx-a100-80gb", "collective": "all_reduce",
                                      "checkpoint_target": "parallel_fs"}).content.decode()
    assert TOO_LONG in html and not ClusterProfile.objects.exists()


def test_a_comparison_named_past_200_characters_is_refused(client, owner):
    client.force_login(owner)
    ids = [Scenario.objects.create(owner=owner, name=f"s{i}", spec=spec()).pk for i in range(2)]
    r = client.post("/compare/", {"scenario": ids, "name": "n" * 500}, follow=True)
    assert r.status_code == 200 and not Comparison.objects.exists()
    assert "Could not compare name: must be at most 200 characters, got 500." in r.content.decode()
