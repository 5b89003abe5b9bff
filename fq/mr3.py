"""MR3: multi-resource round robin.

[MR3] W. Wang, B. Li, B. Liang, *Multi-resource round robin: a low complexity
packet scheduler with dominant resource fairness*, ICNP 2013, §IV (the
algorithm, Algorithm 1), built on [ERR] S. Kanhere, H. Sethu, A. Parekh,
*Fair and efficient packet scheduling using elastic round robin*, IEEE TPDS
13(3), 2002.  O(1) work per packet; near-DRF ([DRF] §4; docs/allocators.md, 'DRF').

Source note.  The stored copy of [MR3] available to this project holds its
abstract and introduction only (and the ICNP slides' first pages); the rules
below follow the algorithm as the paper and [ERR] describe it, reconstructed
(R).  Each (R)/(choice) is a named option or says what the alternative is.

Rules.  ``d(p) = max_j s_pj / w_i`` is the *dominant service* of packet p of
flow i (time units on its dominant resource, divided by the flow weight).

1. [MR3 §IV, Alg. 1] Scheduling happens at the first resource (index 0; resources nobody
   uses are removed before the run, so it is the first some flow uses) only:
   flows with packets waiting there form the *active list* and are visited in
   rounds, round robin.  A flow joins the tail of the list when a packet
   arrives at resource 0 to an empty queue, and leaves it when its queue there
   is empty after one of its packets begins service.  (choice) Flows that join
   at the same instant, with no decision at resource 0 in between (every flow
   at the start of a run), line up by their head packet's dominant service
   ``d(p)``, smallest first, ties by flow id (``router.join_order =
   "dominant"``, the default), so the order of the ``[[flow]]`` tables does
   not decide the rounds' order: the turns of a round reach the later (FIFO)
   resources in that order, and a flow with small packets queued behind one
   large packet per round needs a window for two rounds (b = (0.05, 1) listed
   before a = (0.05, 0.05), window 30: 0.571 / 8.57 in the order listed
   against DRF's 0.5 / 10).  ``"arrival"``: the order the router meets them
   ([ERR]'s list; among simultaneous arrivals, the engine's event order).
2. [MR3 §IV, Alg. 1; ERR] Elastic allowance.  Each flow keeps an *excess
   counter* ``EC_i``; ``MaxEC(k)`` is the largest ``EC_i`` left by a turn of
   round k.  At its visit in round k flow i gets the balance
   ``B_i = MaxEC(k-1) - EC_i`` and sends head packets while ``B_i >= 0``, each
   taking ``B_i -= d(p)`` (so it always sends at least one).  When the turn
   ends ``EC_i = -B_i`` (the dominant service it took beyond its allowance),
   or ``EC_i = 0`` when it leaves the list.  A flow that keeps sending thus
   receives, per round, the largest dominant service of the previous round
   (up to the excess, which it repays in the next round): equal dominant
   service per round, DRF's equalised dominant shares.
3. [MR3 §IV, ERR] Rounds.  Round k consists of the flows in the active list
   when round k begins (its first visit); flows that join during round k, and
   flows whose turn in round k ended with packets left, are visited in round
   k + 1, in the order they reached the tail.
4. [MR3 §IV] Every later resource serves packets in the order they arrive
   there (FIFO; key = arrival time, ties by flow id as everywhere:
   docs/schedulers.md, 'Event order and ties').
5. [MR3 §IV-C] Progress control (R): the first resource must not run ahead of the
   last one.  Option ``router.progress = L`` (0 turns it off: plain ERR at the first
   resource) bounds by how many rounds, ``router.progress_scope`` says of what:

   * ``"resource"`` (default): the flows whose turn's first packet leaves the router
     at the same resource g form a *group* with rounds of its own (the group's round
     r + 1 begins with the first turn of one of its flows whose token was handed out
     after its round r began); a flow may begin a turn in its group's round r only
     when every packet of the group's round r - L has left the router.  ``L =
     "auto"`` (default): g + 1, the resources up to g (a pipeline of g + 1 stages
     holds g + 1 rounds), and at least 2, so that a cost of 0 at the first resource
     (which removes it from the run when nobody uses it) is the limit of small
     costs.  With one group this is ``"round"``.
   * ``"round"``: round k may begin at resource 0 only when every packet scheduled in
     round ``k - L`` has *finished* service at the last resource it visits; until then
     resource 0 stays idle (``ready`` returns False) even with packets waiting.
     ``"auto"``: J (at least 2).
   * ``"flow"``: flow i may begin its n-th turn only when as many of its packets have
     left their last resource as it scheduled in its turns 1..n - L.  ``"auto"``: J
     (at least 2).

   Under ``"resource"`` and ``"flow"`` a flow that may not begin its turn is passed
   over, keeping its place (it takes its turn as soon as it may), and the others'
   turns go on; a turn is never cut (while one goes on no other flow begins one).
   (choice) ``"resource"`` is the default: global rounds hold a flow that skips the
   saturated last resource to that resource's pace (x = (0.05, 1), y = (0.25, 0),
   z = (0.05, 1), window 30: 0.5 / 2.0 / 0.5 against DRF's 0.5 / 3.8 / 0.5), and
   per-flow progress lets a flow whose packets cross the router faster take more
   turns (a = (0, 0.25) weight 2, b = (0, 0.25) weight 3, c = (0.25, 0.25) weight
   3: 1.07 / 1.60 / 1.33 against DRF's 1 / 1.5 / 1.5); paced per last resource both
   reach DRF (docs/schedulers.md, 'mr3').
   (choice) "finished" rather than "begun" at the last resource: a service start at
   the last resource happens in phase 3 after resource 0 has been considered, so
   "begun" would hold resource 0 idle until the next event instant for no reason of
   the algorithm's own.

Every packet takes its turn in the rounds, even one that costs nothing at resource 0
(``s_i0 = 0``): MR3 is scheduled at ingress by definition (``PLACEMENT``), so such a packet
passes resource 0 in zero time when its turn comes (docs/middlebox.md), and a cost of 0 there
behaves as the limit of small costs.  (A packet that bypassed the rounds took the last resource
from the flows in them: x = (1, 1), y = (0, 1) got 0.0625 / 0.9375 packets per time unit
against DRF's 0.5 / 0.5.)
(choice) Weights: ``d(p)`` divides by ``w_i``, so flows receive dominant
service in proportion to their weights (weighted DRF); [MR3] is unweighted.
(choice) ``MaxEC`` is the largest excess left by the turns of the previous
round (ERR's ``MaxSC``); the flows that left the list count with ``EC = 0``.

How the rules map onto the contract (fq/contract.py): at resource 0 a
packet's key is its flow's turn token (as in :mod:`fq.drr`): a new token from
a global counter when the flow (re)joins the tail, the current one while its
turn goes on, so the smallest key is the front of the active list.  Tokens are
consumed in the order they were handed out (a flow passed over by the progress
control keeps its token, the smallest, and is taken as soon as it may), and round
k + 1 begins with the first turn whose token was handed out after round k began.
The group and per-flow progress are the contract's eligibility (``eligibility`` is
1 for a flow that may not begin its turn yet, ``threshold`` 0); ``ready`` holds
resource 0 for global rounds; ``finish`` counts the packets that have left their
last resource, per round, per group round and per flow.
"""

