"""URLs: pages, the REST API under /api/v1/, its schema and docs, admin and login."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from csp.decorators import csp_update
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from tierlab.api import api_not_found
from tierlab.catalog import api as catalog_api
from tierlab.catalog import views as catalog_views
from tierlab.scenarios import api as scenario_api
from tierlab.scenarios import views as scenario_views

router = DefaultRouter()
router.register("catalog/models", catalog_api.ModelPresetViewSet, basename="catalog-model")
router.register("catalog/nodes", catalog_api.NodeTemplateViewSet, basename="catalog-node")
router.register("catalog/accelerators", catalog_api.AcceleratorViewSet, basename="catalog-accelerator")
router.register("catalog/hardware", catalog_api.HardwareItemViewSet, basename="catalog-hardware")
router.register("scenarios", scenario_api.ScenarioViewSet, basename="scenario")
router.register("runs", scenario_api.RunViewSet, basename="run")
router.register("cluster-profiles", scenario_api.ClusterProfileViewSet, basename="cluster-profile")

# The split view serves Swagger UI's start-up script as a file (script-src 'self' holds); its
# page keeps one inline <style> block, so this page alone allows inline styles.
api_docs = csp_update({"style-src": ["'unsafe-inline'"]})(SpectacularSwaggerSplitView.as_view(url_name="schema"))

_login_hint = "Local development login: admin / admin (created by manage.py seed)." if settings.DEBUG else ""

urlpatterns = [
    path("", include("tierlab.dashboard.urls")),   # comparisons, sweeps, share links, exports
    path("", scenario_views.scenario_form, name="scenario-form"),
    path("scenarios/", scenario_views.scenario_list, name="scenario-list"),
    path("scenarios/<int:pk>/", scenario_views.scenario_detail, name="scenario-detail"),
    path("scenarios/<int:pk>/run/", scenario_views.scenario_run, name="scenario-run"),
    path("runs/<int:pk>/", scenario_views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", scenario_views.run_cancel, name="run-cancel"),
    path("profiles/", scenario_views.profile_list, name="profile-list"),
    path("profiles/<int:pk>/", scenario_views.profile_detail, name="profile-detail"),
    path("catalog/", catalog_views.catalog, name="catalog"),
    path("accounts/login/", auth_views.LoginView.as_view(extra_context={"debug_hint": _login_hint}),
         name="login"),
    # Django's auth URLs without password reset: no mail is sent from here, so its form only
    # logged a traceback per request (an admin sets a forgotten password: manage.py changepassword).
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(),
         name="password_change_done"),
    path("admin/", admin.site.urls),
    path("api/v1/estimate/", scenario_api.EstimateView.as_view(), name="estimate"),
    path("api/v1/models/from-hf-config/", catalog_api.ModelFromHfConfigView.as_view(),
         name="model-from-hf-config"),
    path("api/v1/", include((router.urls, "api"), namespace="api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", api_docs, name="api-docs"),
    # Any other /api/ URL: a JSON 404 even with DEBUG on (Django's debug page is HTML).
    re_path(r"^api/", api_not_found),
]

# JSON under /api/, Django's pages elsewhere (tierlab/api.py).
handler400 = "tierlab.api.handler400"
handler404 = "tierlab.api.handler404"
handler500 = "tierlab.api.handler500"
