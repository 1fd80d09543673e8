"""REST API for face-anonymization jobs (adjudicators and admins, like the pages): list, launch,
progress, cancel, resume.

A launch is validated twice, as for runs: `JobLaunch` checks JSON types and refuses unknown keys;
then the launch page's own `AnonymizeForm` applies its rules (splits that have images, methods,
ranges), and `jobs.start_job` refuses an empty selection. Nothing is stored when any of them refuses.
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api import (
    ApiView, EmptyBody, IsStaff, PageQuery, Pagination, StrictCharField, StrictFloatField, StrictSerializer, error_response,
    form_errors,
)
from core.idempotency import once_per_key

from . import jobs, variants
from .access import get_job_for_user
from .forms import AnonymizeForm
from .models import AnonymizationJob


class JobSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    setting = serializers.SerializerMethodField(help_text="method:threshold:margin, as runs and exports name the variants.")
    percent_done = serializers.IntegerField()
    is_active = serializers.BooleanField()
    failed_images = serializers.SerializerMethodField(help_text="Images that could not be processed.")
    can_resume = serializers.SerializerMethodField()

    class Meta:
        model = AnonymizationJob
        fields = [
            "id", "split", "method", "threshold", "margin", "setting", "status", "total", "done", "percent_done", "faces",
            "images_without_face", "residual_faces", "failed_images", "error", "created_by", "created_at", "started_at",
            "heartbeat_at", "finished_at", "is_active", "can_resume",
        ]
        read_only_fields = fields

    def get_setting(self, job) -> str:
        return variants.setting_key(job.method, job.threshold, job.margin)

    def get_failed_images(self, job) -> int:
        return len(job.failures)

    def get_can_resume(self, job) -> bool:
        return jobs.can_resume(job)


class JobLaunch(StrictSerializer):
    """The launch form's fields as typed JSON; AnonymizeForm then applies the page's rules."""

    split = StrictCharField(max_length=8, required=False, allow_blank=True, help_text="train, test or other; blank or absent: every split.")
    method = StrictCharField(max_length=16, help_text="blur, pixelate or fill.")
    threshold = StrictFloatField(required=False, help_text="Detector score above which a face is removed (0.01 to 0.99; default 0.5).")
    margin = StrictFloatField(required=False, help_text="Added on each side of a box, as a fraction of its size (0 to 1; default 0.2).")


def _refused(errors) -> Response:
    return Response(form_errors(errors), status=status.HTTP_400_BAD_REQUEST)


class JobList(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]
    pagination_class = Pagination

    @extend_schema(responses=JobSerializer(many=True), summary="Face-anonymization jobs, newest first")
    def get(self, request):
        self.validated_query(PageQuery)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(AnonymizationJob.objects.select_related("created_by").defer("image_ids"), request, view=self)
        return paginator.get_paginated_response(JobSerializer(page, many=True).data)

    @extend_schema(
        request=JobLaunch,
        responses={201: JobSerializer, 400: OpenApiResponse(description="Refused, with a message per field; nothing stored.")},
        examples=[OpenApiExample("Blur the faces of the test split", request_only=True,
                                 value={"split": "test", "method": "blur", "threshold": 0.5, "margin": 0.2})],
        summary="Launch a job (same rules as the page); a worker makes the variants",
    )
    @once_per_key
    def post(self, request):
        data = self.validated_body(JobLaunch)
        form = AnonymizeForm({"split": "", "threshold": 0.5, "margin": 0.2, **{k: v for k, v in data.items() if v is not None}})
        if not form.is_valid():
            return _refused(form.errors)
        c = form.cleaned_data
        try:
            job = jobs.start_job(request.user, split=c["split"], method=c["method"], threshold=c["threshold"], margin=c["margin"])
        except variants.VariantError as exc:
            return _refused({"__all__": [str(exc)]})
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)


class JobDetail(ApiView):
    permission_classes = [IsAuthenticated, IsStaff]

    @extend_schema(responses={200: JobSerializer, 404: OpenApiResponse(description="No such job.")}, summary="One job with its progress")
    def get(self, request, job_id: int):
        self.validated_query(EmptyBody)
        return Response(JobSerializer(get_job_for_user(request.user, job_id)).data)


class _JobAction(ApiView):
    """A job page's button over the API: the job's current state, or 409 with the reason."""

    permission_classes = [IsAuthenticated, IsStaff]

    def act(self, request, job_id: int, action, refusal: str) -> Response:
        job = get_job_for_user(request.user, job_id)
        self.validated_body(EmptyBody)
        if not action(request.user, job):
            return error_response(f"Anonymization #{job.pk} is {job.status}; {refusal}", status.HTTP_409_CONFLICT)
        job.refresh_from_db()
        return Response(JobSerializer(job).data)


class JobCancel(_JobAction):
    @extend_schema(request=EmptyBody, responses={200: JobSerializer, 409: OpenApiResponse(description="The job is not active.")},
                   summary="Ask the worker to stop after the images in hand")
    def post(self, request, job_id: int):
        return self.act(request, job_id, jobs.cancel_job, "there is nothing to cancel.")


class JobResume(_JobAction):
    @extend_schema(request=EmptyBody,
                   responses={200: JobSerializer, 409: OpenApiResponse(description="Nothing to resume (its worker is alive, or nothing is left).")},
                   summary="Queue a stopped or silent job again (images already done are skipped)")
    def post(self, request, job_id: int):
        return self.act(request, job_id, jobs.resume_job, "it has nothing to resume.")