from __future__ import annotations

from collections import Counter, deque

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags, option_value

NAME = "mr3"
SUMMARY = "multi-resource round robin: ERR rounds at the first resource, FIFO after"
REFERENCE = "[MR3] Wang, Li & Liang, ICNP 2013, sec. IV, Alg. 1"
OBJECTIVE = "drf"
#: MR3 schedules at the first resource only, later resources FIFO: the engine runs it under
#: ``router.schedule_at = "ingress"`` whenever some packet costs nothing at the first resource
#: (with positive costs there the two placements give MR3 the same schedule)
PLACEMENT = "ingress"
#: a packet dropped while it waits (CoDel, the pool's push-out) is not defined here: its rounds count
#: the visits and tokens of the flows in the list (fq.registry.resolve refuses the combination)
DROPS_INSIDE = False
SCOPES = ("resource", "round", "flow")
OPTIONS = (Option("progress", "auto", "MR3 progress control: how many rounds (or a flow's turns) the first resource "
                                      "may lead the last; 'auto': the resources up to the last one the flows use "
                                      "(per group under 'resource', all of them otherwise); 0 = off (0..7)",
                  examples=(0, 1, 3)),
           Option("progress_scope", "resource", "'resource': rounds paced per last resource used; 'round': global "
                                                "rounds; 'flow': each flow's own turns", examples=("round", "flow")),
           Option("join_order", "dominant", "the order of flows that join MR3's active list at one instant: "
                                            "'dominant': their head packets' dominant service, smallest first; "
                                            "'arrival': the order the router meets them ([ERR])",
                  examples=("arrival",)))
