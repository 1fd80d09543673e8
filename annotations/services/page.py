"""What the labeling page shows: rows grouped by level, model suggestions, the others' labels (blind rule)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import taxonomy
from ..models import Annotator, Label, Labeling

VALUE_NAMES = {0.0: "No", 0.5: "Unsure", 1.0: "Yes"}


@dataclass
class Row:
    key: str
    level: int
    question: str
    value: float | None
    rationale: str
    suggestions: list = field(default_factory=list)  # [(annotator label, value name, rationale, value)]
    others: list = field(default_factory=list)  # [(annotator label, value name)]

    @property
    def suggested(self) -> dict | None:
        """The one suggestion row of this attribute: the value most models gave (a tie is Unsure), how many
        gave it, and each model's answer and rationale for the hover text (provenance)."""
        if not self.suggestions:
            return None
        counts: dict[float, int] = {}
        for s in self.suggestions:
            counts[s[3]] = counts.get(s[3], 0) + 1
        top = max(counts.values())
        winners = [v for v, n in counts.items() if n == top]
        value = winners[0] if len(winners) == 1 else 0.5
        provenance = "\n".join(f"{name}: {text}" + (f" — {why}" if why else "") for name, text, why, _ in self.suggestions)
        return {"value": value, "name": VALUE_NAMES.get(value, str(value)), "agree": counts.get(value, 0),
                "total": len(self.suggestions), "provenance": provenance}


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
    batch = labeling.image.batch
    if not submitted and batch is not None and batch.show_model_suggestions:
        chosen = list(batch.suggestion_annotators.values_list("pk", flat=True))
        labels = Label.objects.filter(image_id=labeling.image_id, annotator__kind=Annotator.KIND_MODEL)
        if chosen:
            labels = labels.filter(annotator_id__in=chosen)
        names = {}
        for label in labels.select_related("annotator", "attribute").order_by("annotator__name"):
            name = annotator_label(label.annotator, {})
            names[name] = True
            if label.attribute.key in rows:
                rows[label.attribute.key].suggestions.append((name, VALUE_NAMES.get(label.value, label.value), label.rationale, label.value))
        info["suggestions_from"] = list(names)
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


def _as_value(raw) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None
