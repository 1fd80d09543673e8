"""GET /api/: what the API offers (every path, its methods and their summaries, from the OpenAPI schema
the docs render), as JSON for programs and as a page with the site's navigation for people."""
from __future__ import annotations

from functools import lru_cache

from django.shortcuts import render
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from core.api import ApiView, EmptyBody

METHODS = ("get", "post", "put", "patch", "delete")


@lru_cache(maxsize=1)
def endpoints() -> tuple[dict, ...]:
    """Every operation of the schema: path, method and summary (computed once per process)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    out = []
    for path, operations in schema.get("paths", {}).items():
        for method in METHODS:
            if method in operations:
                out.append({"path": path, "method": method.upper(), "summary": operations[method].get("summary", "")})
    return tuple(out)


class ApiIndex(ApiView):
    """The API's endpoints: path, method and what each does, with links to the schema and the docs."""

    @extend_schema(
        responses=inline_serializer("ApiIndex", {
            "docs": serializers.CharField(), "schema": serializers.CharField(),
            "endpoints": serializers.ListField(child=inline_serializer("ApiEndpoint", {
                "path": serializers.CharField(), "method": serializers.CharField(), "summary": serializers.CharField()})),
        }),
        summary="The API's endpoints, with links to the schema and the interactive docs",
    )
    def get(self, request):
        self.validated_query(EmptyBody)
        data = {"docs": reverse("api:docs"), "schema": reverse("api:schema"), "endpoints": list(endpoints())}
        if "text/html" in request.META.get("HTTP_ACCEPT", ""):
            return render(request._request, "api_index.html", data)  # a browser: the list as a page of the site
        return Response(data)
