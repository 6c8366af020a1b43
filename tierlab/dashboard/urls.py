"""URLs of the dashboard: pages, and its REST API under /api/v1/ (included before the
project's router, so the export paths below sit beside the scenario and run routes)."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from tierlab.dashboard import api, views

router = SimpleRouter()
router.register("comparisons", api.ComparisonViewSet, basename="comparison")
router.register("sweeps", api.SweepViewSet, basename="sweep")
router.register("plans", api.PlanViewSet, basename="plan")
router.register("shares", api.ShareLinkViewSet, basename="share")

api_patterns = [
    path("scenarios/<int:pk>/duplicate/", api.DuplicateScenarioView.as_view(), name="scenario-duplicate"),
    path("scenarios/<int:pk>/variants/", api.VariantsView.as_view(), name="scenario-variants"),
    path("scenarios/<int:pk>/deepspeed.json", api.DeepSpeedConfigView.as_view(), name="scenario-deepspeed"),
    path("scenarios/<int:pk>/fsdp.py", api.FSDPSnippetView.as_view(), name="scenario-fsdp"),
    path("scenarios/<int:pk>/megatron.txt", api.MegatronArgsView.as_view(), name="scenario-megatron"),
    path("runs/<int:pk>/report.json", api.RunReportView.as_view(), name="run-report"),
    path("comparisons/<int:pk>/export.csv", api.ComparisonCSVView.as_view(), name="comparison-csv"),
    path("sweeps/<int:pk>/points.csv", api.SweepCSVView.as_view(), name="sweep-csv"),
    path("shared/<str:token>/", api.SharedView.as_view(), name="shared"),
    path("shared/<str:token>/fork/", api.ForkView.as_view(), name="shared-fork"),
    path("shared/<str:token>/<str:filename>", api.SharedExportView.as_view(), name="shared-file"),
    *router.urls,
]

urlpatterns = [
    path("scenarios/<int:pk>/duplicate/", views.scenario_duplicate, name="scenario-duplicate"),
    path("scenarios/<int:pk>/variants/", views.scenario_variants, name="scenario-variants"),
    path("compare/", views.compare_index, name="compare-index"),
    path("compare/<int:pk>/", views.compare_detail, name="compare-detail"),
    path("sweeps/new/", views.sweep_new, name="sweep-new"),
    path("sweeps/<int:pk>/", views.sweep_detail, name="sweep-detail"),
    path("sweeps/<int:pk>/cancel/", views.sweep_cancel, name="sweep-cancel"),
    path("plans/new/", views.plan_new, name="plan-new"),
    path("plans/<int:pk>/", views.plan_detail, name="plan-detail"),
    path("plans/<int:pk>/cancel/", views.plan_cancel, name="plan-cancel"),
    path("plans/<int:pk>/save/", views.plan_save, name="plan-save"),
    path("plans/<int:pk>/compare/", views.plan_compare, name="plan-compare"),
    path("share/", views.share_create, name="share-create"),
    path("share/<int:pk>/revoke/", views.share_revoke, name="share-revoke"),
    path("s/<str:token>/", views.shared, name="shared"),
    path("s/<str:token>/fork/", views.shared_fork, name="shared-fork"),
    path("api/v1/", include((api_patterns, "dashboard-api"), namespace="dashboard-api")),
]
