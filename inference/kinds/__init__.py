"""Run kinds: one package per kind (a benchmark is a folder), all with the interface in `base`.

Adding a kind: its folder here and one line in KINDS (docs/background-jobs.md, "How to add a kind").
"""
from __future__ import annotations

from .annotate import AnnotateKind
from .base import Item, Kind
from .judge import JudgeKind

KINDS: dict[str, type[Kind]] = {
    AnnotateKind.key: AnnotateKind,
    JudgeKind.key: JudgeKind,
}

__all__ = ["KINDS", "Item", "Kind", "bind", "choices", "get"]


def get(key: str) -> type[Kind]:
    try:
        return KINDS[key]
    except KeyError:
        raise ValueError(f"Unknown run kind {key!r}; known: {', '.join(KINDS)}.") from None


def bind(run) -> Kind:
    """The run's kind, bound to it and prepared (main thread: may query)."""
    return get(run.task)(run).prepare()


def choices() -> list[tuple[str, str]]:
    return [(key, cls.label) for key, cls in KINDS.items()]
