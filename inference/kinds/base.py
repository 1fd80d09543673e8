"""The interface every run kind implements (a benchmark is a folder: `inference/kinds/<key>/`).

A kind says what a run of it does with the stored data, and nothing else; the engine (chunks and
leases, the thread pool, retries and rate limits, provider batches, cost, cancel and resume) knows
kinds only through this class:

- `key`, `label`: `Run.task` holds the key; the label is what the launch form offers.
- launch: `render()` the exact texts and JSON schemas a run stores (`Run.prompt_text`), the prompt
  `versions`, `launch_errors()` for the launch form, `token_estimate()` for the cost estimate.
- `items()`: the units of work a run expands from the stored data. An item is keyed by one image
  (a run stores one result per image) and sends any number of image files.
- `stages`: the requests made for one item, in order. The first stage sends the item's images; a
  later stage is text only and follows from what the earlier one answered (`carry`, JSON, which
  provider batches keep between their stages).
- `request()`: one stage's request (system text, user text, images, the answer's JSON schema).
- `apply()`: parse and validate one reply into the item's `Outcome` (score, labels, reasoning, raw,
  error); return the carry when a further stage follows, None when the outcome is final.
- `writes()` / `write()`: what the kind stores beside the `RunResult` (annotate: the model's labels),
  inside the result's transaction.
- `finished()`: the metrics hook, called on commit when a run of this kind finishes.
- `predictions_template` and `decorate_predictions()`: the run page's predictions table.

An instance is bound to one run. It is built in the main thread of a chunk (or an ingest), where
`prepare()` may read the database; `request()` and `apply()` run on worker threads and must not.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from annotations.faces import variants as face_variants
from annotations.models import Image

from ..providers import ModelRequest, ProviderReply


@dataclass(frozen=True)
class Item:
    """One unit of work: the image its result is stored under, and the image files its request sends."""

    image_id: int
    files: tuple[str, ...]


class Kind:
    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    stages: ClassVar[tuple[str, ...]] = ()  # request names (at most 8 characters: batch requests store them)
    versions: ClassVar[tuple[str, ...]] = ()  # prompt versions, oldest first; the last is the default
    strategies: ClassVar[tuple[str, ...]] = ()  # the strategies a run may take ("" only when empty)
    default_strategy: ClassVar[str] = ""  # taken when the launch leaves the strategy blank ("": one must be chosen)
    output_tokens: ClassVar[dict[str, int]] = {}  # launch-time guess of output tokens per stage
    writes_labels: ClassVar[bool] = False  # a run gets a model annotator at launch; `write` stores labels under it
    predictions_template: ClassVar[str] = "kinds/_predictions.html"

    def __init__(self, run):
        self.run = run
        self.prompt_text = run.prompt_text

    # --- launch -------------------------------------------------------------------------------

    @classmethod
    def default_version(cls) -> str:
        return cls.versions[-1]

    @classmethod
    def render(cls, version: str, strategy: str, counterfactual_faces: bool, tax) -> dict:  # pragma: no cover - abstract
        """Everything a run sends, as stored in Run.prompt_text: the texts and the JSON schemas."""
        raise NotImplementedError

    @classmethod
    def launch_errors(cls, data: dict) -> dict[str, str]:
        """field -> message for launch-form values this kind refuses (the version is checked by the form)."""
        errors = {}
        if cls.strategies and not data.get("strategy") and not cls.default_strategy:
            errors["strategy"] = f"{cls.key.capitalize()} runs need a strategy."
        if not cls.strategies and data.get("strategy"):
            errors["strategy"] = f"{cls.key.capitalize()} runs take no strategy (leave it blank)."
        return errors

    @classmethod
    def token_estimate(cls, prompt_text: dict, image_tokens: int) -> tuple[int, int]:
        """(input, output) tokens per item at launch: each stage's texts, the images with the first
        stage, and a later stage's input grows by the earlier stage's output."""
        per_in = per_out = 0
        for i, stage in enumerate(cls.stages):
            texts = prompt_text[stage]
            per_in += _text_tokens(texts["system"], texts["user"]) + (image_tokens * cls.images_per_item() if i == 0 else 0)
            per_in += cls.output_tokens.get(cls.stages[i - 1], 0) if i else 0
            per_out += cls.output_tokens.get(stage, 0)
        return per_in, per_out

    @classmethod
    def images_per_item(cls) -> int:
        return 1

    @classmethod
    def catalogue(cls, tax) -> list[dict]:
        """The prompts page's entries: {"title", "version", "texts": [(name, text)]}."""
        return []

    # --- execution (bound to one run) ------------------------------------------------------------

    def prepare(self) -> "Kind":
        """Read what the worker threads need (main thread, may query); returns self."""
        return self

    def items(self, image_ids) -> list[Item]:
        """The items for these of the run's images (those whose bytes are still stored), in id order.
        A run on face-anonymized variants sends the variant instead (empty: no variant, an error)."""
        todo = list(Image.objects.filter(pk__in=list(image_ids)).exclude(file="").order_by("pk").values_list("pk", "file"))
        if self.run.face_variant:  # the pixel-level counterfactual: the model sees the anonymized variant
            files = face_variants.variant_files([pk for pk, _ in todo], self.run.face_variant)
            todo = [(pk, files.get(pk, "")) for pk, _ in todo]
        return [Item(pk, (file,)) for pk, file in todo]

    def request(self, stage: str, images: tuple, carry: dict | None) -> ModelRequest:
        """One stage's request; `images` ((bytes, mime), ...) for the first stage, () for later ones."""
        texts = self.prompt_text[stage]
        return ModelRequest(texts["system"], texts["user"], stage, self.prompt_text["schemas"][stage], tuple(images))

    def apply(self, stage: str, out, reply: ProviderReply, carry: dict | None) -> dict | None:  # pragma: no cover - abstract
        """Fill `out` from `reply`; the carry (JSON) for the next stage, or None when `out` is final."""
        raise NotImplementedError

    def writes(self, out) -> bool:
        """Whether `write` stores anything for this outcome (such outcomes are written one by one;
        the others in bulk, without calling `write`)."""
        return False

    def write(self, out) -> None:
        """Store what belongs beside the item's RunResult (inside its transaction)."""

    def finished(self) -> None:
        """A run of this kind has just finished (called on commit): send what its metrics need."""

    def decorate_predictions(self, results) -> None:
        """Attach what `predictions_template` shows to a page of ok results."""


def _text_tokens(*texts: str) -> int:
    return sum(len(t) for t in texts) // 4 + 1
