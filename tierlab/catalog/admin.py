"""Catalog admin: staff edit presets and sourced items; `clean()` rejects negative quantities."""

from django.contrib import admin
from django.utils.text import Truncator

from tierlab.catalog.admin_json import JsonImportExport
from tierlab.catalog.models import Accelerator, HardwareItem, ModelPreset, NodeTemplate


class StaffEditsOnly:
    """Read-only unless the user is staff (and holds Django's change permission)."""

    def has_change_permission(self, request, obj=None):
        return request.user.is_staff and super().has_change_permission(request, obj)

    def has_add_permission(self, request, *args):
        return request.user.is_staff and super().has_add_permission(request, *args)

    def has_delete_permission(self, request, obj=None):
        return request.user.is_staff and super().has_delete_permission(request, obj)


@admin.display(description="source")
def short_source(obj):
    return Truncator(obj.source).chars(80)


@admin.register(Accelerator, NodeTemplate, ModelPreset)
class PresetAdmin(StaffEditsOnly, JsonImportExport, admin.ModelAdmin):
    json_fields = ["slug", "name", "spec", "source", "notes"]
    list_display = ["slug", "name", short_source, "updated_at"]
    search_fields = ["slug", "name", "source", "notes"]
    list_filter = ["updated_at"]
    fields = ["slug", "name", "spec", "source", "notes", "updated_at"]
    readonly_fields = ["updated_at"]


@admin.register(HardwareItem)
class HardwareItemAdmin(StaffEditsOnly, JsonImportExport, admin.ModelAdmin):
    json_fields = ["slug", "kind", "name", "vendor", "specs", "source", "notes", "extra"]
    list_display = ["name", "kind", "vendor", short_source]
    list_filter = ["kind", "vendor"]
    search_fields = ["name", "vendor", "source", "notes", "slug"]
    fields = ["kind", "name", "slug", "vendor", "specs", "source", "notes", "extra", "updated_at"]
    readonly_fields = ["updated_at"]
