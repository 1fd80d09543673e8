from django.urls import path

from . import views

app_name = "classifiers"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("runs/<int:run_id>/", views.figures, name="figures"),
    path("classifiers/", views.classifier_list, name="list"),
]
