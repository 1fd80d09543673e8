"""REST API for images and labelings (the shared plumbing lives in core.api).

Views are thin, like the pages: objects come through the same access helpers (404 for what the
caller may not see) and every change goes through `annotations.services` (claim, draft, submit,
skip), so the labeling rules (slots, blind labeling, versions, adjudication lock) live in one place.
"""
from __future__ import annotations

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from core.api import (
    MAX_INT,
    ApiView,
    EmptyBody,
    PageQuery,
    Pagination,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    error_response,
    names_list,
)
from core.roles import STAFF_ROLES, role_of

from . import blind, taxonomy
from .services import editing, labeling_queue, page
from .hooks import consensus_scores
from .access import get_image_for_user, get_labeling_for_user
from .forms import MAX_NOTE, MAX_RATIONALE
from .models import Annotator, Image, Label, Labeling

# =================================================================================================
# Images


class ImageQuery(PageQuery):
    split = serializers.ChoiceField(choices=[s for s, _ in Image.SPLITS], required=False)
    level = serializers.IntegerField(min_value=1, max_value=4, required=False,
                                     help_text="Consensus level under the active profile. Reviewers: among the images they have submitted only.")
    attribute = serializers.CharField(max_length=64, required=False, help_text="Consensus (active profile) has this attribute = 1. Staff only.")
    annotator = serializers.IntegerField(min_value=1, max_value=MAX_INT, required=False,
                                         help_text="Has labels from this annotator id. Reviewers: their own id only.")

    def validate_attribute(self, value):
        keys = taxonomy.active().keys
        if value not in keys:
            raise serializers.ValidationError(f"Unknown attribute {value[:64]!r}; use one of {', '.join(keys)}.")
        return value


class ImageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    vispr_id = serializers.CharField()
    split = serializers.CharField()
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)
    has_file = serializers.BooleanField()
    unsuitable = serializers.BooleanField()
    batch = serializers.IntegerField(source="batch_id", allow_null=True)
    level = serializers.SerializerMethodField(help_text="Consensus level under the active profile (null: no consensus yet, "
                                                        "or a reviewer who has not submitted their labeling of this image).")
    score = serializers.SerializerMethodField(help_text="Consensus severity score under the active profile.")
    bytes_url = serializers.SerializerMethodField()

    def _score(self, image):
        return self.context.get("scores", {}).get(image.pk)

    def get_level(self, image) -> int | None:
        score = self._score(image)
        return None if score is None else score.level

    def get_score(self, image) -> float | None:
        score = self._score(image)
        return None if score is None else score.score

    def get_bytes_url(self, image) -> str | None:
        return reverse("annotations:image_bytes", kwargs={"image_id": image.pk}) if image.has_file else None


class VisibleLabelSerializer(serializers.Serializer):
    annotator = serializers.CharField(help_text='"you", an anonymous "reviewer #n", a model, or (staff) the annotator name.')
    annotator_kind = serializers.CharField()
    attribute = serializers.CharField()
    value = serializers.FloatField()
    rationale = serializers.CharField()


class ImageDetailSerializer(ImageSerializer):
    my_labeling = serializers.SerializerMethodField()
    labels = serializers.SerializerMethodField()

    @extend_schema_field(inline_serializer("MyLabeling", {"id": serializers.IntegerField(), "status": serializers.CharField()}, allow_null=True))
    def get_my_labeling(self, image):
        labeling = self.context.get("my_labeling")
        return None if labeling is None else {"id": labeling.pk, "status": labeling.status}

    @extend_schema_field(VisibleLabelSerializer(many=True))
    def get_labels(self, image):
        return self.context.get("labels", [])


