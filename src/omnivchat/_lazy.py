"""Lazy public names of a package: ``import omnivchat.media`` stays cheap, and a name's module (numpy, PyAV,
matplotlib, scipy...) loads on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, names: Mapping[str, str], namespace: dict[str, Any], subpackages: tuple[str, ...] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package``: ``names`` maps each public name to the module (relative to
    the package) that defines it; ``subpackages`` are importable as attributes. A name, once loaded, is stored in
    ``namespace`` (the package's globals) so that later look-ups skip the hook."""

    def __getattr__(name: str) -> Any:
        if name in subpackages:
            return importlib.import_module(f"{package}.{name}")
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names) | set(subpackages))

    return __getattr__, __dir__
