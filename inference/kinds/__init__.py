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

__all__ = ["KINDS", "Item", "Kind", "bind", "catalogue", "choices", "get", "render"]


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


def render(task: str, version: str, strategy: str = "", counterfactual_faces: bool = False, tax=None) -> dict:
    """Everything a run of kind `task` sends, as stored in Run.prompt_text: the texts and the JSON schemas."""
    from annotations import taxonomy

    try:
        kind = get(task)
    except ValueError:
        raise ValueError(f"Unknown task {task!r}.") from None
    return kind.render(version, strategy, counterfactual_faces, tax or taxonomy.active())


def catalogue() -> list[dict]:
    """Every kind's prompt versions and strategies, rendered, for the prompts page."""
    from annotations import taxonomy

    tax = taxonomy.active()
    return [item for kind in KINDS.values() for item in kind.catalogue(tax)]
