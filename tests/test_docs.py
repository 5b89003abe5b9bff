"""The documentation cannot rot: the site builds with warnings as errors, the scenario reference
lists exactly the gates' fields and defaults, the runnable examples run, the README stays a short
page for a newcomer, and the product speaks of the software only."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


# ---------------------------------------------------------------------------
# the scenario reference against the gates
# ---------------------------------------------------------------------------
def _reference_rows(section: str) -> dict[str, str]:
    """``{field: default cell}`` of every table row under the ``## section`` heading of scenarios.md."""
    text = (DOCS / "scenarios.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)
    body = next(p for p in parts if p.startswith(section))
    rows = {}
    for line in body.splitlines():
        m = re.match(r"\|\s*`([a-z_.]+)`\s*\|[^|]*\|\s*(.*?)\s*\|", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} listed twice"
            rows[m.group(1)] = m.group(2)
    return rows


def _gate_fields(top, tables: dict[str, tuple[str, ...]]) -> set[str]:
    fields = {k for k in top if k not in tables}
    for t, keys in tables.items():
        fields |= {f"{t}.{k}" for k in keys}
    return fields


@pytest.mark.nojit
def test_packet_scenario_reference_lists_exactly_the_gates_fields():
    from mrfq.flows import scenario as s

    documented = set(_reference_rows("Packet scenarios"))
    gate = _gate_fields(s._TOP, {"router": s._ROUTER, "run": s._RUN, "traffic": s._TRAFFIC,
                                 "flow": s._FLOW, "class": s._CLASS, "flow.transport": s._TRANSPORT})
    assert documented == gate, (f"undocumented: {sorted(gate - documented)}; "
                                f"documented but not accepted: {sorted(documented - gate)}")


@pytest.mark.nojit
def test_cluster_scenario_reference_lists_exactly_the_gates_fields():
    from mrfq.flows import cluster as c

    documented = set(_reference_rows("Cluster scenarios"))
    gate = _gate_fields(c._TOP, {"run": c._RUN, "server": c._SERVER, "node": c._NODE, "user": c._USER,
                                 "traffic": c._TRAFFIC})
    assert documented == gate, (f"undocumented: {sorted(gate - documented)}; "
                                f"documented but not accepted: {sorted(documented - gate)}")


def _defaults(cls) -> dict:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def _check_defaults(rows: dict[str, str], owners: dict[str, type]) -> int:
    checked = 0
    for name, cell in rows.items():
        table, _, key = name.rpartition(".")
        m = re.fullmatch(r"`([^`]+)`", cell)
        if table not in owners or not m:
            continue  # a default described in words ("required", "the file's name", ...)
        value = tomllib.loads(f"x = {m.group(1)}")["x"]
        have = _defaults(owners[table])
        assert key in have, f"{name}: documented default {cell} but the dataclass has none"
        assert value == have[key] and type(value) is type(have[key]), f"{name}: documented {cell}, code {have[key]!r}"
        checked += 1
    return checked


@pytest.mark.nojit
def test_scenario_reference_defaults_are_the_dataclasses_defaults():
    from mrfq.flows import cluster as c
    from mrfq.flows import scenario as s

    n = _check_defaults(_reference_rows("Packet scenarios"),
                        {"router": s.RouterConfig, "run": s.RunConfig, "flow": s.FlowSpec, "class": s.ClassSpec,
                         "flow.transport": s.Transport})
    n += _check_defaults(_reference_rows("Cluster scenarios"),
                         {"run": c.ClusterRun, "server": c.ServerSpec, "node": c.NodeSpec, "user": c.UserSpec,
                          "traffic": c.TrafficSpec})
    assert n >= 30  # most defaults are literals the test can compare


@pytest.mark.nojit
def test_scenario_reference_catches_a_missing_field(monkeypatch):
    """The check above is not vacuous: a key the gate accepts but the page omits is reported."""
    from mrfq.flows import scenario as s

    monkeypatch.setattr(s, "_RUN", s._RUN + ("new_knob",))
    with pytest.raises(AssertionError, match="new_knob"):
        test_packet_scenario_reference_lists_exactly_the_gates_fields()


# ---------------------------------------------------------------------------
# the site, the examples, the README
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The HTML site built once for this module's checks (about 10 s on two cores)."""
    out = tmp_path_factory.mktemp("site") / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS),
                        str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return out


