from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.http import HttpResponsePermanentRedirect

from annotations import views as annotation_views
from core import health, metrics
from inference import benchmarks

urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # Operations (docs/operations.md): liveness, readiness, Prometheus metrics (token or allow-list).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    # Pages without our base template (the Django admin) make the browser ask for /favicon.ico.
    path("favicon.ico", lambda request: HttpResponsePermanentRedirect(static("favicon.svg"))),
    path("", include("annotations.urls")),
    path("scoring/", include("scoring.urls")),
    path("runs/", include("inference.urls")),
    path("faces/", include("annotations.faces.urls")),
    path("datasets/", include("annotations.datasets.urls")),
    path("api/", include("cprt_site.api_urls")),
    # Every benchmark folder's pages under benchmarks/<key>/ (inference.benchmarks; none named here).
    *benchmarks.url_patterns(),
]
