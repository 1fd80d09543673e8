"""The truth a MultiPriv run is scored against, frozen at launch [decision, docs/multipriv.md].

A re-import replaces a person's profile or images in place, so a finished run scored against the live
records would see its figures move. At launch the run's kind stores a snapshot of what each of its
items means (`Run.truth`); scoring reads only that snapshot. `changes()` compares the snapshot with
the records as they are now, for the run page to say that the release changed and to offer a
rescore (an admin's confirmed, audited POST that replaces the snapshot with the current truth).

Snapshot: {"frozen_at": ISO time, "source": "launch" | "migration" | "rescore", "items": {item id
(str): entry}}; profile entry: {"person", "profile" (present fields only), "profile_sha256"}; pair
entry: {"same_person", "first_id", "second_id", "first", "second" (labels as person_1/A1),
"first_sha256", "second_sha256"}.
"""
from __future__ import annotations

import hashlib
import json

from django.utils import timezone

from .models import Person, PersonImage, PersonPair


def snapshot(items: dict, source: str) -> dict:
    return {"frozen_at": timezone.now().isoformat(), "source": source, "items": items}


def fingerprint(truth: dict) -> str:
    """A short digest of the items' truth (what the figures depend on, and the images asked about)."""
    text = json.dumps(truth.get("items") or {}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def profile_items(person_ids) -> dict:
    persons = Person.objects.filter(pk__in=list(person_ids)).order_by("pk")
    return {str(p.pk): {"person": p.name, "profile": p.present_fields(), "profile_sha256": p.profile_sha256} for p in persons}


def _image_label(image: PersonImage) -> str:
    return f"{image.person.name}/{image.category}{image.index}"


def pair_items(pair_ids) -> dict:
    pairs = (PersonPair.objects.filter(pk__in=list(pair_ids)).select_related("first__person", "second__person").order_by("pk"))
    return {str(p.pk): {"same_person": p.same_person, "first_id": p.first_id, "second_id": p.second_id,
                        "first": _image_label(p.first), "second": _image_label(p.second),
                        "first_sha256": p.first.sha256, "second_sha256": p.second.sha256} for p in pairs}


def _profile_change(old: dict, new: dict) -> str | None:
    if old["profile"] == new["profile"]:
        return None
    fields = sorted(set(old["profile"]) | set(new["profile"]))
    differ = [f for f in fields if old["profile"].get(f) != new["profile"].get(f)]
    return f"{old['person']}: profile changed ({', '.join(differ)})"


def _pair_change(old: dict, new: dict) -> str | None:
    if old["same_person"] != new["same_person"]:
        return f"pair {old['first']} – {old['second']}: truth changed"
    replaced = [old[side] for side in ("first", "second") if old[f"{side}_sha256"] != new[f"{side}_sha256"]]
    return f"pair {old['first']} – {old['second']}: image {', '.join(replaced)} replaced" if replaced else None


def changes(frozen: dict, current: dict, kind: str) -> list[str]:
    """What differs between a run's frozen truth and the current one, one line per item ([] when nothing)."""
    old, new = frozen.get("items") or {}, current.get("items") or {}
    compare = _profile_change if kind == "multipriv-profile" else _pair_change
    out = []
    for key in sorted(old, key=int):
        if key not in new:
            name = old[key].get("person") or f"pair {old[key].get('first')} – {old[key].get('second')}"
            out.append(f"{name}: no longer in the imported data")
        elif line := compare(old[key], new[key]):
            out.append(line)
    return out
