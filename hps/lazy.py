"""Package exports imported on first use (PEP 562), so that importing one numpy-only module
of a package does not import the package's JAX modules with it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, sources: Mapping[str, tuple[str, ...]]) -> tuple[Callable[[str], object], list[str]]:
    """(__getattr__, __all__) for a package whose names live in submodules: sources maps a
    submodule (relative to `package`) to the names it exports."""
    where = {name: module for module, names in sources.items() for name in names}

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    return __getattr__, sorted(where)
