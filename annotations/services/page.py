"""What the labeling page shows: rows grouped by level, model suggestions, the others' labels (blind rule)."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, Q

from .. import taxonomy
from ..hooks import annotator_provenance
from ..models import Annotator, Batch, Label, Labeling

VALUE_NAMES = {0.0: "No", 0.5: "Unsure", 1.0: "Yes"}
ORIGINS = ("demo", "stand-in")  # a suggestion row is badged with the first found among its models


@dataclass
class Row:
    key: str
    level: int
    question: str
    value: float | None
    rationale: str
    suggestions: list = field(default_factory=list)  # [(annotator label, value name, rationale, value)]
    origins: set = field(default_factory=set)  # where the suggestions came from: "demo", "stand-in", "real" (annotations.hooks)
    others: list = field(default_factory=list)  # [(annotator label, value name)]

    @property
    def suggested(self) -> dict | None:
        """The one suggestion row of this attribute: the value most models gave (a tie is Unsure), how many
        gave it, each model's answer and rationale for the hover text (provenance), and `origin`, the least
        real source among them ("demo", "stand-in" or "real") for the provenance badge."""
        if not self.suggestions:
            return None
        counts: dict[float, int] = {}
        for s in self.suggestions:
            counts[s[3]] = counts.get(s[3], 0) + 1
        value = suggested_value([s[3] for s in self.suggestions])
        provenance = "\n".join(f"{name}: {text}" + (f" — {why}" if why else "") for name, text, why, _ in self.suggestions)
        origin = next((o for o in ORIGINS if o in self.origins), "real")
        return {"value": value, "name": VALUE_NAMES.get(value, str(value)), "agree": counts.get(value, 0),
                "total": len(self.suggestions), "provenance": provenance, "origin": origin}


def suggested_value(values: list[float]) -> float:
    """The suggestion row's value from the models' answers: the value most models gave, a tie Unsure (0.5)."""
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    top = max(counts.values())
    winners = [v for v, n in counts.items() if n == top]
    return winners[0] if len(winners) == 1 else 0.5


@dataclass
class LevelGroup:
    number: int
    name: str
    rows: list


def annotator_label(annotator: Annotator, human_numbers: dict) -> str:
    if annotator.kind == Annotator.KIND_MODEL:
        return f"{annotator.provider}/{annotator.model_name} · prompt {annotator.prompt_version}"
    if annotator.kind == Annotator.KIND_HUMAN:
        # Other reviewers stay anonymous on the labeling page; the history page names them for staff.
        number = human_numbers.setdefault(annotator.pk, len(human_numbers) + 1)
        return f"reviewer #{number}"
    return annotator.name


def page_rows(labeling: Labeling, values: dict | None = None, rationales: dict | None = None) -> tuple[list[LevelGroup], dict]:
    """Rows grouped by level, filled from `values` (posted data) or the labeling's working copy.

    Blind by default: model suggestions only when the image's batch turns them on and the labeling
    is not submitted; every other annotator's labels only after submission.
    """
    tax = taxonomy.active()
    values = labeling.draft_values if values is None else values
    rationales = labeling.draft_rationales if rationales is None else rationales
    rows = {a.key: Row(a.key, a.level, a.question, _as_value(values.get(a.key)), rationales.get(a.key, "")) for a in tax.attributes}
    info = {"suggestions_from": [], "compared_with": []}
    submitted = labeling.status == Labeling.STATUS_SUBMITTED
    names = {}
    shown = suggestion_labels(labeling)
    origins = annotator_provenance({label.annotator.name for label in shown}) if shown else {}
    for label in shown:
        name = annotator_label(label.annotator, {})
        names[name] = origins.get(label.annotator.name, "real")
        if label.attribute.key in rows:
            rows[label.attribute.key].suggestions.append((name, VALUE_NAMES.get(label.value, label.value), label.rationale, label.value))
            rows[label.attribute.key].origins.add(origins.get(label.annotator.name, "real"))
    info["suggestions_from"] = list(names.items())  # (model, "demo" | "stand-in" | "real")
    if submitted:
        humans: dict = {}
        names = {}
        for label in (
            Label.objects.filter(image_id=labeling.image_id)
            .select_related("annotator", "attribute")
            .order_by("annotator__kind", "annotator_id")
        ):
            if label.annotator_id == labeling.annotator_id:
                continue
            name = annotator_label(label.annotator, humans)
            names[name] = True
            if label.attribute.key in rows:
                rows[label.attribute.key].others.append((name, VALUE_NAMES.get(label.value, label.value)))
        info["compared_with"] = list(names)
    groups = [LevelGroup(n, tax.level_names.get(n, f"Level {n}"), [r for r in rows.values() if r.level == n]) for n in (1, 2, 3, 4)]
    return groups, info


def suggestion_labels(labeling: Labeling) -> list[Label]:
    """The model labels shown to the reviewer of `labeling` as suggestions: only while it is not submitted and only
    where the image's batch turns suggestions on (from its chosen model annotators; none chosen: every model)."""
    batch = labeling.image.batch
    if labeling.status == Labeling.STATUS_SUBMITTED or batch is None or not batch.show_model_suggestions:
        return []
    chosen = Batch.suggestion_annotators.through.objects.filter(batch_id=batch.pk)
    labels = Label.objects.filter(image_id=labeling.image_id, annotator__kind=Annotator.KIND_MODEL).filter(
        Q(annotator_id__in=chosen.values("annotator_id")) | ~Exists(chosen))  # one query, however the batch is set
    return list(labels.select_related("annotator", "attribute").order_by("annotator__name"))


def suggestions_in_view(labeling: Labeling) -> tuple[list[str], dict[str, float]]:
    """What the labeling page and the API show of the models right now: the model annotators' names (sorted) and,
    per attribute of the active taxonomy, the suggestion row's value. Empty when no suggestion is shown."""
    keys = set(taxonomy.active().keys)
    per_key: dict[str, list[float]] = {}
    names = set()
    for label in suggestion_labels(labeling):
        names.add(label.annotator.name)
        if label.attribute.key in keys:
            per_key.setdefault(label.attribute.key, []).append(label.value)
    return sorted(names), {key: suggested_value(values) for key, values in sorted(per_key.items())}


def _as_value(raw) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None
