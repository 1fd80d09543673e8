"""The DRF plumbing every API module shares (annotations, inference and scoring APIs).

- JSON only, strictly: a size limit, UTF-8, no NaN/Infinity; anything else is a 400 (or 415 for
  another content type) with a sentence saying why;
- serializers refuse unknown keys and wrong JSON types instead of coercing them;
- query strings are validated the same way: an unknown parameter is a 400, not silently ignored;
- roles as on the pages: anonymous 401, no role 403, then per object type;
- the OpenAPI schema (`ApiSchema`) documents those refusals on every operation, and list
  endpoints document their pagination envelope.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from . import strictjson
from .roles import ROLES, STAFF_ROLES, role_of

MAX_BODY_BYTES = 256 * 1024  # a complete labeling with every rationale at its limit is ~50 KB
MAX_INT = 2**31 - 1


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(data) -> bool:
    """True when a string or key holds a lone surrogate (JSON can escape one, UTF-8 cannot encode it)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class StrictJSONParser(JSONParser):
    """JSON bodies only: at most MAX_BODY_BYTES, UTF-8 text (no escaped lone surrogates), no NaN/Infinity
    (nor numbers too large to be finite), no absurd nesting."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            raise ParseError(f"The request body is larger than {MAX_BODY_BYTES} bytes; nothing was changed.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("The request body is not valid UTF-8; nothing was changed.") from None
        try:
            data = strictjson.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"The request body is not valid JSON ({exc}); nothing was changed.") from None
        if _has_lone_surrogate(data):
            raise ParseError("The request body is not valid JSON text (an escaped lone surrogate, \\ud800-\\udfff, "
                             "is not a character); nothing was changed.")
        return data


class HasRole(BasePermission):
    """The caller's role (core.roles.role_of) is one of `roles`; anonymous callers get 401 from DRF."""

    roles: tuple[str, ...] = ROLES
    message = "Your account has no role that allows this."

    def has_permission(self, request, view) -> bool:
        return role_of(request.user) in self.roles


class IsStaff(HasRole):
    roles = STAFF_ROLES
    message = "Only adjudicators and admins may use this endpoint."


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why the request was refused.")


_INVALID_INPUT = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="Invalid input, nothing changed: `detail`, or a list of messages per field (`non_field_errors` for the body "
                "as a whole), naming the problem.",
)


_IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", {"type": "string", "minLength": 1, "maxLength": 128, "pattern": r"^[!-~]{1,128}$"}, OpenApiParameter.HEADER,
    description="Optional, 1 to 128 visible ASCII characters (a UUID will do). The first successful answer to a key is kept "
                "for 24 hours, per user and endpoint: a request repeated with the same key and the same body gets that answer "
                "again (same status, same job, header `Idempotent-Replayed: true`) and launches nothing; the same key with "
                "another body is refused with 422. Concurrent repeats too. A refused request (4xx) keeps nothing.",
)


class ApiSchema(AutoSchema):
    """Every operation also documents the refusals the shared plumbing gives (400 invalid query or body,
    401 no or unknown token, 403 role, 404 no such object or page, 415 a body that is not JSON), unless
    the view documents them itself; a launch marked `@once_per_key` (core.idempotency) documents its
    Idempotency-Key header and 422."""

    def _idempotent(self) -> bool:
        return bool(getattr(getattr(self.view, self.method.lower(), None), "idempotent", False))

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        return [*parameters, _IDEMPOTENCY_KEY] if self._idempotent() else parameters

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        refusals = {
            "400": _INVALID_INPUT,
            "401": OpenApiResponse(ErrorSerializer, description="No token or session, or an unknown token."),
            "403": OpenApiResponse(ErrorSerializer, description="Your role does not allow this."),
            # No body documented: a path whose id is not a number does not reach the API (Django's own 404 page).
            "404": OpenApiResponse(description="No such object, or no such page of results."),
        }
        if self.method in ("POST", "PUT", "PATCH"):
            refusals["415"] = OpenApiResponse(ErrorSerializer, description="The body is not application/json.")
        if self._idempotent():
            refusals["422"] = OpenApiResponse(ErrorSerializer, description="This Idempotency-Key was already used with another body.")
        for code, response in refusals.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(response, code, direction=direction)
        return dict(sorted(responses.items()))


class ApiView(APIView):
    """Base of every API view: JSON in and out, authenticated, a role required (subclasses narrow it)."""

    schema = ApiSchema()
    parser_classes = [StrictJSONParser]
    renderer_classes = [JSONRenderer]  # the browsable API needs inline scripts our CSP forbids
    permission_classes = [IsAuthenticated, HasRole]

    def validated_body(self, serializer_class, **kwargs):
        serializer = serializer_class(data=self.request.data, **kwargs)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def validated_query(self, serializer_class, **kwargs):
        """Query parameters through a strict serializer; a repeated parameter is refused too."""
        params = self.request.query_params
        repeated = sorted(k for k in params if len(params.getlist(k)) > 1)
        if repeated:
            raise serializers.ValidationError({k: ["Give this parameter once."] for k in repeated})
        serializer = serializer_class(data=params.dict(), **kwargs)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


MAX_PAGE_SIZE = 500


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"  # validated by PageQuery first: out of range is refused, not clamped
    max_page_size = MAX_PAGE_SIZE


def names_list(keys) -> str:
    """Up to ten keys, sorted and cut to 64 characters each, for an error message."""
    keys = sorted(str(k) for k in keys)
    shown = ", ".join(k[:64] for k in keys[:10])
    return shown + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know (a typo must not be silently ignored)."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = set(data) - set(self.fields)
            if unknown:
                allowed = ", ".join(self.fields) or "none"
                raise serializers.ValidationError(
                    {api_settings.NON_FIELD_ERRORS_KEY: [f"Unknown field(s): {names_list(unknown)}. Allowed: {allowed}."]}
                )
        return super().to_internal_value(data)


class EmptyBody(StrictSerializer):
    """For actions that take no input: an empty body or {}."""


class PageQuery(StrictSerializer):
    """The query of a paginated list: `page` and `page_size` (default 50)."""

    page = serializers.IntegerField(min_value=1, max_value=MAX_INT, required=False)
    page_size = serializers.IntegerField(min_value=1, max_value=MAX_PAGE_SIZE, required=False,
                                         help_text=f"Items per page, 1 to {MAX_PAGE_SIZE} (default 50).")


def form_errors(errors) -> dict:
    """A Django form's errors as an API 400 body: one list of messages per field, form-wide ones under non_field_errors."""
    return {(api_settings.NON_FIELD_ERRORS_KEY if name == "__all__" else name): list(msgs) for name, msgs in errors.items()}


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer (not a string, float or boolean)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number (not a string or boolean)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A JSON string (numbers are not turned into strings)."""

    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false (not "yes", 1 or "on")."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


def error_response(message: str, http_status: int, **extra) -> Response:
    return Response({"detail": message, **extra}, status=http_status)
