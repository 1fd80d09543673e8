"""A module imported on first use, for heavy libraries that most processes never touch.

`openai = lazy_module("openai")` at the top of a provider module reads like the import it replaces;
the library is imported the first time an attribute is read (a client built, an exception class
caught), so `django.setup()` and `manage.py check` do not pay for it (bench/startup.py).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


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
    return LazyModule(name)
