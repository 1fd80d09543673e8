"""The profile fields of MultiPriv persons, their privacy categories, and how values are compared.

The field -> category table is a data file of the project (`annotations/data/multipriv_fields.json`).
`normalise` is the comparison rule of profile reconstruction [decision, docs/benchmarks.md]: Unicode
NFKC, case folded, whitespace and punctuation removed; a value that reads as a date becomes
YYYY-MM-DD first, so "1990.5.4", "1990-05-04", "4 May 1990" and "1990年5月4日" are equal.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from functools import cache
from pathlib import Path

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "multipriv_fields.json"
ABSENT = "None"  # the release's marker of an absent field
OTHER = "other"  # category of a field the table does not know


@cache
def table() -> dict:
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


def categories() -> dict[str, str]:
    """letter -> name, e.g. {"A": "biometric", ...}."""
    return dict(table()["categories"])


def canonical(field: str) -> str:
    """The released English name of a field (Chinese names map onto it); unknown names unchanged."""
    field = field.strip()
    return table()["aliases"].get(field, field)


def category_of(field: str) -> str:
    return table()["fields"].get(canonical(field), OTHER)


_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1)}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_YMD = re.compile(r"^(\d{4})\s*[./\-年]\s*(\d{1,2})\s*[./\-月]\s*(\d{1,2})\s*日?\Z")
_DMY_WORDS = re.compile(r"^(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})\Z")
_MDY_WORDS = re.compile(r"^([a-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})\Z")


def as_date(text: str) -> str | None:
    """YYYY-MM-DD when `text` is a date in one of the accepted spellings, else None."""
    t = unicodedata.normalize("NFKC", text).strip().casefold()
    parts = None
    if m := _YMD.match(t):
        parts = (int(m[1]), int(m[2]), int(m[3]))
    elif (m := _DMY_WORDS.match(t)) and m[2] in _MONTHS:
        parts = (int(m[3]), _MONTHS[m[2]], int(m[1]))
    elif (m := _MDY_WORDS.match(t)) and m[1] in _MONTHS:
        parts = (int(m[3]), _MONTHS[m[1]], int(m[2]))
    if parts is None:
        return None
    try:
        return dt.date(*parts).isoformat()
    except ValueError:
        return None


def normalise(value) -> str:
    """The comparable form of a profile value ("" for an absent one)."""
    if value is None:
        return ""
    text = str(value)
    if text.strip() == ABSENT:
        return ""
    if date := as_date(text):
        return date
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if not (ch.isspace() or unicodedata.category(ch).startswith("P")))
