from django.urls import path

from . import views

app_name = "annotations"
urlpatterns = [
    path("images/<int:image_id>/bytes", views.image_bytes, name="image_bytes"),
]
