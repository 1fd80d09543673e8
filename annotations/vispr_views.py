"""The VISPR mapping page: which VISPR attributes make each CPRT attribute present for the `vispr`
annotator (annotations/services/vispr_labels.py), with VISPR's descriptions from the imported attributes.tsv."""
from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.roles import ROLES, require_role

from . import blind
from .models import Annotator, Label
from .services.vispr_labels import MappingError, mapping_table, read_mapping


@require_role(*ROLES)
@require_GET
def vispr_mapping(request):
    try:
        mapping = read_mapping()
    except MappingError as exc:
        return render(request, "annotations/vispr_mapping.html", {"error": str(exc)}, status=500)
    table = mapping_table(mapping)
    # How many images VISPR labelled is a count of another annotator's labels: staff only (annotations/blind.py).
    labelled = (Label.objects.filter(annotator__kind=Annotator.KIND_DATASET).values("image_id").distinct().count()
                if blind.sees_everything(request.user) else None)
    return render(request, "annotations/vispr_mapping.html", {"mapping": mapping, "table": table, "labelled_images": labelled})