JOIN_ORDERS = ("dominant", "arrival")
MAX_LAG = 7

# per-flow slots
F_EXCESS = 0    # EC_i
F_BALANCE = 1   # B_i during a turn
F_IN_TURN = 2   # 1 while the flow's turn goes on
F_TOKEN = 3     # the token of the flow's current turn
F_TURNS = 4     # turns the flow has begun
F_SCHED = 5     # its packets begun at resource 0
F_LEFT = 6      # its packets begun at resource 0 that left their last resource
F_GROUP = 7     # the group (last resource) of its current turn
F_GROUND = 8    # that group's round of its current turn
F_CUM = 9       # F_CUM + (n % RING): its packets begun at resource 0 in its turns 1..n
RING = 8        # rounds (turns) in flight under progress control <= L <= MAX_LAG < RING
NF = F_CUM + RING
# global slots
G_ISSUED = 0      # tokens handed out
G_TURNS = 1       # turns begun (= tokens consumed: under global rounds they are consumed in order)
G_ROUND_END = 2   # first token of the next round
G_ROUND = 3       # current round k (1, 2, ...; 0 before the first)
G_MAXEC_PREV = 4  # MaxEC(k - 1)
G_MAXEC_CUR = 5   # largest EC left by a turn of round k so far
G_TURN_OPEN = 6   # 1 while some flow's turn goes on
G_HANDED = 7      # tokens handed out (one per join; G_ISSUED counts join instants)
G_ROUND_END_N = 8  # G_HANDED when round k began
G_NOW = 9         # the time of the last arrival or service start at resource 0
G_BATCH_OPEN = 10  # 1 while flows that join at G_BATCH_TIME share an instant number (a decision at
G_BATCH_TIME = 11  # resource 0 closes it)
G_SCHED = 12      # G_SCHED + (k % RING): packets of round k begun at resource 0
G_DONE = G_SCHED + RING   # G_DONE + (k % RING): packets of round k that left their last resource
G_GROUPS = G_DONE + RING  # then per group g (the last resource of a turn's first packet), GW slots:
GR_ROUND = 0              #   the group's round
GR_END = 1                #   the first token of its next round
GR_SCHED = 2              #   GR_SCHED + (r % RING): packets of its round r begun at resource 0
GR_DONE = GR_SCHED + RING  #  GR_DONE + (r % RING): those that left their last resource
GW = GR_DONE + RING
# per-packet slots
P_ARRIVAL = 0     # arrival time at the current resource (the FIFO key)
P_ROUND = 1       # the round it was scheduled in at resource 0 (0: not yet)
P_GROUP = 2       # its turn's group
P_GROUND = 3      # its turn's group round
NP = 4
# scopes (opt[1])
SCOPE_ROUND = 0.0
SCOPE_FLOW = 1.0
SCOPE_RESOURCE = 2.0
SCOPE_CODE = {"round": SCOPE_ROUND, "flow": SCOPE_FLOW, "resource": SCOPE_RESOURCE}


def layout(J):
    return Layout(flow=NF, glob=G_GROUPS + GW * J, pkt=NP)


