"""REST API for judge-run metrics and inter-annotator agreement (adjudicators and admins, like the pages).

The numbers are the pages' own: `scoring.services.run_metrics.run_metrics` and `scoring.services.agreement.agreement_study`, with their
cache, under the active scoring profile. Where the cache serves stored figures while a job recomputes them
(scoring/services/cache.py), the answer says so: `"updating": true`, and `computed_at` says when the figures were computed.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api import ApiView, EmptyBody, IsStaff, PageQuery, Pagination, StrictSerializer, error_response
from annotations.models import Image
from inference.models import Run

from . import queries
from .services.agreement import ASSISTED_MODES, DEFAULT_ASSISTED, agreement_study, study_key
from .services.cache import freshness
from .services.run_metrics import run_key, run_metrics
from .access import get_run_for_review
from .models import ScoringProfile


class JudgeRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "provider", "model_name", "strategy", "counterfactual_faces", "prompt_version", "status", "total_images", "finished_at"]
        read_only_fields = fields


class FreshnessSerializer(serializers.Serializer):
    updating = serializers.BooleanField(help_text="True when these are the last figures computed, served while a job "
                                                  "recomputes them with newer data (the pages' \"Updating\"); ask again later.")
    computed_at = serializers.DateTimeField(allow_null=True, help_text="When the figures were computed.")


class RunMetricsSerializer(FreshnessSerializer):
    run = JudgeRunSerializer()
    profile = serializers.CharField(help_text="The scoring profile the ground truth comes from.")
    metrics = serializers.DictField(help_text="As the run page shows: correlations, errors, level accuracy, confusion, "
                                              "pairwise accuracy, bootstrap intervals, excluded results.")


def _metrics_rows(runs, profile) -> list[dict]:
    reports = run_metrics(runs, profile)
    fresh = freshness(run_key(run.pk, profile) for run in runs)
    return [{"run": run, "profile": profile.label, "metrics": reports[run.pk], **fresh[run_key(run.pk, profile)]} for run in runs]


class MetricsQuery(PageQuery):
    strategy = serializers.ChoiceField(choices=[s for s, _ in Run.STRATEGIES if s], required=False)


class AgreementQuery(StrictSerializer):
    split = serializers.ChoiceField(choices=[s for s, _ in Image.SPLITS], required=False)
    assisted = serializers.ChoiceField(choices=list(ASSISTED_MODES), required=False, default=DEFAULT_ASSISTED,
                                       help_text="Which human labelings count: exclude (default) leaves out those made with model "
                                                 "suggestions in view, include counts all, only counts the assisted ones.")


class MetricsList(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]
    pagination_class = Pagination  # also tells the schema that the list is paginated

    @extend_schema(parameters=[MetricsQuery], responses=RunMetricsSerializer(many=True), summary="Metrics of every finished judge run")
    def get(self, request):
        q = self.validated_query(MetricsQuery)
        profile = ScoringProfile.active()
        paginator = self.pagination_class()
        runs = paginator.paginate_queryset(queries.finished_judge_runs(q.get("strategy", "")), request, view=self)
        return paginator.get_paginated_response(RunMetricsSerializer(_metrics_rows(runs, profile), many=True).data)


class RunMetrics(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]

    @extend_schema(
        responses={200: RunMetricsSerializer, 404: OpenApiResponse(description="No such run."),
                   409: OpenApiResponse(description="Not a judge run, or not finished yet.")},
        summary="Metrics of one finished judge run",
    )
    def get(self, request, run_id: int):
        self.validated_query(EmptyBody)
        run = get_run_for_review(request.user, run_id)
        if run.task != Run.TASK_JUDGE:
            return error_response(f"Run #{run.pk} is an {run.task} run; metrics exist for judge runs only.", status.HTTP_409_CONFLICT)
        if run.status != Run.STATUS_FINISHED:
            return error_response(f"Run #{run.pk} is {run.status}; metrics are served once it has finished.", status.HTTP_409_CONFLICT)
        profile = ScoringProfile.active()
        return Response(RunMetricsSerializer(_metrics_rows([run], profile)[0]).data)


class AgreementSerializer(FreshnessSerializer):
    split = serializers.CharField()
    assisted = serializers.CharField(help_text="exclude, include or only: which human labelings the figures count "
                                               "(the report's `assisted` says how many).")
    report = serializers.DictField(help_text="As the agreement page shows: annotators, pairwise kappa, per attribute and "
                                             "level, strict consensus, Krippendorff's alpha.")


class Agreement(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]

    @extend_schema(parameters=[AgreementQuery], responses=AgreementSerializer, summary="Inter-annotator agreement")
    def get(self, request):
        q = self.validated_query(AgreementQuery)
        split, assisted = q.get("split", ""), q.get("assisted") or DEFAULT_ASSISTED
        report = agreement_study(split, assisted)
        key = study_key(split, assisted)
        return Response(AgreementSerializer({"split": split or "all", "assisted": assisted, "report": report, **freshness([key])[key]}).data)
