"""Catalog export and import as JSON in the admin: round trip, validation, all or nothing."""

import io
import json

import pytest
from django.contrib.messages import get_messages

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
    assert r.status_code == 400
    text = r.content.decode()
    assert "item 1 (gpu-a)" in text and "hbm_bytes_per_s" in text
    assert not Accelerator.objects.filter(slug="gpu-new").exists()
    assert Accelerator.objects.get(slug="gpu-a").name == "GPU-A"


def upload_bytes(client, data: bytes):
    f = io.BytesIO(data)
    f.name = "catalog.json"
    return client.post("/admin/catalog/accelerator/import-json/", {"file": f})


@pytest.mark.django_db
def test_a_file_over_the_size_cap_is_a_400_naming_the_limit(staff_client):
    row = {"slug": "gpu-big", "name": "big", "spec": H100, "source": "s", "notes": "x" * (2 * 1024 * 1024)}
    r = upload_bytes(staff_client, json.dumps([row]).encode())
    assert r.status_code == 400
    text = r.content.decode()
    assert "the limit is 2,097,152 bytes (CATALOG_IMPORT_MAX_BYTES)" in text
    assert not Accelerator.objects.filter(slug="gpu-big").exists()


def test_the_size_cap_is_2_mib_by_default_and_fits_the_shipped_catalog():
    from django.conf import settings

    from tierlab.catalog.loader import HARDWARE_FIXTURE

    assert settings.CATALOG_IMPORT_MAX_BYTES == 2 * 1024 * 1024
    assert HARDWARE_FIXTURE.stat().st_size * 10 < settings.CATALOG_IMPORT_MAX_BYTES


@pytest.mark.django_db
def test_deep_nesting_is_a_400_not_a_500(staff_client):
    staff_client.raise_request_exception = False
    r = upload_bytes(staff_client, b"[" * 100_000 + b"]" * 100_000)
    assert r.status_code == 400
    assert "nested deeper than" in r.content.decode()


@pytest.mark.django_db
def test_nesting_inside_a_row_deeper_than_the_limit_is_a_400_naming_the_row(staff_client):
    deep = {}
    for _ in range(100):
        deep = {"a": deep}
    r = upload(staff_client, [{"slug": "gpu-deep", "name": "deep", "spec": {**H100, "x": deep},
                               "source": "", "notes": ""}])
    assert r.status_code == 400
    text = r.content.decode()
    assert "item 0 (gpu-deep)" in text and "nested deeper than" in text
    assert not Accelerator.objects.filter(slug="gpu-deep").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("field, row", [
    ("name", {"slug": "gpu-nul", "name": "bad\x00name", "spec": H100, "source": "", "notes": ""}),
    ("spec", {"slug": "gpu-nul", "name": "ok", "spec": {**H100, "vendor": "a\x00b"}, "source": "", "notes": ""}),
    ("spec", {"slug": "gpu-nul", "name": "ok", "spec": {**H100, "k\x00": 1}, "source": "", "notes": ""}),
])
def test_a_nul_character_is_a_400_naming_the_row_and_field(staff_client, field, row):
    # PostgreSQL text and jsonb cannot store U+0000: this was a 500 there.
    staff_client.raise_request_exception = False
    acc("gpu-a")
    r = upload(staff_client, [{"slug": "gpu-a", "name": "renamed", "spec": H100, "source": "", "notes": ""}, row])
    assert r.status_code == 400
    text = r.content.decode()
    assert f"item 1 (gpu-nul): {field}:" in text and "NUL" in text
    assert Accelerator.objects.get(slug="gpu-a").name == "GPU-A"       # nothing applied
    assert not Accelerator.objects.filter(slug="gpu-nul").exists()


@pytest.mark.django_db
def test_a_nul_in_a_slug_is_a_400(staff_client):
    staff_client.raise_request_exception = False
    r = upload(staff_client, [{"slug": "gpu\x00x", "name": "n", "spec": H100, "source": "", "notes": ""}])
    assert r.status_code == 400
    assert "item 0" in r.content.decode() and "NUL" in r.content.decode()


@pytest.mark.django_db
def test_a_repeated_row_is_imported_and_counted_once(staff_client):
    row = {"slug": "gpu-b", "name": "new", "spec": H100, "source": "s", "notes": ""}
    r = upload(staff_client, [row, {"slug": "gpu-c", "name": "c", "spec": H100, "source": "s", "notes": ""},
                              dict(row)])
    assert r.status_code == 302
    messages = [m.message for m in get_messages(r.wsgi_request)]
    assert messages == ["Imported 2 accelerators (2 new, 0 updated); item 2 repeats item 0 and was counted once."]
    assert Accelerator.objects.filter(slug__in=["gpu-b", "gpu-c"]).count() == 2


@pytest.mark.django_db
def test_one_slug_twice_with_different_fields_is_refused(staff_client):
    r = upload(staff_client, [{"slug": "gpu-b", "name": "first", "spec": H100, "source": "s", "notes": ""},
                              {"slug": "gpu-b", "name": "second", "spec": H100, "source": "s", "notes": ""}])
    assert r.status_code == 400
    assert "item 1 (gpu-b): the same slug as item 0 with different fields" in r.content.decode()
    assert not Accelerator.objects.filter(slug="gpu-b").exists()


@pytest.mark.django_db
def test_the_import_page_states_the_limit(staff_client):
    r = staff_client.get("/admin/catalog/accelerator/import-json/")
    assert r.status_code == 200 and "2.0\xa0MB" in r.content.decode() and "2097152 bytes" in r.content.decode()
