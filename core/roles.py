"""Roles: who may do what, the role-checking view decorator and the navigation context."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

ROLE_REVIEWER = "reviewer"
ROLE_ADJUDICATOR = "adjudicator"
ROLE_ADMIN = "admin"
ROLES = (ROLE_REVIEWER, ROLE_ADJUDICATOR, ROLE_ADMIN)
# Who may do what: an adjudicator can do everything a reviewer can, an admin everything.
STAFF_ROLES = (ROLE_ADJUDICATOR, ROLE_ADMIN)


def role_of(user) -> str | None:
    """The user's role, or None for anonymous users and accounts without one (outsiders)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return ROLE_ADMIN
    profile = getattr(user, "profile", None)
    return profile.role if profile is not None else None


def require_role(*roles: str):
    """View decorator: anonymous users go to the login page; users without one of `roles` get 403."""

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapper(request, *args, **kwargs):
            if role_of(request.user) not in roles:
                raise PermissionDenied("Your role does not allow this page.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def role_context(request):
    """Template context: the current user's role, for navigation."""
    role = role_of(request.user)
    return {
        "user_role": role,
        "is_cprt_admin": role == ROLE_ADMIN,
        "is_cprt_staff": role in STAFF_ROLES,
    }
