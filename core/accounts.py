"""Account safety beyond the login form.

- A password change revokes the account's API tokens (whatever changed it: the page, the admin,
  `changepassword`), so a leaked token dies with the password.
- While django-axes has the account locked out after failed logins, its API token is refused too.
- The password-change page counts a wrong current password as a failed login (django-axes), and
  refuses further attempts while locked out, exactly like the login page.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off, get_failure_limit, get_lockout_response
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_login_failed
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed


def account_locked_out(request, username: str) -> bool:
    """True while any address has the account locked out (failures at the limit within the cool-off)."""
    limit = get_failure_limit(request, {"username": username})
    attempts = AccessAttempt.objects.filter(username=username, failures_since_start__gte=limit)
    cool_off = get_cool_off(request)
    if cool_off:
        attempts = attempts.filter(attempt_time__gte=timezone.now() - cool_off)
    return attempts.exists()


def revoke_tokens_on_password_change(sender, instance, update_fields=None, raw=False, **kwargs) -> None:
    """pre_save of the user model: a new password hash deletes the user's API tokens."""
    if raw or instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = get_user_model()._default_manager.filter(pk=instance.pk).values_list("password", flat=True).first()
    if stored is not None and stored != instance.password:
        Token.objects.filter(user_id=instance.pk).delete()


class LockoutAwareTokenAuthentication(TokenAuthentication):
    """DRF token authentication that refuses the token of an account that is locked out."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is not None and account_locked_out(request, result[0].get_username()):
            raise AuthenticationFailed("This account is locked out after repeated failed logins; try again later.")
        return result


if TYPE_CHECKING:  # what the mixin is mixed into, for mypy
    from django.contrib.auth.views import PasswordChangeView as _PasswordChangeBase
else:
    _PasswordChangeBase = object


class ThrottledPasswordChangeMixin(_PasswordChangeBase):
    """For a PasswordChangeView: a wrong current password is a failed login for django-axes."""

    def _credentials(self) -> dict:
        return {"username": self.request.user.get_username()}

    def post(self, request, *args, **kwargs):
        if not AxesProxyHandler.is_allowed(request, self._credentials()):
            return get_lockout_response(request, None, self._credentials())
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        if "old_password" in form.errors:
            # The axes middleware turns the answer into its lockout page once the limit is reached.
            user_login_failed.send(sender=type(self), credentials=self._credentials(), request=self.request)
        return super().form_invalid(form)
