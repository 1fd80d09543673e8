"""Celery tasks of the base layer: beat's tick, which /readyz reads (core/heartbeats.py)."""
from __future__ import annotations

from celery import shared_task

from . import heartbeats


@shared_task(name="core.beat_tick")
def beat_tick() -> dict:
    return heartbeats.beat_tick()
