"""A custom import-linter contract: `allowlist`.

import-linter's built-in `forbidden` contract names what a package may not import; the
adapter rule of DESIGN.md §1 is the other way round ("adapters import only the gateway's
event and port types and the shared text package"). This contract checks exactly that: every
direct import from a module of `source_modules` into one of our root packages must land in
the source's own package or in one of `allowed_modules` (each taken with its descendants).
A new gateway module therefore stays out of the adapters' reach without editing a list.
"""

from __future__ import annotations

from typing import Any

import grimp
from importlinter import Contract, ContractCheck, fields, output


class AllowlistContract(Contract):
    type_name = "allowlist"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    allowed_modules = fields.ListField(subfield=fields.ModuleField())
    roots = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        roots = set(self.roots)  # type: ignore[arg-type]
        allowed = [m.name for m in self.allowed_modules]  # type: ignore[attr-defined]
        illegal: list[dict[str, Any]] = []
        for source in self.source_modules:  # type: ignore[attr-defined]
            own = source.name
            for importer in sorted({own} | graph.find_descendants(own)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if imported.split(".")[0] not in roots:
                        continue  # third-party or standard library
                    if _within(imported, own) or any(_within(imported, a) for a in allowed):
                        continue
                    lines = [d["line_number"] for d in
                             graph.get_import_details(importer=importer, imported=imported)]
                    illegal.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        allowed = ", ".join(m.name for m in self.allowed_modules)  # type: ignore[attr-defined]
        output.print_error(f"Only these may be imported: {allowed}", bold=False)
        output.new_line()
        for link in check.metadata["illegal"]:
            where = ", ".join(str(n) for n in link["lines"])
            output.print_error(f"- {link['importer']} -> {link['imported']} (l.{where})",
                               bold=False)
            output.new_line()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")
