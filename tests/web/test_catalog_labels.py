"""Display names of a scenario's ids (tierlab.catalog.labels): the catalog's model and node
names and the strategies' own spellings, for pages a person reads."""

import pytest

from tierlab.catalog import labels
from tierlab.catalog.models import ModelPreset

pytestmark = pytest.mark.django_db

SPEC = {"model": {"preset": "llama2-70b"}, "cluster": {"node": "dgx-h100", "num_nodes": 2, "gpus_per_node": 8},
        "strategy": {"kind": "zero3"}}


def test_a_scenario_is_labelled_by_display_names_not_ids(catalog):
    assert labels.model_label(SPEC) == "Llama-2-70B"
    assert labels.nodes_label(SPEC) == "2× NVIDIA DGX H100"        # the template's own 8: not said
    four = {"cluster": {"node": "dgx-h100", "num_nodes": 2, "gpus_per_node": 4}}
    assert labels.nodes_label(four) == "2× NVIDIA DGX H100 (4 GPU/node)"
    custom = {"cluster": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8}}
    assert labels.nodes_label(custom) == "1× custom node (8 GPU/node)"
    assert labels.strategy_label(SPEC) == "ZeRO-3"
    assert " · ".join(f(SPEC) for f in (labels.model_label, labels.nodes_label, labels.strategy_label)) \
        == "Llama-2-70B · 2× NVIDIA DGX H100 · ZeRO-3"


@pytest.mark.parametrize("kind, name", [
    ("ddp", "DDP"), ("zero1", "ZeRO-1"), ("zero2", "ZeRO-2"), ("zero3", "ZeRO-3"),
    ("fsdp_full_shard", "FSDP FULL_SHARD"), ("fsdp_hybrid_shard", "FSDP HYBRID_SHARD"),
    ("zero_offload", "ZeRO-Offload"), ("zero_infinity", "ZeRO-Infinity"),
])
def test_every_strategy_has_its_projects_spelling(kind, name):
    assert labels.strategy_label({"model": "llama2-7b", "strategy": {"kind": kind}}) == name


def test_every_engine_strategy_is_named():
    from simulation.scenario import STRATEGY_KINDS

    assert set(labels.STRATEGY_NAMES) == set(STRATEGY_KINDS)


def test_the_catalog_name_wins_over_the_built_in_one(catalog):
    ModelPreset.objects.filter(slug="llama2-7b").update(name="Llama 2 (7B), renamed")
    from tierlab.catalog.lookups import forget_catalog

    forget_catalog()
    assert labels.model_label({"model": "llama2-7b"}) == "Llama 2 (7B), renamed"


def test_partial_custom_and_unknown_specs_keep_a_label():
    assert labels.model_label({"model": {"name": "My 3B", "num_layers": 2}}) == "My 3B"
    assert labels.model_label({"model": {}}) == "custom"
    assert labels.model_label({"model": {"preset": "no-such-model"}}) == "no-such-model"
    assert labels.nodes_label({"cluster": {"num_nodes": 4}}) == "4× custom node"
    assert labels.nodes_label({"cluster": {"node": "no-such-node"}}) == "1× no-such-node"
    assert labels.strategy_label({"model": "llama2-7b"}) == "ZeRO-3"            # the engine's default
    assert labels.strategy_label({"model": "x", "strategy": {"kind": "future_kind"}}) == "future_kind"
    assert labels.model_label("not a dict") == "custom"
    assert labels.nodes_label(None) == "1× custom node"


def test_a_recommendation_model_is_labelled_by_its_presets_name():
    spec = {"recsys": {"preset": "dlrm-mlperf-v2"}, "cluster": {"node": "dgx-h100", "num_nodes": 2}}
    assert labels.model_label(spec) == "DLRM-DCNv2, MLPerf v2 (Criteo 1TB multi-hot)"
    assert labels.strategy_label(spec) == "embeddings: parameter server vs all-to-all"
    assert labels.model_label({"recsys": {"tables": []}}) == "custom recommendation model"


def test_every_planner_objective_has_a_label_with_its_unit_and_a_choice():
    """One source (tierlab.catalog.labels) for the plan list, the plan page and the form,
    covering simulation.planner.OBJECTIVES; the planner's default when a spec gives none."""
    from simulation.planner import OBJECTIVES
    from tierlab.dashboard.forms.plans import PlanForm

    assert set(labels.OBJECTIVE_LABELS) == set(OBJECTIVES) == set(labels.OBJECTIVE_CHOICES)
    assert [k for k, _ in PlanForm.OBJECTIVES] == list(OBJECTIVES)
    assert all(label.endswith(("(s)", "(USD)", "(USD per million tokens)"))
               for label in labels.OBJECTIVE_LABELS.values())
    assert labels.objective_label("step_time") == "Step time (s)"
    assert labels.objective_label("cost_per_million_tokens") == "Cost (USD per million tokens)"
    assert labels.objective_label(None) == "Step time (s)"
    assert labels.objective_label("nope") == "nope"
