"""The launch form: the options every run shares, plus the chosen kind's own fields (`Kind.launch_form`,
bound with the prefix "opt": its cleaned data is the run's options), validated strictly; unavailable
providers and kinds are refused with what to do.

Which shared fields apply is read from the kind's declaration (`strategies`, `counterfactuals`,
`selects_images`, `modes`); the page shows only those (`LaunchForm.shown`). The page, the API and
`manage.py launch_run` all build this form (the last two through `LaunchForm.from_values`)."""
from __future__ import annotations

from django import forms
from django.core.validators import RegexValidator

from annotations import taxonomy
from annotations.datasets import versions as dataset_versions
from annotations.faces import variants as face_variants

from . import kinds, prompts
from .models import Run, RunResult
from .providers import PROVIDERS, availability
from .selection import Selection
from .launching import LaunchSpec

MAX_CONCURRENCY = 256
KIND_PREFIX = "opt"  # the kind's own fields are posted as opt-<name>
ALWAYS_SHOWN = ("task", "provider", "model_name", "prompt_version", "concurrency")
SELECTION_FIELDS = ("split", "dataset_version", "attribute", "attribute_value", "level", "from_run", "min_score",
                    "also_from_runs", "sample_size", "seed")


def flag_fields() -> list[tuple[str, str, forms.Field]]:
    """The kinds' own launch fields that launch_run (as --NAME) and the API (as a top-level key) also take
    by name, beside `--option NAME=VALUE` / `options`: each launch form's `flags`, under its `aliases`
    name where it has one. (top-level name, help text naming the kinds, the field), one per name."""
    found: dict[str, tuple[list[str], forms.Field]] = {}
    for kind in kinds.KINDS.values():
        form = kind.launch_form
        if form is None:
            continue
        alias_of = {name: alias for alias, name in getattr(form, "aliases", {}).items()}
        for name in getattr(form, "flags", ()):
            field = form.base_fields[name]
            helps, _ = found.setdefault(alias_of.get(name, name), ([], field))
            helps.append(f"{kind.label} runs: {field.help_text or field.label or name}")
    return [(name, " ".join(helps), field) for name, (helps, field) in found.items()]


def shown_fields(kind) -> frozenset[str]:
    """The shared launch fields that apply to runs of this kind (read from its declaration)."""
    shown = set(ALWAYS_SHOWN)
    if kind.strategies:
        shown.add("strategy")
    if kind.counterfactuals:
        shown.update(("counterfactual_faces", "face_variant"))
    if kind.selects_images:
        shown.update(SELECTION_FIELDS)
    if len(kind.modes) > 1:
        shown.add("mode")
    return frozenset(shown)


def serving(kind) -> list[str]:
    """The providers that run this kind, in PROVIDERS order."""
    return [name for name, cls in PROVIDERS.items() if name in kind.providers or not (cls.exclusive or kind.providers)]


def default_provider(kind, found: dict) -> str:
    """The provider the form starts with: the first available one that serves this kind, else the first
    that serves it (shown unavailable, with why)."""
    names = serving(kind)
    return next((name for name in names if found[name].available), names[0] if names else "")


