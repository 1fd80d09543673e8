"""Model runs (one kind of work over a set of images with one provider/model/prompt) and per-item results.

A run is a job (`core.jobs.Job`: status, timestamps, heartbeat, done/total, scrubbed error; its
statuses move only through `Run.move` / `Run.moves`). Its progress lives here, where the pages read
it. A run's units of work are ITEMS, whose ids its kind defines at launch (`Kind.launch_items`):
for annotate and judge an item is an image (item id = image id); for a benchmark's kind, whatever it
expands its data into (a question row, a pair of persons). Results are unique per (run, item), so a retried or duplicated chunk can neither
lose nor double a result. Each lane of a run is leased to one worker at a time (`RunLane`,
inference.leases).
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.jobs import Job
from core.secrets import ScrubbedJSONField, ScrubbedTextField


PROVENANCE_DEMO, PROVENANCE_STAND_IN, PROVENANCE_REAL = "demo", "stand-in", "real"


class Run(Job):
    TASK_ANNOTATE, TASK_JUDGE = "annotate", "judge"  # the first two run kinds (inference.kinds)
    STRATEGIES = [("", "—"), ("zero_shot", "zero-shot"), ("intuition", "intuition"), ("taxonomy", "taxonomy")]
    PROVIDERS = [("openai", "OpenAI"), ("gemini", "Google Gemini"), ("vllm", "vLLM (open models)")]
    task = models.CharField(max_length=32, help_text="The run's kind: a key of inference.kinds.KINDS.")
    provider = models.CharField(max_length=16, choices=PROVIDERS)
    model_name = models.CharField(max_length=200)
    strategy = models.CharField(max_length=16, choices=STRATEGIES, blank=True)
    counterfactual_faces = models.BooleanField(default=False)
    face_variant = models.JSONField(default=dict, blank=True, help_text=(
        "Judge runs: the face-anonymization setting (method, threshold, margin) whose variants were judged "
        "instead of the originals (the pixel-level counterfactual); empty: the original images."))
    prompt_version = models.CharField(max_length=64)
    prompt_text = models.JSONField(default=dict, help_text="The exact prompt texts this run sent.")
    selection = models.JSONField(default=dict, help_text="How the images were chosen (split, sample, seed, filter).")
    image_ids = models.JSONField(default=list, help_text="The frozen list of selected image ids.")
    item_ids = models.JSONField(default=list, help_text=(
        "The frozen list of the run's item ids, as its kind defines them at launch (annotate, judge: the image ids)."))
    options = models.JSONField(default=dict, blank=True, help_text=(
        "Kind-specific launch options, validated by the kind (its launch form's cleaned data)."))
    truth = models.JSONField(default=dict, blank=True, help_text=(
        "The truth the run is scored against, frozen at launch, for kinds whose truth is re-importable data "
        "(the kind's `freeze_truth`, in its benchmark's folder); empty for the others."))
    concurrency = models.PositiveSmallIntegerField(default=4)
    MODE_ONLINE, MODE_BATCH = "online", "batch"
    MODES = [(MODE_ONLINE, "online (request by request)"), (MODE_BATCH, "batch (provider batch API, half price, up to 24 h)")]
    mode = models.CharField(max_length=8, choices=MODES, default=MODE_ONLINE)
    endpoint = models.CharField(max_length=255, blank=True, help_text=(
        "Where the requests went: the provider's host (and port) at launch, never a path, user or key."))
    stand_in = models.BooleanField(default=False, help_text=(
        "A reply came from a stand-in (the project's fake provider server), not the real provider: not research data."))
    annotator = models.ForeignKey("annotations.Annotator", null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    items_resent = models.PositiveIntegerField(default=0, help_text=(
        "Items whose requests were in flight when a worker stopped, asked again: possibly paid twice."))
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    estimated_cost_usd = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    # From the job base: status, created_by, created/started/finished_at, heartbeat_at, done (items
    # with a result, any outcome), total (the run's items), error. Lanes hold the leases (RunLane).
    # Execution bookkeeping (written by workers with targeted UPDATEs, never by saving the whole row).
    request_params = models.JSONField(default=dict, blank=True, help_text="Sampling and image settings sent with every request.")
    estimate = models.JSONField(default=dict, blank=True, help_text="Requests, tokens and cost estimated at launch.")
    outcome_counts = models.JSONField(default=dict, blank=True, help_text="outcome -> number of results, refreshed by the workers.")
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="When chunks were last sent to the queue.")
    # Why the run paused itself (inference.outcomes.PAUSE_REASONS; empty: it did not), and the failure
    # streak that decides it, shared by the run's lanes (inference.execution.Streak).
    stop_reason = models.CharField(max_length=32, blank=True, help_text=(
        "Why the run paused itself (a key of inference.outcomes.PAUSE_REASONS); empty when it did not. Resume clears it."))
    failures_in_a_row = models.PositiveIntegerField(default=0, help_text="Items that failed since the provider last answered.")
    failing_since = models.DateTimeField(null=True, blank=True, help_text="When that streak of failures began.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Judge runs have a strategy, annotate runs none; other kinds say in their launch_errors().
            models.CheckConstraint(
                condition=~Q(task="judge", strategy="") & (~Q(task="annotate") | Q(strategy="")), name="judge_runs_have_a_strategy"
            ),
        ]

    def __str__(self):
        cf = "+counterfactual_faces" if self.counterfactual_faces else ""
        pixels = f" on anonymized images ({self.face_variant['method']})" if self.face_variant else ""
        return f"#{self.pk} {self.task} {self.provider}/{self.model_name} {self.strategy}{cf}{pixels}"

    @property
    def total_images(self) -> int:
        """Items of the run (the job's `total`; annotate and judge: the images selected at launch)."""
        return self.total

    @total_images.setter
    def total_images(self, value: int) -> None:
        self.total = value

    @property
    def resent_cost_usd(self) -> float | None:
        """What the resent items may have cost a second time, at the run's mean cost per stored item."""
        if not self.items_resent or not self.done:
            return None
        return float(self.estimated_cost_usd) / self.done * self.items_resent

    @property
    def provenance(self) -> str:
        """Where the run's answers came from: "demo" (seeded by the demo, no model was called),
        "stand-in" (the project's fake provider answered) or "real"."""
        if (self.selection or {}).get("demo") or (self.request_params or {}).get("demo"):
            return PROVENANCE_DEMO
        return PROVENANCE_STAND_IN if self.stand_in else PROVENANCE_REAL

    @property
    def done_count(self) -> int:
        """Items with a result (any outcome): the job's `done`, refreshed with `outcome_counts`."""
        return self.done


class RunResult(models.Model):
    OUTCOME_OK, OUTCOME_UNPARSEABLE, OUTCOME_REFUSED, OUTCOME_ERROR = "ok", "unparseable", "refused", "error"
    OUTCOMES = [(o, o) for o in ("ok", "unparseable", "refused", "error")]

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    item_id = models.PositiveBigIntegerField(help_text="The item this result is for (its kind defines it; annotate, judge: the image id).")
    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="run_results", null=True, blank=True,
                              help_text="The item's primary image (several items of a run may share one).")
    outcome = models.CharField(max_length=16, choices=OUTCOMES)
    score = models.FloatField(null=True, blank=True, help_text="Judge runs: the parsed severity in [0, 1].")
    reasoning = ScrubbedTextField(blank=True)  # the model's words: never holds a configured secret
    raw = ScrubbedJSONField(default=dict, help_text="Raw provider output(s), kept for every outcome.")
    error = ScrubbedTextField(blank=True)  # never holds a configured secret (core.secrets)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "item_id"], name="one_result_per_run_item"),
            models.CheckConstraint(condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1), name="result_score_0_to_1"),
        ]
        # (run, outcome, item_id): a run page reads its 50 answers and 20 failures in item order from this index,
        # without sorting the run's 100,000 results (it also serves every (run, outcome) filter and count).
        indexes = [models.Index(fields=["run", "outcome", "item_id"], name="run_result_outcome_item"),
                   models.Index(fields=["run", "image"], name="run_result_run_image")]


