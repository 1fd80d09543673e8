from django.urls import path

from . import views

app_name = "faces"
urlpatterns = [
    path("", views.job_list, name="jobs"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/progress/", views.job_progress, name="job_progress"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("jobs/<int:job_id>/resume/", views.job_resume, name="job_resume"),
    path("variants/<int:variant_id>/", views.variant_detail, name="variant"),
    path("variants/<int:variant_id>/bytes", views.variant_bytes, name="variant_bytes"),
]
