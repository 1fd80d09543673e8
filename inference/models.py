"""Model runs (annotate or judge a set of images with one provider/model/prompt) and per-image results.

A run is a job (`core.jobs.Job`: status, timestamps, heartbeat, done/total, scrubbed error; its
statuses move only through `Run.move` / `Run.moves`). Its progress lives here, where the pages read
it. Results are unique per (run, image), so a retried or duplicated chunk can neither lose nor
double a result. Each lane of a run is leased to one worker at a time (`RunLane`, inference.leases).
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.jobs import Job
from core.secrets import ScrubbedJSONField, ScrubbedTextField


class Run(Job):
    TASK_ANNOTATE, TASK_JUDGE = "annotate", "judge"  # the first two run kinds (inference.kinds)
    STRATEGIES = [("", "—"), ("zero_shot", "zero-shot"), ("intuition", "intuition"), ("taxonomy", "taxonomy")]
    PROVIDERS = [("openai", "OpenAI"), ("gemini", "Google Gemini"), ("vllm", "vLLM (open models)")]
    task = models.CharField(max_length=16, help_text="The run's kind: a key of inference.kinds.KINDS.")
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
    concurrency = models.PositiveSmallIntegerField(default=4)
    MODE_ONLINE, MODE_BATCH = "online", "batch"
    MODES = [(MODE_ONLINE, "online (request by request)"), (MODE_BATCH, "batch (provider batch API, half price, up to 24 h)")]
    mode = models.CharField(max_length=8, choices=MODES, default=MODE_ONLINE)
    endpoint = models.CharField(max_length=255, blank=True, help_text=(
        "Where the requests went: the provider's host (and port) at launch, never a path, user or key."))
    stand_in = models.BooleanField(default=False, help_text=(
        "A reply came from a stand-in (the project's fake provider server), not the real provider: not research data."))
    annotator = models.ForeignKey("annotations.Annotator", null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    estimated_cost_usd = models.DecimalField(max_digits=12, decimal_places=4, default=0)
    # From the job base: status, created_by, created/started/finished_at, heartbeat_at, done (images
    # with a result, any outcome), total (selected images), error. Lanes hold the leases (RunLane).
    # Execution bookkeeping (written by workers with targeted UPDATEs, never by saving the whole row).
    request_params = models.JSONField(default=dict, blank=True, help_text="Sampling and image settings sent with every request.")
    estimate = models.JSONField(default=dict, blank=True, help_text="Requests, tokens and cost estimated at launch.")
    outcome_counts = models.JSONField(default=dict, blank=True, help_text="outcome -> number of results, refreshed by the workers.")
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="When chunks were last sent to the queue.")

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
        """Images selected at launch (the job's `total`)."""
        return self.total

    @total_images.setter
    def total_images(self, value: int) -> None:
        self.total = value

    @property
    def done_count(self) -> int:
        """Images with a result (any outcome): the job's `done`, refreshed with `outcome_counts`."""
        return self.done

    def missing_image_ids(self) -> list[int]:
        """Selected images that still exist and have no result yet (what a resume re-dispatches)."""
        from annotations.models import Image

        wanted = set(self.image_ids) - set(self.results.values_list("image_id", flat=True))
        if not wanted:
            return []
        todo = sorted(wanted)
        existing: set[int] = set()
        for i in range(0, len(todo), 900):  # stay under SQLite's bound-parameter limit
            existing.update(Image.objects.filter(pk__in=todo[i : i + 900]).values_list("pk", flat=True))
        return sorted(existing)


class RunResult(models.Model):
    OUTCOME_OK, OUTCOME_UNPARSEABLE, OUTCOME_REFUSED, OUTCOME_ERROR = "ok", "unparseable", "refused", "error"
    OUTCOMES = [(o, o) for o in ("ok", "unparseable", "refused", "error")]

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="results")
    image = models.ForeignKey("annotations.Image", on_delete=models.CASCADE, related_name="run_results")
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
            models.UniqueConstraint(fields=["run", "image"], name="one_result_per_run_image"),
            models.CheckConstraint(condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=1), name="result_score_0_to_1"),
        ]
        indexes = [models.Index(fields=["run", "outcome"])]


class RunLane(models.Model):
    """One lane of a run (see inference.leases): its images, and the lease of the worker processing it.

    An image belongs to one lane for the run's whole life, so two copies of a chunk can only meet on
    the same lane, where the lease lets one of them work at a time. `owner` empty: no worker holds
    the lane (its next message is queued, or it is done); `lease_expires_at` in the past with an
    owner: that worker stopped renewing, and the reconciler re-dispatches the lane.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="lanes")
    index = models.PositiveSmallIntegerField()
    image_ids = models.JSONField(default=list, help_text="The run's images dealt to this lane (fixed at launch).")
    width = models.PositiveSmallIntegerField(default=1, help_text="Requests this lane keeps in flight.")
    owner = models.CharField(max_length=200, blank=True, help_text="The task holding the lease; empty when none.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    dispatches = models.PositiveIntegerField(default=0, help_text="How many times the lane was sent to the broker.")

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_lane_per_run_index")]

    def __str__(self):
        return f"run #{self.run_id} lane {self.index}"


from .batch.models import BatchRequest, ProviderBatch  # noqa: E402,F401 - batch-mode models live in inference.batch
