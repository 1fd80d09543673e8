"""The REST API under /api/ (namespace "api"): images, labelings, runs, face-anonymization jobs, metrics,
agreement, schema, docs.

Token (`Authorization: Token <key>`, keys from `manage.py drf_create_token USER`) or session auth;
the roles and access rules are the pages'. See docs/api.md.
"""
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView, _get_sidecar_url
from rest_framework.permissions import IsAuthenticated

from annotations import api as annotations_api
from annotations.datasets import api as datasets_api
from annotations.faces import api as faces_api
from core.api import HasRole
from inference import api as inference_api
from scoring import api as scoring_api
from scoring import jobs_api as scoring_jobs_api

from .api_index import ApiIndex

# The schema and its viewer need a role like everything else (drf-spectacular serves them to anyone by default).
SCHEMA_PERMISSIONS = [IsAuthenticated, HasRole]


class SwaggerUI(SpectacularSwaggerSplitView):
    """Swagger UI from drf-spectacular-sidecar's static files (our CSP forbids CDNs), its setup script
    served as a separate file by this same view (CSP forbids inline scripts)."""

    permission_classes = SCHEMA_PERMISSIONS
    url_name = "api:schema"
    title = "CPRT Workbench API"

    @staticmethod
    def _swagger_ui_resource(filename):
        return _get_sidecar_url(f"swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon():
        return _get_sidecar_url("swagger-ui-dist/favicon-32x32.png")


app_name = "api"
urlpatterns = [
    path("", ApiIndex.as_view(), name="index"),
    path("images/", annotations_api.ImageList.as_view(), name="image-list"),
    path("images/<int:image_id>/", annotations_api.ImageDetail.as_view(), name="image-detail"),
    path("labelings/", annotations_api.LabelingList.as_view(), name="labeling-list"),
    path("labelings/<int:labeling_id>/", annotations_api.LabelingDetail.as_view(), name="labeling-detail"),
    path("labelings/<int:labeling_id>/submit/", annotations_api.LabelingSubmit.as_view(), name="labeling-submit"),
    path("labelings/<int:labeling_id>/skip/", annotations_api.LabelingSkip.as_view(), name="labeling-skip"),
    path("runs/", inference_api.RunList.as_view(), name="run-list"),
    path("runs/<int:run_id>/", inference_api.RunDetail.as_view(), name="run-detail"),
    path("runs/<int:run_id>/cancel/", inference_api.RunCancel.as_view(), name="run-cancel"),
    path("runs/<int:run_id>/resume/", inference_api.RunResume.as_view(), name="run-resume"),
    path("runs/<int:run_id>/retry-failed/", inference_api.RunRetryFailed.as_view(), name="run-retry-failed"),
    path("anonymizations/", faces_api.JobList.as_view(), name="anonymization-list"),
    path("anonymizations/<int:job_id>/", faces_api.JobDetail.as_view(), name="anonymization-detail"),
    path("anonymizations/<int:job_id>/cancel/", faces_api.JobCancel.as_view(), name="anonymization-cancel"),
    path("anonymizations/<int:job_id>/resume/", faces_api.JobResume.as_view(), name="anonymization-resume"),
    path("exports/", scoring_jobs_api.ExportList.as_view(), name="export-list"),
    path("exports/<int:job_id>/", scoring_jobs_api.ExportDetail.as_view(), name="export-detail"),
    path("exports/<int:job_id>/download/", scoring_jobs_api.ExportDownload.as_view(), name="export-download"),
    path("imports/", scoring_jobs_api.ImportList.as_view(), name="import-list"),
    path("imports/<int:job_id>/", scoring_jobs_api.ImportDetail.as_view(), name="import-detail"),
    path("datasets/", datasets_api.DatasetList.as_view(), name="dataset-list"),
    path("datasets/<int:build_id>/", datasets_api.DatasetDetail.as_view(), name="dataset-detail"),
    path("metrics/", scoring_api.MetricsList.as_view(), name="metrics-list"),
    path("metrics/<int:run_id>/", scoring_api.RunMetrics.as_view(), name="run-metrics"),
    path("agreement/", scoring_api.Agreement.as_view(), name="agreement"),
    path("schema/", SpectacularAPIView.as_view(permission_classes=SCHEMA_PERMISSIONS), name="schema"),
    path("docs/", SwaggerUI.as_view(), name="docs"),
]
