from django.urls import path

from . import views, vispr_views

app_name = "annotations"
urlpatterns = [
    path("images/<int:image_id>/bytes", views.image_bytes, name="image_bytes"),
    path("images/<int:image_id>/history", views.image_history, name="image_history"),
    path("label/", views.queue, name="queue"),
    path("label/next", views.next_image, name="next_image"),
    path("labelings/<int:labeling_id>/", views.labeling_page, name="labeling"),
    path("labelings/<int:labeling_id>/draft", views.labeling_draft, name="labeling_draft"),
    path("labelings/<int:labeling_id>/submit", views.labeling_submit, name="labeling_submit"),
    path("labelings/<int:labeling_id>/skip", views.labeling_skip, name="labeling_skip"),
    path("labelings/<int:labeling_id>/unskip", views.labeling_unskip, name="labeling_unskip"),
    path("vispr/mapping", vispr_views.vispr_mapping, name="vispr_mapping"),
    path("account/preferences", views.preferences, name="preferences"),
    path("account/password", views.password_change, name="password_change"),
]
