"""Catalog export and import as JSON in the admin: round trip, validation, all or nothing."""

import io
import json

import pytest

from tierlab.catalog.models import Accelerator


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("staffer", "s@example.com", "pw")
    client.force_login(user)
    return client


# every field the engine needs of an accelerator (admin edits are checked as the engine reads them)
H100 = {"hbm_capacity_bytes": 85e9, "hbm_bytes_per_s": 3.35e12, "peak_flops_bf16": 989e12,
        "peak_flops_fp32": 67e12, "host_link_bytes_per_s": 64e9, "scaleup_bytes_per_s": 450e9}


def acc(slug, hbm=85e9):
    return Accelerator.objects.create(slug=slug, name=slug.upper(), source="datasheet",
                                      spec={**H100, "hbm_capacity_bytes": hbm})


def upload(client, rows):
    f = io.BytesIO(json.dumps(rows).encode())
    f.name = "catalog.json"
    return client.post("/admin/catalog/accelerator/import-json/", {"file": f})


@pytest.mark.django_db
def test_it_exports_selected_rows_with_their_sources(staff_client):
    a = acc("gpu-a")
    r = staff_client.post("/admin/catalog/accelerator/",
                          {"action": "export_json", "_selected_action": [a.pk]})
    assert r["Content-Disposition"].endswith('tierlab-accelerator.json"')
    rows = json.loads(r.content)
    assert rows == [{"slug": "gpu-a", "name": "GPU-A", "spec": a.spec, "source": "datasheet", "notes": ""}]


@pytest.mark.django_db
def test_it_imports_rows_matched_by_slug(staff_client):
    acc("gpu-a")
    r = upload(staff_client, [{"slug": "gpu-a", "name": "renamed", "spec": {**H100, "hbm_capacity_bytes": 1e9},
                               "source": "s", "notes": ""},
                              {"slug": "gpu-b", "name": "new", "spec": H100, "source": "s", "notes": ""}])
    assert r.status_code == 302
    assert Accelerator.objects.get(slug="gpu-a").name == "renamed"
    assert Accelerator.objects.filter(slug="gpu-b").exists()


@pytest.mark.django_db
def test_a_bad_row_names_itself_and_nothing_is_imported(staff_client):
    acc("gpu-a")
    r = upload(staff_client, [{"slug": "gpu-new", "name": "ok", "spec": H100, "source": "", "notes": ""},
                              {"slug": "gpu-a", "name": "bad", "spec": {**H100, "hbm_bytes_per_s": -1},
                               "source": "", "notes": ""}])
    assert r.status_code == 200
    text = r.content.decode()
    assert "item 1 (gpu-a)" in text and "hbm_bytes_per_s" in text
    assert not Accelerator.objects.filter(slug="gpu-new").exists()
    assert Accelerator.objects.get(slug="gpu-a").name == "GPU-A"
