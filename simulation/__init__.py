"""tierlab's engine: pure Python + numpy. Never imports Django or Celery.

    >>> from simulation import evaluate_dict
    >>> report = evaluate_dict({"model": {"preset": "llama2-7b"},
    ...                         "cluster": {"node": "dgx-h100", "gpus_per_node": 1}})

`evaluate(Scenario) -> Report` is pure and deterministic; both round-trip JSON
(`from_dict` / `to_dict`, ``"schema": 1``). Bad input raises `ScenarioError`.
"""

from .errors import ScenarioError
from .scenario import SCHEMA_VERSION, Scenario, resolve
from .report import Report
from .evaluate import estimate_dict, evaluate, evaluate_dict
from .version import ENGINE_VERSION

__all__ = ["ENGINE_VERSION", "SCHEMA_VERSION", "Report", "Scenario", "ScenarioError",
           "estimate_dict", "evaluate", "evaluate_dict", "resolve"]
