"""The embedded demo's seeding: the drawn images (demo.drawing), their labels, demo accounts.

Nothing here is real data. `seed()` stores the images through the same cleaning path as
imports, adds two model annotators (the paper's consensus set: GPT-5.1 and Gemini 3 Flash, here with
seeded noise so they sometimes disagree) and one human reviewer, then computes consensus scores.

The demo accounts have fixed, printed passwords; that is acceptable only because they are demo
accounts, so seeding refuses to run when DEBUG is off unless forced.
"""
from __future__ import annotations

import random
from typing import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotations import label_version, taxonomy
from annotations.images import attach, clean_image
from annotations.models import Annotator, Image, Label, Labeling
from core.models import Profile
from core.audit import audit
from inference import benchmarks

from .runs import seed_runs
from .drawing import DEMO_SEED, HEIGHT, SCENES, WIDTH, intended_labels, noisy, obvious_keys, render, split_of, vispr_id  # noqa: F401 (the demo's public names)

DEMO_SOURCE = "demo"
PROMPT_VERSION = "demo-v1"
MODEL_ANNOTATORS = (("openai", "gpt-5.1"), ("gemini", "gemini-3-flash"))
DEMO_REVIEWER = "demo-reviewer"

# DEMO ONLY. Fixed so that the README can print them; never use these accounts outside a demo.
DEMO_ACCOUNTS = (
    # username, role, password
    ("admin", "admin", "demo-admin-password"),
    ("reviewer", "reviewer", "demo-reviewer-password"),
    ("adjudicator", "adjudicator", "demo-adjudicator-password"),
)


class DemoRefused(RuntimeError):
    """Seeding the demo is not allowed here (DEBUG off without --force)."""




# -------------------------------------------------------------------------------------------------
# Seeding


def _ensure_account(username: str, role: str, password: str | None, created: list[str]):
    """Create a demo account with its role; an existing account of that name is left exactly as it is."""
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User(username=username, is_superuser=role == "admin", is_staff=role == "admin")
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
        Profile.objects.create(user=user, role=role)
        created.append(username)
    return user


def _label_rows(image, annotator, values, attr_ids, rationale) -> list[Label]:
    return [
        Label(image=image, annotator=annotator, attribute_id=attr_ids[key], value=value, rationale=rationale)
        for key, value in values.items()
    ]


def seed(force: bool = False, log: Callable[[str], None] = lambda _msg: None) -> dict:
    """Create the demo data. Idempotent: whatever exists already is left as it is.

    Returns counts of what this call created. Raises DemoRefused when DEBUG is off and not forced.
    """
    if not settings.DEBUG and not force:
        raise DemoRefused(
            "Refusing to seed the demo: DEBUG is off, and the demo creates accounts with published "
            "passwords. Use it on a development machine, or pass --force if you really mean it."
        )
    from scoring.models import ScoringProfile
    from scoring.services.scores import recompute_scores

    tax = taxonomy.active()
    attr_ids = taxonomy.attribute_ids()
    missing = set(tax.keys) - set(attr_ids)
    if missing:
        raise RuntimeError(f"The active taxonomy lacks attributes {sorted(missing)}; run migrate.")
    created_accounts: list[str] = []
    counts = {"images": 0, "labels": 0, "labelings": 0}
    with transaction.atomic():
        for username, role, password in DEMO_ACCOUNTS:
            _ensure_account(username, role, password, created_accounts)
        reviewer_user = _ensure_account(DEMO_REVIEWER, "reviewer", None, created_accounts)
        human = Annotator.for_user(reviewer_user)
        models = []
        for provider, model_name in MODEL_ANNOTATORS:
            annotator = Annotator.for_model(provider, model_name, PROMPT_VERSION)
            if not annotator.is_demo:
                annotator.is_demo = True
                annotator.save(update_fields=["is_demo"])
            models.append(annotator)

        labelled = set(
            Label.objects.filter(image__source=DEMO_SOURCE, annotator__in=[*models, human])
            .values_list("image__vispr_id", "annotator_id")
            .distinct()
        )
        new_labels: list[Label] = []
        for index, scene in enumerate(SCENES):
            image = Image.objects.filter(vispr_id=vispr_id(index)).first()
            if image is None:
                image = Image(vispr_id=vispr_id(index), split=split_of(index), source=DEMO_SOURCE)
                attach(image, clean_image(render(index)))
                image.save()
                counts["images"] += 1
            elif image.source != DEMO_SOURCE:
                raise RuntimeError(f"Image {image.vispr_id} exists and is not demo data; not touching it.")
            truth = intended_labels(scene, tax.keys)
            keep = obvious_keys(scene, tax.level_of)
            for n, annotator in enumerate(models):
                if (image.vispr_id, annotator.id) in labelled:
                    continue
                rng = random.Random(f"{DEMO_SEED}-{index}-model-{n}")
                values = noisy(truth, rng, present_rate=0.12 + 0.06 * n, absent_rate=0.02 + 0.02 * n, keep=keep)
                new_labels += _label_rows(image, annotator, values, attr_ids, f"demo: drawn {scene.title.lower()}")
            if index % 2 == 0 and (image.vispr_id, human.id) not in labelled:
                values = noisy(truth, random.Random(f"{DEMO_SEED}-{index}-human"), present_rate=0.08, absent_rate=0.02, keep=keep)
                new_labels += _label_rows(image, human, values, attr_ids, "")
                _, made = Labeling.objects.get_or_create(
                    image=image,
                    annotator=human,
                    defaults={"status": Labeling.STATUS_SUBMITTED, "submitted_at": timezone.now(), "note": "demo labels"},
                )
                counts["labelings"] += int(made)
        Label.objects.bulk_create(new_labels)
        label_version.bump([m.id for m in models] + [human.id])  # seeded past the label-writing API: counted as it would
        counts["labels"] = len(new_labels)

        profile = ScoringProfile.active()
        if set(profile.consensus_annotators.values_list("id", flat=True)) != {m.id for m in models}:
            profile.consensus_annotators.set(models)
        result = recompute_scores(profile)
        counts["runs"] = len(seed_runs(log))  # demo judge and annotate runs over the scored images
        # Every benchmark folder's demo data, through the registry (the demo never imports a benchmark).
        counts["runs"] += sum(made.get("runs", 0) for made in benchmarks.seed_demo(log).values())
        if counts["images"] or counts["labels"] or created_accounts:
            audit(None, "demo.seed", profile, **counts, accounts=created_accounts)
    log(
        f"Demo data: {counts['images']} new images, {counts['labels']} new labels, "
        f"{counts['labelings']} new labelings, accounts created: {', '.join(created_accounts) or 'none'}; "
        f"{result['scored']} images scored under profile {profile.label}."
    )
    return {**counts, "accounts": created_accounts, **result}


def logins_text() -> str:
    rows = "\n".join(f"  {username:<12} {password:<28} ({role})" for username, role, password in DEMO_ACCOUNTS)
    return (
        "Demo logins (DEMO ONLY - fixed, published passwords; never use these accounts with real data):\n"
        + rows
        + "\n  (Only accounts the demo creates get these; an existing account of the same name is left as it is.)"
    )
