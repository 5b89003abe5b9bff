"""A TCP-like sender and receiver in plain Python, for the SimPy reference (router/reference.py): the
test oracle of router/transport.py, written from the definitions of docs/transport.md.

Sequence numbers count packets from 0.  The sender keeps RFC 5681's ``cwnd`` and ``ssthresh`` (in
packets), NewReno's recovery point (RFC 6582) and RFC 6298's retransmission timer; the congestion
control is Reno (RFC 5681) or CUBIC (RFC 9438, with its Reno-friendly region).  The receiver
acknowledges every packet it gets (no delayed ACKs) with the next packet it expects (cumulative,
no SACK) and echoes the packet's send time (RFC 7323 timestamps: an RTT sample on every ACK that
acknowledges new data) and its congestion mark (ECN).
"""

from __future__ import annotations

import math

M32 = 0xFFFFFFFF
#: CUBIC's multiplicative decrease (RFC 9438 §4.6) and its Reno-friendly additive increase (§4.3)
CUBIC_BETA = 0.7
CUBIC_ALPHA = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
#: the retransmission timeout backs off to at most this many times its floor (RFC 6298 (2.5))
RTO_BACKOFF_CAP = 64.0


def loss_uniform(key: int, uid: int, n: int) -> float:
    """The uniform draw deciding whether send n of flow uid is lost before the router (``loss = p``):
    the counter-based mixer keyed apart from the AQM's (router.transport.loss_uniform)."""
    from mrfq.router.reference import hash32  # (the reference imports this module)
    return hash32(hash32(hash32((key + 0x6A09E667) ^ (uid & M32)) + (n & M32)) + (n >> 32)) / 4294967296.0


