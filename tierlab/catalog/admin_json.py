"""Catalog import and export as JSON from the admin (staff only).

Export: an admin action writing the selected rows, sources included. Import: a form on
each catalog changelist taking such a file; every row is validated like an admin edit
(``full_clean``: no negative bytes or bandwidths) and the whole file is applied in one
transaction, or nothing is, with the failing row and field named.
"""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path


class ImportForm(forms.Form):
    file = forms.FileField(help_text="a JSON list exported from this page")


class JsonImportExport:
    """Mix into a ModelAdmin whose model has a unique ``slug``; ``json_fields`` lists the columns."""
    json_fields: list = []
    change_list_template = "admin/catalog/change_list_json.html"
    actions = ["export_json"]

    @admin.action(description="Export selected as JSON")
    def export_json(self, request, queryset):
        rows = [{f: getattr(obj, f) for f in self.json_fields} for obj in queryset.order_by("slug")]
        resp = HttpResponse(json.dumps(rows, indent=1), content_type="application/json")
        name = self.model._meta.model_name
        resp["Content-Disposition"] = f'attachment; filename="tierlab-{name}.json"'
        return resp

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        return [path("import-json/", self.admin_site.admin_view(self.import_json),
                     name="%s_%s_import_json" % info)] + super().get_urls()

    def import_json(self, request):
        if not self.has_change_permission(request):
            return redirect("admin:index")
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                n = self.apply_rows(json.load(form.cleaned_data["file"]))
            except (ValueError, ValidationError) as e:
                form.add_error("file", e.messages if isinstance(e, ValidationError) else str(e))
            else:
                messages.success(request, f"Imported {n} {self.model._meta.verbose_name_plural}.")
                return redirect(f"admin:{self.model._meta.app_label}_{self.model._meta.model_name}_changelist")
        return render(request, "admin/catalog/import_json.html",
                      {**self.admin_site.each_context(request), "form": form,
                       "opts": self.model._meta, "title": f"Import {self.model._meta.verbose_name_plural}"})

    def apply_rows(self, rows) -> int:
        if not isinstance(rows, list):
            raise ValueError("the file must hold a JSON list of objects")
        with transaction.atomic():
            for k, row in enumerate(rows):
                if not isinstance(row, dict) or not row.get("slug"):
                    raise ValueError(f"item {k}: an object with a slug is required")
                unknown = set(row) - set(self.json_fields)
                if unknown:
                    raise ValueError(f"item {k} ({row['slug']}): unknown fields {sorted(unknown)}")
                obj = self.model.objects.filter(slug=row["slug"]).first() or self.model(slug=row["slug"])
                for f, v in row.items():
                    setattr(obj, f, v)
                try:
                    obj.full_clean()
                except ValidationError as e:
                    raise ValidationError(f"item {k} ({row['slug']}): " + "; ".join(
                        f"{field}: {' '.join(msgs)}" for field, msgs in e.message_dict.items()))
                obj.save()
        return len(rows)
