"""Typed, bounded reads of the environment for the settings: a wrong value stops start-up.

Every helper takes the variable's name and its default (the value when the variable is unset) and
raises ImproperlyConfigured naming the variable, the value found and what is allowed, so that a
typo (`VLLM_BATCH_MODE=ofline`), a negative rate limit or a zero heartbeat never silently changes
what the app does. An empty number, switch, choice or path means "not set" (the default applies, as
.env.example's blank lines promise); an empty string or secret stays empty, and an empty URL is
refused where the default is not empty (DATABASE_URL= must not quietly mean SQLite).

`secret(NAME)` also reads `NAME_FILE`, a file whose stripped content is the value (Docker and
compose secrets), and records the value in `SECRETS_READ`, which core/secrets.py scrubs from
everything the app writes.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# Every value `secret()` returned, by variable name; settings.CPRT_SECRETS_READ is this same dict.
SECRETS_READ: dict[str, str] = {}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_DURATION = re.compile(r"\A\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ms|s|m|h|d)?\s*\Z")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def refuse(name: str, value: str, allowed: str) -> ImproperlyConfigured:
    """The error for `name=value`; `allowed` says what the variable accepts."""
    return ImproperlyConfigured(f"{name}={value!r} is not allowed: {allowed}.")


def _raw(name: str) -> str | None:
    return os.environ.get(name)


def _bounds_text(min, max) -> str:
    if min is not None and max is not None:
        return f"from {min} to {max}"
    if min is not None:
        return f"at least {min}"
    if max is not None:
        return f"at most {max}"
    return "any value"


def _check_bounds(name: str, raw: str, number, min, max, kind: str):
    if (min is not None and number < min) or (max is not None and number > max):
        raise refuse(name, raw, f"{kind} {_bounds_text(min, max)}")
    return number


def envint(name: str, default: int, *, min: int | None = None, max: int | None = None) -> int:
    """An integer (underscores allowed: 50_000) within [min, max]."""
    raw = _raw(name)
    if raw is None or not raw.strip():
        return default
    try:
        number = int(raw.strip())
    except ValueError:
        raise refuse(name, raw, f"an integer {_bounds_text(min, max)}") from None
    return _check_bounds(name, raw, number, min, max, "an integer")


def envfloat(name: str, default: float, *, min: float | None = None, max: float | None = None) -> float:
    """A finite number within [min, max]."""
    raw = _raw(name)
    if raw is None or not raw.strip():
        return default
    allowed = f"a number {_bounds_text(min, max)}"
    try:
        number = float(raw.strip())
    except ValueError:
        raise refuse(name, raw, allowed) from None
    if not math.isfinite(number):
        raise refuse(name, raw, allowed)
    return _check_bounds(name, raw, number, min, max, "a number")


def envduration(name: str, default: float, *, min: float | None = None, max: float | None = None) -> float:
    """Seconds, as a number (`90`, `0.5`) or with a unit (`500ms`, `90s`, `5m`, `2h`, `1d`), within
    [min, max] seconds."""
    raw = _raw(name)
    if raw is None or not raw.strip():
        return default
    allowed = f"seconds {_bounds_text(min, max)}, as a number or with a unit (500ms, 90s, 5m, 2h, 1d)"
    match = _DURATION.match(raw)
    if not match:
        raise refuse(name, raw, allowed)
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if (min is not None and seconds < min) or (max is not None and seconds > max):
        raise refuse(name, raw, allowed)
    return seconds


def envbool(name: str, default: bool) -> bool:
    """1/0, true/false, yes/no, on/off (any case)."""
    raw = _raw(name)
    if raw is None or not raw.strip():
        return default
    allowed = "1, true, yes, on or 0, false, no, off"
    word = raw.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise refuse(name, raw, allowed)


def envchoice(name: str, default: str, choices: tuple[str, ...] | list[str], *, case_sensitive: bool = False) -> str:
    """One of `choices`; without `case_sensitive`, matched in any case and returned as spelt in `choices`."""
    raw = _raw(name)
    if raw is None or not raw.strip():
        return default
    allowed = "one of " + ", ".join(choices)
    word = raw.strip()
    for choice in choices:
        if word == choice or (not case_sensitive and word.lower() == choice.lower()):
            return choice
    raise refuse(name, raw, allowed)


def envstr(name: str, default: str = "") -> str:
    """Any text, kept as it is (an empty value stays empty)."""
    raw = _raw(name)
    return default if raw is None else raw


def envlist(name: str, default: list[str]) -> list[str]:
    """Comma-separated values; blanks around each are dropped, and so are empty entries."""
    raw = _raw(name)
    if raw is None:
        return list(default)
    return [part.strip() for part in raw.split(",") if part.strip()]


def envpath(name: str, default: str | Path) -> Path:
    """A folder or file path (made absolute; `~` expanded)."""
    raw = _raw(name)
    if raw is None or not raw.strip():
        return Path(default).expanduser().resolve()
    return Path(raw.strip()).expanduser().resolve()


def check_url(name: str, value: str, schemes: tuple[str, ...]) -> str:
    """`value` if it is a URL with one of `schemes` (and a host, for network schemes)."""
    allowed = "a URL starting with " + " or ".join(f"{s}://" for s in schemes)
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise refuse(name, _shown(value), allowed) from None
    if parts.scheme not in schemes or "://" not in value:
        raise refuse(name, _shown(value), allowed)
    if parts.scheme in ("http", "https", "redis", "rediss", "postgres", "postgresql", "amqp") and not parts.hostname:
        raise refuse(name, _shown(value), allowed + " and a host")
    return value


def _shown(url: str) -> str:
    """A URL as an error message may show it: without its password."""
    return re.sub(r"(://[^/@:]*:)[^@/]*@", r"\1[redacted]@", url)


def envurl(name: str, default: str, schemes: tuple[str, ...] = ("http", "https")) -> str:
    """A URL with one of `schemes`; empty is accepted only where the default is empty (not set)."""
    raw = _raw(name)
    if raw is None:
        return default
    value = raw.strip()
    if not value:
        if default:
            raise refuse(name, raw, f"a URL starting with {' or '.join(s + '://' for s in schemes)} "
                                    "(it is set but empty: unset it to use the default)")
        return ""
    return check_url(name, value, schemes)


def secret(name: str, default: str = "") -> str:
    """A secret from `NAME`, or from the file that `NAME_FILE` names (its content, stripped). Both set
    is an error, and so are a missing or unreadable file and an empty one."""
    raw, path = _raw(name), _raw(f"{name}_FILE")
    if raw is not None and path is not None:
        raise ImproperlyConfigured(f"{name} and {name}_FILE are both set: set one of them (the value, or a file that holds it).")
    if path is not None:
        try:
            value = Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read ({exc.strerror or exc}): "
                                       f"it must name a readable file that holds {name}.") from None
        if not value:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} is an empty file: it must hold {name}.")
    else:
        value = default if raw is None else raw
    if value:
        SECRETS_READ[name] = value
    return value


def secret_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    """A URL that holds a password (DATABASE_URL): from `NAME` or the file `NAME_FILE`, checked like
    `envurl`, and recorded as a secret when it has a password."""
    from_file = _raw(f"{name}_FILE") is not None
    value = secret(name, "").strip()
    SECRETS_READ.pop(name, None)  # the whole URL is not the secret; its password is (core/secrets.py)
    if not value:
        if _raw(name) is not None and not from_file:
            raise refuse(name, _raw(name) or "", "a URL starting with " + " or ".join(s + "://" for s in schemes)
                         + " (it is set but empty: unset it to use the default)")
        return default
    check_url(f"{name}_FILE" if from_file else name, value, schemes)
    password = urlsplit(value).password
    if password:
        SECRETS_READ[f"{name} password"] = password
    return value
