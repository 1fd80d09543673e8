"""REST API for dataset exports and imports (admins only, like their pages): list, launch (once per
`Idempotency-Key`, as runs), one job with its progress, and an export's zip.

A launch is validated twice, as runs are: a strict serializer checks JSON types and refuses unknown
keys; then the page's own form (ExportJobForm, ImportForm) applies every rule, so the API cannot
launch what the page would refuse. The job is started by the page's service (exports.start_export,
imports.start_import): stored, audited, dispatched on commit.
"""
from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api import ApiView, EmptyBody, HasRole, PageQuery, Pagination, StrictBooleanField, StrictCharField, StrictIntegerField, \
    StrictSerializer, form_errors
from core.audit import audit
from core.files import protected_file_response
from core.idempotency import once_per_key
from core.roles import ROLE_ADMIN

from . import exports, imports
from .access import get_export_for_user
from .forms import ExportJobForm
from .import_views import ImportForm, get_import_for_admin
from .models import ExportJob, ImportJob


class IsAdmin(HasRole):
    roles = (ROLE_ADMIN,)
    message = "Only admins may see and launch exports and imports."


JOB_FIELDS = ["id", "status", "done", "total", "error", "created_by", "created_at", "started_at", "finished_at"]


class ExportJobSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    profile = serializers.IntegerField(source="profile_id")
    dataset_version = serializers.CharField(source="dataset_version.name", allow_null=True, default=None)
    download_url = serializers.SerializerMethodField(help_text="The zip (GET, admins), once the export has one; else null.")

    class Meta:
        model = ExportJob
        fields = [*JOB_FIELDS, "kind", "splits", "profile", "dataset_version", "include_annotations", "include_images", "destination",
                  "repo_id", "private", "hub_url", "summary", "download_url"]
        read_only_fields = fields

    def get_download_url(self, job) -> str | None:
        return reverse("api:export-download", args=[job.pk]) if job.downloadable else None


class ExportLaunch(StrictSerializer):
    """The export form's fields as typed JSON; ExportJobForm then applies the page's rules."""

    splits = serializers.ListField(child=StrictCharField(max_length=16), min_length=1, max_length=8,
                                   help_text="Splits to export (those that have images), e.g. [\"train\", \"test\"].")
    profile = StrictIntegerField(min_value=1, max_value=2**31 - 1, required=False, help_text="A scoring profile's id; absent: the active one.")
    dataset_version = StrictCharField(max_length=100, required=False, allow_blank=True,
                                      help_text="A dataset version's name: only its images (blank or absent: every image).")
    include_annotations = StrictBooleanField(required=False)
    include_images = StrictBooleanField(required=False)
    face_variant = StrictCharField(max_length=64, required=False, allow_blank=True,
                                   help_text="method:threshold:margin of face-anonymized variants (with include_images); blank: the originals.")
    destination = StrictCharField(max_length=8, required=False, help_text="zip (default) or hub.")
    repo_id = StrictCharField(max_length=193, required=False, allow_blank=True, help_text="Hub destination: owner/name.")
    public = StrictBooleanField(required=False, help_text="Hub destination: create the repository public (default: private).")


class ExportList(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]
    pagination_class = Pagination

    @extend_schema(responses=ExportJobSerializer(many=True), summary="Dataset exports, newest first")
    def get(self, request):
        self.validated_query(PageQuery)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(ExportJob.objects.select_related("created_by", "dataset_version"), request, view=self)
        return paginator.get_paginated_response(ExportJobSerializer(page, many=True).data)

    @extend_schema(
        request=ExportLaunch,
        responses={201: ExportJobSerializer, 400: OpenApiResponse(description="Refused, with a message per field.")},
        examples=[OpenApiExample("The test split as a zip, with annotations", request_only=True,
                                 value={"splits": ["test"], "include_annotations": True})],
        summary="Launch a dataset export (same rules as the exports page)",
    )
    @once_per_key
    def post(self, request):
        data = self.validated_body(ExportLaunch)
        form = ExportJobForm(None)
        fields = {"profile": form.fields["profile"].initial, "destination": ExportJob.DESTINATION_ZIP,
                  **{k: v for k, v in data.items() if v is not None}}
        form = ExportJobForm({k: v for k, v in fields.items() if v is not False and v is not None})
        if not form.is_valid():
            return Response(form_errors(form.errors), status=status.HTTP_400_BAD_REQUEST)
        try:
            job = exports.start_export(request.user, form.cleaned_data)
        except ValueError as exc:
            return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ExportJobSerializer(job).data, status=status.HTTP_201_CREATED)


