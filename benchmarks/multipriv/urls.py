from django.urls import path

from . import person_views, views

app_name = "multipriv"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/rescore", views.rescore, name="rescore"),
    path("persons/", person_views.person_list, name="persons"),
    path("persons/<int:person_id>/", person_views.person_detail, name="person"),
    path("images/<int:image_id>/bytes", person_views.person_image_bytes, name="image_bytes"),
]