def visible_labels(user, image: Image, own: Labeling | None) -> list[dict]:
    """The image's labels the caller may see, by the labeling pages' blind rule.

    Adjudicators and admins see every label, with annotator names. A reviewer sees their own labels,
    and everyone else's (anonymised as on the labeling page) only once their own labeling of this
    image is submitted.
    """
    labels = (Label.objects.filter(image=image).select_related("annotator", "attribute")
              .order_by("annotator__kind", "annotator_id", "attribute__order"))
    staff = blind.sees_everything(user)
    own_annotator = own.annotator_id if own is not None else None
    if not blind.may_see_others_labels(user, own):
        labels = labels.filter(annotator_id=own_annotator) if own_annotator else labels.none()
    humans: dict = {}
    out = []
    for label in labels:
        if label.annotator_id == own_annotator:
            name = "you"
        elif staff:
            name = label.annotator.name
        else:
            name = page.annotator_label(label.annotator, humans)
        out.append({"annotator": name, "annotator_kind": label.annotator.kind, "attribute": label.attribute.key,
                    "value": label.value, "rationale": label.rationale})
    return out


def _own_labeling(user, image: Image) -> Labeling | None:
    # No Annotator.for_user here: reading must not create an annotator row.
    return Labeling.objects.filter(image=image, annotator__user=user).first()


class ImageList(ApiView):
    pagination_class = Pagination  # also tells the schema that the list is paginated

    @extend_schema(parameters=[ImageQuery], responses=ImageSerializer(many=True), summary="Images, with consensus level and score")
    def get(self, request):
        q = self.validated_query(ImageQuery)
        staff = role_of(request.user) in STAFF_ROLES
        images = Image.objects.order_by("vispr_id")
        if "split" in q:
            images = images.filter(split=q["split"])
        profile = consensus_scores().active_profile()
        if "level" in q or "attribute" in q:
            if "attribute" in q and not staff:
                raise PermissionDenied("Only adjudicators and admins may filter by consensus attribute.")
            if profile is None:
                images = images.none()
            else:
                # Blind rule: a reviewer filters only among the images whose consensus they may see.
                images = images.filter(blind.consensus_filter(request.user))
                images = consensus_scores().filter_images(profile, images, level=q.get("level"), attribute=q.get("attribute"))
        if "annotator" in q:
            if not staff and not Annotator.objects.filter(pk=q["annotator"], user=request.user).exists():
                raise PermissionDenied("Reviewers may filter by their own annotator id only.")
            images = images.filter(pk__in=Label.objects.filter(annotator_id=q["annotator"]).values("image"))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(images, request, view=self)
        scores = {}
        if profile is not None:
            visible = blind.consensus_visible_ids(request.user, [i.pk for i in page])
            shown = [i.pk for i in page if visible is None or i.pk in visible]
            scores = consensus_scores().scores_for(profile, shown) if shown else {}
        data = ImageSerializer(page, many=True, context={"scores": scores}).data
        return paginator.get_paginated_response(data)


class ImageDetail(ApiView):
    @extend_schema(responses={200: ImageDetailSerializer, 404: OpenApiResponse(description="No such image.")},
                   summary="One image with the labels the caller may see")
    def get(self, request, image_id: int):
        self.validated_query(EmptyBody)
        image = get_image_for_user(request.user, image_id)
        own = _own_labeling(request.user, image)
        profile = consensus_scores().active_profile()
        visible = profile is not None and blind.may_see_consensus(request.user, image)
        scores = consensus_scores().scores_for(profile, [image.pk]) if visible else {}
        context = {"scores": scores, "my_labeling": own, "labels": visible_labels(request.user, image, own)}
        return Response(ImageDetailSerializer(image, context=context).data)


# =================================================================================================
# Labelings


class LabelValueField(serializers.Field):
    """An answer: the JSON number 0 (no), 0.5 (unsure) or 1 (yes)."""

    default_error_messages = {"invalid": "An answer must be the number 0 (no), 0.5 (unsure) or 1 (yes)."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)) or float(data) not in page.VALUE_NAMES:
            self.fail("invalid")
        return float(data)

    def to_representation(self, value):
        return value


extend_schema_field(OpenApiTypes.NUMBER)(LabelValueField)


