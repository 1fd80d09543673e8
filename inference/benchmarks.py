"""The benchmark registry: every benchmark beside CPRT declares itself once, and the shared pages read it.

A benchmark is a folder (docs/structure.md, design benchmark-folders.md): a Django app under
`benchmarks/<name>/` whose AppConfig subclasses `BenchmarkConfig` and names its declaration, a
`Benchmark` subclass, by dotted path (pretix's plugin pattern):

    class VisprAttributesConfig(benchmarks.BenchmarkConfig):   # `from inference import benchmarks`
        name = "benchmarks.vispr_attributes"
        benchmark = "benchmarks.vispr_attributes.declaration.VisprAttributes"

`discover()` (called by inference's AppConfig.ready(), once every app config exists) imports each
declaration, registers its run kinds into `inference.kinds.KINDS` and keeps one instance per key.
Nothing below the benchmarks imports them: `cprt_site/urls.py` includes `url_patterns()`, the
Benchmarks page lists `all()`, the demo calls `seed_demo()`, and each kind's pages follow from its
`figures_url(run)`. A key or kind key that is already taken refuses to start (ImproperlyConfigured).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from django.apps import AppConfig, apps
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

if TYPE_CHECKING:  # apps.py of a benchmark imports this module before the models are ready
    from .kinds.base import Kind


@dataclass(frozen=True)
class Figure:
    """One column of a benchmark's leaderboard (lmms-eval's metric_list entry, plus a unit for the pages)."""

    key: str
    label: str
    unit: str = ""
    higher_is_better: bool = True
    headline: bool = True


@dataclass(frozen=True)
class DataStatus:
    """What the Benchmarks page says of a benchmark's data: ready to run, what is there, and what to do next."""

    ready: bool
    summary: str  # "68 attributes, 6,736 images"
    next_step: str  # "Import VISPR: manage.py import_vispr /data/vispr"
    next_url: str = ""  # where the next step is done in the browser ("" none)


class Benchmark:
    """A benchmark's declaration: class attributes and a few small methods (subclass one per benchmark)."""

    key: ClassVar[str] = ""  # URL prefix /benchmarks/<key>/
    label: ClassVar[str] = ""
    question: ClassVar[str] = ""  # what it asks, one sentence (the Benchmarks page)
    kinds: ClassVar[tuple[type[Kind], ...]] = ()  # registered into inference.kinds.KINDS
    figures: ClassVar[dict[str, tuple[Figure, ...]]] = {}  # kind key -> leaderboard columns, in order
    urls: ClassVar[str] = ""  # dotted path of its urlconf module (with app_name), included under /benchmarks/<key>/
    home_url_name: ClassVar[str] = ""  # its own page (leaderboard), a URL name without arguments
    # Addresses it had before it became a folder: (old prefix, new prefix under benchmarks/<key>/), each
    # answered with a 301 to the same rest of the path and query (bookmarks and scripts keep working).
    # "<id>" in an old prefix stands for a number, put where "<id>" is in the new one (runs/<id>/).
    old_paths: ClassVar[tuple[tuple[str, str], ...]] = ()

    def home_url(self) -> str:
        from django.urls import reverse

        return reverse(self.home_url_name) if self.home_url_name else ""

    def data_status(self) -> DataStatus:  # pragma: no cover - abstract
        raise NotImplementedError

    def figures_url(self, run) -> str:  # pragma: no cover - abstract
        """The run's figures page (the run page and `launch_run --json` link it)."""
        raise NotImplementedError

    def report(self, run) -> dict:  # pragma: no cover - abstract
        """The run's figures, from stored answers only (JSON-able)."""
        raise NotImplementedError

    def export_rows(self, run) -> Iterable[dict]:
        """Rows this benchmark adds to a run's downloads (default: none)."""
        return ()

    def seed_demo(self, log: Callable[[str], None]) -> dict:
        """The demo's data for it (provenance "demo"), idempotent; counts of what was created. Default: none."""
        return {}


class BenchmarkConfig(AppConfig):
    """The AppConfig of a benchmark's folder: `benchmark` is the dotted path of its `Benchmark` subclass.
    (Subclass it through the module, `benchmarks.BenchmarkConfig`, so that the app's apps.py holds one
    AppConfig class and Django picks it without `default = True`.)"""

    benchmark: ClassVar[str] = ""


_registry: dict[str, Benchmark] = {}


def discover() -> list[Benchmark]:
    """Register the benchmark of every installed app config that names one (idempotent)."""
    for config in apps.get_app_configs():
        path = getattr(config, "benchmark", "")
        if path:
            register(import_string(path))
    return all_benchmarks()


def register(cls: type[Benchmark]) -> Benchmark:
    """Keep one instance of the declaration and put its kinds into inference.kinds.KINDS."""
    from . import kinds as kind_registry

    if not cls.key:
        raise ImproperlyConfigured(f"{cls.__module__}.{cls.__name__} has no key.")
    known = _registry.get(cls.key)
    if known is not None:
        if type(known) is cls:
            return known
        raise ImproperlyConfigured(f"Two benchmarks use the key {cls.key!r}: {type(known).__module__} and {cls.__module__}.")
    for kind in cls.kinds:
        taken = kind_registry.KINDS.get(kind.key)
        if taken is not None and taken is not kind:
            raise ImproperlyConfigured(f"Benchmark {cls.key!r}: the run kind {kind.key!r} is taken by {taken.__module__}.")
    for kind in cls.kinds:
        kind_registry.KINDS[kind.key] = kind
    _registry[cls.key] = instance = cls()
    return instance


def all_benchmarks() -> list[Benchmark]:
    """The registered benchmarks, by label."""
    return sorted(_registry.values(), key=lambda b: b.label.lower())


def get(key: str) -> Benchmark:
    try:
        return _registry[key]
    except KeyError:
        raise ValueError(f"Unknown benchmark {key!r}; known: {', '.join(sorted(_registry)) or 'none'}.") from None


def of_kind(task: str) -> Benchmark | None:
    """The benchmark a run kind belongs to (None: one of CPRT's own kinds)."""
    return next((b for b in _registry.values() if any(k.key == task for k in b.kinds)), None)


def url_patterns() -> list:
    """Every registered benchmark's urls under benchmarks/<key>/, and a 301 from each of its `old_paths`
    (cprt_site/urls.py includes this last, so an old prefix never hides a page of the core apps)."""
    from django.urls import include, path, re_path

    patterns = [path(f"benchmarks/{b.key}/", include(b.urls)) for b in all_benchmarks() if b.urls]
    for b in all_benchmarks():
        for old, new in b.old_paths:
            old_re = re.escape(old).replace(re.escape("<id>"), "(?P<id>[0-9]+)")
            patterns.append(re_path(rf"^{old_re}(?P<rest>.*)$", _moved_to(f"/benchmarks/{b.key}/{new}")))
    return patterns


def _moved_to(prefix: str):
    def moved(request, rest: str, id: str = ""):
        from django.http import HttpResponsePermanentRedirect

        query = request.META.get("QUERY_STRING", "")
        return HttpResponsePermanentRedirect(prefix.replace("<id>", id) + rest + (f"?{query}" if query else ""))

    return moved


def seed_demo(log: Callable[[str], None] = lambda _msg: None) -> dict[str, dict]:
    """Each benchmark's demo data (the demo's seeding calls this; it never imports a benchmark)."""
    return {b.key: b.seed_demo(log) for b in all_benchmarks()}
