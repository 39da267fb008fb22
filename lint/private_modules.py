"""An import-linter contract: no module imports another package's private module.

``omnivchat.P._m`` (a module whose name starts with one underscore) is P's implementation: only modules inside
``omnivchat.P`` may import it; everyone else uses the names ``omnivchat.P`` exports from its ``__init__``. The
root's own private modules (``omnivchat._files``, ...) are the shared low modules, open to every package.
Configured in pyproject.toml (``contract_types``); ``lint-imports`` finds this file because it puts the working
directory on ``sys.path``.
"""

from __future__ import annotations

from typing import Any

from importlinter import Contract, ContractCheck, output


def owner_of_private(module: str) -> str | None:
    """The package that owns ``module`` as a private module (the parent of its first ``_name`` part), or None."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


class PrivateModulesContract(Contract):
    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        broken = []
        for importer in sorted(graph.modules):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                owner = owner_of_private(imported)
                if owner is not None and not inside(importer, owner):
                    lines = graph.get_import_details(importer=importer, imported=imported)
                    where = ", ".join(f"line {d['line_number']}" for d in lines) or "?"
                    broken.append((importer, imported, where))
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, where in check.metadata["broken"]:
            output.print_error(f"{importer} imports {imported} ({where}): use the names its package exports")
            output.new_line()
