"""The profile fields of MultiPriv persons, their privacy categories, and how values are compared.

The field -> category table is a data file of the project (`benchmarks/multipriv/data/multipriv_fields.json`).
`normalise` is the comparison rule of profile reconstruction [decision, docs/multipriv.md]: Unicode
NFKC, case folded, whitespace and punctuation removed, except a "." or "," between two digits (a
decimal separator changes a number: "50.00" is not "5000"); commas grouping thousands ("10,000") are
dropped first. A value that reads as a date becomes YYYY-MM-DD first, so "1990.5.4", "1990-05-04",
"4 May 1990" and "1990年5月4日" are equal. Last, a whole value listed in the table's `equivalents`
(cross-language: 男 / Male, 中国 / China, 是 / yes) becomes its group's name; nothing else is
translated.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from functools import cache
from pathlib import Path

DATA_FILE = Path(__file__).resolve().parent / "data" / "multipriv_fields.json"
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


_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])")  # 10,000 and 1,234.5, not 1,23 or 12,3456


def _squeeze(text: str) -> str:
    """Whitespace and punctuation removed, but a "." or "," between two digits kept."""
    out = []
    for i, ch in enumerate(text):
        if ch in ".," and 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit():
            out.append(ch)
        elif not (ch.isspace() or unicodedata.category(ch).startswith("P")):
            out.append(ch)
    return "".join(out)


@cache
def _equivalents() -> dict[str, str]:
    """normalised variant -> its group's name (the table's `equivalents`)."""
    return {_squeeze(unicodedata.normalize("NFKC", variant).casefold()): group
            for group, variants in table().get("equivalents", {}).items() for variant in variants}


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
    text = _THOUSANDS.sub(lambda m: m[0].replace(",", ""), text)
    squeezed = _squeeze(text)
    return _equivalents().get(squeezed, squeezed)
