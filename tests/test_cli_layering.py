"""Layering: packages import only downward, flows -> fq -> router -> analysis, with
the ``mrfq`` dispatcher (analysis/cli.py) on top; no ``try/except ImportError`` around the
project's own modules; the shared argument helpers are a leaf of ``flows``."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ORDER = {"flows": 0, "fq": 1, "router": 2, "analysis": 3}
#: known upward imports: none (the runner returns raw batch sums; analysis.run_report builds the intervals)
KNOWN: set[tuple[str, str]] = set()
#: a known guard in a file another engineer owns (router/bench.py treats the SimPy reference as
#: optional); reported, to be replaced by a check for simpy itself
KNOWN_GUARDS: set[tuple[str, str]] = set()

pytestmark = pytest.mark.nojit


def _imports(path: Path):
    """(module imported, inside a try whose handlers catch ImportError) for every import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            names = []
            for h in node.handlers:
                t = h.type
                names += [e.id for e in (t.elts if isinstance(t, ast.Tuple) else [t]) if isinstance(e, ast.Name)]
            if {"ImportError", "ModuleNotFoundError"} & set(names):
                for sub in node.body:
                    guarded |= {id(n) for n in ast.walk(sub)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, id(node) in guarded
        elif isinstance(node, ast.ImportFrom) and node.module == "mrfq" and node.level == 0:
            for a in node.names:  # from mrfq import flows: the subpackage
                yield f"mrfq.{a.name}" if a.name in ORDER else "mrfq", id(node) in guarded
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, id(node) in guarded


def _layer(mod: str) -> str | None:
    """The package a module name belongs to: ``mrfq.fq.drfq`` -> ``fq``; the top-level ``mrfq``
    (its __init__ lives in analysis/_mrfq/) is the top layer; anything else is not ours."""
    parts = mod.split(".")
    if parts[0] != "mrfq":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in ORDER else "analysis"


def _project_files():
    for pkg in ORDER:
        yield from sorted((ROOT / pkg).rglob("*.py"))


def test_packages_import_only_downward():
    assert sum(_layer(m) == "flows" for m, _ in _imports(ROOT / "fq" / "registry.py")) >= 1  # the check sees imports
    bad = []
    for f in _project_files():
        rel = f.relative_to(ROOT).as_posix()
        own = ORDER[rel.split("/")[0]]
        for mod, _ in _imports(f):
            top = _layer(mod)
            if top is not None and ORDER[top] > own and (rel, mod) not in KNOWN:
                bad.append(f"{rel} imports {mod}")
    assert not bad, bad


def test_no_import_error_guard_around_project_modules():
    bad = [f"{f.relative_to(ROOT).as_posix()}: {mod}" for f in _project_files() for mod, guarded in _imports(f)
           if guarded and _layer(mod) is not None and (f.relative_to(ROOT).as_posix(), mod) not in KNOWN_GUARDS]
    assert not bad, bad


def test_cli_helpers_are_a_leaf_and_compare_does_not_import_the_router_cli():
    leaf = {m.split(".")[0] for m, _ in _imports(ROOT / "flows" / "cli_args.py")}
    assert leaf & set(ORDER) <= {"flows"}
    assert not [m for m, _ in _imports(ROOT / "flows" / "cli_args.py") if m.startswith("flows.") and m != "mrfq.flows.errors"
                and m != "mrfq.flows.scenario"]
    for f in ("analysis/cli_compare.py", "analysis/cli_fluid.py"):
        assert not [m for m, _ in _imports(ROOT / f) if m.startswith("mrfq.router.cli")], f


def test_one_load_grammar():
    """Only flows/cli_args.py defines parse_loads."""
    defs = [f.relative_to(ROOT).as_posix() for f in _project_files()
            for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
            if isinstance(n, ast.FunctionDef) and n.name == "parse_loads"]
    assert defs == ["flows/cli_args.py"]


def test_entry_point_is_the_top_dispatcher():
    import tomllib

    d = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert d["project"]["scripts"]["mrfq"] == "mrfq.analysis.cli:main"
    from mrfq.analysis.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == {"run", "presets", "bench", "alloc", "fluid", "compare", "results", "scorecard",
                                "cluster"}


def test_a_command_builds_its_own_parser_alone():
    """``mrfq run`` builds the parser of ``run`` only, importing nothing the other commands need (the
    bench, the sweeps, the scorecard's process pools); every command maps to the module that adds it."""
    import subprocess
    import sys

    from mrfq.analysis.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert [c for c, _ in COMMANDS] == list(sub.choices)
    for c, _ in COMMANDS:
        one = next(a for a in build_parser(c)._actions if a.dest == "command")
        assert c in one.choices
    probe = ("import sys; from mrfq.analysis.cli import build_parser; s = next(a for a in build_parser('run')._actions "
             "if a.dest == 'command'); print(sorted(s.choices), sorted(m for m in ('mrfq.router.bench', "
             "'mrfq.analysis.cli_compare', 'mrfq.analysis.sweep', 'mrfq.analysis.ahead') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['run'] []"
