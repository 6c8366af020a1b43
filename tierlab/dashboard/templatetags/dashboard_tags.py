"""The owner's panels of a page: share links (Copy, Revoke, a new one) and Rename / Delete."""

from django import template

from tierlab.dashboard.models import ShareLink
from tierlab.dashboard.variants import QUESTIONS

register = template.Library()


@register.inclusion_tag("dashboard/_share_panel.html", takes_context=True)
def share_panel(context, kind: str, target):
    request = context["request"]
    links = ShareLink.objects.filter(owner=request.user, **{kind: target})
    return {
        "kind": kind, "target": target, "request": request, "csrf_token": context.get("csrf_token"),
        "links": [{"link": link, "url": request.build_absolute_uri(link.get_absolute_url())}
                  for link in links[:20]],
    }


@register.inclusion_tag("dashboard/_variants.html", takes_context=True)
def variant_buttons(context, scenario):
    """Buttons that compare the scenario's variants for one question each; none for a
    recommendation model's (sharding, offload and checkpoint choices change nothing the
    engine reports for it: the comparison's columns were identical)."""
    questions = list(QUESTIONS.items()) if scenario.has_transformer else []
    return {"scenario": scenario, "questions": questions, "csrf_token": context.get("csrf_token")}


# kind -> (its API collection, the page a deleted one's owner is sent to)
_MANAGED = {"scenario": ("scenarios", "/scenarios/"), "comparison": ("comparisons", "/compare/"),
            "sweep": ("sweeps", "/compare/"), "plan": ("plans", "/compare/")}


@register.inclusion_tag("dashboard/_manage_panel.html")
def manage_panel(kind: str, target):
    """Rename and Delete of ``target`` (its owner's page only: the caller checks can_change);
    src/pages/share_panel.ts shows and drives it (PATCH / DELETE on its API URL)."""
    collection, after_delete = _MANAGED[kind]
    return {"kind": kind, "target": target, "api_url": f"/api/v1/{collection}/{target.pk}/",
            "after_delete_url": after_delete}
