"""The audit log: `audit()` records an action worth knowing (label change, adjudication, job launch, export)."""
from __future__ import annotations

from .models import AuditEvent


def audit(actor, action: str, target=None, **data) -> None:
    """Record an action worth knowing (label change, adjudication, job launch, export)."""
    AuditEvent.objects.create(
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        action=action,
        target_type=target.__class__.__name__ if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        data=data,
    )
