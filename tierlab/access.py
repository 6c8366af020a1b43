"""Who may see and change what. The rule lives here; every API view and page asks here.

- **Owner**: sees and changes their scenarios, runs, comparisons and sweeps.
- **Team member**: a team is a Django group (``auth.Group``, managed in the admin). Anyone
  who shares a group with the owner sees the owner's objects, read-only: lists, pages, runs,
  reports and downloads. They may copy what they see into their own account (duplicate,
  variants) but not change it: starting a run, cancelling a sweep, sharing it, or using it
  in a comparison or a sweep is the owner's (403).
- **Anyone else**: 404, as if the object did not exist.
- **A share link** shows one object read-only to whoever has its token, with no account
  (``tierlab.dashboard.sharing``); a revoked one answers 410.
- **Staff** edit the catalog in the admin; the catalog API is read-only for everyone.

Querysets: ``Model.objects.visible_to(user)`` and ``Model.objects.owned_by(user)``. DRF
viewsets filter with ``visible_to`` and declare ``OwnerCanChange``; pages and plain API
views use ``get_visible_or_404`` and ``get_changeable_or_404``.
"""

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import Q
from django.shortcuts import get_object_or_404
from rest_framework import permissions

READ_ONLY_MESSAGE = "Only its owner can change this; your team can view it."


def teammates(user) -> models.QuerySet:
    """Ids of the users who share a group with ``user`` (a subquery, evaluated by the database)."""
    return get_user_model().objects.filter(groups__user=user).values("pk")


class OwnedQuerySet(models.QuerySet):
    """Rows with an owner; ``owner_field`` is the path from the row to its owner."""

    owner_field = "owner"

    def owned_by(self, user):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(**{self.owner_field: user})

    def visible_to(self, user):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(Q(**{self.owner_field: user}) | Q(**{f"{self.owner_field}__in": teammates(user)}))


class RunQuerySet(OwnedQuerySet):
    owner_field = "scenario__owner"


def owner_id_of(obj) -> int | None:
    """The owner's id: the object's own, or (a run) its scenario's."""
    if hasattr(obj, "owner_id"):
        return obj.owner_id
    return obj.scenario.owner_id


def can_change(user, obj) -> bool:
    return bool(getattr(user, "is_authenticated", False)) and owner_id_of(obj) == user.pk


def get_visible_or_404(model_or_queryset, user, **lookup):
    """The object if ``user`` may see it, else 404 (never 403: its existence is not told)."""
    queryset = model_or_queryset if isinstance(model_or_queryset, models.QuerySet) \
        else model_or_queryset.objects.all()
    return get_object_or_404(queryset.visible_to(user), **lookup)


def get_changeable_or_404(model_or_queryset, user, **lookup):
    """The object if ``user`` owns it; 404 if they cannot see it, 403 if they only see it."""
    obj = get_visible_or_404(model_or_queryset, user, **lookup)
    if not can_change(user, obj):
        raise PermissionDenied(READ_ONLY_MESSAGE)
    return obj


class OwnerCanChange(permissions.BasePermission):
    """DRF: reading is for whoever the view's queryset shows the object to (``visible_to``);
    any other method is for its owner. Declared on each viewset, checked by ``get_object``."""

    message = READ_ONLY_MESSAGE

    def has_object_permission(self, request, view, obj):
        return request.method in permissions.SAFE_METHODS or can_change(request.user, obj)


API_PERMISSIONS = [permissions.IsAuthenticated, OwnerCanChange]
