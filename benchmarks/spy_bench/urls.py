from django.urls import path

from . import views

app_name = "spy_bench"
urlpatterns = [
    path("", views.spy_bench, name="index"),
    path("sets/", views.spy_set_import, name="set_import"),
    path("imports/", views.spy_results_import, name="results_import"),
    path("imports/<int:import_id>/", views.spy_import_detail, name="import_detail"),
    path("runs/<int:run_id>/", views.spy_run, name="run"),
    path("runs/<int:run_id>/export.jsonl", views.spy_run_export, name="run_export"),
]
