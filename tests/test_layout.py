"""The layout a newcomer reads: the data path in producers/ → schemas/ → stream_jobs/ → sinks/, the application in
reveal/, files and functions of readable size, and a test file beside every module's mirrored path."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("producers", "schemas", "stream_jobs", "sinks", "reveal")
# Where each data-path layer stands along the flow; schemas is the contract every layer speaks, so any may import it.
FLOW = {"producers": 0, "stream_jobs": 1, "sinks": 2}
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
# Modules without a test file at their mirrored path, and why.
UNMIRRORED = {
}


def source_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module of ours the file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def layer_breach(importer: str, imported: str) -> str | None:
    """Why the import breaks the layering, or None when it is allowed."""
    source, target = importer.split(".")[0], imported.split(".")[0]
    if importer.startswith("stream_jobs.engine") and not imported.startswith(("stream_jobs.engine", "schemas")):
        return "the engine is pure: it imports only itself and the contracts"
    if source == target or source == "reveal":
        return None
    if target == "reveal":
        return "the data path never imports the application"
    if source == "schemas":
        return "the contracts import no other layer"
    if target != "schemas" and FLOW[target] > FLOW[source]:
        return f"{source} feeds {target}: nothing upstream imports what lies downstream"
    return None


def test_no_module_imports_downstream_or_the_application_from_the_data_path():
    breaches = [f"{module_name(path)} imports {name}: {why}" for path in source_files()
                for name in sorted(imported_modules(path)) if (why := layer_breach(module_name(path), name))]
    assert breaches == []


@pytest.mark.parametrize("importer, imported, allowed", [
    ("producers.agent", "schemas.records", True), ("producers.agent", "sinks.clickhouse", False),
    ("stream_jobs.host_stage", "sinks.rows", False), ("sinks.landing", "stream_jobs.host_stage", True),
    ("stream_jobs.embedded", "reveal.live.server", False), ("reveal.cli.run", "sinks.clickhouse", True),
    ("stream_jobs.engine.decide.incidents", "stream_jobs.host_stage", False), ("schemas.codec", "producers.agent", False)])
def test_the_layer_rule_itself(importer, imported, allowed):
    assert (layer_breach(importer, imported) is None) == allowed


def test_no_source_file_passes_the_line_limit():
    long = {str(p.relative_to(ROOT)): n for p in source_files() if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    assert long == {}


def test_no_function_passes_the_line_limit():
    long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in source_files() for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


def test_every_module_says_what_it_is():
    silent = [str(p.relative_to(ROOT)) for p in source_files() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert silent == []


def test_every_package_states_its_public_face():
    packages = [p for p in source_files() if p.name == "__init__.py"]
    faceless = [str(p.relative_to(ROOT)) for p in packages if "__all__" not in p.read_text()]
    assert faceless == []


def test_every_package_names_only_what_it_holds_as_its_public_face():
    wrong = []
    for init in (p for p in source_files() if p.name == "__init__.py"):
        names = _declared_all(init)
        holds = {p.stem for p in init.parent.glob("*.py")} | {p.name for p in init.parent.iterdir() if p.is_dir()}
        defined = _top_level_names(init)
        wrong += [f"{module_name(init)}.{name}" for name in names if name not in holds | defined]
    assert wrong == []


def test_every_module_has_its_mirrored_test_file_or_a_reason():
    missing = []
    for path in source_files():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        relative = path.relative_to(ROOT)
        mirrored = ROOT / "tests" / relative.parent / f"test_{relative.name}"
        if not mirrored.exists() and str(relative) not in UNMIRRORED:
            missing.append(str(relative))
    assert missing == []


def test_the_reasons_name_modules_that_exist_and_lack_a_mirrored_test():
    stale = [name for name in UNMIRRORED
             if not (ROOT / name).exists() or (ROOT / "tests" / Path(name).parent / f"test_{Path(name).name}").exists()]
    assert stale == []


def _declared_all(init: Path) -> list[str]:
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def _top_level_names(init: Path) -> set[str]:
    names = set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names
