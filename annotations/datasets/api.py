"""REST API for dataset builds (admins only, like the dataset pages): list, launch (once per
`Idempotency-Key`, as runs), one build with its progress.

A launch is validated twice, as runs are: a strict serializer checks JSON types and refuses unknown
keys; then the page's own BuildForm applies every rule (a preset, or a recipe given as a JSON object
and read as the page reads an uploaded recipe file), and build.start_build stores, audits and
dispatches it on commit.
"""
from __future__ import annotations

import json

from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api import ApiView, EmptyBody, HasRole, PageQuery, Pagination, StrictCharField, StrictIntegerField, StrictSerializer, \
    form_errors
from core.idempotency import once_per_key
from core.roles import ROLE_ADMIN

from . import build, recipes
from .access import get_build_for_user
from .forms import UPLOAD, BuildForm
from .models import DatasetBuild


class IsAdmin(HasRole):
    roles = (ROLE_ADMIN,)
    message = "Only admins may see and launch dataset builds."


class DatasetBuildSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    version = serializers.CharField(source="version.name", allow_null=True, default=None,
                                    help_text="The dataset version the build made, once finished.")

    class Meta:
        model = DatasetBuild
        fields = ["id", "name", "status", "done", "total", "error", "seed", "recipe", "version", "created_by", "created_at", "started_at",
                  "finished_at"]
        read_only_fields = fields


class DatasetLaunch(StrictSerializer):
    """The build form's fields as typed JSON: a preset's name or a recipe object (not both)."""

    name = StrictCharField(max_length=100, help_text="The new version's name: letters, digits, - and _; never reused.")
    preset = StrictCharField(max_length=100, required=False, help_text="A recipe preset's name (GET /datasets/presets/<name>.json shows one).")
    recipe = serializers.DictField(required=False, help_text="A recipe, as the JSON of a recipe file (docs/datasets.md).")
    vispr_split = StrictCharField(max_length=16, required=False, allow_blank=True, help_text="Only this split (blank or absent: the recipe's).")
    seed = StrictIntegerField(min_value=0, max_value=2**63 - 1, required=False, allow_null=True, help_text="Absent: the recipe's seed.")

    def validate(self, attrs):
        if ("preset" in attrs) == ("recipe" in attrs):
            raise serializers.ValidationError("Give either a preset's name or a recipe, not both and not neither.")
        return attrs


class DatasetList(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]
    pagination_class = Pagination

    @extend_schema(responses=DatasetBuildSerializer(many=True), summary="Dataset builds, newest first")
    def get(self, request):
        self.validated_query(PageQuery)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(DatasetBuild.objects.select_related("created_by", "version"), request, view=self)
        return paginator.get_paginated_response(DatasetBuildSerializer(page, many=True).data)

    @extend_schema(
        request=DatasetLaunch,
        responses={201: DatasetBuildSerializer, 400: OpenApiResponse(description="Refused, with a message per field.")},
        examples=[OpenApiExample("The paper's test set", request_only=True, value={"name": "paper-test", "preset": "cprt-paper",
                                                                                  "vispr_split": "test"})],
        summary="Build a dataset version (same rules as the datasets page)",
    )
    @once_per_key
    def post(self, request):
        data = self.validated_body(DatasetLaunch)
        fields = {"name": data["name"], "vispr_split": data.get("vispr_split") or "", "seed": data.get("seed")}
        files = {}
        if "recipe" in data:
            fields["source"] = UPLOAD
            files["recipe_file"] = SimpleUploadedFile("recipe.json", json.dumps(data["recipe"]).encode(), "application/json")
        else:
            fields["source"] = data["preset"]
        form = BuildForm({k: v for k, v in fields.items() if v is not None}, files)
        if not form.is_valid():
            errors = form_errors(form.errors)
            if "recipe_file" in errors:
                errors["recipe"] = errors.pop("recipe_file")
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        c = form.cleaned_data
        try:
            splits = build.resolve_splits([c["vispr_split"]]) if c["vispr_split"] else None
            recipe = recipes.with_overrides(c["recipe"], vispr_splits=splits, seed=c["seed"])
            job = build.start_build(request.user, recipe, c["name"])
        except (build.BuildError, recipes.RecipeError) as exc:
            return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(DatasetBuildSerializer(job).data, status=status.HTTP_201_CREATED)


class DatasetDetail(ApiView):
    permission_classes = [IsAuthenticated, IsAdmin]

    @extend_schema(responses={200: DatasetBuildSerializer, 404: OpenApiResponse(description="No such dataset build.")},
                   summary="One dataset build with its progress")
    def get(self, request, build_id: int):
        self.validated_query(EmptyBody)
        return Response(DatasetBuildSerializer(get_build_for_user(request.user, build_id)).data)
