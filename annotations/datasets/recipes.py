"""Dataset recipes: which VISPR images a dataset version takes (spec vispr-and-benchmarks.md §3).

A recipe is rules over the VISPR labels stored on the images (`Image.vispr_labels`) and their VISPR
split (`Image.vispr_split`), a seed and a target name. Each rule: a name, VISPR attribute ids of which
any must be present, ids that must all be absent, `only` (the image carries no id outside `any`: how
"a0_safe alone" is said), an optional quota (a seeded sample of the candidates; none = take all) and
optionally its own VISPR splits. Recipes come from the presets (one JSON file per preset in
`annotations/data/dataset_recipes/`, e.g. `cprt-paper.json`) or from an uploaded JSON file, and are
validated strictly here: unknown fields, malformed ids, negative quotas are refused with a message
naming the field. The optional `hub` block is the Hub card's metadata of exports scoped to a version.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Optional

from core import strictjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

PRESETS_DIR = Path(__file__).resolve().parent.parent / "data" / "dataset_recipes"
MAX_RECIPE_BYTES = 256 * 1024
VISPR_ID = re.compile(r"^a[0-9]{1,3}_[a-z0-9_]{1,60}\Z")  # a0_safe, a9_face_complete, a104_license_plate_partial
VISPR_SPLIT = re.compile(r"^[a-z]{2,10}[0-9]{4}\Z")  # test2017, val2017, train2017
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}\Z")  # a DatasetVersion name (a slug) and rule names
HUB_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}\Z")
LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?\Z")
# A Hub card's license_link: an https address, or a file of the dataset repository (no "..", not absolute).
LICENSE_LINK = re.compile(r"^(https://[^\s\"'<>]+|(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_./-]{0,199})\Z")


class RecipeError(ValueError):
    """A recipe was refused; the message lists every problem."""


def _vispr_id(value: str) -> str:
    if not VISPR_ID.match(value):
        raise ValueError(f"{value!r} is not a VISPR attribute id (an id looks like a9_face_complete)")
    return value


def _vispr_split(value: str) -> str:
    if not VISPR_SPLIT.match(value):
        raise ValueError(f"{value!r} is not a VISPR split name (e.g. test2017, val2017, train2017)")
    return value


def _name(value: str) -> str:
    if not NAME.match(value):
        raise ValueError(f"{value!r} is not a name: use letters, digits, '-' and '_' (at most 100, starting with a letter or digit)")
    return value


def _hub_word(value: str) -> str:
    if not HUB_WORD.match(value):
        raise ValueError(f"{value!r}: use letters, digits and . _ + - (at most 64)")
    return value


def _language(value: str) -> str:
    if not LANGUAGE.match(value):
        raise ValueError(f"{value!r} is not a language code (e.g. en, de, pt-BR)")
    return value


VisprId = Annotated[str, AfterValidator(_vispr_id)]
VisprSplit = Annotated[str, AfterValidator(_vispr_split)]
Name = Annotated[str, AfterValidator(_name)]
HubWord = Annotated[str, AfterValidator(_hub_word)]
Language = Annotated[str, AfterValidator(_language)]


def _no_repeats(values: list, what: str) -> None:
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{v!r} is listed twice in {what}")
        seen.add(v)


class HubMeta(BaseModel):
    """The Hub card's YAML metadata of an export scoped to the version."""

    model_config = ConfigDict(strict=True, extra="forbid")
    pretty_name: Optional[str] = Field(default=None, min_length=1, max_length=200)
    license: Optional[HubWord] = None
    license_name: Optional[HubWord] = None  # with license "other" only (the Hub pairs them)
    license_link: Optional[str] = Field(default=None, min_length=1, max_length=500)
    task_categories: list[HubWord] = Field(default_factory=list, max_length=10)
    language: list[Language] = Field(default_factory=list, max_length=10)
    tags: list[HubWord] = Field(default_factory=list, max_length=30)

    @model_validator(mode="after")
    def _other_license(self) -> "HubMeta":
        if (self.license_name or self.license_link) and self.license not in (None, "other"):
            raise ValueError(f"license_name and license_link go with license \"other\" only, not {self.license!r}")
        if self.license_link is not None and not LICENSE_LINK.match(self.license_link):
            raise ValueError(f"license_link {self.license_link[:80]!r}: an https:// address or a file of the dataset (e.g. LICENSE.md)")
        return self