def encode(router, resources):
    """``opt = (L, scope, join order)``: L = -1 for 'auto'; scope 0 round, 1 flow, 2 resource; join order 0
    dominant, 1 arrival."""
    lag = option_value(router, "progress", "auto")
    if lag != "auto" and (isinstance(lag, bool) or not isinstance(lag, int) or not 0 <= lag <= MAX_LAG):
        raise ScenarioError(f"router.progress = {lag!r}: must be 'auto' or an integer 0..{MAX_LAG} (rounds the "
                            f"first resource may lead the last; 0 turns MR3's progress control off)")
    scope = option_value(router, "progress_scope", "resource")
    if scope not in SCOPES:
        raise ScenarioError(f"router.progress_scope = {scope!r}: choose 'resource' (rounds paced per last resource "
                            f"used), 'round' (global rounds) or 'flow' (each flow's own turns)")
    order = option_value(router, "join_order", "dominant")
    if order not in JOIN_ORDERS:
        raise ScenarioError(f"router.join_order = {order!r}: choose 'dominant' (flows joining at one instant line "
                            f"up by dominant service) or 'arrival' (in the order the router meets them)")
    return (-1.0 if lag == "auto" else float(lag), SCOPE_CODE[scope], float(JOIN_ORDERS.index(order)))


@jit_inline
def _dominant(cst, J, cb):
    d = 0.0
    for j in range(J):
        if cst[cb + j] > d:
            d = cst[cb + j]
    return d


@jit_inline
def _last_resource(cst, J, cb):
    last = 0
    for j in range(J):
        if cst[cb + j] > 0.0:
            last = j
    return last


@jit_inline
def _lag(opt, J, g):
    """L: the option, or 'auto': the resources up to group g's last resource (scope 'resource'), or J;
    at least 2 (a cost of 0 at the first resource, which removes it from the run, is then the limit
    of small costs there)."""
    if opt[0] >= 0.0:
        return opt[0]
    depth = float(g + 1) if opt[1] == SCOPE_RESOURCE else float(J)
    if depth < 2.0:
        return 2.0
    return depth if depth < MAX_LAG else float(MAX_LAG)