class LabelingWrite(StrictSerializer):
    """A draft save or a submission: the whole working copy, and the version it was loaded with."""

    version = StrictIntegerField(min_value=1, max_value=MAX_INT, help_text="The labeling's version as you last read it.")
    values = serializers.DictField(child=LabelValueField(), required=False, default=dict, help_text="attribute key -> 0, 0.5 or 1")
    rationales = serializers.DictField(child=StrictCharField(max_length=MAX_RATIONALE, allow_blank=True, trim_whitespace=False),
                                       required=False, default=dict, help_text="attribute key -> rationale")
    note = StrictCharField(max_length=MAX_NOTE, allow_blank=True, required=False, default="", trim_whitespace=False)
    flag = serializers.ChoiceField(choices=Labeling.FLAGS, allow_blank=True, required=False, default="")

    def validate(self, data):
        known = set(taxonomy.active().keys)
        unknown = (set(data["values"]) | set(data["rationales"])) - known
        if unknown:
            raise serializers.ValidationError(f"Unknown attribute(s): {names_list(unknown)}. Nothing was saved.")
        data["rationales"] = {k: v.strip() for k, v in data["rationales"].items() if v.strip()}
        return data


class RowSerializer(serializers.Serializer):
    key = serializers.CharField()
    level = serializers.IntegerField()
    question = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    rationale = serializers.CharField()
    suggestions = inline_serializer("Suggestion", {"annotator": serializers.CharField(), "value": serializers.FloatField(),
                                                   "rationale": serializers.CharField()}, many=True)
    others = inline_serializer("OtherLabel", {"annotator": serializers.CharField(), "value": serializers.FloatField()}, many=True)


class LabelingSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    image = serializers.IntegerField(source="image_id")
    image_vispr_id = serializers.CharField(source="image.vispr_id")
    status = serializers.CharField()
    version = serializers.IntegerField()
    note = serializers.CharField()
    flag = serializers.CharField()
    values = serializers.DictField(source="draft_values", child=serializers.FloatField())
    rationales = serializers.DictField(source="draft_rationales", child=serializers.CharField())
    assisted = serializers.BooleanField(help_text="Model suggestions were in view when you saved or submitted these answers "
                                                  "(agreement and the consensus can leave assisted labelings out).")
    suggestions_seen = serializers.ListField(child=serializers.CharField(), help_text="The model annotators whose suggestions were in view.")
    answers_as_suggested = serializers.DictField(child=serializers.BooleanField(), help_text="Per answered attribute with a "
                                                 "suggestion in view: whether the answer equals it.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)


class LabelingDetailSerializer(LabelingSerializer):
    locked = serializers.BooleanField(help_text="An adjudicator decided on this image: read-only.")
    editable = serializers.BooleanField(help_text="A draft on an image no adjudicator decided on; a submitted labeling is frozen.")
    rows = RowSerializer(many=True, help_text="Every question; suggestions and other annotators' answers as the labeling page shows them.")


_VALUE_OF_NAME = {name: value for value, name in page.VALUE_NAMES.items()}


def labeling_detail(labeling: Labeling) -> dict:
    """The labeling page's data (page.page_rows applies the blind rule) as JSON-ready values."""
    groups, _info = page.page_rows(labeling)
    rows = [
        {
            "key": r.key, "level": r.level, "question": r.question, "value": r.value, "rationale": r.rationale,
            "suggestions": [{"annotator": a, "value": value, "rationale": why} for a, _name, why, value in r.suggestions],
            "others": [{"annotator": a, "value": _VALUE_OF_NAME.get(v, v)} for a, v in r.others],
        }
        for group in groups
        for r in group.rows
    ]
    locked = editing.is_locked(labeling)
    labeling.locked, labeling.editable, labeling.rows = locked, not locked and labeling.status == Labeling.STATUS_DRAFT, rows
    return LabelingDetailSerializer(labeling).data


def labeling_error(exc: editing.LabelingError) -> Response:
    """A refused labeling action as JSON; the service already rolled everything back."""
    if isinstance(exc, editing.StaleVersion):
        return error_response(
            f"Stale version: you sent version {exc.loaded}, the labeling is now at version {exc.current} "
            "(saved elsewhere after you read it). Nothing was changed: GET the labeling and apply your change again.",
            status.HTTP_409_CONFLICT, current_version=exc.current,
        )
    if isinstance(exc, editing.LabelingLocked):
        return error_response(exc.message, status.HTTP_423_LOCKED)
    if isinstance(exc, editing.MissingAnswers):
        return error_response(exc.message, status.HTTP_400_BAD_REQUEST, missing=exc.missing)
    return error_response(exc.message, exc.status)


class LabelingQuery(PageQuery):
    status = serializers.ChoiceField(choices=[s for s, _ in Labeling.STATUSES], required=False)


class LabelingList(ApiView):
    pagination_class = Pagination

    @extend_schema(parameters=[LabelingQuery], responses=LabelingSerializer(many=True), summary="Your labelings")
    def get(self, request):
        q = self.validated_query(LabelingQuery)
        mine = Labeling.objects.filter(annotator__user=request.user).select_related("image").order_by("-created_at", "-pk")
        if "status" in q:
            mine = mine.filter(status=q["status"])
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(mine, request, view=self)
        return paginator.get_paginated_response(LabelingSerializer(page, many=True).data)

    @extend_schema(
        request=EmptyBody,
        responses={201: LabelingDetailSerializer, 200: LabelingDetailSerializer,
                   204: OpenApiResponse(description="No image needs your labels right now.")},
        summary="Claim the next image (or get your open draft back)",
    )
    def post(self, request):
        self.validated_body(EmptyBody)
        started = timezone.now()
        labeling = labeling_queue.claim_next(request.user)
        if labeling is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        labeling = get_labeling_for_user(request.user, labeling.pk)
        created = labeling.created_at >= started
        return Response(labeling_detail(labeling), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


_LABELING_ERRORS = {
    400: OpenApiResponse(description="Invalid input, missing answers (listed in `missing`) or a skipped labeling."),
    404: OpenApiResponse(description="No such labeling of yours."),
    409: OpenApiResponse(description="Stale version; `current_version` says the current one."),
    423: OpenApiResponse(description="Locked: an adjudicator decided on this image."),
}


def write_labeling(view, request, labeling_id: int, action) -> Response:
    """Save or submit through the labeling service: the same validation, version check and history as the form."""
    labeling = get_labeling_for_user(request.user, labeling_id)
    data = view.validated_body(LabelingWrite)
    try:
        labeling = action(labeling, request.user, **data)
    except editing.LabelingError as exc:
        return labeling_error(exc)
    return Response(labeling_detail(get_labeling_for_user(request.user, labeling.pk)))


_WRITE_EXAMPLE = OpenApiExample(
    "A draft",
    value={"version": 1, "values": {"gov_ids": 1, "age": 0.5}, "rationales": {"gov_ids": "passport on the table"}, "note": "", "flag": ""},
    request_only=True,
)


class LabelingDetail(ApiView):
    @extend_schema(responses={200: LabelingDetailSerializer, 404: _LABELING_ERRORS[404]}, summary="One of your labelings")
    def get(self, request, labeling_id: int):
        self.validated_query(EmptyBody)
        return Response(labeling_detail(get_labeling_for_user(request.user, labeling_id)))

    @extend_schema(request=LabelingWrite, responses={200: LabelingDetailSerializer, **_LABELING_ERRORS},
                   examples=[_WRITE_EXAMPLE], summary="Save the draft (replaces the working copy)")
    def put(self, request, labeling_id: int):
        return write_labeling(self, request, labeling_id, editing.save_draft)


class LabelingSubmit(ApiView):
    @extend_schema(request=LabelingWrite, responses={200: LabelingDetailSerializer, **_LABELING_ERRORS},
                   examples=[_WRITE_EXAMPLE], summary="Submit every answer (a submitted labeling is frozen)")
    def post(self, request, labeling_id: int):
        return write_labeling(self, request, labeling_id, editing.submit)


class LabelingSkip(ApiView):
    @extend_schema(request=EmptyBody, responses={200: LabelingDetailSerializer, **_LABELING_ERRORS}, summary="Skip a draft (gives its slot back)")
    def post(self, request, labeling_id: int):
        labeling = get_labeling_for_user(request.user, labeling_id)
        self.validated_body(EmptyBody)
        try:
            labeling = editing.skip(labeling, request.user)
        except editing.LabelingError as exc:
            return labeling_error(exc)
        return Response(labeling_detail(get_labeling_for_user(request.user, labeling.pk)))

