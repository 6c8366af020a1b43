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

    def get_deleted_objects(self, objs, request):
        """A profile a saved scenario uses is "protected": the admin's delete page (and the
        bulk action) refuses it, listing the scenarios, as the API's 409 does; the scenarios
        could no longer run."""
        from tierlab.scenarios import profiles

        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for profile in objs:
            for sc in profiles.scenarios_using(profile):
                protected.append(f"Scenario {sc.name!r} (id {sc.pk}) uses cluster profile {profile.name!r}")
        return deleted, counts, perms_needed, protected
