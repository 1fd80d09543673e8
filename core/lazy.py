"""A module imported on first use, for heavy libraries that most processes never touch.

`openai = lazy_module("openai")` at the top of a provider module reads like the import it replaces;
the library is imported the first time an attribute is read (a client built, an exception class
caught), so `django.setup()` and `manage.py check` do not pay for it (bench/startup.py).

A Celery worker does use them, in every pool process: `load_all` imports every lazy module declared
so far, and the worker calls it at `worker_init` (inference.apps, which knows the providers), in its
main process before the pool forks, so the pool processes inherit them instead of each importing them
on its first job (about 0.3 s of CPU each for the OpenAI SDK, paid by the first run after a start:
issue 37's throughput).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

DECLARED: dict[str, "LazyModule"] = {}


class LazyModule:
    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (loaded)' if self._module is not None else ''}>"


def lazy_module(name: str) -> Any:
    return DECLARED.setdefault(name, LazyModule(name))


def load_all() -> None:
    """Import every lazy module declared so far (the modules that declare them must be imported first)."""
    for module in list(DECLARED.values()):
        module._load()
