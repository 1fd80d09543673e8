"""REST API for judge-run metrics and inter-annotator agreement (adjudicators and admins, like the pages).

The numbers are the pages' own: `scoring.services.run_metrics.run_metrics` and `scoring.services.agreement.agreement_study`, with their
cache, under the active scoring profile.
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
from .services.agreement import agreement_study
from .services.run_metrics import run_metrics
from .access import get_run_for_review
from .models import ScoringProfile


class JudgeRunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = ["id", "provider", "model_name", "strategy", "counterfactual_faces", "prompt_version", "status", "total_images", "finished_at"]
        read_only_fields = fields


class RunMetricsSerializer(serializers.Serializer):
    run = JudgeRunSerializer()
    profile = serializers.CharField(help_text="The scoring profile the ground truth comes from.")
    metrics = serializers.DictField(help_text="As the run page shows: correlations, errors, level accuracy, confusion, "
                                              "pairwise accuracy, bootstrap intervals, excluded results.")


class MetricsQuery(PageQuery):
    strategy = serializers.ChoiceField(choices=[s for s, _ in Run.STRATEGIES if s], required=False)


class AgreementQuery(StrictSerializer):
    split = serializers.ChoiceField(choices=[s for s, _ in Image.SPLITS], required=False)


class MetricsList(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]
    pagination_class = Pagination  # also tells the schema that the list is paginated

    @extend_schema(parameters=[MetricsQuery], responses=RunMetricsSerializer(many=True), summary="Metrics of every finished judge run")
    def get(self, request):
        q = self.validated_query(MetricsQuery)
        profile = ScoringProfile.active()
        paginator = self.pagination_class()
        runs = paginator.paginate_queryset(queries.finished_judge_runs(q.get("strategy", "")), request, view=self)
        reports = run_metrics(runs, profile)
        rows = [{"run": run, "profile": profile.label, "metrics": reports[run.pk]} for run in runs]
        return paginator.get_paginated_response(RunMetricsSerializer(rows, many=True).data)


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
        report = run_metrics([run], profile)[run.pk]
        return Response(RunMetricsSerializer({"run": run, "profile": profile.label, "metrics": report}).data)


class AgreementSerializer(serializers.Serializer):
    split = serializers.CharField()
    report = serializers.DictField(help_text="As the agreement page shows: annotators, pairwise kappa, per attribute and "
                                             "level, strict consensus, Krippendorff's alpha.")


class Agreement(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]

    @extend_schema(parameters=[AgreementQuery], responses=AgreementSerializer, summary="Inter-annotator agreement")
    def get(self, request):
        q = self.validated_query(AgreementQuery)
        split = q.get("split", "")
        return Response({"split": split or "all", "report": agreement_study(split)})
