"""The interface every model provider implements, and the types it returns or raises.

A provider turns one request (system text, user text, any number of images, JSON schema) into a
`ProviderReply`. It never decides what an answer means: the run service validates the parsed JSON
with the pydantic models in `inference.schemas`. Transport problems are raised as typed errors so
that the caller can retry the retryable ones (429, 5xx, timeouts) and give up on the rest.
"""
from __future__ import annotations

import email.utils
import re
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache, wraps
from typing import Any
from urllib.parse import urlsplit

from core import strictjson
from core.secrets import display_url, scrub


@dataclass(frozen=True)
class ModelRequest:
    system: str
    user: str
    schema_name: str  # the kind's stage: "judge", "stage1", "stage2", ...
    schema: dict
    images: tuple[tuple[bytes, str], ...] = ()  # (bytes, MIME type), sent in this order


@dataclass
class ProviderReply:
    """What came back: the model's text, its JSON if it parses, the whole raw response, usage, refusal."""

    text: str | None
    raw: dict
    tokens_in: int = 0
    tokens_out: int = 0
    refusal: str = ""  # non-empty when the provider refused or blocked (the reason, verbatim)
    finish_reason: str = ""
    latency_ms: int = 0
    parsed: Any = None
    parse_error: str = ""

    def __post_init__(self):
        if self.parsed is None and not self.parse_error and not self.refusal:
            self.parsed, self.parse_error = parse_json_object(self.text)


class ProviderError(Exception):
    """A request failed; `raw` holds whatever the server sent back (JSON-able)."""

    def __init__(self, message: str, raw: dict | None = None, status: int | None = None):
        super().__init__(message)
        self.raw = raw or {}
        self.status = status


class RetryableError(ProviderError):
    """429, 5xx, timeouts, dropped connections: worth another attempt after `retry_after` seconds."""

    def __init__(self, message: str, raw: dict | None = None, status: int | None = None, retry_after: float | None = None):
        super().__init__(message, raw, status)
        self.retry_after = retry_after


class PermanentError(ProviderError):
    """A request the server will never accept as sent (400, 413, 422...): this item fails.

    `item_specific`: the provider said why, and it is about this item (its context is too long, its
    content breaks a policy); such errors never count towards pausing the run. Other permanent errors
    (a plain 400) may be the run's own (a parameter every request repeats): N of them in a row, with
    no answer between, pause the run (docs/background-jobs.md, "What a provider's answer means")."""

    def __init__(self, message: str, raw: dict | None = None, status: int | None = None, item_specific: bool = False):
        super().__init__(message, raw, status)
        self.item_specific = item_specific


class FatalProviderError(PermanentError):
    """Nothing in this run can succeed (bad credentials, unknown model, an answer that is not the
    provider's API): the run pauses with `reason` (a key of inference.outcomes.PAUSE_REASONS)."""

    def __init__(self, message: str, raw: dict | None = None, status: int | None = None, reason: str = ""):
        super().__init__(message, raw, status)
        self.reason = reason or fatal_reason(status)


class ProviderUnavailable(Exception):
    """The provider is not configured in this process (missing key or URL); the message says what."""


_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


def parse_json_object(text: str | None) -> tuple[Any, str]:
    """Strict: the whole text must be one JSON object (a single ```json fence around it is tolerated)."""
    if text is None or not text.strip():
        return None, "empty response"
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = strictjson.loads(body, allow_nan=True)
    except (ValueError, RecursionError) as exc:
        return None, f"not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    return value, ""


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = parsed.timestamp() - time.time()
    return max(0.0, min(seconds, 3600.0))


def retryable_status(status: int) -> bool:
    return status in (408, 409, 425, 429) or status >= 500


def fatal_status(status: int) -> bool:
    return status in (401, 403, 404)


def fatal_reason(status: int | None) -> str:
    """The pause reason of a status that fails every request of a run."""
    return {401: "auth", 403: "auth", 404: "no_model"}.get(status or 0, "not_api")


# Error codes and texts by which a provider says that a 400 is about this item, not the run's requests.
ITEM_SPECIFIC_CODES = {
    "context_length_exceeded", "string_above_max_length", "content_policy_violation", "content_filter",
    "invalid_image", "image_parse_error", "invalid_image_format", "image_too_large",
}
ITEM_SPECIFIC_TEXT = re.compile(
    r"context length|maximum context|too many tokens|exceeds the maximum number of tokens|token count .* exceeds|"
    r"content (management )?policy|safety|image (is )?too large|could not (process|decode) (the )?image|invalid image",
    re.IGNORECASE,
)