def test_documentation_site_builds_without_warnings(site):
    """``sphinx-build -W``: a broken link, a missing page in a toctree or a stale autodoc target fails."""
    html = (site / "api.html").read_text(encoding="utf-8")
    for entry in ("mrfq.analysis.api.run", "mrfq.analysis.api.compare", "mrfq.analysis.api.cluster_simulate"):
        assert entry in html, f"{entry} missing from the API reference"


SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc=\"([^\"]+)\"")


def test_maths_is_typeset_by_the_sites_own_mathjax(site):
    """No page loads a script from the network (Sphinx's default MathJax comes from a CDN, and
    offline the maths then shows as raw LaTeX); every page with maths loads MathJax from the
    site's _static/, and the file is there, with MathJax's licence beside it."""
    remote, with_maths, mathjax = [], [], set()
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        srcs = SCRIPT_SRC.findall(html)
        remote += [f"{page.relative_to(site)}: {s}" for s in srcs if re.match(r"(?i)(https?:)?//", s)]
        if 'class="math notranslate' in html:
            with_maths.append(page)
            local = [s for s in srcs if "mathjax" in s.lower()]
            assert local, f"{page.relative_to(site)} has maths but loads no MathJax"
            for s in local:
                mathjax.add((page.parent / s.split("?")[0]).resolve())
    assert not remote, "scripts loaded from the network:\n" + "\n".join(remote[:20])
    assert site / "findings" / "size-laws.html" in with_maths and len(with_maths) >= 10
    assert len(mathjax) == 1, mathjax
    script = mathjax.pop()
    assert script.parent == (site / "_static" / "mathjax").resolve()
    assert script.stat().st_size > 1_000_000, "not a MathJax build"
    assert b"MathJax" in script.read_bytes()[:200_000]
    assert "Apache License" in (script.parent / "LICENSE").read_text(encoding="utf-8")


