"""The package layout of docs/architecture.md, enforced: stages as subpackages whose imports follow the
declared dependencies (no cycle, lazy imports included), no private names across modules, at most
eight top-level modules, and no formatter opt-out comment anywhere (the formatter's layout stands;
function size is held by ruff's statement, argument and complexity rules, set in pyproject.toml)."""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "resispec"
# What each stage package may import (besides itself); mirrors the map in docs/architecture.md.
ALLOWED = {
    "corpora": set(),
    "verify": set(),
    "models": {"corpora"},
    "decoding": {"models", "verify"},
    "audit": {"verify"},
    "report": {"audit", "verify"},
    "bench": {"corpora", "decoding", "models", "verify", "audit", "report"},
    "workflow": {"corpora", "models", "decoding", "verify", "audit", "report", "bench"},
}
ROOT = "(top level)"  # __init__, __main__, cli: the entry points may import anything


def module_name(path: Path) -> str:
    parts = ["resispec", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ALLOWED) else ROOT


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> list[tuple[str, list[str], int]]:
    """(imported resispec module, names, line) for every import of ``module``, nested ones included."""
    out = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("resispec")]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            target = _absolute(module, node)
            if target.startswith("resispec"):
                names = [a.name for a in node.names]
                subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
                out += [(sub, [], node.lineno) for sub in subs]
                if len(subs) < len(names):
                    out.append((target, [n for n in names if f"{target}.{n}" not in MODULES], node.lineno))
    return out


def graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in imports(m) if t in MODULES and t != m} for m in MODULES}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_declared_stage_dependencies_are_acyclic():
    assert find_cycle(ALLOWED) is None


def test_no_import_cycle_between_modules_lazy_imports_included():
    assert find_cycle(graph()) is None


def test_every_import_is_declared_in_the_stage_map():
    bad = []
    for module in MODULES:
        mine = stage(module)
        for target, _, line in imports(module):
            theirs = stage(target)
            if mine != ROOT and theirs not in (mine, ROOT) and theirs not in ALLOWED[mine]:
                bad.append(f"{MODULES[module].relative_to(SRC)}:{line} {mine} -> {theirs} ({target})")
            if mine != ROOT and theirs == ROOT:
                bad.append(f"{MODULES[module].relative_to(SRC)}:{line} imports the top level ({target})")
    assert not bad, "imports outside the stage map:\n" + "\n".join(bad)


def test_no_private_names_or_modules_are_imported():
    bad = []
    for module in MODULES:
        for target, names, line in imports(module):
            private = [n for n in names if n.startswith("_")]
            parts = [p for p in target.split(".") if p.startswith("_") and p != "__main__"]
            if private or parts:
                bad.append(f"{MODULES[module].relative_to(SRC)}:{line} {target} {private}")
    assert not bad, "\n".join(bad)


def test_stage_packages_exist_and_say_what_they_own():
    for name in ALLOWED:
        init = SRC / name / "__init__.py"
        assert init.is_file(), f"stage package {name} is missing"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert len(doc.split()) >= 8, f"{name}/__init__.py needs a docstring saying what it owns"


def test_at_most_eight_modules_at_the_top_level():
    top = sorted(p.name for p in SRC.glob("*.py"))
    assert len(top) <= 8, top


ROOT_DIR = SRC.parents[1]
FORMATTED = [
    p
    for folder in ("src", "tests", "workflow", "scripts", "examples")
    for p in sorted((ROOT_DIR / folder).rglob("*"))
    if p.suffix in {".py", ".smk"}
] + [SRC.parents[1] / "Snakefile"]


def test_no_formatter_escapes():
    """No line opts out of the formatter (a fmt skip / off comment): size is held by ruff's rules."""
    escape = re.compile("#" + r"\s*fmt:\s*(skip|off)\b")  # built in two parts: this line does not match
    found = [
        f"{p.relative_to(ROOT_DIR)}:{i}"
        for p in FORMATTED
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if escape.search(line)
    ]
    assert len(FORMATTED) > 100 and not found, found


def test_size_rules_are_configured():
    """ruff holds function size: the statement, argument and complexity rules are selected, with limits."""
    import tomllib

    lint = tomllib.loads((ROOT_DIR / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"PLR0913", "PLR0915", "C901"} <= set(lint["select"])
    assert lint["pylint"]["max-statements"] <= 40 and lint["pylint"]["max-args"] <= 8
    assert lint["mccabe"]["max-complexity"] <= 10


def test_public_api_at_the_top_level():
    import resispec
    from resispec import METHODS, acceptance_rate, alpha_star, generate, get_verifier, output_law

    assert callable(generate) and callable(get_verifier) and "specinfer" in METHODS
    assert {output_law, acceptance_rate, alpha_star} <= {getattr(resispec, n) for n in resispec.__all__[1:]}
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        resispec.nonexistent  # noqa: B018


def test_the_import_graph_sees_lazy_and_relative_imports():
    edges = graph()
    assert "resispec.decoding.walk" in edges["resispec.decoding.engine"]
    assert "resispec.verify" in edges["resispec.decoding.engine"]  # imported inside generate()
    assert "resispec.verify.checks" in edges["resispec.verify.bound"]  # relative import


VERIFY_FAMILIES = ("sequential", "without_replacement", "resispec", "greedy", "optimal")
VERIFY_SHARED = ("registry", "method_base", "samplers", "rows", "histories", "results", "checks", "batched")


def _family(module: str) -> str | None:
    parts = module.split(".")
    return (
        parts[2]
        if len(parts) > 2 and parts[:2] == ["resispec", "verify"] and parts[2] in VERIFY_FAMILIES
        else None
    )


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_verify_families_sit_above_the_shared_modules():
    """Within verify/, the shared modules (registry, bases, row helpers, the engine's batched entry)
    reach no family module, and a family imports no other family but ``sequential`` (whose
    ``plan_step`` sequoia's steps use): so each family's code can live in its one module."""
    edges = graph()
    for shared in VERIFY_SHARED:
        reached = {_family(m) for m in _reachable(edges, f"resispec.verify.{shared}")} - {None}
        assert not reached, (shared, reached)
    for module in MODULES:
        family = _family(module)
        if family is None:
            continue
        others = {_family(m) for m in edges[module]} - {None, family, "sequential"}
        assert not others, (module, others)