class ExportDetail(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={200: ExportJobSerializer, 404: OpenApiResponse(description="No such export.")},
                   summary="One export with its progress")
    def get(self, request, job_id: int):
        self.validated_query(EmptyBody)
        return Response(ExportJobSerializer(get_export_for_user(request.user, job_id)).data)


class ExportDownload(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={(200, "application/zip"): OpenApiResponse(description="The export's zip file."),
                              404: OpenApiResponse(description="No such export, or it has no file (yet).")},
                   summary="An export's zip file")
    def get(self, request, job_id: int):
        self.validated_query(EmptyBody)
        job = get_export_for_user(request.user, job_id)
        if not job.downloadable:
            raise Http404("This export has no file to download (not finished, failed, or pushed to the Hub).")
        audit(request.user, "export.download", job, file=job.zip_path)
        return protected_file_response("exports", job.zip_path, content_type="application/zip", download_name=job.download_name,
                                       attachment=True)


class ImportJobSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)

    class Meta:
        model = ImportJob
        fields = [*JOB_FIELDS, "kind", "path", "options", "result"]
        read_only_fields = fields


class ImportLaunch(StrictSerializer):
    """The import form's fields as typed JSON; ImportForm then applies the page's rules."""

    kind = StrictCharField(max_length=16, help_text="vispr (a VISPR release folder) or cprt_bench (a CPRT-Bench file).")
    path = StrictCharField(max_length=500, help_text="The folder or file, relative to the import folder (CPRT_IMPORT_ROOT).")
    vispr_splits = serializers.ListField(child=StrictCharField(max_length=16), required=False, max_length=3,
                                         help_text="VISPR: the splits to import (absent: every split present except train2017).")
    split = StrictCharField(max_length=8, required=False, help_text="CPRT-Bench: the split of the images the file creates (default test).")


class ImportList(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]
    pagination_class = Pagination

    @extend_schema(responses=ImportJobSerializer(many=True), summary="Imports, newest first")
    def get(self, request):
        self.validated_query(PageQuery)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(ImportJob.objects.select_related("created_by"), request, view=self)
        return paginator.get_paginated_response(ImportJobSerializer(page, many=True).data)

    @extend_schema(
        request=ImportLaunch,
        responses={201: ImportJobSerializer, 400: OpenApiResponse(description="Refused, with a message per field.")},
        examples=[OpenApiExample("A VISPR release folder", request_only=True, value={"kind": "vispr", "path": "vispr"})],
        summary="Launch an import from the import folder (same rules as the imports page)",
    )
    @once_per_key
    def post(self, request):
        data = self.validated_body(ImportLaunch)
        form = ImportForm({"split": "test", **{k: v for k, v in data.items() if v is not None}})
        if not form.is_valid():
            return Response(form_errors(form.errors), status=status.HTTP_400_BAD_REQUEST)
        try:
            job = imports.start_import(request.user, form.cleaned_data["kind"], form.cleaned_data["path"], form.options())
        except imports.PathRefused as exc:
            return Response({"path": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ImportJobSerializer(job).data, status=status.HTTP_201_CREATED)


class ImportDetail(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={200: ImportJobSerializer, 404: OpenApiResponse(description="No such import.")},
                   summary="One import with its progress")
    def get(self, request, job_id: int):
        self.validated_query(EmptyBody)
        return Response(ImportJobSerializer(get_import_for_admin(request.user, job_id)).data)
