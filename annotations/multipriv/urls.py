from django.urls import path

from . import views

app_name = "multipriv"
urlpatterns = [
    path("", views.person_list, name="persons"),
    path("persons/<int:person_id>/", views.person_detail, name="person"),
    path("images/<int:image_id>/bytes", views.person_image_bytes, name="image_bytes"),
]
