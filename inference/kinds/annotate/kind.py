"""The annotate kind: stage 1 sends the image and asks, per attribute, whether it is inferable (with
reasoning); stage 2 sends the model's own stage-1 answers back (no image) and asks for 0 / 0.5 / 1.
The labels are written under the run's model annotator; when a run finishes, scoring rescores the
profiles whose consensus includes that model."""
from __future__ import annotations

from functools import partial

from django.db import transaction

from annotations import taxonomy

from ... import prompts, run_labels, signals
from ...outcomes import classify, reply_record
from ...providers import ModelRequest
from ..base import Kind
from .labels import write_labels
from .schema import Stage1Answer, Stage2Answer, stage1_choices, stage1_json_schema, stage2_json_schema


class AnnotateKind(Kind):
    key = "annotate"
    label = "annotate the 22 attributes"
    stages = ("stage1", "stage2")
    versions = prompts.ANNOTATE_VERSIONS
    output_tokens = {"stage1": 1500, "stage2": 250}
    writes_labels = True
    predictions_template = "kinds/annotate/_predictions.html"

    @classmethod
    def render(cls, version, strategy, counterfactual_faces, tax) -> dict:
        if strategy or counterfactual_faces:
            raise ValueError("Annotate runs take no strategy and no counterfactual instruction.")
        return {
            **prompts.annotate_prompts(version, tax),
            "schemas": {"stage1": stage1_json_schema(tax.keys, prompts.STAGE1_CHOICES[version]), "stage2": stage2_json_schema(tax.keys)},
        }

    @classmethod
    def launch_errors(cls, data: dict) -> dict[str, str]:
        errors = super().launch_errors(data)
        if data.get("counterfactual_faces"):
            errors["counterfactual_faces"] = "The counterfactual-faces instruction applies to judge runs only."
        if data.get("face_variant"):
            errors["face_variant"] = "Anonymized images can be judged only (annotate runs label the originals)."
        return errors

    @classmethod
    def catalogue(cls, tax) -> list[dict]:
        items = []
        for version in cls.versions:
            p = prompts.annotate_prompts(version, tax)
            items.append({
                "title": f"{prompts.version_label(version)} · two-stage annotation",
                "version": version,
                "texts": [("stage 1 system", p["stage1"]["system"]), ("stage 1 user", p["stage1"]["user"]),
                          ("stage 2 system", p["stage2"]["system"]), ("stage 2 user (template)", p["stage2"]["user"])],
            })
        return items

    def prepare(self):
        self.keys = taxonomy.active().keys
        self.choices = stage1_choices(self.prompt_text.get("schemas", {}).get("stage1", {}))  # annotate-v2: yes / no only
        self.attribute_ids = taxonomy.attribute_ids()
        return self

    def _stage1(self, carry: dict) -> Stage1Answer:
        return Stage1Answer.model_validate(carry["answers"], context={"keys": self.keys})

    def request(self, stage, images, carry, item=None):
        if stage == "stage1":
            return super().request(stage, images, carry)
        answers = {k: v.model_dump() for k, v in self._stage1(carry).answers.items()}
        texts = self.prompt_text["stage2"]
        return ModelRequest(texts["system"], prompts.stage2_user_text(texts["user"], answers), "stage2", self.prompt_text["schemas"]["stage2"])

    def apply(self, stage, out, reply, carry):
        if stage == "stage1":
            out.raw = {"stage1": reply_record(reply)}
            out.tokens_in, out.tokens_out, out.latency_ms = reply.tokens_in, reply.tokens_out, reply.latency_ms
            out.outcome, stage1, out.error = classify(reply, Stage1Answer, {"keys": self.keys, "choices": self.choices})
            if stage1 is None:
                return None
            out.error = ""
            # What stage 2 needs (a provider batch keeps it between its two request files).
            return {"record": out.raw["stage1"], "answers": stage1.model_dump()}
        stage1 = self._stage1(carry)
        out.raw.setdefault("stage1", carry["record"])
        out.raw["stage2"] = reply_record(reply)
        out.tokens_in += reply.tokens_in
        out.tokens_out += reply.tokens_out
        out.latency_ms += reply.latency_ms
        out.outcome, stage2, error = classify(reply, Stage2Answer, {"keys": self.keys})
        out.error = f"stage 2: {error}" if error else ""
        if stage2 is not None:
            out.labels = {k: (v, stage1.answers[k].reasoning) for k, v in stage2.labels.items()}
        return None

    def writes(self, out) -> bool:
        return bool(out.labels)

    def write(self, out) -> None:
        write_labels(self.run, out, self.attribute_ids)

    def finished(self) -> None:
        transaction.on_commit(partial(signals.annotate_run_finished.send, sender=type(self.run), run=self.run))

    def decorate_predictions(self, results) -> None:
        summaries = run_labels.label_summaries(self.run, [r.image_id for r in results])
        for result in results:
            result.labels_summary = summaries.get(result.image_id)
