from django.urls import path

from . import views

app_name = "inference"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("rows/", views.run_list_rows, name="run_list_rows"),
    path("new/", views.run_new, name="run_new"),
    path("estimate/", views.run_estimate, name="run_estimate"),
    path("prompts/", views.prompt_catalogue, name="prompts"),
    path("<int:run_id>/", views.run_detail, name="run_detail"),
    path("<int:run_id>/progress/", views.run_progress, name="run_progress"),
    path("<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("<int:run_id>/resume/", views.run_resume, name="run_resume"),
    path("<int:run_id>/retry-failed/", views.run_retry_failed, name="run_retry_failed"),
    path("<int:run_id>/batch-retry/", views.run_batch_retry, name="run_batch_retry"),
]