class Rule(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    name: Name
    any: list[VisprId] = Field(min_length=1, max_length=200)
    none: list[VisprId] = Field(default_factory=list, max_length=200)
    only: bool = False
    quota: Optional[int] = Field(default=None, ge=1, le=10_000_000)
    vispr_splits: Optional[list[VisprSplit]] = Field(default=None, min_length=1, max_length=10)

    @model_validator(mode="after")
    def _consistent(self) -> "Rule":
        _no_repeats(self.any, "any")
        _no_repeats(self.none, "none")
        both = sorted(set(self.any) & set(self.none))
        if both:
            raise ValueError(f"{', '.join(both)} cannot be both required (any) and excluded (none)")
        if self.vispr_splits:
            _no_repeats(self.vispr_splits, "vispr_splits")
        return self


class Recipe(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    name: Optional[Name] = None  # the recipe's own name (a preset's file name)
    description: str = Field(default="", max_length=4000)
    vispr_splits: list[VisprSplit] = Field(min_length=1, max_length=10)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    target: Optional[Name] = None  # the dataset version's name
    rules: list[Rule] = Field(min_length=1, max_length=50)
    hub: Optional[HubMeta] = None

    @model_validator(mode="after")
    def _unique(self) -> "Recipe":
        _no_repeats([r.name for r in self.rules], "the rule names")
        _no_repeats(self.vispr_splits, "vispr_splits")
        return self

    def splits_of(self, rule: Rule) -> list[str]:
        return list(rule.vispr_splits or self.vispr_splits)

    def as_json(self) -> dict:
        """The recipe as stored on the version (every field, defaults included)."""
        return self.model_dump(mode="json")


def _where(loc: tuple, data) -> str:
    """`rules[1] (safe).quota` from pydantic's location, naming the rule when it has a name."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            name = node[part].get("name") if isinstance(node, list) and part < len(node) and isinstance(node[part], dict) else None
            out += f"[{part}]" + (f" ({name})" if isinstance(name, str) and name else "")
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out or "recipe"


def _describe(exc: ValidationError, data) -> list[str]:
    problems = []
    for err in exc.errors():
        where = _where(tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-after"))), data)
        if err["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown field")
        elif err["type"] == "missing":
            problems.append(f"{where}: required")
        else:
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}")
    return problems


def parse(data) -> Recipe:
    """A recipe from decoded JSON; RecipeError lists every problem."""
    if not isinstance(data, dict):
        raise RecipeError("A recipe is a JSON object with vispr_splits, seed, rules (and optionally name, description, target, hub).")
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        raise RecipeError("The recipe is refused: " + "; ".join(_describe(exc, data))) from None


def parse_text(text: str | bytes) -> Recipe:
    """A recipe from the text of a JSON file (an upload, a --recipe path)."""
    if len(text) > MAX_RECIPE_BYTES:
        raise RecipeError(f"The recipe file is larger than {MAX_RECIPE_BYTES // 1024} KiB.")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise RecipeError("The recipe file is not UTF-8 text.") from None
    try:
        data = strictjson.loads(text, allow_nan=True)
    except json.JSONDecodeError as exc:
        raise RecipeError(f"The recipe file is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    except strictjson.TooDeep as exc:
        raise RecipeError(f"The recipe file is not valid JSON: {exc}.") from None
    return parse(data)


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.json"))


def preset(name: str) -> Recipe:
    """A preset by name (its file `annotations/data/dataset_recipes/<name>.json`)."""
    if name not in preset_names():
        known = ", ".join(preset_names()) or "none"
        raise RecipeError(f"No recipe preset named {name!r}; presets: {known}.")
    return parse_text((PRESETS_DIR / f"{name}.json").read_bytes())


def with_overrides(recipe: Recipe, *, vispr_splits: list[str] | None = None, seed: int | None = None,
                   target: str | None = None) -> Recipe:
    """The recipe with the launch's choices (splits, seed, target name) applied, validated again."""
    data = recipe.as_json()
    if vispr_splits:
        data["vispr_splits"] = list(vispr_splits)
    if seed is not None:
        data["seed"] = seed
    if target is not None:
        data["target"] = target
    return parse(data)