@jit_inline
def _join_order(cst, J, cb, weight):
    """Rule 1's order among the flows that join the list at one instant: the head packet's dominant
    service ``d = max_j s_pj / w_i``, smallest first, as ``0.5 d / (1 + d)`` in [0, 0.5) (ties, to
    the key's precision, by flow id)."""
    d = _dominant(cst, J, cb) / weight
    return 0.5 * (d / (1.0 + d))


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    """No round yet (the engine reuses packet records: clear the slot)."""
    pkt[pb + P_ROUND] = 0.0


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    pkt[pb + P_ARRIVAL] = t
    if j == 0:
        S.glob[G_NOW] = t


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    """Resource 0: the flow's turn token (rules 1, 3); later resources: the arrival time (rule 4).
    A token is the join instant's number (a new one unless a flow already joined at this instant
    since the last decision at resource 0) plus the flow's place among that instant's joins."""
    if j != 0:
        return pkt[pb + P_ARRIVAL]
    b = slot * NF
    if S.flow[b + F_IN_TURN] != 0.0:
        return S.flow[b + F_TOKEN]
    g = S.glob
    g[G_HANDED] += 1.0
    if opt[2] != 0.0:                                  # 'arrival': every join its own number
        token = g[G_ISSUED]
        g[G_ISSUED] = token + 1.0
        S.flow[b + F_TOKEN] = token
        return token
    if g[G_BATCH_OPEN] != 0.0 and g[G_BATCH_TIME] == g[G_NOW]:
        instant = g[G_ISSUED] - 1.0
    else:
        instant = g[G_ISSUED]
        g[G_ISSUED] = instant + 1.0
        g[G_BATCH_OPEN] = 1.0
        g[G_BATCH_TIME] = g[G_NOW]
    token = instant + _join_order(cst, J, cb, weight)
    S.flow[b + F_TOKEN] = token
    return token


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """Rules 2 and 3 at resource 0: a new turn (and maybe a new round), the balance, the excess; the
    rounds and turns rule 5 counts."""
    if j != 0:
        return
    g = S.glob
    g[G_NOW] = t
    g[G_BATCH_OPEN] = 0.0                              # a decision: later joins are a new instant's
    b = slot * NF
    if S.flow[b + F_IN_TURN] == 0.0:
        g[G_TURNS] += 1.0
        if S.flow[b + F_TOKEN] >= g[G_ROUND_END]:      # the first visit of round k + 1
            g[G_ROUND] += 1.0
            g[G_ROUND_END] = g[G_ISSUED]
            g[G_ROUND_END_N] = g[G_HANDED]
            g[G_MAXEC_PREV] = g[G_MAXEC_CUR]
            g[G_MAXEC_CUR] = 0.0
            r = int(g[G_ROUND]) % RING
            g[G_SCHED + r] = 0.0
            g[G_DONE + r] = 0.0
        group = _last_resource(cst, J, cb)
        gb = G_GROUPS + group * GW
        if S.flow[b + F_TOKEN] >= g[gb + GR_END]:      # the first visit of the group's next round
            g[gb + GR_ROUND] += 1.0
            g[gb + GR_END] = g[G_ISSUED]
            r = int(g[gb + GR_ROUND]) % RING
            g[gb + GR_SCHED + r] = 0.0
            g[gb + GR_DONE + r] = 0.0
        S.flow[b + F_GROUP] = group
        S.flow[b + F_GROUND] = g[gb + GR_ROUND]
        S.flow[b + F_BALANCE] = g[G_MAXEC_PREV] - S.flow[b + F_EXCESS]
        S.flow[b + F_IN_TURN] = 1.0
        g[G_TURN_OPEN] = 1.0
        S.flow[b + F_TURNS] += 1.0
    pkt[pb + P_ROUND] = g[G_ROUND]
    g[G_SCHED + int(g[G_ROUND]) % RING] += 1.0
    turn_group = S.flow[b + F_GROUP]
    pkt[pb + P_GROUP] = turn_group
    pkt[pb + P_GROUND] = S.flow[b + F_GROUND]
    g[G_GROUPS + int(turn_group) * GW + GR_SCHED + int(S.flow[b + F_GROUND]) % RING] += 1.0
    sched = S.flow[b + F_SCHED] + 1.0
    S.flow[b + F_SCHED] = sched
    S.flow[b + F_CUM + int(S.flow[b + F_TURNS]) % RING] = sched
    balance = S.flow[b + F_BALANCE] - _dominant(cst, J, cb) / weight
    S.flow[b + F_BALANCE] = balance
    if next_pb < 0 or balance < 0.0:                  # the turn ends
        S.flow[b + F_IN_TURN] = 0.0
        g[G_TURN_OPEN] = 0.0
        excess = 0.0 if next_pb < 0 else -balance
        S.flow[b + F_EXCESS] = excess
        if excess > g[G_MAXEC_CUR]:
            g[G_MAXEC_CUR] = excess


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    """Rule 5: count a packet that leaves its last resource, in its round, its turn's group round
    and its flow."""
    r = pkt[pb + P_ROUND]
    if r > 0.0 and j == _last_resource(cst, J, cb):
        S.glob[G_DONE + int(r) % RING] += 1.0
        S.glob[G_GROUPS + int(pkt[pb + P_GROUP]) * GW + GR_DONE + int(pkt[pb + P_GROUND]) % RING] += 1.0
        S.flow[slot * NF + F_LEFT] += 1.0


@jit_inline
def idle(S, pkt, opt, J, j, t):
    return


