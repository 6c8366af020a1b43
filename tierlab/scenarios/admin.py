"""Scenarios and runs in the admin: for support and inspection; runs are read-only."""

from django.contrib import admin

from tierlab.scenarios.models import ClusterProfile, Run, Scenario


class RunInline(admin.TabularInline):
    model = Run
    fields = ["status", "progress", "error", "engine_version", "created_at", "finished_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "model_label", "nodes_label", "strategy_label", "updated_at"]
    list_filter = ["owner"]
    search_fields = ["name", "owner__username"]
    raw_id_fields = ["owner"]
    inlines = [RunInline]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "scenario", "status", "progress", "engine_version", "created_at", "finished_at"]
    list_filter = ["status", "engine_version"]
    search_fields = ["scenario__name", "input_hash", "celery_task_id"]
    readonly_fields = [f.name for f in Run._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(ClusterProfile)
class ClusterProfileAdmin(admin.ModelAdmin):
    """Profiles are fitted by the engine: the admin shows them and lets support delete
    one; measurements are edited (and refitted) through the API or the profile page."""

    list_display = ["name", "owner", "updated_at"]
    list_filter = ["owner"]
    search_fields = ["name", "owner__username"]
    raw_id_fields = ["owner"]
    readonly_fields = ["measurements", "figures", "fits", "created_at", "updated_at"]
