"""`{% submission_token %}`: the hidden one-time token of a launch form (core.idempotency)."""
from __future__ import annotations

import secrets

from django import template
from django.utils.html import format_html

from core.idempotency import SUBMISSION_FIELD

register = template.Library()


@register.simple_tag
def submission_token() -> str:
    """A new token at every render: one form shown = one launch, however often it is submitted."""
    return format_html('<input type="hidden" name="{}" value="{}">', SUBMISSION_FIELD, secrets.token_urlsafe(24))
