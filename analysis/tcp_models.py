"""Closed forms for TCP flows (docs/transport.md, docs/findings/tcp-checks.md), to check the packet
engine's TCP senders against.

* :func:`mathis`: Mathis, Semke, Mahdavi, Ott, "The macroscopic behavior of the TCP congestion
  avoidance algorithm", CCR 1997: ``B = (1 / RTT) sqrt(3 / (2 b p))`` packets per time unit, b
  packets acknowledged per ACK (1: no delayed ACKs), where timeouts are negligible;
* :func:`padhye`: Padhye, Firoiu, Towsley, Kurose, "Modeling TCP throughput: a simple model and its
  empirical validation", SIGCOMM 1998, eq. (33) (the approximate full model, with timeouts):
  ``B = min(W_max / RTT, 1 / (RTT sqrt(2 b p / 3) + T0 min(1, 3 sqrt(3 b p / 8)) p (1 + 32 p^2)))``;
* :func:`sawtooth_utilisation`: one Reno flow through one bottleneck with a drop-tail buffer of B
  packets and a bandwidth-delay product of P packets: the window rises by one per round trip from
  ``(P + B) / 2`` to ``P + B`` and halves; while it is below P the link idles.  Integrating over a
  cycle (b = B / P < 1): ``U = (3/4)(1 + b)^2 / ((1 - b) + (1 + b)^2 - 1)``, and 1 for b >= 1.
"""

from __future__ import annotations

import math

from mrfq.flows.errors import MrfqError


def _check_p(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise MrfqError(f"p = {p!r}: a loss probability must lie in (0, 1)")


def mathis(p: float, rtt: float, b: int = 1) -> float:
    """Mathis et al.'s throughput (packets per time unit) at loss probability p and round-trip time rtt."""
    _check_p(p)
    return math.sqrt(3.0 / (2.0 * b * p)) / rtt


def padhye(p: float, rtt: float, t0: float, b: int = 1, w_max: float = math.inf) -> float:
    """Padhye et al.'s throughput (packets per time unit), eq. (33): loss probability p, round-trip time
    rtt, timeout t0, b packets per ACK, receiver window w_max."""
    _check_p(p)
    x = rtt * math.sqrt(2.0 * b * p / 3.0) + t0 * min(1.0, 3.0 * math.sqrt(3.0 * b * p / 8.0)) * p * (1.0 + 32.0 * p * p)
    return min(w_max / rtt, 1.0 / x)


def sawtooth_utilisation(buffer: float, bdp: float) -> float:
    """The link utilisation of one Reno flow with a drop-tail buffer of ``buffer`` packets and a
    bandwidth-delay product of ``bdp`` packets (the module docstring)."""
    if buffer < 0 or bdp <= 0:
        raise MrfqError(f"buffer = {buffer!r}, bdp = {bdp!r}: need buffer >= 0 and bdp > 0")
    b = buffer / bdp
    if b >= 1.0:
        return 1.0
    return 0.75 * (1.0 + b) ** 2 / ((1.0 - b) + (1.0 + b) ** 2 - 1.0)
