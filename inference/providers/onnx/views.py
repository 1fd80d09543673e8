"""The registered local classifiers, listed for admins (Runs > Local classifiers); registering is the
command line's (`manage.py register_classifier`), because it reads a file on the server."""
from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.roles import ROLE_ADMIN, require_role

from .models import ClassifierModel
from .session import execution_providers


@require_role(ROLE_ADMIN)
@require_GET
def classifier_list(request):
    models = list(ClassifierModel.objects.select_related("created_by"))
    return render(request, "inference/classifiers.html", {"models": models, "execution": ", ".join(execution_providers())})
