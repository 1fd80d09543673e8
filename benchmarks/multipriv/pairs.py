"""The re-identification pairs [decision, docs/benchmarks.md]: every pair of two images of one person
(positives), and as many pairs of images of two different persons (negatives), drawn with a seed
from all such pairs; `limit` keeps a balanced, seeded subset. The same seed and data give the same pairs."""
from __future__ import annotations

import itertools
import random
from collections import defaultdict

from django.db import transaction

from .models import PersonImage, PersonPair


def candidate_pairs(seed: int, limit: int | None = None) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(positives, negatives) as sorted (image id, image id) tuples."""
    by_person: dict[int, list[int]] = defaultdict(list)
    for pk, person_id in PersonImage.objects.order_by("pk").values_list("pk", "person_id"):
        by_person[person_id].append(pk)
    positives = [pair for ids in by_person.values() for pair in itertools.combinations(sorted(ids), 2)]
    owner = {pk: person for person, ids in by_person.items() for pk in ids}
    everything = sorted(owner)
    rng = random.Random(seed)
    wanted = len(positives) if limit is None else min(len(positives), limit // 2)
    positives = sorted(rng.sample(sorted(positives), wanted)) if wanted < len(positives) else sorted(positives)
    negatives_all = [(a, b) for a, b in itertools.combinations(everything, 2) if owner[a] != owner[b]]
    negatives = sorted(rng.sample(negatives_all, min(len(negatives_all), wanted)))
    return positives, negatives


@transaction.atomic
def pair_ids(seed: int, limit: int | None = None) -> list[int]:
    """The PersonPair ids of the seeded, balanced pair set (created when missing), sorted."""
    positives, negatives = candidate_pairs(seed, limit)
    wanted = [(a, b, True) for a, b in positives] + [(a, b, False) for a, b in negatives]
    PersonPair.objects.bulk_create([PersonPair(first_id=a, second_id=b, same_person=s) for a, b, s in wanted], ignore_conflicts=True)
    found = {(a, b): pk for pk, a, b in PersonPair.objects.filter(first_id__in={a for a, _, _ in wanted}).values_list("pk", "first_id", "second_id")}
    return sorted(found[(a, b)] for a, b, _ in wanted)
