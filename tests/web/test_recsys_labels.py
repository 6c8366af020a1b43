"""A recommendation model's scenario is labelled by its recsys preset, not as a
transformer with the default strategy (lists, detail and run pages)."""

import pytest

from tierlab.catalog.labels import preset_name
from tierlab.scenarios.models import Scenario

pytestmark = pytest.mark.django_db       # display names come from the catalog (or its built-ins)


def test_a_recsys_scenario_is_labelled_by_its_preset():
    s = Scenario(name="x", spec={"recsys": {"preset": "dlrm-mlperf-v2"},
                                 "cluster": {"node": "dgx-h100", "num_nodes": 2}})
    assert s.model_label == preset_name("recsys", "dlrm-mlperf-v2")       # its display name
    assert s.model_label != "dlrm-mlperf-v2"
    assert s.strategy_label == "embeddings: parameter server vs all-to-all"
    assert s.nodes_label == "2× NVIDIA DGX H100"


def test_a_custom_recsys_model_and_a_transformer_keep_their_labels():
    custom = Scenario(name="x", spec={"recsys": {"tables": []}, "cluster": {}})
    assert custom.model_label == "custom recommendation model"
    llm = Scenario(name="y", spec={"model": {"preset": "llama2-7b"}, "recsys": {"preset": "dlrm-mlperf-v1"},
                                   "strategy": {"kind": "zero2"}})
    assert llm.model_label == "Llama-2-7B"
    assert llm.strategy_label == "ZeRO-2"
    assert Scenario(name="z", spec={"model": {"preset": "llama2-7b"}}).strategy_label == "ZeRO-3"
