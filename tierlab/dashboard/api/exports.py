"""Downloads: a scenario's DeepSpeed config and FSDP snippet, a run's report, a comparison's
CSV, and the same files through a share link (no account needed)."""

from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.views import APIView

from simulation import ScenarioError
from tierlab.access import get_visible_or_404
from tierlab.dashboard import comparisons, exports, sweeps
from tierlab.dashboard.api.common import CSV, FILE, PYTHON, TEXT
from tierlab.dashboard.api.sharing import open_shared
from tierlab.dashboard.models import Comparison, Sweep
from tierlab.scenarios.models import Run, Scenario
from tierlab.scenarios.serializers import scenario_error_detail


def _scenario_export(scenario: Scenario, what: str):
    """``what`` of ``scenario``; its cluster profile as its owner may use it (as a run does)."""
    spec, name, owner = scenario.spec, scenario.name, scenario.owner
    try:
        if what == "deepspeed.json":
            return exports.json_download(exports.deepspeed_config(spec, owner),
                                         exports.filename(f"{name}-deepspeed", "json"))
        if what == "megatron.txt":
            return exports.download(exports.megatron_args(spec, owner), "text/plain; charset=utf-8",
                                    exports.filename(f"{name}-megatron", "txt"))
        return exports.download(exports.fsdp_snippet(spec, owner), "text/x-python; charset=utf-8",
                                exports.filename(f"{name}-fsdp", "py"))
    except ScenarioError as exc:
        raise ValidationError(scenario_error_detail(exc)) from None


class DeepSpeedConfigView(APIView):
    """A DeepSpeed config JSON for the scenario's strategy (download)."""

    @extend_schema(responses=FILE)
    def get(self, request, pk):
        scenario = get_visible_or_404(Scenario, request.user, pk=pk)
        return _scenario_export(scenario, "deepspeed.json")


class FSDPSnippetView(APIView):
    """A PyTorch FSDP wrapping snippet for the scenario's strategy (download)."""

    @extend_schema(responses=PYTHON)
    def get(self, request, pk):
        scenario = get_visible_or_404(Scenario, request.user, pk=pk)
        return _scenario_export(scenario, "fsdp.py")


class MegatronArgsView(APIView):
    """Megatron-LM command-line arguments for the scenario's layout, precision and FP8 (download)."""

    @extend_schema(responses=TEXT)
    def get(self, request, pk):
        scenario = get_visible_or_404(Scenario, request.user, pk=pk)
        return _scenario_export(scenario, "megatron.txt")


def _report(run: Run | None):
    if run is None:
        raise ValidationError({"run": ["there is no run of this scenario yet"]})
    if run.status != Run.Status.SUCCEEDED or not run.result:
        raise ValidationError({"status": [f"run {run.pk} is {run.status}; its report exists once it succeeds"]})
    return exports.json_download(run.result, exports.filename(f"{run.scenario.name}-run-{run.pk}-report", "json"))


class RunReportView(APIView):
    """The engine's report of a run of yours or your team's, as a JSON download."""

    @extend_schema(responses=FILE)
    def get(self, request, pk):
        return _report(get_visible_or_404(Run.objects.select_related("scenario"), request.user, pk=pk))


class SweepCSVView(APIView):
    """Every point of a sweep of yours or your team's as CSV: its axis values, outcome and
    numbers (SI units), one row a point in the grid's order."""

    @extend_schema(responses=CSV)
    def get(self, request, pk):
        sweep = get_visible_or_404(Sweep.objects.select_related("base", "owner"), request.user, pk=pk)
        return exports.download(exports.sweep_csv(sweeps.sweep_payload(sweep)),
                                "text/csv; charset=utf-8", exports.filename(f"{sweep.name}-points", "csv"))


class ComparisonCSVView(APIView):
    """The comparison table as CSV: outputs (with the best column named), then inputs."""

    @extend_schema(responses=CSV)
    def get(self, request, pk):
        comparison = get_visible_or_404(Comparison, request.user, pk=pk)
        return exports.download(exports.comparison_csv(comparisons.comparison_payload(comparison)),
                                "text/csv; charset=utf-8", exports.filename(comparison.name, "csv"))


class SharedExportView(APIView):
    """Downloads of a shared object, without login: `export.csv` (comparison);
    `report.json`, `deepspeed.json`, `fsdp.py`, `megatron.txt` (scenario). A sweep's or a
    plan's link has none; any other name is a 404 that says which files the link has."""

    permission_classes = [permissions.AllowAny]
    throttle_scopes = {"GET": "shared"}              # tierlab.throttling
    FILES = {"comparison": ("export.csv",), "scenario": ("report.json", "deepspeed.json", "fsdp.py", "megatron.txt"),
             "sweep": (), "plan": ()}

    @extend_schema(operation_id="v1_shared_file_retrieve", responses={**FILE, **CSV, **PYTHON, **TEXT})
    def get(self, request, token, filename):
        link = open_shared(token)
        files = self.FILES.get(link.kind, ())
        if filename not in files:
            offered = (f"it has {', '.join(files)}" if files else "it has no files to download")
            raise NotFound(f"A {link.kind}'s share link has no file {filename!r}; {offered}.")
        target = link.target
        if filename == "export.csv":
            return exports.download(exports.comparison_csv(comparisons.comparison_payload(target)),
                                    "text/csv; charset=utf-8", exports.filename(target.name, "csv"))
        if filename == "report.json":
            return _report(comparisons.latest_run(target))
        return _scenario_export(target, filename)