@jit_inline
def eligibility(S, pkt, opt, J, slot, pb, cst, cb, j):
    """Rule 5 per group or per flow: 1 while the flow may not begin its next turn, else 0."""
    if j != 0 or opt[0] == 0.0 or opt[1] == SCOPE_ROUND:
        return 0.0
    b = slot * NF
    if S.flow[b + F_IN_TURN] != 0.0:
        return 0.0                                     # its turn goes on
    if S.glob[G_TURN_OPEN] != 0.0:
        return 1.0                                     # another flow's turn goes on: a turn is never cut
    if opt[1] == SCOPE_FLOW:
        n = S.flow[b + F_TURNS] + 1.0 - _lag(opt, J, 0)
        if n < 1.0 or S.flow[b + F_LEFT] >= S.flow[b + F_CUM + int(n) % RING]:
            return 0.0
        return 1.0
    group = _last_resource(cst, J, cb)
    gb = G_GROUPS + group * GW
    if S.flow[b + F_TOKEN] < S.glob[gb + GR_END]:
        return 0.0                                     # its turn belongs to the group's current round
    r = S.glob[gb + GR_ROUND] + 1.0 - _lag(opt, J, group)
    if r < 1.0:
        return 0.0
    k = int(r) % RING
    return 0.0 if S.glob[gb + GR_DONE + k] == S.glob[gb + GR_SCHED + k] else 1.0


@jit_inline
def threshold(S, pkt, opt, J, j, t, e_min):
    """Eligible: the flows whose ``eligibility`` is 0."""
    return 0.0


@jit_inline
def ready(S, pkt, opt, J, j, t):
    """Rule 5, global rounds: resource 0 may begin round k + 1 only when round k + 1 - L has left the
    router."""
    if j != 0 or opt[0] == 0.0 or opt[1] != SCOPE_ROUND:
        return True
    g = S.glob
    if g[G_TURN_OPEN] != 0.0 or g[G_TURNS] < g[G_ROUND_END_N]:
        return True                                    # the next visit belongs to the current round
    r = g[G_ROUND] + 1.0 - _lag(opt, J, 0)
    if r < 1.0:
        return True
    k = int(r) % RING
    return g[G_DONE + k] == g[G_SCHED + k]


