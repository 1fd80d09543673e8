from django.urls import path

from . import views

app_name = "datasets"
urlpatterns = [
    path("", views.version_list, name="versions"),
    path("presets/<slug:name>.json", views.preset_json, name="preset"),
    path("builds/<int:build_id>/", views.build_detail, name="build"),
    path("builds/<int:build_id>/progress/", views.build_progress, name="build_progress"),
    path("builds/<int:build_id>/cancel/", views.build_cancel, name="build_cancel"),
    path("builds/<int:build_id>/resume/", views.build_resume, name="build_resume"),
    path("<int:version_id>/", views.version_detail, name="version"),
    path("<int:version_id>/batch/", views.version_batch, name="version_batch"),
]
