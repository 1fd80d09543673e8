"""REST API for model runs (admins only, like the run pages): list, launch, progress, cancel, resume,
retry the failed items.

A launch is validated twice, for different things: `RunLaunch` checks JSON types and refuses
unknown keys; then the launch page's own `LaunchForm` applies every rule (provider availability,
strategy per task, prompt versions, selection filters), so the API cannot launch what the page
would refuse.
"""
from __future__ import annotations

from django import forms as django_forms
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api import (
    MAX_INT, ApiView, EmptyBody, HasRole, PageQuery, Pagination, StrictBooleanField, StrictCharField, StrictFloatField,
    StrictIntegerField, StrictSerializer, error_response, form_errors,
)
from core.idempotency import once_per_key
from core.roles import ROLE_ADMIN

from . import kinds, launching, runs
from .access import get_run_for_admin
from .forms import MAX_CONCURRENCY, LaunchForm, flag_fields
from .models import Run


class IsAdmin(HasRole):
    roles = (ROLE_ADMIN,)
    message = "Only admins may see and launch model runs."


class RunSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    total_images = serializers.IntegerField(source="total", read_only=True, min_value=0, max_value=2147483647,
                                            help_text="The run's items (annotate, judge: the images selected at launch).")
    done_count = serializers.IntegerField(source="done", help_text="Items with a result (any outcome).")
    percent_done = serializers.IntegerField()
    is_active = serializers.BooleanField()
    can_resume = serializers.SerializerMethodField()
    figures_url = serializers.SerializerMethodField(help_text="The page of this run's figures (its kind's own: CPRT metrics, "
                                                              "or its benchmark's figures page).")
    provenance = serializers.CharField(read_only=True, help_text="demo, stand-in (the fake provider answered) or real.")

    class Meta:
        model = Run
        fields = [
            "id", "task", "provider", "model_name", "strategy", "counterfactual_faces", "face_variant", "prompt_version", "selection",
            "options", "concurrency", "mode", "endpoint", "stand_in", "status", "total_images", "done_count", "percent_done",
            "outcome_counts", "tokens_in", "tokens_out", "estimated_cost_usd", "items_resent", "estimate", "error", "stop_reason", "created_by",
            "created_at", "started_at",
            "finished_at", "is_active", "can_resume", "figures_url", "provenance",
        ]
        read_only_fields = fields

    def get_can_resume(self, run) -> bool:
        return runs.can_resume(run)

    def get_figures_url(self, run) -> str:
        try:
            return kinds.get(run.task)(run).figures_url(run)
        except ValueError:  # a kind no longer registered
            return ""


class RunLaunch(StrictSerializer):
    """The launch form's fields as typed JSON; LaunchForm then applies the page's rules."""

    task = StrictCharField(max_length=32, help_text=f"The run kind: {', '.join(kinds.KINDS)}.")
    provider = StrictCharField(max_length=16)
    model_name = StrictCharField(max_length=200)
    strategy = StrictCharField(max_length=16, required=False, allow_blank=True)
    counterfactual_faces = StrictBooleanField(required=False)
    face_variant = StrictCharField(max_length=64, required=False, allow_blank=True,
                                   help_text="Judge runs: method:threshold:margin of the face-anonymized variants to judge "
                                             "(e.g. blur:0.5:0.2); blank: the originals.")
    prompt_version = StrictCharField(max_length=64, required=False, allow_blank=True, help_text="Blank or absent: the latest.")
    split = StrictCharField(max_length=8, required=False, help_text="all (default), train, test or other.")
    dataset_version = StrictCharField(max_length=100, required=False, allow_blank=True,
                                      help_text="A dataset version's name: only its images (blank or absent: no such scope).")
    attribute = StrictCharField(max_length=64, required=False, allow_blank=True)
    attribute_value = StrictIntegerField(min_value=0, max_value=1, required=False, allow_null=True)
    level = StrictIntegerField(min_value=1, max_value=4, required=False, allow_null=True)
    from_run = StrictIntegerField(min_value=1, max_value=MAX_INT, required=False, allow_null=True)
    min_score = StrictFloatField(min_value=0, max_value=1, required=False, allow_null=True)
    sample_size = StrictIntegerField(min_value=1, max_value=1_000_000, required=False, allow_null=True)
    seed = StrictIntegerField(min_value=0, max_value=MAX_INT, required=False, allow_null=True)
    concurrency = StrictIntegerField(min_value=1, max_value=MAX_CONCURRENCY, required=False,
                                     help_text="Requests in flight for the whole run; absent: the launch form's default (8).")
    mode = StrictCharField(max_length=8, required=False, help_text="online (default) or batch (the provider's batch API).")
    options = serializers.DictField(required=False, help_text="The kind's own launch fields by name (" + "; ".join(
        f"{key}: {', '.join(cls.launch_form.base_fields)}" for key, cls in kinds.KINDS.items() if cls.launch_form) + ").")


