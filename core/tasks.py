"""Celery tasks of the base layer: beat's tick, which /readyz reads (core/heartbeats.py), and the one
reconciler of every kind of job (core/reconcile.py)."""
from __future__ import annotations

from celery import shared_task

from . import heartbeats, reconcile


@shared_task(name="core.beat_tick")
def beat_tick() -> dict:
    return heartbeats.beat_tick()


@shared_task(name="core.reconcile_jobs")
def reconcile_jobs() -> dict:
    return reconcile.reconcile_all()
