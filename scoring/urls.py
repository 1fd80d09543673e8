from django.urls import path

from . import benchmark_views, binary_views, import_views, review_views, three_way_views, views
from .sft import views as sft_views

app_name = "scoring"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/calibration/", views.calibration, name="calibration"),
    path("binary/", binary_views.binary_view, name="binary"),
    path("compare/", views.compare, name="compare"),
    path("agreement/", views.agreement, name="agreement"),
    path("disagreements/", views.disagreements, name="disagreements"),
    path("images/<int:image_id>/review/", review_views.review, name="review"),
    path("images/<int:image_id>/adjudicate/", review_views.adjudicate, name="adjudicate"),
    path("counterfactual/", views.counterfactual, name="counterfactual"),
    path("counterfactual/three-way/", three_way_views.three_way, name="three_way"),
    path("benchmarks/", benchmark_views.benchmarks, name="benchmarks"),
    path("imports/", import_views.import_list, name="imports"),
    path("imports/<int:job_id>/", import_views.import_detail, name="import"),
    path("imports/<int:job_id>/progress/", import_views.import_progress, name="import_progress"),
    path("imports/<int:job_id>/cancel/", import_views.import_cancel, name="import_cancel"),
    path("imports/<int:job_id>/resume/", import_views.import_resume, name="import_resume"),
    path("exports/", views.export_list, name="exports"),
    path("exports/sft/", sft_views.sft_export_start, name="export_sft"),
    path("exports/<int:job_id>/", views.export_detail, name="export"),
    path("exports/<int:job_id>/progress/", views.export_progress, name="export_progress"),
    path("exports/<int:job_id>/cancel/", views.export_cancel, name="export_cancel"),
    path("exports/<int:job_id>/resume/", views.export_resume, name="export_resume"),
    path("exports/<int:job_id>/download/", views.export_download, name="export_download"),
]