class RunLane(models.Model):
    """One lane of a run (see inference.leases): its items, and the lease of the worker processing it.

    An item belongs to one lane for the run's whole life, so two copies of a chunk can only meet on
    the same lane, where the lease lets one of them work at a time. `owner` empty: no worker holds
    the lane (its next message is queued, or it is done); `lease_expires_at` in the past with an
    owner: that worker stopped renewing, and the reconciler re-dispatches the lane.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="lanes")
    index = models.PositiveSmallIntegerField()
    item_ids = models.JSONField(default=list, help_text="The run's items dealt to this lane (fixed at launch).")
    width = models.PositiveSmallIntegerField(default=1, help_text="Requests this lane keeps in flight.")
    owner = models.CharField(max_length=200, blank=True, help_text="The task holding the lease; empty when none.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatches = models.PositiveIntegerField(default=0, help_text="How many times the lane was sent to the broker.")
    in_flight = models.JSONField(default=list, blank=True, help_text=(
        "Items whose requests the lane's worker is about to send or awaits, written before they go out; "
        "left behind when a worker stops mid-request (inference.leases.count_resent)."))

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_lane_per_run_index")]

    def __str__(self):
        return f"run #{self.run_id} lane {self.index}"


from .batch.models import BatchRequest, ProviderBatch  # noqa: E402,F401 - batch-mode models live in inference.batch
from .providers.onnx.models import ClassifierModel  # noqa: E402,F401 - registered local classifiers (issue 26)