def test_page_titles_hold_no_latex_in_the_built_site(site):
    """A title goes where MathJax does not typeset: the HTML ``<title>``, the search index and results,
    and the navigation of pages that load no MathJax; maths there shows as ``\\(\\gamma\\)``.
    Titles say it in words or Unicode (γ)."""
    bad = []
    for page in sorted(site.rglob("*.html")):
        m = re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf-8"), flags=re.S)
        assert m, f"{page.relative_to(site)} has no <title>"
        if _latex(m.group(1)):
            bad.append(f"{page.relative_to(site)}: {m.group(1).strip()}")
    index = (site / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(index[index.index("(") + 1:index.rindex(")")])
    assert len(index["titles"]) >= 30 and len(index["alltitles"]) > len(index["titles"])
    bad += [f"search index: {t}" for t in [*index["titles"], *index["alltitles"]] if _latex(t)]
    assert not bad, "\n".join(bad)
    assert "Does γ depend on the flow-size law?" in index["titles"]
    title = re.search(r"<title>(.*?)</title>", (site / "findings" / "size-laws.html").read_text(encoding="utf-8"))
    assert title.group(1).startswith("Does γ depend on the flow-size law?")


def _latex(text: str) -> bool:
    """Whether ``text`` holds TeX maths: ``$``, ``\\(``, ``\\[`` or a command such as ``\\gamma``."""
    return bool(re.search(r"\$|\\[(\[]|\\[A-Za-z]+", text))


def _headings_with_latex(text: str) -> list[str]:
    """The Markdown headings (``#`` to ``######``, outside fenced code) of ``text`` that hold maths."""
    found, fence = [], None
    for line in text.splitlines():
        m = re.match(r"\s*(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None and re.match(r"#{1,6}\s", line) and _latex(line):
            found.append(line)
    return found


@pytest.mark.nojit
def test_page_and_section_titles_hold_no_latex_in_the_sources():
    """The same for the Markdown sources, every heading level (section titles make the pages' tables
    of contents): the maths belongs in the body."""
    bad = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS)
        if "_build" in rel.parts:
            continue
        bad += [f"{rel}: {h}" for h in _headings_with_latex(path.read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)
    # the check is not vacuous: LaTeX in a heading is caught, a shell comment in a code block is not
    assert _headings_with_latex("# Does $\\gamma$ depend on the flow-size law?\n\nbody $x$")
    assert _headings_with_latex("text\n## Rates \\(\\mu_k\\)\n")
    assert not _headings_with_latex("# Does γ depend on the flow-size law?\n\n```console\n# cost $x\n```\n")


@pytest.mark.parametrize("example", sorted(p.name for p in (DOCS / "examples").glob("*.py")
                                            if p.name != "first_run.py"))  # (its own test, below)
def test_documentation_example_runs(example, tmp_path):
    out = tmp_path / "figure.png"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, str(DOCS / "examples" / example), "--small", "--out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    assert out.stat().st_size > 10_000, "no figure written"
    assert "figure written to" in r.stdout


def test_first_run_example_prints_the_fluid_rates(tmp_path):
    """docs/examples/first_run.py runs, writes its figure, and its table has DRFQ at DRF's 0.6 / 0.6
    and BMF-WFQ at BMF's 0.75 / 0.5 (one run of the script: it compiles every scheduler's loop)."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    out = tmp_path / "f.png"
    r = subprocess.run([sys.executable, str(DOCS / "examples" / "first_run.py"), "--small", "--out",
                        str(out)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    assert out.stat().st_size > 10_000, "no figure written"
    assert "figure written to" in r.stdout
    rows = {line.split()[0]: [float(x) for x in line.split()[1:]] for line in r.stdout.splitlines()
            if line.split() and line.split()[0] in ("drfq", "bmf-wfq")}
    assert rows["drfq"] == pytest.approx([0.6, 0.6], abs=0.01)
    assert rows["bmf-wfq"] == pytest.approx([0.75, 0.5], abs=0.01)


@pytest.mark.nojit
def test_readme_is_a_short_page_with_the_two_set_up_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = next(line.strip() for line in text.splitlines() if "python -m pytest" in line)
    assert test_command in ci, "the README's test command is not the one .ci/run runs"
    assert "pip install -e . && mrfq compare" in text


HISTORY = re.compile(r"\b(sessions? \d+|session-\d+|issues? #?\d+|hardening report|other engineers)\b", re.I)


@pytest.mark.nojit
def test_the_product_speaks_of_the_software_only():
    """No development history in code, tests, scripts or docs (numba's own issue numbers are
    references, not history)."""
    found = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if (path.suffix not in (".py", ".md", ".toml", ".c") or rel.parts[0].startswith(".")
                or "_build" in rel.parts or path.name == "CHANGELOG.md" or path == Path(__file__).resolve()):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in HISTORY.finditer(line):
                if "numba" not in line[max(0, m.start() - 20):m.start()].lower():
                    found.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not found, "\n".join(found[:20])



NOTE = re.compile(r"\bSPEC\b|\bthe spec\b|\bthe specification\b")


@pytest.mark.nojit
def test_the_product_cites_its_pages_and_papers_not_a_working_note():
    """Code, tests, scripts, presets and docs cite the documentation pages or the papers ([BR] eq. (5),
    docs/schedulers.md), never a note that does not ship (identifiers such as ``MAX_SPECS`` are not
    citations)."""
    found = []
    # the repository's own folders and files (not build/, a wheel build's copy, nor an egg-info)
    tops = ("fq", "flows", "router", "analysis", "scripts", "tests", "docs")
    paths = [p for t in tops for p in (ROOT / t).rglob("*")] + [p for p in ROOT.iterdir() if p.is_file()]
    for path in paths:
        rel = path.relative_to(ROOT)
        if (path.suffix not in (".py", ".md", ".toml", ".txt", ".rst", ".c") or rel.parts[0].startswith(".")
                or "_build" in rel.parts or path == Path(__file__).resolve()):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if NOTE.search(line):
                found.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not found, "\n".join(found[:20])


@pytest.mark.nojit
def test_version_is_the_package_metadata(capsys):
    from importlib import metadata

    from mrfq.analysis.cli import main, version

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"mrfq {version()}"
    try:
        assert version() == metadata.version("mrfq")
    except metadata.PackageNotFoundError:
        assert "source" in version()
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {version().split('+')[0]}" in changelog, "the version has no CHANGELOG entry"
