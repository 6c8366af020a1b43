"""Comparisons, sweeps and share links in the admin: for support and inspection."""

from django.contrib import admin

from tierlab.dashboard.models import Comparison, ComparisonItem, ShareLink, Sweep, SweepChunk


class ComparisonItemInline(admin.TabularInline):
    model = ComparisonItem
    fields = ["position", "scenario", "run"]
    raw_id_fields = ["scenario", "run"]
    extra = 0


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name", "owner__username"]
    raw_id_fields = ["owner"]
    inlines = [ComparisonItemInline]


class SweepChunkInline(admin.TabularInline):
    model = SweepChunk
    fields = ["start", "stop", "status", "done", "error", "started_at", "finished_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "status", "total_points", "created_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["name", "owner__username"]
    raw_id_fields = ["owner", "base"]
    readonly_fields = ["pareto", "engine_version", "started_at", "finished_at"]
    inlines = [SweepChunkInline]


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "kind", "target_id", "created_at", "revoked_at"]
    list_filter = ["revoked_at"]
    raw_id_fields = ["owner", "scenario", "comparison", "sweep"]
    readonly_fields = ["token", "created_at"]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected links")
    def revoke(self, request, queryset):
        for link in queryset:
            link.revoke()
