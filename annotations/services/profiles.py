"""A user's labeling preferences (blur, stay after submit) and their Profile."""
from __future__ import annotations

from core.models import Profile
from core.roles import role_of


def blur_default(user) -> bool:
    profile = getattr(user, "profile", None)
    return True if profile is None else profile.blur_images_by_default


def stay_after_submit(user) -> bool:
    profile = getattr(user, "profile", None)
    return bool(profile is not None and profile.stay_after_submit)


def profile_for(user) -> Profile:
    """The user's Profile; superusers created without one get an admin profile on first use."""
    profile = getattr(user, "profile", None)
    if profile is None:
        profile, _ = Profile.objects.get_or_create(user=user, defaults={"role": role_of(user) or "reviewer"})
    return profile
