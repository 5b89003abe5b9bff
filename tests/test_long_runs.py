"""Long runs on a terminal: the progress line between calls of the compiled loop, the estimate said
before a long run, the bound on open-loop arrivals (flows/notice.py, flows/workload.py, router/engine.py)."""

from __future__ import annotations

import re
import sys

import pytest

from mrfq import flows
from mrfq.analysis.cli import main
from mrfq.flows import notice
from mrfq.flows.errors import MrfqError
from mrfq.flows.workload import SAY_AFTER, estimate, estimate_line

LINE = re.compile(r"^simulating( [^:]+)?: t = [0-9,.]+ of [0-9,.e+]+ \([0-9.]+ %\), [0-9.e]+ services"
                  r"(, about [0-9.,]+ (s|min|h|days) left)?$")


class Lines:
    """A progress line that records what it is asked to draw."""

    def __init__(self):
        self.shown, self.cleared = [], 0

    def show(self, text):
        self.shown.append(text)

    def clear(self):
        self.cleared += 1


@pytest.fixture
def lines(monkeypatch):
    """A recording progress line drawn at every call of the loop (no delay, no rate limit)."""
    rec = Lines()
    monkeypatch.setattr(notice, "progress", rec)
    monkeypatch.setattr(notice, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(notice, "PROGRESS_EVERY", 0.0)
    return rec


def _cbr(rate: float, duration: float, **run) -> flows.Scenario:
    return flows.from_dict({"name": "flood", "resources": ["cpu", "link"],
                            "run": {"duration": duration, "warmup": duration / 10, **run},
                            "flow": [{"name": "cbr", "cost": [1.0, 0.5], "arrival": {"law": "cbr", "rate": rate},
                                      "buffer": 1000},
                                     {"name": "tcp", "cost": [0.5, 1.0]}]})


def test_the_progress_line_is_drawn_between_loop_calls_and_changes_nothing(monkeypatch, lines):
    import mrfq.router.engine as engine
    from mrfq.router.run import simulate

    monkeypatch.setattr(engine, "CHUNK", 997)  # the loop returns every 997 services
    sc = flows.load_preset("dynamic-small").replace(**{"run.duration": 20000.0, "run.warmup": 1000.0})
    monkeypatch.setattr(notice, "progress", None)
    silent = simulate(sc).to_json()
    monkeypatch.setattr(notice, "progress", lines)
    shown = simulate(sc).to_json()
    for d in (silent, shown):
        d.pop("wall_seconds")
    assert shown == silent                               # the same bits with and without the line
    assert len(lines.shown) >= 10 and lines.cleared == 1  # redrawn at each call, erased once at the end
    for text in lines.shown:
        assert LINE.match(text), text
    assert lines.shown[0].startswith("simulating: t = ") and " of 20,000 (" in lines.shown[0]
    ts = [float(re.search(r"t = ([0-9,.]+)", x).group(1).replace(",", "")) for x in lines.shown]
    assert ts == sorted(ts) and ts[-1] <= 20000.0


def test_a_drop_heavy_source_returns_to_the_host_often(lines):
    """Open-loop packet arrivals (nearly all dropped) bring the loop back to Python every chunk of
    packets (MORE_PACKETS), not only every CHUNK services: the line moves, Ctrl-C is seen."""
    from mrfq.router.run import simulate

    r = simulate(_cbr(1e4, 50.0))
    assert r.services < 500 and int(r.flows.offered.sum()) > 400_000
    assert len(lines.shown) >= 50 and lines.cleared == 1


def test_the_line_is_erased_when_a_run_stops(monkeypatch, lines):
    import mrfq.router.engine as engine
    from mrfq.router.run import simulate

    monkeypatch.setattr(engine, "CHUNK", 997)
    calls = []

    def interrupt(t, services, paused=0.0):
        calls.append(t)
        if len(calls) == 3:
            raise KeyboardInterrupt

    real = notice.RunProgress.tick
    monkeypatch.setattr(notice.RunProgress, "tick", lambda self, *a: (real(self, *a), interrupt(*a)))
    with pytest.raises(KeyboardInterrupt):
        simulate(flows.load_preset("dynamic-small").replace(**{"run.duration": 20000.0, "run.warmup": 1000.0}))
    assert len(lines.shown) == 3 and lines.cleared == 1


def test_the_scorecard_names_each_run(monkeypatch, lines):
    from mrfq.analysis.scorecard import scorecard

    sc = flows.load_preset("isolation").replace(**{"run.duration": 1500.0, "run.warmup": 100.0})
    scorecard(sc, ["drfq", "fifo"])
    assert any(x.startswith("simulating drfq (1 of 2): t = ") for x in lines.shown)
    assert any(x.startswith("simulating fifo (2 of 2): t = ") for x in lines.shown)
    assert all(LINE.match(x) for x in lines.shown) and lines.cleared == 2


@pytest.mark.nojit
def test_a_compare_draws_no_per_run_line(monkeypatch, lines):
    """The sweep's bar is its display: its runs draw no line of their own (the hook is back after)."""
    from mrfq.analysis import compare

    seen = []
    monkeypatch.setattr(compare, "_compare", lambda *a, **k: seen.append(notice.progress))
    compare.compare(flows.load_preset("dynamic-small"), compare.CompareConfig(loads=(0.5,)), None)
    assert seen == [None] and notice.progress is lines


@pytest.mark.nojit
def test_the_line_text():
    p = notice.RunProgress(Lines(), 20000.0)
    assert p.text(4210.0, 84_000_000, 10.0) == \
        "simulating: t = 4,210 of 20,000 (21 %), 8.4e7 services, about 38 s left"
    assert p.text(0.0, 0, 3.0) == "simulating: t = 0 of 20,000 (0 %), 0 services"
    assert notice.RunProgress(Lines(), 50.0).text(0.015, 7, 3.0) == \
        "simulating: t = 0.015 of 50 (0.03 %), 7 services, about 2.8 h left"
    # a service limit that ends the run first
    assert "(50 %)" in notice.RunProgress(Lines(), 1e6, max_services=1000).text(10.0, 500, 1.0)
    assert [notice.duration_text(s) for s in (0.2, 40, 700, 9000, 86400 * 3.5, 86400 * 40)] == \
        ["1 s", "40 s", "12 min", "2.5 h", "3.5 days", "40 days"]


@pytest.mark.nojit
def test_the_python_api_is_silent_by_default():
    import subprocess

    code = ("from mrfq.flows import notice\nimport mrfq.router.run, mrfq.analysis.api\n"
            "assert notice.progress is None and notice.tracker(10.0) is None")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_line_on_a_pipe_or_with_json(monkeypatch, capsys):
    import mrfq.router.engine as engine

    monkeypatch.setattr(engine, "CHUNK", 997)
    monkeypatch.setattr(notice, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(notice, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(notice, "progress", None)
    monkeypatch.setattr(notice, "notice", None)
    argv = ["run", "--preset", "dynamic-small", "--duration", "20000", "--warmup", "1000"]
    assert main(argv) == 0                                   # capsys's stderr is no terminal
    assert "simulating" not in capsys.readouterr().err and notice.progress is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv + ["--json"]) == 0                      # never with --json
    assert "simulating" not in capsys.readouterr().err and notice.progress is None
    assert main(argv) == 0                                   # on a terminal: drawn, then erased
    err = capsys.readouterr().err
    assert isinstance(notice.progress, notice.TerminalLine)
    assert "\rsimulating: t = " in err and err.endswith("\r\x1b[K")


# ---------------------------------------------------------------------------
# the estimate said before a long run
@pytest.mark.nojit
def test_the_estimate_of_a_huge_cbr_source():
    """5e10 packet arrivals (1e9 per time unit for 50), nearly all dropped: hours, said before the run."""
    sc = _cbr(1e9, 50.0)
    w = estimate(sc)
    assert w.arrivals == pytest.approx(5e10) and w.services <= 50 / 0.5 + 50 / 0.5
    assert w.source == "flow[0] 'cbr'" and 3600 < w.seconds < 48 * 3600
    assert estimate_line(sc) == ("this run: about 5e10 packet arrivals (flow[0] 'cbr'), expect about 6.9 h; "
                                 "Ctrl-C stops it")
    assert estimate_line(sc, "this scorecard", 8).startswith(
        "this scorecard: 8 runs of about 5e10 packet arrivals (flow[0] 'cbr') each, expect about 2.3 days in all")
    # run.max_services ends it sooner: about that fraction of the arrivals
    capped = estimate(_cbr(1e9, 50.0, max_services=15))
    assert capped.services == 15 and capped.arrivals == pytest.approx(5e10 * 15 / 200)
    assert estimate_line(_cbr(1e4, 50.0)) is None            # 5e5 arrivals: a fraction of a second


@pytest.mark.nojit
def test_the_estimate_of_a_class_of_huge_flows():
    """A [[class]] of mean 1e9 packets at load 0.5: its expected packets, within the resources' bound."""
    sc = flows.from_dict({"resources": ["cpu", "link"], "traffic": {"load": 0.5}, "run": {"duration": 1e10},
                          "class": [{"name": "elephant", "cost": [1.0, 0.5], "share": 1, "mean_packets": 1e9}]})
    w = estimate(sc)
    assert w.services == pytest.approx(0.5 * 1e10 * 2) and w.arrivals == 0
    assert w.seconds > SAY_AFTER and "about 1e10 packet services (class[0] 'elephant')" in estimate_line(sc)


@pytest.mark.nojit
def test_presets_say_no_estimate():
    for name in flows.preset_names():
        assert estimate_line(flows.load_preset(name)) is None, name


@pytest.mark.nojit
def test_the_estimate_is_said_on_a_terminal_only(monkeypatch, capsys):
    from mrfq.analysis import cli_run

    sc = _cbr(1e9, 50.0)
    monkeypatch.setattr(notice, "progress", None)
    cli_run.say_estimate(sc)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(notice, "progress", Lines())
    cli_run.say_estimate(sc)
    assert capsys.readouterr().err == ("mrfq: this run: about 5e10 packet arrivals (flow[0] 'cbr'), expect about "
                                       "6.9 h; Ctrl-C stops it\n")


# ---------------------------------------------------------------------------
# the bound on open-loop arrivals, and the warning of a source that drops nearly everything
@pytest.mark.nojit
def test_open_loop_arrivals_are_bounded_together():
    base = {"resources": ["cpu"], "run": {"duration": 100.0}}

    def sc(rates):
        return flows.from_dict({**base, "flow": [{"name": f"f{i}", "cost": [1.0], "buffer": 10,
                                                  "arrival": {"law": "cbr", "rate": r}} for i, r in enumerate(rates)]})

    sc([9e8])                                     # 9e10 arrivals: accepted
    with pytest.raises(MrfqError, match=r"flow\[0\]\.arrival\.rate = 6e\+08: 6e\+10 packet arrivals over run\.duration "
                                        r"\(1\.2e\+11 with the other open-loop flows\), more than 1e\+11"):
        sc([6e8, 6e8])
    # a cap on services does not stop a flood that is dropped (it serves nothing): refused all the same
    with pytest.raises(MrfqError, match=r"6e\+11 packet arrivals over run\.duration, more than 1e\+11 \(hours of "
                                        r"work\); shorten run\.duration or lower the rate"):
        flows.from_dict({**base, "run": {"duration": 1000.0, "max_services": 1000},
                         "flow": [{"name": "f", "cost": [1.0], "arrival": {"law": "cbr", "rate": 6e8}}]})


@pytest.mark.nojit
def test_compare_warns_of_a_flooding_source(monkeypatch, capsys, tmp_path):
    from mrfq.analysis import compare

    p = tmp_path / "mix.toml"
    p.write_text('resources = ["cpu", "link"]\n[traffic]\nload = 0.5\n[run]\nduration = 1000.0\n'
                 '[[class]]\nname = "c"\ncost = [1.0, 1.0]\nshare = 1\nmean_packets = 10\n'
                 '[[flow]]\nname = "flood"\ncost = [0.5, 0.5]\narrival = {law = "cbr", rate = 1000.0}\n')

    def stop(*a, **k):
        raise MrfqError("stopped here")

    monkeypatch.setattr(compare, "compare", stop)
    assert main(["compare", str(p), "--loads", "0.5", "--results", str(tmp_path / "r.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "mrfq: warning: flow[0] 'flood': offers 500 times what 'cpu' can serve" in err
    assert err.index("warning") < err.index("stopped here")