def _flag_serializer_field(field, help_text: str) -> serializers.Field:
    """A kind's launch field that the API takes by a top-level name (inference.forms.flag_fields), typed as JSON."""
    if isinstance(field, django_forms.BooleanField):
        return StrictBooleanField(required=False, help_text=help_text)
    if isinstance(field, django_forms.IntegerField) or getattr(field, "coerce", None) is int:
        return StrictIntegerField(min_value=1, max_value=MAX_INT, required=False, allow_null=True, help_text=help_text)
    return StrictCharField(max_length=getattr(field, "max_length", None) or 200, required=False, allow_blank=True, help_text=help_text)


# The kinds' own fields by name (a launch form's `flags`), beside `options`; none is named here.
RunLaunch._declared_fields.update({name: _flag_serializer_field(field, help_text) for name, help_text, field in flag_fields()})


class RunList(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]
    pagination_class = Pagination  # also tells the schema that the list is paginated

    @extend_schema(responses=RunSerializer(many=True), summary="Model runs, newest first")
    def get(self, request):
        self.validated_query(PageQuery)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(Run.objects.select_related("created_by").defer("image_ids", "item_ids", "prompt_text"), request, view=self)
        return paginator.get_paginated_response(RunSerializer(page, many=True).data)

    @extend_schema(
        request=RunLaunch,
        responses={201: RunSerializer, 400: OpenApiResponse(description="Refused, with a message per field.")},
        examples=[OpenApiExample("A judge run on a sample of the test split", request_only=True, value={
            "task": "judge", "provider": "openai", "model_name": "gpt-5.1", "strategy": "taxonomy", "split": "test",
            "sample_size": 200, "seed": 1, "concurrency": 8,
        })],
        summary="Launch a run (same rules as the launch page)",
    )
    @once_per_key
    def post(self, request):
        data = self.validated_body(RunLaunch)
        # Absent values take the launch form's defaults, so the API launches what the page would.
        defaults = {"split": "all", "concurrency": LaunchForm.base_fields["concurrency"].initial}
        form = LaunchForm.from_values({**defaults, **{k: v for k, v in data.items() if v is not None}})
        if not form.is_valid():
            return Response(form_errors(form.errors), status=status.HTTP_400_BAD_REQUEST)
        try:
            run = launching.launch_run(request.user, form.spec())
        except ValueError as exc:
            return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)


class RunDetail(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={200: RunSerializer, 404: OpenApiResponse(description="No such run.")}, summary="One run with its progress")
    def get(self, request, run_id: int):
        self.validated_query(EmptyBody)
        return Response(RunSerializer(get_run_for_admin(request.user, run_id)).data)


class RunCancel(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(request=EmptyBody, responses={200: RunSerializer, 409: OpenApiResponse(description="The run is not active.")},
                   summary="Ask the run's workers to stop")
    def post(self, request, run_id: int):
        run = get_run_for_admin(request.user, run_id)
        self.validated_body(EmptyBody)
        if not runs.cancel_run(request.user, run):
            return error_response(f"Run #{run.pk} is {run.status}; there is nothing to cancel.", status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return Response(RunSerializer(run).data)


class RunResume(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        request=EmptyBody,
        responses={
            200: inline_serializer("RunResumed", {"redispatched": serializers.IntegerField(), "run": RunSerializer()}),
            409: OpenApiResponse(description="Nothing to resume (workers alive, or the run is complete)."),
        },
        summary="Re-dispatch every selected image without a result",
    )
    def post(self, request, run_id: int):
        run = get_run_for_admin(request.user, run_id)
        self.validated_body(EmptyBody)
        if not runs.can_resume(run):
            return error_response(f"Run #{run.pk} is {run.status} with nothing to resume (no missing results, or its workers are alive).",
                                  status.HTTP_409_CONFLICT)
        n = runs.resume_run(request.user, run)
        run.refresh_from_db()
        return Response({"redispatched": n, "run": RunSerializer(run).data})


class RunRetryFailed(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(
        request=EmptyBody,
        responses={
            200: inline_serializer("RunRetried", {"redispatched": serializers.IntegerField(), "run": RunSerializer()}),
            409: OpenApiResponse(description="Nothing to retry (no `error` results, or the run is active)."),
        },
        summary="Re-dispatch exactly the images whose stored outcome is an error, once each",
    )
    def post(self, request, run_id: int):
        run = get_run_for_admin(request.user, run_id)
        self.validated_body(EmptyBody)
        n = runs.retry_failed(request.user, run)
        if not n:
            return error_response(f"Run #{run.pk} is {run.status} with no failed items to retry.", status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return Response({"redispatched": n, "run": RunSerializer(run).data})
