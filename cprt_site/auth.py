"""The authentication backend: Django's ModelBackend, loading the user's Profile (the role) in the same query.

Every request resolves the user from the session and then checks the role (core.roles.role_of);
a join here saves one query per request.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class ProfileModelBackend(ModelBackend):
    def get_user(self, user_id):
        User = get_user_model()
        try:
            user = User._default_manager.select_related("profile").get(pk=user_id)
        except User.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None


def client_ip(request) -> str:
    """The client's address for django-axes (login throttling).

    Without proxies (CPRT_TRUSTED_PROXIES=0) it is the socket's address: X-Forwarded-For could be
    forged. Behind N trusted proxies that each append to X-Forwarded-For (nginx, and a TLS proxy in
    front of it), it is the N-th address from the right: the one the outermost trusted proxy saw.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    trusted = settings.CPRT_TRUSTED_PROXIES
    if not trusted:
        return remote
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    return hops[-trusted] if len(hops) >= trusted else remote
