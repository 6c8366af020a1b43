"""Catalog import and export as JSON from the admin (staff only).

Export: an admin action writing the selected rows, sources included. Import: a form on
each catalog changelist taking such a file; every row is validated like an admin edit
(``full_clean``: no negative bytes or bandwidths) and the whole file is applied in one
transaction, or nothing is, with the failing row and field named.

Limits, each a 400 with a message (never a 500): a file over ``CATALOG_IMPORT_MAX_BYTES``
(2 MiB by default; the shipped catalog is about 70 kB), text that is not UTF-8 JSON, nesting
deeper than ``tierlab.api.MAX_JSON_DEPTH`` inside a field, and a NUL character (U+0000) in
any string or key: PostgreSQL's text and jsonb cannot store it. A row repeated word for word
is applied and counted once (the message says so); one slug given twice with different
fields is refused, since either choice would silently drop an edit.
"""

import json
from dataclasses import dataclass, field

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path


class ImportForm(forms.Form):
    file = forms.FileField(help_text="a JSON list exported from this page")

    def clean_file(self):
        f = self.cleaned_data["file"]
        limit = settings.CATALOG_IMPORT_MAX_BYTES
        if f.size > limit:
            raise ValidationError(f"the file is {f.size:,} bytes; the limit is {limit:,} bytes "
                                  "(CATALOG_IMPORT_MAX_BYTES)")
        return f


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
        if request.method == "POST":
            if form.is_valid():
                try:
                    result = self.apply_rows(read_json_file(form.cleaned_data["file"]))
                except (ValueError, ValidationError) as e:
                    form.add_error("file", e.messages if isinstance(e, ValidationError) else str(e))
                else:
                    messages.success(request, self.imported_message(result))
                    return redirect(f"admin:{self.model._meta.app_label}_{self.model._meta.model_name}_changelist")
        return render(request, "admin/catalog/import_json.html",
                      {**self.admin_site.each_context(request), "form": form,
                       "opts": self.model._meta, "title": f"Import {self.model._meta.verbose_name_plural}",
                       "max_bytes": settings.CATALOG_IMPORT_MAX_BYTES},
                      status=400 if form.is_bound else 200)

    def imported_message(self, result: "ImportResult") -> str:
        text = (f"Imported {result.created + result.updated} {self.model._meta.verbose_name_plural} "
                f"({result.created} new, {result.updated} updated)")
        if result.repeats:
            pairs = ", ".join(f"item {k} repeats item {first}" for k, first in result.repeats)
            text += f"; {pairs} and {'was' if len(result.repeats) == 1 else 'were'} counted once"
        return text + "."

    def apply_rows(self, rows) -> "ImportResult":
        """Check every row, then save them all in one transaction (or none: ValueError or
        ValidationError naming the item, its slug and the field)."""
        if not isinstance(rows, list):
            raise ValueError("the file must hold a JSON list of objects")
        result = ImportResult()
        first_of: dict[str, tuple[int, dict]] = {}
        with transaction.atomic():
            for k, row in enumerate(rows):
                if not isinstance(row, dict) or not isinstance(row.get("slug"), str) or not row["slug"]:
                    raise ValueError(f"item {k}: an object with a slug (a string) is required")
                check_row(k, row)
                slug = row["slug"]
                if slug in first_of:
                    first, earlier = first_of[slug]
                    if earlier != row:
                        raise ValueError(f"item {k} ({slug}): the same slug as item {first} with different "
                                         "fields; each slug may appear once in a file")
                    result.repeats.append((k, first))
                    continue
                first_of[slug] = (k, row)
                unknown = set(row) - set(self.json_fields)
                if unknown:
                    raise ValueError(f"item {k} ({slug}): unknown fields {sorted(unknown)}")
                obj = self.model.objects.filter(slug=slug).first()
                if obj is None:
                    obj = self.model(slug=slug)
                    result.created += 1
                else:
                    result.updated += 1
                for f, v in row.items():
                    setattr(obj, f, v)
                try:
                    obj.full_clean()
                except ValidationError as e:
                    raise ValidationError(f"item {k} ({slug}): " + "; ".join(
                        f"{name}: {' '.join(msgs)}" for name, msgs in e.message_dict.items()))
                obj.save()
        return result


@dataclass
class ImportResult:
    """Rows created and updated, and the (item, first item) pairs of repeated rows."""
    created: int = 0
    updated: int = 0
    repeats: list[tuple[int, int]] = field(default_factory=list)


def read_json_file(f):
    """The parsed file (size already checked by ImportForm); ValueError with a message when it
    is not UTF-8 JSON or nests too deeply for the parser."""
    from tierlab.api import loads     # here: tierlab.api imports DRF, whose settings import it

    raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"the file is not UTF-8 ({e.reason} at byte {e.start})")
    try:
        return loads(text, check=False)
    except ValueError as e:
        raise ValueError(f"the file is not valid JSON: {e}")


def check_row(k: int, row: dict) -> None:
    """Depth and storable strings, field by field, so the message names the row and field."""
    from tierlab.api import check_value

    try:
        check_value(row["slug"])
    except ValueError as e:
        raise ValueError(f"item {k}: slug: {e}")
    for name, value in row.items():
        try:
            check_value(name)
        except ValueError as e:
            raise ValueError(f"item {k} ({row['slug']}): a field name: {e}")
        try:
            check_value(value)
        except ValueError as e:
            raise ValueError(f"item {k} ({row['slug']}): {name}: {e}")