def item_specific(message: str, body) -> bool:
    """A 4xx whose code or text says it is about this request's content (context too long, content policy)."""
    error = body.get("error") if isinstance(body, dict) else None
    code = str(error.get("code") or "") if isinstance(error, dict) else ""
    return code in ITEM_SPECIFIC_CODES or bool(ITEM_SPECIFIC_TEXT.search(message or ""))


class NotTheAPI(FatalProviderError):
    """A 2xx whose body is not the provider's API answer (an HTML page from a proxy, a base URL that
    is not an API): every request will get the same; the run pauses ("not_api")."""

    def __init__(self, message: str, raw: dict | None = None, status: int | None = None):
        super().__init__(message, raw, status, reason="not_api")


def error_body(response) -> dict:
    """The body of an HTTP error response as JSON-able data, whatever it was."""
    if response is None:
        return {}
    try:
        body = response.json()
    except Exception:  # noqa: BLE001 - any body at all is better than none
        try:
            return {"text": response.text[:4000], "status": response.status_code}
        except Exception:  # noqa: BLE001
            return {}
    return body if isinstance(body, dict) else {"body": body}


@dataclass
class Availability:
    available: bool
    reason: str = ""
    settings: dict = field(default_factory=dict)  # non-secret settings worth showing (base URL, limits)

    def __post_init__(self):
        # Shown on pages: a base URL loses its user and password, any other text its secrets.
        self.reason = scrub(self.reason)
        self.settings = {k: scrub(display_url(v)) if isinstance(v, str) else v for k, v in self.settings.items()}


def endpoint_host(url: str) -> str:
    """host[:port] of a URL, without scheme, credentials, path or query ("" for no or a broken URL)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}" if host and port else host


class Provider:
    """Base class: subclasses implement `generate` and `availability`."""

    name: str = ""
    label: str = ""
    queue: str = "api"
    exclusive: bool = False  # True: it serves only the run kinds that name it in `Kind.providers` (the launch form refuses the others)
    default_base_url: str = ""  # where the SDK goes when no base URL is configured
    default_model: str = ""  # what the launch form offers first (the admin may name any model)

    @classmethod
    def suggested_model(cls) -> str:
        """The model name the launch form starts with for this provider."""
        return cls.default_model

    @classmethod
    def base_url(cls) -> str:
        """The base URL configured for this provider ("" when the SDK's default is used)."""
        return ""

    @classmethod
    def endpoint(cls) -> str:
        """Where requests go, as a run records it: the host (and port) only, never a path, user or key."""
        return endpoint_host(cls.base_url() or cls.default_base_url)

    def __init__(self, model_name: str):
        self.model_name = model_name

    @classmethod
    def availability(cls) -> Availability:  # pragma: no cover - abstract
        raise NotImplementedError

    def request_params(self) -> dict:
        """Sampling parameters sent with every request, recorded on the run for traceability."""
        return {}

    def generate(self, request: ModelRequest) -> ProviderReply:  # pragma: no cover - abstract
        raise NotImplementedError

    def ask(self, system: str, user: str, images, schema: dict, schema_name: str = "answer") -> ProviderReply:
        """The one call every run kind makes: system and user text, any number of (bytes, MIME type)
        images (in this order), and the JSON schema the answer must follow."""
        return self.generate(ModelRequest(system, user, schema_name, schema, tuple((bytes(d), m) for d, m in images)))

    # Shorthands for the CPRT kinds' requests (prompts and schemas come from inference.prompts).
    def judge(self, image: bytes, mime: str, prompt: dict, schema: dict) -> ProviderReply:
        return self.ask(prompt["system"], prompt["user"], [(image, mime)], schema, "judge")

    def annotate_stage1(self, image: bytes, mime: str, prompt: dict, schema: dict) -> ProviderReply:
        return self.ask(prompt["system"], prompt["user"], [(image, mime)], schema, "stage1")

    def annotate_stage2(self, user_text: str, prompt: dict, schema: dict) -> ProviderReply:
        return self.ask(prompt["system"], user_text, [], schema, "stage2")


def shared_client(factory):
    """One SDK client per process and configuration, created under a lock.

    The chunk's threads share the client's connection pool; a duplicate built by a racing thread
    would be garbage-collected and (for google-genai) close the pool under the other's feet.
    """
    cached = lru_cache(maxsize=16)(factory)
    lock = threading.Lock()

    @wraps(factory)
    def get(*args):
        with lock:
            return cached(*args)

    return get
