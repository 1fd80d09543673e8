"""The interface every run kind implements (a benchmark is a folder: `inference/kinds/<key>/`).

A kind says what a run of it does with the stored data, and nothing else; the engine (chunks and
leases, the thread pool, retries and rate limits, provider batches, cost, cancel and resume) knows
kinds only through this class:

- `key`, `label`: `Run.task` holds the key; the label is what the launch form offers.
- launch: `render()` the exact texts and JSON schemas a run stores (`Run.prompt_text`), the prompt
  `versions`, `launch_errors()` for the launch form, `token_estimate()` for the cost estimate.
- items: the units of work. At launch `launch_items()` turns the selected images (and the run's
  validated `options`, see `clean_options()`) into the run's item ids (`Run.item_ids`; annotate and
  judge: the image ids; a benchmark's kind: e.g. expanded benchmark rows). A run stores one result per item.
  `items()` builds `Item`s (item id, primary image id, the image files its first request sends);
  `existing()` says which item ids can still be worked on (their data was not deleted since).
  `freeze_truth()` snapshots what the items mean for scoring where that data can change (`Run.truth`).
- `stages`: the requests made for one item, in order. The first stage sends the item's images; a
  later stage is text only and follows from what the earlier one answered (`carry`, JSON, which
  provider batches keep between their stages).
- `request()`: one stage's request (system text, user text, images, the answer's JSON schema);
  `model_for()`: the model a stage is sent to (default the run's; a text-only judge stage may name
  another model of the same provider).
- `apply()`: parse and validate one reply into the item's `Outcome` (score, labels, reasoning, raw,
  error); return the carry when a further stage follows, None when the outcome is final.
- `writes()` / `write()`: what the kind stores beside the `RunResult` (annotate: the model's labels),
  inside the result's transaction.
- `finished()`: the metrics hook, called on commit when a run of this kind finishes.
- `predictions_template` and `decorate_predictions()`: the run page's predictions table.

What the shared pages read (a benchmark is a folder: the pages never branch on a kind's key):
- `launch_form`: the kind's own launch fields (a small form; its cleaned_data becomes `Run.options`);
  `unavailable()`: None when a run of it can be launched now, else what to do first; `unit`: what its
  items are called ("images", "pairs", "persons", "items") by the estimate and the pages;
  `counterfactuals`: whether the counterfactual options (faces instruction, anonymized variants) apply;
  `modes`: the launch modes it takes; `providers`: the only providers it runs on (empty: any).
- `figures_url(run)`: the run's figures page (run page, `launch_run --json`, the API);
  `leaderboard_url()`: where runs of it are compared (None: nowhere).

An instance is bound to one run. It is built in the main thread of a chunk (or an ingest), where
`prepare()` may read the database; `request()` and `apply()` run on worker threads and must not.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from django import forms
from django.urls import reverse

from annotations.faces import variants as face_variants
from annotations.models import Image

from ..providers import ModelRequest, ProviderReply


@dataclass(frozen=True)
class Item:
    """One unit of work: its id (unique in the run; the kind defines it), the primary image its result
    is stored under (several items may share one), the image files its first request sends (N >= 0),
    and `context`, anything the kind's `request()` needs for this item (JSON-able: batch requests
    are built from it too)."""

    item_id: int
    image_id: int
    files: tuple[str, ...]
    context: dict | None = None


class Kind:
    do_not_call_in_templates: ClassVar[bool] = True  # pages read the class's declaration ({{ form.kind.label }})
    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    stages: ClassVar[tuple[str, ...]] = ()  # request names (at most 8 characters: batch requests store them)
    versions: ClassVar[tuple[str, ...]] = ()  # prompt versions, oldest first; the last is the default
    strategies: ClassVar[tuple[str, ...]] = ()  # the strategies a run may take ("" only when empty)
    default_strategy: ClassVar[str] = ""  # taken when the launch leaves the strategy blank ("": one must be chosen)
    output_tokens: ClassVar[dict[str, int]] = {}  # launch-time guess of output tokens per stage
    writes_labels: ClassVar[bool] = False
    # True: a run asks about the CPRT images its selection chooses (split, filters, sample). False: its
    # items come from the kind's own data (a benchmark's persons or pairs), and the image selection does not apply.
    selects_images: ClassVar[bool] = True  # a run gets a model annotator at launch; `write` stores labels under it
    predictions_template: ClassVar[str] = "kinds/_predictions.html"
    # What the shared pages read (see the module's docstring).
    launch_form: ClassVar[type[forms.Form] | None] = None  # its own launch fields; cleaned_data == Run.options
    unit: ClassVar[str] = "images"  # what one item is, in the plural: "images", "pairs", "persons", "items"
    counterfactuals: ClassVar[bool] = False  # the counterfactual-faces instruction and anonymized variants apply
    modes: ClassVar[tuple[str, ...]] = ("online", "batch")  # Run.MODES it takes (a local model has no batch API)
    providers: ClassVar[tuple[str, ...]] = ()  # the providers it runs on (empty: every provider that serves it)

    def __init__(self, run):
        self.run = run

    @cached_property
    def prompt_text(self) -> dict:
        """The run's stored texts and schemas (read when first needed: a kind built only for its
        `figures_url` leaves a deferred prompt_text unread)."""
        return self.run.prompt_text

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

    @classmethod
    def unavailable(cls) -> str | None:
        """None when a run of this kind can be launched now; else what to do first (shown on the
        launch page, and the launch is refused with it). Default: CPRT images with bytes exist."""
        if cls.selects_images and not Image.objects.exclude(file="").exists():
            return "import images first: the Import page, or manage.py import_vispr"
        return None

    @classmethod
    def clean_options(cls, options: dict) -> dict:
        """The run's kind-specific launch options, validated (stored in `Run.options`); raises
        ValueError with a clear message for what this kind refuses. Default: the kind's `launch_form`
        validates them (none are taken without one)."""
        if cls.launch_form is None:
            if options:
                raise ValueError(f"{cls.label or cls.key} runs take no options (got {', '.join(sorted(options))}).")
            return {}
        unknown = set(options) - set(cls.launch_form.base_fields)
        if unknown:
            raise ValueError(f"{cls.label or cls.key} runs take the options {', '.join(cls.launch_form.base_fields)} "
                             f"(not {', '.join(sorted(unknown))}).")
        form = cls.launch_form(options)
        if not form.is_valid():
            raise ValueError(" ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()))
        return dict(form.cleaned_data)

    def figures_url(self, run) -> str:
        """The page of this run's figures. Default (CPRT kinds): the CPRT metrics page of the run."""
        return reverse("scoring:run", args=[run.pk])

    @classmethod
    def leaderboard_url(cls) -> str | None:
        """The page where runs of this kind are compared; None when there is none."""
        return None

    @classmethod
    def launch_items(cls, image_ids: list[int], options: dict) -> list[int]:
        """The run's item ids for the selected images and its cleaned options, sorted (frozen in
        `Run.item_ids`). Default: one item per image, the item id being the image id."""
        return sorted(image_ids)

    @classmethod
    def freeze_truth(cls, item_ids: list[int]) -> dict:
        """What the run's items mean for scoring, frozen at launch (`Run.truth`), for kinds whose truth is
        imported data a re-import may replace (a benchmark's persons). Default: nothing (CPRT runs are scored against
        the scoring profile, which has its own audited history)."""
        return {}

    # --- execution (bound to one run) ------------------------------------------------------------

    def prepare(self) -> "Kind":
        """Read what the worker threads need (main thread, may query); returns self."""
        return self

    def existing(self, item_ids, with_bytes: bool = False) -> set[int]:
        """Which of these item ids can still be worked on (their data exists; `with_bytes`: and the
        image bytes are stored). Default: items are images."""
        found: set[int] = set()
        todo = sorted(item_ids)
        for i in range(0, len(todo), 900):  # stay under SQLite's bound-parameter limit
            images = Image.objects.filter(pk__in=todo[i : i + 900])
            found.update((images.exclude(file="") if with_bytes else images).values_list("pk", flat=True))
        return found

    def items(self, item_ids) -> list[Item]:
        """The items for these of the run's item ids (those whose image bytes are still stored), in id
        order. Default: items are images; a run on face-anonymized variants sends the variant instead
        (empty: no variant, an error)."""
        todo = list(Image.objects.filter(pk__in=list(item_ids)).exclude(file="").order_by("pk").values_list("pk", "file"))
        if self.run.face_variant:  # the pixel-level counterfactual: the model sees the anonymized variant
            files = face_variants.variant_files([pk for pk, _ in todo], self.run.face_variant)
            todo = [(pk, files.get(pk, "")) for pk, _ in todo]
        return [Item(pk, pk, (file,)) for pk, file in todo]

    def model_for(self, stage: str) -> str:
        """The model this stage's requests go to (of the run's provider)."""
        return self.run.model_name

    def request(self, stage: str, images: tuple, carry: dict | None, item: Item | None = None) -> ModelRequest:
        """One stage's request. The first stage gets the `item` and its `images` ((bytes, mime), ...);
        a later stage gets images=(), item=None and follows from `carry` alone (what the earlier
        stage's `apply` returned: batch mode keeps only that between stages)."""
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
