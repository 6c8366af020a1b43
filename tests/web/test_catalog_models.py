"""Catalog rows: validation in clean(), load_catalog idempotence, the admin."""

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from tierlab.catalog.models import Accelerator, HardwareItem, ModelPreset, NodeTemplate
from tierlab.catalog.validators import bad_quantities

pytestmark = pytest.mark.django_db


def test_it_finds_negative_quantities_at_any_depth():
    spec = {"hbm_capacity_bytes": -1, "peak_flops_bf16": -2, "tiers": {"ddr": {"read_bytes_per_s": -3}},
            "num_layers": -4, "hbm_gb": -5, "ok_bytes": 5, "latency_s": -1, "label": "x"}
    assert sorted(bad_quantities(spec)) == ["hbm_capacity_bytes", "hbm_gb", "peak_flops_bf16",
                                            "tiers.ddr.read_bytes_per_s"]


@pytest.mark.parametrize("model", [Accelerator, NodeTemplate, ModelPreset])
def test_clean_rejects_negative_quantities(model):
    row = model(slug="x", name="x", spec={"tiers": {"nvme": {"capacity_bytes": -1}}})
    with pytest.raises(ValidationError) as info:
        row.full_clean()
    assert "tiers.nvme.capacity_bytes" in str(info.value.message_dict["spec"])


def test_clean_rejects_a_bad_slug():
    with pytest.raises(ValidationError) as info:
        ModelPreset(slug="Not A Slug", name="x", spec={}).full_clean()
    assert "slug" in info.value.message_dict


def test_clean_rejects_negative_hardware_figures():
    with pytest.raises(ValidationError):
        HardwareItem(kind="gpu", name="x", specs={"hbm_gb": -80}).full_clean()


def test_load_catalog_is_idempotent():
    call_command("load_catalog")
    call_command("load_catalog")
    assert HardwareItem.objects.count() == 84
    assert ModelPreset.objects.filter(slug="llama2-70b").count() == 1
    item = HardwareItem.objects.get(kind="gpu", name="NVIDIA A100 40GB SXM4")
    assert item.source and item.notes and item.extra["extra_sources"]


def test_load_catalog_keep_existing_keeps_admin_edits(catalog):
    ModelPreset.objects.filter(slug="llama2-7b").update(name="edited")
    call_command("load_catalog", keep_existing=True)
    assert ModelPreset.objects.get(slug="llama2-7b").name == "edited"
    call_command("load_catalog")
    assert ModelPreset.objects.get(slug="llama2-7b").name == "Llama-2-7B"


def test_the_admin_lists_and_searches(client, user_admin, catalog):
    client.force_login(user_admin)
    r = client.get("/admin/catalog/hardwareitem/?kind__exact=gpu&q=H100")
    assert r.status_code == 200 and b"H100" in r.content
    assert client.get("/admin/catalog/modelpreset/").status_code == 200


def test_the_admin_refuses_a_negative_capacity(client, user_admin, catalog):
    client.force_login(user_admin)
    acc = Accelerator.objects.get(slug="h100-sxm5-80gb")
    r = client.post(f"/admin/catalog/accelerator/{acc.pk}/change/", {
        "slug": acc.slug, "name": acc.name, "source": acc.source, "notes": "",
        "spec": '{"hbm_capacity_bytes": -1}'})
    assert r.status_code == 200          # the form again, with the error
    assert b"hbm_capacity_bytes: must be &gt;= 0, got -1" in r.content
    acc.refresh_from_db()
    assert acc.spec["hbm_capacity_bytes"] > 0


def _admin_error(client, acc, spec: dict) -> str:
    import json
    import re
    r = client.post(f"/admin/catalog/accelerator/{acc.pk}/change/", {
        "slug": acc.slug, "name": acc.name, "source": acc.source, "notes": "",
        "spec": json.dumps({**acc.spec, **spec})})
    assert r.status_code == 200          # the form again, with the error
    return " ".join(re.findall(r'<ul class="errorlist[^"]*"[^>]*>\s*<li>(.*?)</li>', r.content.decode()))


def test_the_admin_refuses_an_hbm_no_accelerator_has_and_words_zero_and_negative_alike(
        client, user_admin, catalog):
    client.force_login(user_admin)
    acc = Accelerator.objects.get(slug="h100-sxm5-80gb")
    assert _admin_error(client, acc, {"hbm_capacity_bytes": 1e300}) == \
        "spec.hbm_capacity_bytes: must be &lt;= 1e+15, got 1e+300"
    assert _admin_error(client, acc, {"hbm_bytes_per_s": 0}) == "spec.hbm_bytes_per_s: must be &gt; 0, got 0"
    assert _admin_error(client, acc, {"hbm_bytes_per_s": -5}) == "spec.hbm_bytes_per_s: must be &gt; 0, got -5"
    acc.refresh_from_db()
    assert acc.spec["hbm_capacity_bytes"] < 1e12


def test_the_admin_is_for_staff_only(client, owner):
    client.force_login(owner)
    assert client.get("/admin/catalog/modelpreset/").status_code == 302


@pytest.mark.parametrize("model, key, value, field", [
    (ModelPreset, "num_layers", -5, "spec.num_layers"),
    (ModelPreset, "num_layers", "abc", "spec.num_layers"),
    (ModelPreset, "hidden_size", -4096, "spec.hidden_size"),
    (ModelPreset, "colour", "blue", "spec.colour"),
    (NodeTemplate, "gpus_per_node", -8, "spec.gpus_per_node"),
    (NodeTemplate, "accelerator", "no-such-gpu", "spec.accelerator.preset"),
    (Accelerator, "peak_flops_bf16", None, "spec.peak_flops_bf16"),
    (Accelerator, "hbm_capacity_bytes", "80 GB", "spec.hbm_capacity_bytes"),
])
def test_clean_checks_a_preset_as_the_engine_reads_it(model, key, value, field):
    """An admin edit the engine would refuse is refused on save, naming the key, instead of
    turning every scenario that names the preset into a 400 about a field the user never sent."""
    call_command("load_catalog")
    row = model.objects.get(slug={ModelPreset: "llama2-7b", NodeTemplate: "dgx-h100",
                                  Accelerator: "h100-sxm5-80gb"}[model])
    row.full_clean()                                   # as loaded, it is fine
    row.spec = {**row.spec, key: value}
    with pytest.raises(ValidationError) as info:
        row.full_clean()
    message = " ".join(info.value.message_dict["spec"])
    assert message.startswith(field + ":"), message


def test_every_loaded_preset_passes_the_engine_check():
    call_command("load_catalog")
    for model in (Accelerator, NodeTemplate, ModelPreset):
        for row in model.objects.all():
            row.full_clean()
