"""A test-only URLconf (`@pytest.mark.urls("tests.core.log_urls")`): a view that logs a line and
launches the `cprt_site.ping` task on commit, as a view that launches a job does."""
import logging

from django.http import JsonResponse
from django.urls import path

from core.dispatch import send_on_commit

logger = logging.getLogger("tests.logs")


def launch_ping(request):
    logger.info("launching ping %s", request.GET.get("value", "pong"))
    send_on_commit("cprt_site.ping", [request.GET.get("value", "pong")])
    return JsonResponse({"request_id": request.request_id})


urlpatterns = [path("launch-ping/", launch_ping)]


def broken(request):
    raise RuntimeError("a view that fails")


urlpatterns += [path("broken/", broken)]
