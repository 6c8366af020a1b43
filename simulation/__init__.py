"""tierlab's engine: pure Python + numpy. Never imports Django or Celery.

    >>> from simulation import evaluate_dict
    >>> report = evaluate_dict({"model": {"preset": "llama2-7b"},
    ...                         "cluster": {"node": "dgx-h100", "gpus_per_node": 1}})

`evaluate(Scenario) -> Report` is pure and deterministic; both round-trip JSON
(`from_dict` / `to_dict`, ``"schema": 1``). Bad input raises `ScenarioError`;
`checked_scenario(dict)` parses and validates, naming every bad field at once (`ScenarioErrors`).
`validate(Scenario) -> CostBound` makes evaluate's refusals without simulating, and
`cost_bound` says what an evaluation will cost before it runs (`simulation.cost`).
"""

from .errors import ScenarioError, ScenarioErrors
from .scenario import SCHEMA_VERSION, Scenario, resolve
from .report import Report
from .evaluate import estimate_dict, evaluate, evaluate_dict
from .cost import CostBound, checked_scenario, cost_bound, validate
from .version import ENGINE_VERSION

__all__ = ["ENGINE_VERSION", "SCHEMA_VERSION", "CostBound", "Report", "Scenario", "ScenarioError",
           "ScenarioErrors", "checked_scenario", "cost_bound", "estimate_dict", "evaluate",
           "evaluate_dict", "resolve", "validate"]
