"""Applying a recipe's rules to images' VISPR labels: pure functions over plain values (no ORM).

Deterministic by construction: candidates are ordered by VISPR id (never by database order or
primary key), and a quota is a `random.Random` sample seeded with the recipe's seed and the rule's
name (a string seed is hashed with SHA-512 by Python's `random`, the same on every platform), so the
same labels, recipe and seed give the same members on SQLite and PostgreSQL, in any insertion order.
"""
from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field

from .recipes import Recipe, Rule


def matches(labels: frozenset[str] | set[str], rule: Rule) -> bool:
    """The rule takes an image with these VISPR labels: one of `any` present, none of `none`, and
    with `only`, no label outside `any`."""
    wanted = set(rule.any)
    if not labels & wanted or labels & set(rule.none):
        return False
    return not rule.only or labels <= wanted


def sample(vispr_ids: list[str], quota: int | None, seed: int, rule_name: str) -> list[str]:
    """The quota's members among the candidates (all when no quota or enough room), sorted."""
    ordered = sorted(vispr_ids)
    if quota is None or quota >= len(ordered):
        return ordered
    return sorted(random.Random(f"{seed}:{rule_name}").sample(ordered, quota))


@dataclass
class Outcome:
    candidates: dict[str, list[str]] = field(default_factory=dict)  # rule -> VISPR ids it matched
    selected: dict[str, list[str]] = field(default_factory=dict)  # rule -> VISPR ids kept (quota applied)

    @property
    def members(self) -> list[str]:
        return sorted(set(itertools.chain.from_iterable(self.selected.values())))

    @property
    def rule_counts(self) -> dict[str, int]:
        return {rule: len(ids) for rule, ids in self.selected.items()}

    @property
    def candidate_counts(self) -> dict[str, int]:
        return {rule: len(ids) for rule, ids in self.candidates.items()}

    @property
    def overlaps(self) -> dict[str, int]:
        """'a & b' -> images both rules selected, for every pair of rules (in recipe order)."""
        sets = {rule: set(ids) for rule, ids in self.selected.items()}
        return {f"{a} & {b}": len(sets[a] & sets[b]) for a, b in itertools.combinations(sets, 2)}


class Collector:
    """Feed images one by one (in any order); `finish()` applies the quotas."""

    def __init__(self, recipe: Recipe):
        self.recipe = recipe
        self.rules = [(rule, set(recipe.splits_of(rule))) for rule in recipe.rules]
        self.outcome = Outcome(candidates={rule.name: [] for rule in recipe.rules})

    def add(self, vispr_id: str, vispr_split: str, labels) -> None:
        present = frozenset(labels or ())
        for rule, splits in self.rules:
            if vispr_split in splits and matches(present, rule):
                self.outcome.candidates[rule.name].append(vispr_id)

    def finish(self) -> Outcome:
        for rule in self.recipe.rules:
            self.outcome.selected[rule.name] = sample(self.outcome.candidates[rule.name], rule.quota, self.recipe.seed, rule.name)
        return self.outcome


def labels_digest(rows: list[tuple[str, list[str]]]) -> str:
    """sha256 of the stored VISPR labels of a split: one line `id<TAB>sorted labels` per image, in id order."""
    h = hashlib.sha256()
    for vispr_id, labels in sorted(rows):
        h.update(f"{vispr_id}\t{','.join(sorted(labels))}\n".encode())
    return h.hexdigest()
