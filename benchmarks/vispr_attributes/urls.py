from django.urls import path

from . import views

app_name = "vispr_attributes"
urlpatterns = [
    path("", views.leaderboard, name="leaderboard"),
    path("runs/<int:run_id>/", views.figures, name="figures"),
]