class TcpFlow:
    """One TCP flow's sender and receiver.  ``transmit(q, t)`` is the router's: it sends packet q at t
    (it may be lost before the router, or dropped there)."""

    def __init__(self, tp, warmup: float, transmit):
        self.cubic = tp.cc == "cubic"
        self.rtt = tp.rtt
        self.min_rto = tp.rto_floor
        self.max_window = tp.max_window
        self.c = tp.cubic_c
        self.warmup = warmup
        self.transmit = transmit
        self.cwnd = float(tp.initial_window)
        self.ssthresh = float(tp.max_window)
        self.snd_una = 0           # the oldest packet not acknowledged
        self.snd_nxt = 0           # the next packet to send
        self.snd_max = 0           # one past the highest packet sent
        self.dupacks = 0
        self.in_recovery = False
        self.recover = -1          # NewReno's recovery point: the highest packet sent when a loss episode began
        self.ecn_recover = -1      # one window reduction per window of marks
        self.srtt = 0.0
        self.rttvar = 0.0
        self.sampled = False
        self.rto = max(self.min_rto, 3.0 * tp.rtt)
        self.rto_at = math.inf     # the timer's deadline (inf: stopped)
        # CUBIC (RFC 9438): W_max, the epoch's start (-1: none), K and the window it grows from, W_est
        self.w_max = 0.0
        self.epoch = -1.0
        self.k = 0.0
        self.origin = 0.0
        self.w_est = 0.0
        # the receiver: the next packet it expects and those it holds beyond it
        self.rcv_nxt = 0
        self.held: set[int] = set()
        # counts (retransmissions, timeouts, sends, random losses from warm-up on; goodput after it)
        self.sends = 0
        self.retransmits = 0
        self.timeouts = 0
        self.goodput = 0
        self.lost = 0
        self.marks = 0
        self.cwnd_area = 0.0
        self.t_area = warmup
        self.log: list[tuple[float, float, float]] = []   # (time, cwnd, ssthresh) at every change

    # ---- the sender -----------------------------------------------------------------------------
    def _area(self, t: float) -> None:
        """The time integral of cwnd from warm-up on, up to t."""
        if t > self.t_area:
            self.cwnd_area += self.cwnd * (t - self.t_area)
            self.t_area = t

    def _send(self, q: int, t: float) -> None:
        if q < self.snd_max:
            if t >= self.warmup:
                self.retransmits += 1
        else:
            self.snd_max = q + 1
        if self.rto_at == math.inf:  # RFC 6298 (5.1)
            self.rto_at = t + self.rto
        n = self.sends
        self.sends += 1
        self.transmit(self, q, n, t)

    def _send_more(self, t: float) -> None:
        """Send while the packets in flight are below the window (and the receiver's)."""
        w = int(self.cwnd)
        if w > self.max_window:
            w = self.max_window
        while self.snd_nxt < self.snd_una + w:
            q = self.snd_nxt
            self.snd_nxt = q + 1
            self._send(q, t)

    def _decrease(self) -> None:
        """A congestion event: ssthresh (and CUBIC's W_max) from the window now."""
        if self.cubic:
            self.w_max = self.cwnd * (1.0 + CUBIC_BETA) / 2.0 if self.cwnd < self.w_max else self.cwnd
            self.ssthresh = max(self.cwnd * CUBIC_BETA, 2.0)
            self.epoch = -1.0
        else:
            self.ssthresh = max((self.snd_max - self.snd_una) / 2.0, 2.0)

    def _increase(self, acked: int, t: float) -> None:
        if self.cwnd < self.ssthresh:
            self.cwnd += 1.0  # slow start, at most one packet per ACK (RFC 5681 (2), RFC 3465 L = 1)
        elif not self.cubic:
            self.cwnd += 1.0 / self.cwnd  # congestion avoidance (RFC 5681 (3))
        else:
            if self.epoch < 0.0:
                self.epoch = t
                self.w_est = self.cwnd
                if self.cwnd < self.w_max:
                    self.k = ((self.w_max - self.cwnd) / self.c) ** (1.0 / 3.0)
                    self.origin = self.w_max
                else:
                    self.k = 0.0
                    self.origin = self.cwnd
            rtt = self.srtt if self.sampled else self.rtt
            d = t - self.epoch - self.k
            w_now = self.c * d * d * d + self.origin
            d = d + rtt
            target = self.c * d * d * d + self.origin
            if target < self.cwnd:
                target = self.cwnd
            elif target > 1.5 * self.cwnd:
                target = 1.5 * self.cwnd
            alpha = 1.0 if self.w_est >= self.w_max else CUBIC_ALPHA
            self.w_est += alpha * acked / self.cwnd
            if w_now < self.w_est:
                self.cwnd = self.w_est  # the Reno-friendly region
            else:
                self.cwnd += (target - self.cwnd) / self.cwnd
        if self.cwnd > self.max_window:
            self.cwnd = float(self.max_window)

    def _logged(self, t: float) -> None:
        if not self.log or self.log[-1][1:] != (self.cwnd, self.ssthresh):
            self.log.append((t, self.cwnd, self.ssthresh))

    def open(self, t: float) -> None:
        """The flow starts at t: its initial window."""
        self.t_area = max(t, self.warmup)
        self._send_more(t)
        self._logged(t)

    def ack(self, t: float, a: int, ts: float, ece: bool) -> None:
        """The ACK of ``a`` (the next packet the receiver expects), echoing send time ts and mark ece."""
        self._area(t)
        if a > self.snd_una:
            acked = a - self.snd_una
            self.snd_una = a
            if self.snd_nxt < a:
                self.snd_nxt = a
            r = t - ts  # RFC 6298 (2.2), (2.3)
            if not self.sampled:
                self.sampled = True
                self.srtt = r
                self.rttvar = r / 2.0
            else:
                self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
                self.srtt = 0.875 * self.srtt + 0.125 * r
            self.rto = max(self.min_rto, self.srtt + 4.0 * self.rttvar)
            if self.in_recovery:
                if a > self.recover:  # a full ACK: recovery ends (RFC 6582 (3))
                    self.in_recovery = False
                    self.dupacks = 0
                    self.cwnd = self.ssthresh
                else:  # a partial ACK: the next hole goes again, the window deflates
                    self._send(a, t)
                    self.cwnd = max(self.cwnd - acked + 1.0, 1.0)
            else:
                self.dupacks = 0
                self._increase(acked, t)
            if ece and not self.in_recovery and a > self.ecn_recover:
                self._decrease()
                self.cwnd = self.ssthresh
                self.ecn_recover = self.snd_max - 1
            self.rto_at = math.inf if self.snd_una == self.snd_max else t + self.rto  # (5.2), (5.3)
        elif a == self.snd_una and self.snd_max > self.snd_una:
            self.dupacks += 1
            if self.in_recovery:
                self.cwnd += 1.0  # each duplicate ACK: a packet has left the network
            elif self.dupacks == 3 and a > self.recover:  # fast retransmit (RFC 6582 (2))
                self._decrease()
                self.recover = self.snd_max - 1
                self.in_recovery = True
                self._send(a, t)
                self.cwnd = self.ssthresh + 3.0
                self.rto_at = t + self.rto
        self._send_more(t)
        self._logged(t)

    def timeout(self, t: float) -> None:
        """The retransmission timer expires at t (RFC 6298 (5.4)-(5.6)): back to slow start from the
        oldest packet not acknowledged (go-back-N)."""
        self._area(t)
        if t >= self.warmup:
            self.timeouts += 1
        self._decrease()
        self.cwnd = 1.0
        self.in_recovery = False
        self.dupacks = 0
        self.recover = self.snd_max - 1
        self.snd_nxt = self.snd_una
        self.rto = min(2.0 * self.rto, RTO_BACKOFF_CAP * self.min_rto)
        self.rto_at = math.inf
        self._send_more(t)
        self._logged(t)

    # ---- the receiver ---------------------------------------------------------------------------
    def receive(self, q: int, t: float) -> int:
        """Packet q leaves the router at t; returns the ACK (the next packet expected)."""
        if q >= self.rcv_nxt and q not in self.held:
            if t > self.warmup:
                self.goodput += 1
            self.held.add(q)
            while self.rcv_nxt in self.held:
                self.held.discard(self.rcv_nxt)
                self.rcv_nxt += 1
        return self.rcv_nxt

    # ---- what is reported ---------------------------------------------------------------------------
    def report(self, t_end: float, span: float) -> dict:
        """Counts from warm-up on (router.run.FlowResult.transport): goodput (packets delivered once per
        time unit), retransmissions, timeouts, random losses, the time-average window."""
        self._area(t_end)
        return {"goodput": self.goodput / span if span > 0 else math.nan, "delivered": self.goodput,
                "retransmissions": self.retransmits, "timeouts": self.timeouts, "random_losses": self.lost,
                "mean_cwnd": self.cwnd_area / span if span > 0 else math.nan, "sends": self.sends}