class ProviderSelect(forms.Select):
    """A select whose unavailable providers are disabled, with the reason in the label."""

    def __init__(self, *args, unavailable: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.unavailable = unavailable or {}

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if value in self.unavailable:
            option["attrs"]["disabled"] = True
            option["label"] = f"{label} — unavailable: {self.unavailable[value]}"
        return option


class LaunchForm(forms.Form):
    task = forms.ChoiceField(choices=kinds.choices)
    provider = forms.ChoiceField(choices=[(name, cls.label) for name, cls in PROVIDERS.items()])
    model_name = forms.CharField(
        max_length=200,
        validators=[RegexValidator(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*\Z", "Letters, digits and . _ : / @ + - only.")],
        help_text="As the provider names it, e.g. gpt-5.1, gemini-3-flash-preview, Qwen/Qwen2.5-VL-7B-Instruct.",
    )
    strategy = forms.ChoiceField(choices=[("", "default (judge: taxonomy; annotate: none)")] + [(s, s) for s in prompts.STRATEGIES],
                                 required=False, help_text="Blank: the kind's default strategy.")
    counterfactual_faces = forms.BooleanField(required=False, help_text="Judge runs: assume every face is perfectly anonymized.")
    prompt_version = forms.ChoiceField(
        choices=lambda: [("", "latest")] + [(v, prompts.version_label(v)) for kind in kinds.KINDS.values() for v in kind.versions], required=False
    )
    split = forms.ChoiceField(choices=[("all", "all splits"), ("train", "train"), ("test", "test"), ("other", "other")], initial="all",
                              required=False)
    dataset_version = forms.ChoiceField(required=False, label="Dataset version", help_text="Only the images of this dataset version.",
                                        error_messages={"invalid_choice": "There is no dataset version named %(value)s."})
    attribute = forms.ChoiceField(required=False, help_text="Only images whose consensus (active profile) has this attribute…")
    attribute_value = forms.TypedChoiceField(choices=[("", "—"), ("1", "= 1"), ("0", "= 0")], coerce=int, required=False, empty_value=None)
    level = forms.TypedChoiceField(choices=[("", "any level")] + [(str(i), f"consensus level {i}") for i in (1, 2, 3, 4)],
                                   coerce=int, required=False, empty_value=None)
    from_run = forms.IntegerField(required=False, min_value=1, help_text="Only images this judge run scored…")
    min_score = forms.FloatField(required=False, min_value=0, max_value=1, help_text="…at or above this score.")
    also_from_runs = forms.CharField(required=False, max_length=200, label="and judge runs #",
                                     help_text="More judge run ids, comma-separated: every listed run must have scored the image "
                                               "at or above the score.")
    sample_size = forms.IntegerField(required=False, min_value=1, max_value=1_000_000, help_text="Random sample of this many (blank: all).")
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1, required=False)
    face_variant = forms.ChoiceField(required=False, label="Images judged", help_text=(
        "Judge runs: the original images, or their face-anonymized variants (the pixel-level counterfactual)."))
    mode = forms.ChoiceField(choices=Run.MODES, initial=Run.MODE_ONLINE, required=False, help_text=(
        "Batch: the provider's batch API (OpenAI, Gemini; half the price, results within 24 h); "
        "stage 2 of an annotate run goes when stage 1 is back."))
    concurrency = forms.IntegerField(initial=8, min_value=1, max_value=MAX_CONCURRENCY, help_text=(
        "Requests in flight for the whole run (split into lanes of at most CPRT_RUN_LANE_CONCURRENCY, one per worker process)."))

    def __init__(self, data=None, *args, initial=None, **kwargs):
        super().__init__(data, *args, initial=initial, **kwargs)
        self.availability = availability()
        unavailable = {name: a.reason for name, a in self.availability.items() if not a.available}
        self.fields["provider"].widget = ProviderSelect(choices=self.fields["provider"].choices, unavailable=unavailable)
        self.fields["dataset_version"].choices = [("", "— every image")] + dataset_versions.version_choices()
        self.fields["attribute"].choices = [("", "— no attribute filter")] + [(k, k) for k in taxonomy.active().keys]
        self.fields["face_variant"].choices = [("", "the original images")] + [
            (key, f"anonymized: {label}") for key, label, _ in face_variants.available_settings()]
        self.kind = self._chosen_kind()
        self.shown = shown_fields(self.kind)
        self.kind_unavailable = self.kind.unavailable()  # what to do before this kind can run (refused by clean())
        self.no_provider = "" if any(self.availability[name].available for name in serving(self.kind)) else (
            "no provider that runs it is available: " + "; ".join(self.availability[name].reason for name in serving(self.kind)))
        form_class = self.kind.launch_form
        self.kind_form = form_class(data if self.is_bound else None, prefix=KIND_PREFIX) if form_class else None
        self._offer_the_kinds_defaults()

    def _chosen_kind(self):
        """The kind whose fields the form shows: the posted task, else the initial one, else the first."""
        key = (self.data.get("task") if self.is_bound else None) or self.initial.get("task") or next(iter(kinds.KINDS))
        return kinds.KINDS.get(key) or next(iter(kinds.KINDS.values()))

    def _offer_the_kinds_defaults(self) -> None:
        """Defaults that launch: the kind, an available provider serving it and its suggested model; the
        kind's prompt versions and launch modes only."""
        kind = self.kind
        self.fields["task"].initial = kind.key
        provider = self.initial.get("provider") if self.initial.get("provider") in PROVIDERS else default_provider(kind, self.availability)
        self.fields["provider"].initial = provider
        if provider:
            self.fields["model_name"].initial = PROVIDERS[provider].suggested_model()
        self.fields["task"].widget.choices = [
            (key, cls.label + (" — unavailable" if key != kind.key and cls.unavailable() else "")) for key, cls in kinds.KINDS.items()]
        self.fields["prompt_version"].widget.choices = [("", "latest")] + [(v, prompts.version_label(v)) for v in kind.versions]
        self.fields["mode"].widget.choices = [(m, label) for m, label in Run.MODES if m in kind.modes]

    def hidden_field_errors(self) -> list[str]:
        """Errors of fields the page does not show for this kind (a value posted anyway, or from the
        API): shown at the top, so a refusal always says why."""
        return [f"{self.fields[name].label or name}: {message}" for name, errors in self.errors.items()
                if name != "__all__" and name not in self.shown for message in errors]

    @classmethod
    def from_values(cls, values: dict) -> "LaunchForm":
        """The form bound from flat values (the API's JSON, launch_run's options): the shared fields by
        name; the kind's own fields by their name or its `aliases` (the names the API and launch_run
        had for a field before it moved into the kind's form),
        or from `options` (a dict of the kind's option names)."""
        data = {name: value for name, value in values.items() if name in cls.base_fields and value is not None}
        kind = kinds.KINDS.get(values.get("task") or "")
        form_class = kind.launch_form if kind else None
        named = dict(values.get("options") or {})
        known = set(form_class.base_fields) if form_class is not None else set()
        if form_class is not None:
            aliases = {alias: name for alias, name in getattr(form_class, "aliases", {}).items()}
            given = {aliases.get(k, k): v for k, v in values.items() if aliases.get(k, k) in known and v is not None}
            given.update({k: v for k, v in named.items() if k in known})
            data.update({f"{KIND_PREFIX}-{name}": value for name, value in given.items()})
        form = cls(data)
        form.unknown_options = sorted(set(named) - known)
        return form

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        provider = data["provider"]
        if not self.availability[provider].available:
            self.add_error("provider", f"{PROVIDERS[provider].label} is unavailable: {self.availability[provider].reason}")
        task = data["task"]
        kind = kinds.get(task)
        only = [key for key, cls in kinds.KINDS.items() if provider in cls.providers] if PROVIDERS[provider].exclusive else []
        if only and task not in only:
            self.add_error("provider", f"{PROVIDERS[provider].label} runs only {', '.join(only)} runs, not {task} runs.")
        for field, message in kind.launch_errors(data).items():
            self.add_error(field, message)
        data["options"] = self._options(kind)
        unknown = getattr(self, "unknown_options", [])
        if unknown:
            takes = ", ".join(kind.launch_form.base_fields) if kind.launch_form else "none"
            self.add_error(None, f"{kind.label} runs take no option {', '.join(unknown)} (their options: {takes}).")
        if self.kind_unavailable:
            self.add_error("task", f"{kind.label} runs cannot be launched yet: {self.kind_unavailable}.")
        versions = kind.versions
        version = data.get("prompt_version") or kind.default_version()
        if version not in versions:
            self.add_error("prompt_version", f"{version} is not a {task} prompt; choose one of {', '.join(versions)}.")
        data["prompt_version"] = version
        data["strategy"] = data.get("strategy") or kind.default_strategy
        data["split"] = data.get("split") or "all"
        if data.get("mode") and data["mode"] not in kind.modes and "mode" not in self.errors:
            self.add_error("mode", f"{kind.label} runs are {' or '.join(kind.modes)} only.")
        if data.get("face_variant") and data.get("mode") == Run.MODE_BATCH:
            self.add_error("mode", "Runs on anonymized images are online only (batch request files carry the originals).")
        if data.get("attribute") and data.get("attribute_value") is None:
            self.add_error("attribute_value", "Say which consensus value the attribute must have.")
        if data.get("attribute_value") is not None and not data.get("attribute"):
            self.add_error("attribute", "Choose the attribute the value refers to.")
        if data.get("min_score") is not None and not data.get("from_run"):
            self.add_error("from_run", "A minimum score needs the run whose scores it refers to.")
        from_run = data.get("from_run")
        if from_run:
            source = Run.objects.filter(pk=from_run).first()
            if source is None:
                self.add_error("from_run", f"There is no run #{from_run}.")
            elif source.task != Run.TASK_JUDGE:
                self.add_error("from_run", f"Run #{from_run} is not a judge run; it has no scores.")
            elif not RunResult.objects.filter(run=source, outcome=RunResult.OUTCOME_OK).exists():
                self.add_error("from_run", f"Run #{from_run} has no parsed scores yet.")
        data["also_from_runs"] = self._also_from_runs(data.get("also_from_runs") or "", from_run)
        return data

    def _also_from_runs(self, text: str, from_run) -> tuple[int, ...]:
        """Comma-separated judge run ids, each with parsed scores; needs the first run (from_run)."""
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if not parts:
            return ()
        if not from_run:
            self.add_error("also_from_runs", "Give the first judge run (From judge run #) before more runs.")
            return ()
        if not all(p.isdigit() and 0 < int(p) < 2**31 for p in parts):
            self.add_error("also_from_runs", "Use judge run ids separated by commas, e.g. 12, 15.")
            return ()
        ids = tuple(dict.fromkeys(int(p) for p in parts if int(p) != from_run))
        judged = set(RunResult.objects.filter(run_id__in=ids, run__task=Run.TASK_JUDGE, outcome=RunResult.OUTCOME_OK)
                     .values_list("run_id", flat=True).distinct())
        missing = [i for i in ids if i not in judged]
        if missing:
            self.add_error("also_from_runs", f"Not judge runs with parsed scores: {', '.join(f'#{i}' for i in missing)}.")
        return ids

    def _options(self, kind) -> dict:
        """The kind's own fields, validated by its launch form and then by the kind (Run.options)."""
        if self.kind_form is not None and not self.kind_form.is_valid():
            for name, errors in self.kind_form.errors.items():
                label = self.kind_form.fields[name].label or name.replace("_", " ").capitalize() if name in self.kind_form.fields else ""
                for message in errors:
                    self.add_error(None, f"{label}: {message}" if label else message)
            return {}
        try:
            return kind.clean_options(dict(self.kind_form.cleaned_data) if self.kind_form is not None else {})
        except ValueError as exc:
            self.add_error(None, str(exc))
            return {}

    def spec(self) -> LaunchSpec:
        d = self.cleaned_data
        return LaunchSpec(
            task=d["task"],
            provider=d["provider"],
            model_name=d["model_name"],
            strategy=d.get("strategy") or "",
            counterfactual_faces=bool(d.get("counterfactual_faces")),
            prompt_version=d["prompt_version"],
            selection=Selection(
                split=d.get("split") or "all",
                dataset_version=d.get("dataset_version") or "",
                attribute=d.get("attribute") or "",
                attribute_value=d.get("attribute_value"),
                level=d.get("level"),
                from_run=d.get("from_run"),
                min_score=d.get("min_score"),
                also_from_runs=d.get("also_from_runs") or (),
                sample_size=d.get("sample_size"),
                seed=d.get("seed") or 0,
            ),
            concurrency=d["concurrency"],
            face_variant=face_variants.parse_setting_key(d["face_variant"]) if d.get("face_variant") else {},
            mode=d.get("mode") or Run.MODE_ONLINE,
            options=d.get("options") or {},
        )