class Reference(ReferenceTags):
    """MR3 as [MR3] Alg. 1 / [ERR] write it: an explicit active list (a deque of flows, each with the
    ticket it joined with), rounds delimited by tickets (round k + 1 begins with the first visit of a
    flow that joined after round k began), excess counters; for the progress control, packet counts
    per round (global rounds), per group round (a group: the flows whose turn's first packet leaves
    the router at the same resource, with rounds of its own) and per turn of each flow.  ``start``
    checks that the router visited the list's first flow that may take its turn."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.scope = next(name for name, code in SCOPE_CODE.items() if code == opt[1])
        self.lag_option = opt[0]
        self.by_dominant = opt[2] == 0.0
        self.active: deque = deque()
        self.serving_turn = None          # the flow whose turn goes on
        self.tickets = 0                  # join instants numbered (a ticket: the instant's number plus the
        self.batch_time = None            # flow's place in it); the open instant (None: a decision closed it)
        self.now = 0.0
        self.round = 0
        self.round_end = 0                # the first ticket of round k + 1
        self.max_ec_prev = 0.0
        self.max_ec_cur = 0.0
        self.scheduled: Counter = Counter()   # round -> packets begun at resource 0
        self.left: Counter = Counter()        # round -> packets that finished their last resource
        self.group_round = [0] * J            # per group (last resource): its round
        self.group_end = [0] * J              # the first ticket of its next round
        self.group_scheduled = [Counter() for _ in range(J)]
        self.group_left = [Counter() for _ in range(J)]

    def lag(self, group: int) -> int:
        if self.lag_option >= 0:
            return int(self.lag_option)
        return min(max(group + 1 if self.scope == "resource" else self.J, 2), MAX_LAG)

    def arrive(self, p, j, t):
        p.tag["key"] = t
        if j == 0:
            self.now = t

    def head(self, p, j):
        """A flow joins the tail of the list; flows that join at one instant (no decision at resource 0
        in between) line up by their head packet's dominant service, smallest first, then flow id."""
        if j != 0:
            return p.tag["key"]
        f = p.flow
        if f is self.serving_turn:
            return f.tag["ticket"]
        if not self.by_dominant:
            self.active.append(f)
            f.tag["ticket"] = float(self.tickets)
            self.tickets += 1
            return f.tag["ticket"]
        if self.batch_time is None or self.batch_time != self.now:
            self.tickets += 1
            self.batch_time = self.now
        d = max(p.s) / f.profile.weight
        f.tag["ticket"] = (self.tickets - 1) + 0.5 * (d / (1.0 + d))
        place = len(self.active)
        while place > 0 and (self.active[place - 1].tag["ticket"], self.active[place - 1].uid) > (f.tag["ticket"], f.uid):
            place -= 1
        self.active.insert(place, f)
        return f.tag["ticket"]

    def _may_begin_turn(self, f, p) -> bool:
        """Rule 5 per group or per flow, for f's next turn, whose first packet is p."""
        if self.scope == "round" or self.lag_option == 0:
            return True
        if self.scope == "flow":
            turns = f.tag.setdefault("turns", [])      # packets begun at resource 0, per turn
            n = len(turns) + 1
            return n - self.lag(0) < 1 or f.tag.get("left", 0) >= sum(turns[:n - self.lag(0)])
        group = p.route[-1]
        if f.tag["ticket"] < self.group_end[group]:
            return True
        r = self.group_round[group] + 1 - self.lag(group)
        return r < 1 or self.group_left[group][r] == self.group_scheduled[group][r]

    def eligibility(self, p, j):
        if j != 0 or p.flow is self.serving_turn or self.scope == "round" or self.lag_option == 0:
            return 0.0
        if self.serving_turn is not None:
            return 1.0                    # another flow's turn goes on: a turn is never cut
        return 0.0 if self._may_begin_turn(p.flow, p) else 1.0

    def threshold(self, j, t, e_min):
        return 0.0

    def start(self, p, j, next_p, t):
        if j != 0:
            return
        self.now, self.batch_time = t, None
        f = p.flow
        if f is not self.serving_turn:    # a visit
            passed = []
            while self.active[0] is not f:
                passed.append(self.active.popleft())
            self.active.popleft()
            assert all(not self._may_begin_turn(g, self.router.fifo[0][g.uid][0]) for g in passed), \
                f"MR3 visits flow {f.uid} before flow {passed[0].uid}, which may take its turn"
            self.active.extendleft(reversed(passed))
            if f.tag["ticket"] >= self.round_end:    # round k is over: round k + 1 = the flows in the list now
                self.round += 1
                self.round_end = self.tickets
                self.max_ec_prev, self.max_ec_cur = self.max_ec_cur, 0.0
            group = p.route[-1]
            if f.tag["ticket"] >= self.group_end[group]:   # the group's next round
                self.group_round[group] += 1
                self.group_end[group] = self.tickets
            f.tag["group"] = (group, self.group_round[group])
            f.tag["balance"] = self.max_ec_prev - f.tag.get("excess", 0.0)
            f.tag.setdefault("turns", []).append(0)
            self.serving_turn = f
        p.tag["round"] = self.round
        p.tag["group"] = f.tag["group"]
        self.scheduled[self.round] += 1
        self.group_scheduled[f.tag["group"][0]][f.tag["group"][1]] += 1
        f.tag["turns"][-1] += 1
        f.tag["balance"] -= max(p.s) / f.profile.weight
        if next_p is None or f.tag["balance"] < 0.0:
            self.serving_turn = None
            f.tag["excess"] = 0.0 if next_p is None else -f.tag["balance"]
            self.max_ec_cur = max(self.max_ec_cur, f.tag["excess"])

    def finish(self, p, j, t):
        if "round" in p.tag and j == p.route[-1]:
            self.left[p.tag["round"]] += 1
            group, r = p.tag["group"]
            self.group_left[group][r] += 1
            p.flow.tag["left"] = p.flow.tag.get("left", 0) + 1

    def ready(self, j, t):
        if j != 0 or self.lag_option == 0 or self.scope != "round" or self.serving_turn is not None:
            return True
        if self.active and self.active[0].tag["ticket"] < self.round_end:
            return True                   # the next visit belongs to the current round
        r = self.round + 1 - self.lag(0)
        return r < 1 or self.left[r] == self.scheduled[r]
