/*
 * yardstick.c -- mrfq's C yardstick: the router model of mrfq's packet engine written as plainly
 * and as fast as C allows, single-threaded, C11 and libm only.  `mrfq bench` (router/bench.py)
 * compiles it with the system C compiler and times the numba engine against it on the same
 * workloads: docs/performance.md, "The packet engine against a C yardstick".
 *
 *     cc -std=c11 -O2 -o yardstick yardstick.c -lm
 *
 * Compile-time flags:
 *     -DMRFQ_RECORD_DELAYS  also record per packet what mrfq records by default (`mrfq bench
 *                           --c-delays`; docs/performance.md, "What the same recording costs in C")
 *     -DMRFQ_TRACE          also hash every service (trace=) and accept -T FILE, which writes every
 *                           service as a line "start end resource flow" (hex floats; the flow is
 *                           its arrival number), for the tests
 *
 * THE MODEL (docs/schedulers.md, "The packet model they share")
 *   R resources in tandem (at most 4), each a non-preemptive server of capacity 1; every packet
 *   visits 0, 1, ..., R-1 and leaves.  Class k has a cost vector a_k (its packets' service time at
 *   each resource, all positive) and a weight w_k.  A flow keeps a window of W packets inside the
 *   router: when one of its packets leaves the last resource, its next packet joins resource 0 at
 *   the same instant, until the flow has no packet left.
 *
 *   -s drfq  memoryless DRFQ with the `started` virtual time (docs/schedulers.md, `drfq`): a packet
 *            gets its one start tag S = max(V, F_prev) when it enters the router, F = S + max_j a_j / w;
 *            V is the largest start tag of any packet that has begun service at any resource.
 *   -s sfq   start-time fair queueing of each resource's time, mrfq's `bmf-wfq` (docs/schedulers.md):
 *            at resource j, S_j = max(V_j, F_j(the flow's previous packet at j)), F_j = S_j + a_j / w,
 *            V_j the start tag of the last packet to begin service at j.
 *   Every resource serves its waiting packets in increasing (tag, enqueue number); the enqueue
 *   number is one counter over all resources, so equal tags go to the earlier arrival.
 *
 *   -m static   F flows that never end; flow i is of class i mod K.
 *   -m dynamic  flows arrive as a Poisson process, every class at the same rate, with geometric
 *               sizes of mean L packets; the total rate puts load rho on the most loaded resource
 *               (load_j = sum_k lambda_k L a_kj).  Flow completion times are recorded.
 *
 *   Events are handled one at a time in (time, id) order: a service completion at resource j has
 *   id j, the next flow arrival id R; a resource that completes a service starts its next one at
 *   once, before the next event of the same instant.  mrfq's engine breaks both kinds of tie its
 *   own way (equal tags by flow id, an instant's starts after all its completions:
 *   docs/schedulers.md, "Event order and ties"), so single services can differ between the two,
 *   not the amount of work (docs/performance.md).  The random numbers (dynamic mode only) are
 *   xoshiro256** seeded through splitmix64 (-S); at set-up the first interarrival gap is drawn,
 *   then at each arrival the class, the size (no draw when L <= 1) and the next gap, in that order
 *   (router/bench.py, c_dynamic_arrivals, draws the same numbers in Python).
 *
 * DATA STRUCTURES (each combination compiled as its own loop; all give the same trajectory)
 *   -q flow   (default) per flow one ring of 2^ceil(log2 W) queue items; per resource a binary
 *             min-heap holding each flow's first waiting packet only.  A flow's packets reach every
 *             resource in order with non-decreasing tags, so its first waiting packet is its
 *             smallest; and since at most W of them are inside the router, packet p can keep ring
 *             slot p mod 2^bits at every resource it visits.
 *   -q pkt    per resource a binary min-heap of every waiting packet.
 *   -q naive  per resource an unsorted array scanned for its minimum (slow; for checking).
 *   -e scan   (default) the next event is the smallest of the R completion times and the next
 *             arrival.
 *   -e heap   a binary-heap calendar of (time, id).
 *   A heap item is (tag, key), key = enqueue number << 24 | flow slot.  Tags are finite and
 *   non-negative doubles, whose bit patterns order as the values do, so an item compares as two
 *   unsigned integers without branches.  Each heap keeps an all-ones sentinel after its last item
 *   (a node's second child is read without a bounds test) and deletes bottom-up (the hole goes
 *   down to a leaf along the smaller children, then the last item climbs back).
 *
 * OUTPUT: one line of key=value pairs, among them
 *   services, sim_time      services done (one packet served at one resource) and the clock
 *   Msvc_per_s, Msvc_per_cpu_s, ns_per_svc
 *                           speed of the event loop (set-up excluded) by wall and by CPU time
 *   maxrss_kB, model_kB     peak resident memory; bytes held by the flow table, rings and queues
 *   sig                     FNV-1a over the clock, the enqueue count, every flow slot's departed
 *                           packets and every class's summed completion times: equal sigs, the
 *                           same run
 *   trace                   (MRFQ_TRACE) h = (h ^ (slot * 4 + resource)) * FNV prime at each service
 *   rec_sojourns, rec_mean, rec_max, rec_hist
 *                           (MRFQ_RECORD_DELAYS) sojourns recorded, their mean and largest value,
 *                           and FNV-1a over every non-empty (row, histogram, bucket code, count)
 *   The dynamic mode adds a line with the flows arrived, done and in the system (mean_active), one
 *   per resource (offered load, measured utilisation) and one per class (mean completion time and
 *   slowdown against the flow alone in the router).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__) || defined(__clang__)
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define HOT static inline
#define COLD static
#define UNLIKELY(x) (x)
#endif

enum { MAX_RES = 4, MAX_CLASSES = 16, MAX_WINDOW = 255 };
#define SLOT_BITS 24                       /* flow slot bits in a heap item's key */
#define MAX_SLOTS (1u << SLOT_BITS)
#define SLOT_MASK (MAX_SLOTS - 1u)
#define MAX_TARGET (1ull << 38)            /* services per run: enqueue numbers keep 40 bits */
#define NO_SLOT UINT32_MAX
#define NEVER HUGE_VAL                     /* the completion time of an idle resource */
#define FNV_BASIS 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

enum { DRFQ, SFQ };
enum { Q_FLOW, Q_PKT, Q_NAIVE };
enum { EV_SCAN, EV_HEAP };
static const char *const SCHED_NAMES[] = { "drfq", "sfq" };
static const char *const QUEUE_NAMES[] = { "flow", "pkt", "naive" };
static const char *const EVENT_NAMES[] = { "scan", "heap" };

static uint64_t bits_of(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
static double double_of(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }

static void *must(void *p)
{
    if (!p) { fputs("yardstick: out of memory\n", stderr); exit(1); }
    return p;
}

static uint64_t fnv_word(uint64_t h, uint64_t word)   /* FNV-1a over the word's 8 bytes, low first */
{
    for (int i = 0; i < 8; i++) { h ^= (word >> (8 * i)) & 0xff; h *= FNV_PRIME; }
    return h;
}

/* ---------------------------------------------------------------- queues of waiting packets */

typedef struct { uint64_t tag, key; } Item;          /* tag: the start tag's bit pattern */
static const Item SENTINEL = { UINT64_MAX, UINT64_MAX };

HOT int before(Item a, Item b) { return (a.tag < b.tag) | ((a.tag == b.tag) & (a.key < b.key)); }

typedef struct { Item *v; uint32_t n, cap; } Heap;   /* v[n] is the sentinel once v is allocated */

COLD void heap_grow(Heap *h)
{
    h->cap = h->cap ? 2 * h->cap : 64;
    h->v = must(realloc(h->v, (size_t)h->cap * sizeof(Item)));
}

/* x takes the vacant slot i of v, moving up past the larger parents */
HOT void sift_up(Item *v, uint32_t i, Item x)
{
    while (i > 0) {
        uint32_t up = (i - 1) / 2;
        if (!before(x, v[up])) break;
        v[i] = v[up];
        i = up;
    }
    v[i] = x;
}

HOT void heap_push(Heap *h, Item x)
{
    if (UNLIKELY(h->n + 2 > h->cap)) heap_grow(h);
    Item *v = h->v;
    uint32_t i = h->n++;
    v[h->n] = SENTINEL;
    sift_up(v, i, x);
}

/* the root of v[0..n) is vacant: put x back in (bottom-up: down to a leaf, then up) */
HOT void heap_refill_root(Item *v, uint32_t n, Item x)
{
    uint32_t i = 0, c;
    while ((c = 2 * i + 1) < n) {
        c += (uint32_t)before(v[c + 1], v[c]);       /* v[n] is the sentinel: never chosen */
        v[i] = v[c];
        i = c;
    }
    sift_up(v, i, x);
}

HOT void heap_pop(Heap *h)
{
    uint32_t n = --h->n;
    Item last = h->v[n];
    h->v[n] = SENTINEL;
    if (n) heap_refill_root(h->v, n, last);
}

/* ---------------------------------------------------------------- event calendar (-e heap) */

typedef struct { double t; uint32_t id; } Event;
typedef struct { Event v[MAX_RES + 1]; uint32_t n; } Calendar;   /* one per resource, one arrival */

HOT int event_before(Event a, Event b) { return a.t < b.t || (a.t == b.t && a.id < b.id); }

HOT void calendar_push(Calendar *c, double t, uint32_t id)
{
    Event e = { t, id };
    uint32_t i = c->n++;
    while (i > 0 && event_before(e, c->v[(i - 1) / 2])) {
        c->v[i] = c->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->v[i] = e;
}

HOT Event calendar_pop(Calendar *c)
{
    Event first = c->v[0], last = c->v[--c->n];
    uint32_t i = 0, n = c->n;
    for (;;) {
        uint32_t s = 2 * i + 1;
        if (s >= n) break;
        if (s + 1 < n && event_before(c->v[s + 1], c->v[s])) s++;
        if (!event_before(c->v[s], last)) break;
        c->v[i] = c->v[s];
        i = s;
    }
    if (n) c->v[i] = last;
    return first;
}

/* ---------------------------------------------------------------- random numbers */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro256ss(uint64_t s[4])
{
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

static double uniform(uint64_t s[4]) { return (double)(xoshiro256ss(s) >> 11) * 0x1.0p-53; }  /* [0, 1) */

/* ---------------------------------------------------------------- the router's state */

typedef struct {
    /* first cache line: all a DRFQ service touches */
    _Alignas(64) double cost[MAX_RES];   /* service time at each resource */
    double dominant;                     /* DRFQ: max_j cost_j / w */
    double finish;                       /* DRFQ: finish tag of the flow's last packet */
    uint64_t left;                       /* packets not yet in the router (UINT64_MAX: endless) */
    uint8_t head[MAX_RES];               /* -q flow: ring slot of the first waiting packet at j */
    uint8_t waiting[MAX_RES];            /* -q flow: packets waiting at j */
    /* second line: SFQ */
    double increment[MAX_RES];           /* cost_j / w */
    double finish_at[MAX_RES];           /* finish tag of the flow's last packet at j */
    /* cold */
    uint64_t departed;                   /* packets that left the router */
    uint64_t size;                       /* dynamic: the flow's packets */
    double t_start;
    uint32_t inside;                     /* packets inside (counted once none is left to enter) */
    uint32_t cls;
    uint32_t next_free;                  /* free-slot list of the dynamic mode */
#ifdef MRFQ_RECORD_DELAYS
    uint32_t row;                        /* its histogram row */
    uint32_t entered, started[MAX_RES];  /* packets entered, started at j: ring slot = count & ring_mask */
#endif
#ifdef MRFQ_TRACE
    uint64_t number;                     /* arrival number (static: the flow index) */
#endif
} Flow;

typedef struct {
    int R, K, W, ring_bits, ring_mask, sched, qmode, events, dynamic;
    double class_cost[MAX_CLASSES][MAX_RES], class_weight[MAX_CLASSES];
    Flow *flow;                          /* flow table, by slot */
    Item *ring;                          /* -q flow: 2^ring_bits items per slot */
    uint32_t slots, used, free_slot, active, max_active;
    Heap queue[MAX_RES];
    double next[MAX_RES + 1];            /* completion at resource j (NEVER: idle); [R]: next arrival */
    uint32_t serving[MAX_RES];           /* slot of the flow whose packet is in service at j */
    double serving_tag[MAX_RES];
    double V, Vj[MAX_RES];               /* virtual times (DRFQ: V; SFQ: Vj) */
    uint64_t enqueued;                   /* enqueue counter (ties between equal tags) */
    Calendar calendar;
    double now;
    uint64_t services;
    /* dynamic mode */
    double rate, mean_size, log_q;       /* total arrival rate; L; log(1 - 1/L) */
    uint64_t rng[4];
    double area, area_t;                 /* integral of the flows in the system */
    uint64_t arrived;
    uint64_t done[MAX_CLASSES], done_packets[MAX_CLASSES];
    double fct_sum[MAX_CLASSES], slowdown_sum[MAX_CLASSES];
#ifdef MRFQ_TRACE
    uint64_t trace;
    double serving_start[MAX_RES];
    FILE *dump;
#endif
#ifdef MRFQ_RECORD_DELAYS
    double *times;                       /* per ring slot: entry, then service start at each j */
    uint64_t *hist;                      /* per row, BUCKETS x (R + 1): waits at each j, then sojourn */
    double *dmax, *bsum;                 /* per row: largest sojourn; per row and batch: sum */
    uint64_t *bcnt;                      /* per row and batch: sojourns */
    int rows, row_per_flow, batch_shift; /* a departure after n services is in batch n >> batch_shift */
    int64_t base;                        /* bucket code of bucket 0 */
    double floor_value;                  /* largest value of bucket 0 */
#endif
} Router;

/* delay histograms: bucket = bit pattern >> 46 (64 buckets per octave) less the code of bucket 0,
 * LOW_OCTAVES below the smallest cost, 64 octaves in all; BATCHES batches of services; a row per
 * static flow up to ROW_FLOWS of them */
enum { HIST_SHIFT = 46, LOW_OCTAVES = 8, BUCKETS = 64 * 64, BATCHES = 32, ROW_FLOWS = 256 };

COLD void grow_flow_table(Router *S, uint32_t slots)
{
    Flow *table = must(aligned_alloc(64, (size_t)slots * sizeof(Flow)));
    memset(table, 0, (size_t)slots * sizeof(Flow));
    if (S->flow) memcpy(table, S->flow, (size_t)S->slots * sizeof(Flow));
    free(S->flow);
    S->flow = table;
    if (S->qmode == Q_FLOW)
        S->ring = must(realloc(S->ring, ((size_t)slots << S->ring_bits) * sizeof(Item)));
#ifdef MRFQ_RECORD_DELAYS
    S->times = must(realloc(S->times, ((size_t)slots << S->ring_bits) * (S->R + 1) * sizeof(double)));
#endif
    S->slots = slots;
}

COLD uint32_t take_slot(Router *S)
{
    if (S->free_slot != NO_SLOT) {
        uint32_t f = S->free_slot;
        S->free_slot = S->flow[f].next_free;
        return f;
    }
    if (S->used == S->slots) grow_flow_table(S, S->slots ? 2 * S->slots : 64);
    if (S->used >= MAX_SLOTS) { fputs("yardstick: too many flows\n", stderr); exit(1); }
    return S->used++;
}

static void start_flow(Router *S, uint32_t f, int k, uint64_t size, double t)
{
    Flow *fl = &S->flow[f];
    memset(fl, 0, sizeof *fl);
    double w = S->class_weight[k], largest = 0;
    for (int j = 0; j < S->R; j++) {
        fl->cost[j] = S->class_cost[k][j];
        fl->increment[j] = S->class_cost[k][j] / w;
        if (fl->cost[j] > largest) largest = fl->cost[j];
    }
    fl->dominant = largest / w;
    fl->cls = (uint32_t)k;
    fl->size = size;
    fl->t_start = t;
    fl->next_free = NO_SLOT;
#ifdef MRFQ_RECORD_DELAYS
    fl->row = S->row_per_flow ? f : (uint32_t)k;         /* static flows are slots 0..F-1 */
#endif
}

/* ---------------------------------------------------------------- the hot path */

/* a packet of flow f joins the queue of resource j (DRFQ: with its start tag) */
HOT void enqueue(Router *restrict S, int j, uint32_t f, double tag, const int sched, const int qmode)
{
    Flow *fl = &S->flow[f];
    if (sched == SFQ) {
        double v = S->Vj[j];
        tag = fl->finish_at[j] < v ? v : fl->finish_at[j];
        fl->finish_at[j] = tag + fl->increment[j];
    }
    Item x = { bits_of(tag), (S->enqueued++ << SLOT_BITS) | f };
    if (qmode == Q_FLOW) {
        uint32_t n = fl->waiting[j];
        S->ring[((size_t)f << S->ring_bits) + ((fl->head[j] + n) & (uint32_t)S->ring_mask)] = x;
        fl->waiting[j] = (uint8_t)(n + 1);
        if (n == 0) heap_push(&S->queue[j], x);      /* the flow's first waiting packet here */
    } else if (qmode == Q_PKT) {
        heap_push(&S->queue[j], x);
    } else {
        Heap *h = &S->queue[j];
        if (h->n == h->cap) heap_grow(h);
        h->v[h->n++] = x;
    }
}

/* flow f's next packet enters the router at t (DRFQ tags it here) */
HOT void admit(Router *restrict S, uint32_t f, double t, const int sched, const int qmode)
{
    double tag = 0;
    Flow *fl = &S->flow[f];
    if (sched == DRFQ) {
        tag = fl->finish < S->V ? S->V : fl->finish;
        fl->finish = tag + fl->dominant;
    }
#ifdef MRFQ_RECORD_DELAYS
    S->times[(((size_t)f << S->ring_bits) + (fl->entered++ & (uint32_t)S->ring_mask)) * (S->R + 1)] = t;
#else
    (void)t;
#endif
    enqueue(S, 0, f, tag, sched, qmode);
}

/* resource j is free at t: start its first waiting packet, or go idle */
HOT void serve_next(Router *restrict S, int j, double t, const int sched, const int qmode, const int events)
{
    Heap *h = &S->queue[j];
    if (h->n == 0) { S->next[j] = NEVER; return; }
    Item x;
    if (qmode == Q_NAIVE) {
        uint32_t best = 0;
        for (uint32_t i = 1; i < h->n; i++)
            if (before(h->v[i], h->v[best])) best = i;
        x = h->v[best];
        h->v[best] = h->v[--h->n];
    } else {
        x = h->v[0];
        if (qmode == Q_FLOW) {                       /* the flow's next packet here replaces it */
            uint32_t f = (uint32_t)(x.key & SLOT_MASK);
            Flow *fl = &S->flow[f];
            uint32_t slot = (fl->head[j] + 1u) & (uint32_t)S->ring_mask;
            fl->head[j] = (uint8_t)slot;
            if (--fl->waiting[j]) heap_refill_root(h->v, h->n, S->ring[((size_t)f << S->ring_bits) + slot]);
            else heap_pop(h);
        } else {
            heap_pop(h);
        }
    }
    uint32_t f = (uint32_t)(x.key & SLOT_MASK);
    Flow *fl = &S->flow[f];
    double tag = double_of(x.tag);
    if (sched == DRFQ) S->V = tag > S->V ? tag : S->V;
    else S->Vj[j] = tag;
    double end = t + fl->cost[j];
    S->serving[j] = f;
    S->serving_tag[j] = tag;
    S->next[j] = end;
#ifdef MRFQ_TRACE
    S->serving_start[j] = t;
#endif
#ifdef MRFQ_RECORD_DELAYS
    S->times[(((size_t)f << S->ring_bits) + (fl->started[j]++ & (uint32_t)S->ring_mask)) * (S->R + 1) + 1 + j] = t;
#endif
    if (events == EV_HEAP) calendar_push(&S->calendar, end, (uint32_t)j);
}

static double exponential(Router *S, double rate) { return -log1p(-uniform(S->rng)) / rate; }

static uint64_t geometric_size(Router *S)             /* mean L, at least 1 */
{
    if (S->mean_size <= 1.0) return 1;
    double n = floor(log1p(-uniform(S->rng)) / S->log_q);
    return 1 + (uint64_t)(n > 1e15 ? 1e15 : n);
}

static void count_area(Router *S, double t)
{
    S->area += S->active * (t - S->area_t);
    S->area_t = t;
}

COLD void flow_arrives(Router *S, double t)
{
    int k = (int)(uniform(S->rng) * S->K);           /* every class at the same rate */
    if (k >= S->K) k = S->K - 1;
    uint64_t size = geometric_size(S);
    uint32_t f = take_slot(S);
    start_flow(S, f, k, size, t);
    Flow *fl = &S->flow[f];
#ifdef MRFQ_TRACE
    fl->number = S->arrived;
#endif
    uint64_t first = size < (uint64_t)S->W ? size : (uint64_t)S->W;
    fl->left = size - first;
    fl->inside = (uint32_t)first;
    count_area(S, t);
    if (++S->active > S->max_active) S->max_active = S->active;
    S->arrived++;
    for (uint64_t i = 0; i < first; i++) admit(S, f, t, S->sched, S->qmode);
    if (S->next[0] == NEVER) serve_next(S, 0, t, S->sched, S->qmode, S->events);
    S->next[S->R] = t + exponential(S, S->rate);
    if (S->events == EV_HEAP) calendar_push(&S->calendar, S->next[S->R], (uint32_t)S->R);
}

COLD void flow_ends(Router *S, uint32_t f, double t)
{
    Flow *fl = &S->flow[f];
    int k = (int)fl->cls;
    double sum = 0, largest = 0;
    for (int j = 0; j < S->R; j++) {
        sum += fl->cost[j];
        if (fl->cost[j] > largest) largest = fl->cost[j];
    }
    double alone = sum + (double)(fl->size - 1) * largest;   /* its completion time alone */
    double fct = t - fl->t_start;
    S->done[k]++;
    S->done_packets[k] += fl->size;
    S->fct_sum[k] += fct;
    S->slowdown_sum[k] += fct / alone;
    count_area(S, t);
    S->active--;
    fl->next_free = S->free_slot;
    S->free_slot = f;
}

#ifdef MRFQ_RECORD_DELAYS
/* the bucket of a delay x >= 0 (docs/packet-sources-and-delay.md, "Per-packet delay"): no logarithm,
 * a maximum, a bit cast and a shift */
HOT int64_t bucket(double x, double floor_value, int64_t base)
{
    int64_t i = (int64_t)(bits_of(x < floor_value ? floor_value : x) >> HIST_SHIFT) - base;
    return i < BUCKETS ? i : BUCKETS - 1;
}

/* the packet of flow f leaving at t: its wait at each resource and its sojourn into its row's
 * histograms, its sojourn into the row's maximum and batch sum */
HOT void record_departure(Router *restrict S, uint32_t f, double t, uint64_t done, const int R)
{
    const Flow *fl = &S->flow[f];
    const double *pt = &S->times[(((size_t)f << S->ring_bits) + (fl->departed & (uint64_t)S->ring_mask)) * (R + 1)];
    const double floor_value = S->floor_value;
    const int64_t base = S->base;
    const uint32_t row = fl->row;
    uint64_t *h = &S->hist[(size_t)row * BUCKETS * (R + 1)];
    double joined = pt[0];
    for (int j = 0; j < R; j++) {
        h[bucket(pt[1 + j] - joined, floor_value, base) * (R + 1) + j]++;
        joined = pt[1 + j] + fl->cost[j];                 /* the end of its service at j */
    }
    double sojourn = t - pt[0];
    h[bucket(sojourn, floor_value, base) * (R + 1) + R]++;
    if (sojourn > S->dmax[row]) S->dmax[row] = sojourn;
    size_t b = (size_t)row * BATCHES + (size_t)(done >> S->batch_shift);
    S->bsum[b] += sojourn;
    S->bcnt[b]++;
}
#endif

/* the event loop, until `target` services are done; R, sched, qmode and events are constants in
 * each compiled copy */
HOT void run_loop(Router *restrict S, uint64_t target, const int R, const int sched, const int qmode,
                  const int events)
{
    double t = S->now;
    uint64_t done = S->services;
    while (done < target) {
        int j;
        if (events == EV_SCAN) {
            j = 0;
            t = S->next[0];
            for (int i = 1; i <= R; i++)
                if (S->next[i] < t) { t = S->next[i]; j = i; }
            if (t == NEVER) break;                       /* nothing left to happen */
        } else {
            if (S->calendar.n == 0) break;
            Event e = calendar_pop(&S->calendar);
            t = e.t;
            j = (int)e.id;
        }
        if (UNLIKELY(j == R)) { flow_arrives(S, t); continue; }
        done++;
        uint32_t f = S->serving[j];
#ifdef MRFQ_TRACE
        S->trace = (S->trace ^ ((uint64_t)f * 4 + (uint64_t)j)) * FNV_PRIME;
        if (S->dump)
            fprintf(S->dump, "%a %a %d %llu\n", S->serving_start[j], t, j, (unsigned long long)S->flow[f].number);
#endif
        if (j < R - 1) {                                 /* on to the next resource */
            enqueue(S, j + 1, f, S->serving_tag[j], sched, qmode);
            if (S->next[j + 1] == NEVER) serve_next(S, j + 1, t, sched, qmode, events);
        } else {                                         /* it leaves the router */
            Flow *fl = &S->flow[f];
#ifdef MRFQ_RECORD_DELAYS
            record_departure(S, f, t, done, R);
#endif
            fl->departed++;
            if (fl->left) {
                fl->left--;
                admit(S, f, t, sched, qmode);
                if (R > 1 && S->next[0] == NEVER) serve_next(S, 0, t, sched, qmode, events);
            } else if (--fl->inside == 0) {
                flow_ends(S, f, t);
            }
        }
        serve_next(S, j, t, sched, qmode, events);
    }
    S->now = t;
    S->services = done;
}

typedef void (*LoopFn)(Router *, uint64_t);

#define LOOP(NAME, RV, SC, QM, EV) \
    static void NAME(Router *S, uint64_t target) { run_loop(S, target, RV, SC, QM, EV); }
#define LOOPS_FOR(P, RV) \
    LOOP(P##_drfq_flow_scan, RV, DRFQ, Q_FLOW, EV_SCAN)  LOOP(P##_drfq_flow_heap, RV, DRFQ, Q_FLOW, EV_HEAP) \
    LOOP(P##_drfq_pkt_scan, RV, DRFQ, Q_PKT, EV_SCAN)    LOOP(P##_drfq_pkt_heap, RV, DRFQ, Q_PKT, EV_HEAP) \
    LOOP(P##_drfq_naive_scan, RV, DRFQ, Q_NAIVE, EV_SCAN) LOOP(P##_drfq_naive_heap, RV, DRFQ, Q_NAIVE, EV_HEAP) \
    LOOP(P##_sfq_flow_scan, RV, SFQ, Q_FLOW, EV_SCAN)    LOOP(P##_sfq_flow_heap, RV, SFQ, Q_FLOW, EV_HEAP) \
    LOOP(P##_sfq_pkt_scan, RV, SFQ, Q_PKT, EV_SCAN)      LOOP(P##_sfq_pkt_heap, RV, SFQ, Q_PKT, EV_HEAP) \
    LOOP(P##_sfq_naive_scan, RV, SFQ, Q_NAIVE, EV_SCAN)  LOOP(P##_sfq_naive_heap, RV, SFQ, Q_NAIVE, EV_HEAP)
LOOPS_FOR(two, 2)        /* R = 2, the default, with the loops over resources unrolled */
LOOPS_FOR(any, S->R)
#define LOOP_TABLE(P) { \
    { { P##_drfq_flow_scan, P##_drfq_flow_heap }, { P##_drfq_pkt_scan, P##_drfq_pkt_heap }, \
      { P##_drfq_naive_scan, P##_drfq_naive_heap } }, \
    { { P##_sfq_flow_scan, P##_sfq_flow_heap }, { P##_sfq_pkt_scan, P##_sfq_pkt_heap }, \
      { P##_sfq_naive_scan, P##_sfq_naive_heap } } }
static const LoopFn LOOPS[2][2][3][2] = { LOOP_TABLE(two), LOOP_TABLE(any) };  /* [R != 2][sched][qmode][events] */

/* ---------------------------------------------------------------- set-up and report */

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(void)
{
    fputs("usage: yardstick [-s drfq|sfq] [-q flow|pkt|naive] [-e scan|heap] [-m static|dynamic]\n"
          "                 [-C 1,0.2/0.2,1/1,1] [-w 1,1,1] [-F 3] [-W 30] [-L 20000] [-r 0.8]\n"
          "                 [-n 1e8] [-S 1]"
#ifdef MRFQ_TRACE
          " [-T FILE]"
#endif
          "\n"
          "  -s  scheduler: memoryless DRFQ, or SFQ at each resource (mrfq's bmf-wfq)\n"
          "  -q  queues: per-flow rings and a heap of flow heads, a heap of packets, or a scan\n"
          "  -e  next event: scan the R + 1 event times, or a heap calendar\n"
          "  -m  static: -F endless flows of class i mod K; dynamic: Poisson flow arrivals\n"
          "  -C  class cost vectors (their length is R, at most 4); -w  class weights\n"
          "  -W  window, packets per flow inside the router, in [1, 255]\n"
          "  -L  dynamic: mean flow size (packets, geometric); -r  load of the busiest resource\n"
          "  -n  services to run; -S  seed of the random numbers (dynamic mode)\n", stderr);
    exit(2);
}

static int parse_classes(const char *s, Router *S)   /* "a,b/c,d/...": ',' within, '/', ':' or ';' between */
{
    int K = 0, R = -1;
    while (*s) {
        int r = 0;
        if (K == MAX_CLASSES) return -1;
        for (;;) {
            char *end;
            double v = strtod(s, &end);
            if (end == s || r == MAX_RES || !(v > 0) || !isfinite(v)) return -1;
            S->class_cost[K][r++] = v;
            s = end;
            if (*s != ',') break;
            s++;
        }
        if (R >= 0 && r != R) return -1;
        R = r;
        K++;
        if (*s == '/' || *s == ':' || *s == ';') s++;
        else if (*s) return -1;
    }
    if (K == 0) return -1;
    S->K = K;
    S->R = R;
    return 0;
}

static int parse_weights(const char *s, Router *S)
{
    for (int k = 0; k < S->K; k++) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || !(v > 0) || !isfinite(v)) return -1;
        S->class_weight[k] = v;
        s = *end == ',' && k + 1 < S->K ? end + 1 : end;
    }
    return *s ? -1 : 0;
}

static long whole(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) usage();
    return v;
}

#ifdef MRFQ_RECORD_DELAYS
/* rows and bucket layout as mrfq's (router/delays.py): a row per static flow up to 256 of them, else per
 * class (the bench's [[flow]] tables), a row per class in the dynamic mode; 64 buckets per octave from
 * 2^-8 times the smallest cost rounded down to a power of two */
static void setup_recording(Router *S, int F, uint64_t target)
{
    double smallest = INFINITY;
    int classes = S->dynamic || F > S->K ? S->K : F;
    for (int k = 0; k < classes; k++)
        for (int j = 0; j < S->R; j++)
            if (S->class_cost[k][j] < smallest) smallest = S->class_cost[k][j];
    int e;
    frexp(smallest, &e);                                 /* smallest in [2^(e-1), 2^e) */
    int e_lo = e - 1 - LOW_OCTAVES;
    S->base = ((int64_t)(e_lo + 1023) << 6) - 1;
    S->floor_value = double_of(((uint64_t)(S->base + 1) << HIST_SHIFT) - 1);
    S->row_per_flow = !S->dynamic && F <= ROW_FLOWS;
    S->rows = S->row_per_flow ? F : S->dynamic ? S->K : classes;
    S->hist = must(calloc((size_t)S->rows * BUCKETS * (S->R + 1), sizeof(uint64_t)));
    S->dmax = must(calloc((size_t)S->rows, sizeof(double)));
    S->bsum = must(calloc((size_t)S->rows * BATCHES, sizeof(double)));
    S->bcnt = must(calloc((size_t)S->rows * BATCHES, sizeof(uint64_t)));
    while ((target - 1) >> S->batch_shift >= BATCHES) S->batch_shift++;
}

static void report_recording(const Router *S)
{
    uint64_t n = 0, h = FNV_BASIS;
    double sum = 0, largest = 0;
    for (int r = 0; r < S->rows; r++) {
        for (int b = 0; b < BATCHES; b++) { n += S->bcnt[r * BATCHES + b]; sum += S->bsum[r * BATCHES + b]; }
        if (S->dmax[r] > largest) largest = S->dmax[r];
        for (int j = 0; j <= S->R; j++)
            for (int i = 0; i < BUCKETS; i++) {
                uint64_t c = S->hist[((size_t)r * BUCKETS + i) * (S->R + 1) + j];
                if (c) h = fnv_word(fnv_word(fnv_word(fnv_word(h, (uint64_t)r), (uint64_t)j),
                                             (uint64_t)(S->base + i)), c);
            }
    }
    printf(" rec_sojourns=%llu rec_mean=%.17g rec_max=%.17g rec_hist=%016llx", (unsigned long long)n,
           n ? sum / (double)n : 0.0, largest, (unsigned long long)h);
}
#endif

int main(int argc, char **argv)
{
    static Router router;
    Router *S = &router;
    const char *classes = "1,0.2/0.2,1/1,1", *weights = NULL;
    int F = 3;
    double L = 20000, rho = 0.8, services = 1e8;
    uint64_t seed = 1;
    S->sched = DRFQ;
    S->qmode = Q_FLOW;
    S->events = EV_SCAN;
    S->W = 30;
#ifdef MRFQ_TRACE
    const char *dump = NULL;
#define OPTIONS "s:q:e:m:C:w:F:W:L:r:n:S:T:h"
#else
#define OPTIONS "s:q:e:m:C:w:F:W:L:r:n:S:h"
#endif
    int o;
    while ((o = getopt(argc, argv, OPTIONS)) != -1) {
        switch (o) {
        case 's': S->sched = !strcmp(optarg, "drfq") ? DRFQ : !strcmp(optarg, "sfq") ? SFQ : -1; break;
        case 'q': S->qmode = !strcmp(optarg, "flow") ? Q_FLOW : !strcmp(optarg, "pkt") ? Q_PKT
                           : !strcmp(optarg, "naive") ? Q_NAIVE : -1; break;
        case 'e': S->events = !strcmp(optarg, "scan") ? EV_SCAN : !strcmp(optarg, "heap") ? EV_HEAP : -1; break;
        case 'm': S->dynamic = !strcmp(optarg, "static") ? 0 : !strcmp(optarg, "dynamic") ? 1 : -1; break;
        case 'C': classes = optarg; break;
        case 'w': weights = optarg; break;
        case 'F': F = (int)whole(optarg, 1, MAX_SLOTS); break;
        case 'W': S->W = (int)whole(optarg, 1, MAX_WINDOW); break;
        case 'L': L = strtod(optarg, NULL); break;
        case 'r': rho = strtod(optarg, NULL); break;
        case 'n': services = strtod(optarg, NULL); break;
        case 'S': seed = strtoull(optarg, NULL, 0); break;
#ifdef MRFQ_TRACE
        case 'T': dump = optarg; break;
#endif
        default: usage();
        }
    }
    if (optind < argc || S->sched < 0 || S->qmode < 0 || S->events < 0 || S->dynamic < 0) usage();
    if (parse_classes(classes, S)) { fputs("yardstick: bad -C\n", stderr); usage(); }
    for (int k = 0; k < S->K; k++) S->class_weight[k] = 1.0;
    if (weights && parse_weights(weights, S)) { fputs("yardstick: bad -w\n", stderr); usage(); }
    if (!(services >= 1 && services < (double)MAX_TARGET) || !(L >= 1 && isfinite(L)) || !(rho > 0 && isfinite(rho)))
        usage();
    const int R = S->R;
    uint64_t target = (uint64_t)services;
    while ((1 << S->ring_bits) < S->W) S->ring_bits++;
    S->ring_mask = (1 << S->ring_bits) - 1;
    S->free_slot = NO_SLOT;
    for (int j = 0; j <= R; j++) S->next[j] = NEVER;
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++) S->rng[i] = splitmix64(&sm);
#ifdef MRFQ_TRACE
    if (dump && !(S->dump = fopen(dump, "w"))) { perror(dump); return 1; }
#endif
#ifdef MRFQ_RECORD_DELAYS
    setup_recording(S, F, target);
#endif

    double setup_start = clock_s(CLOCK_MONOTONIC);
    if (!S->dynamic) {                                   /* every flow's window enters at t = 0 */
        grow_flow_table(S, (uint32_t)F);
        for (int i = 0; i < F; i++) {
            uint32_t f = take_slot(S);
            start_flow(S, f, i % S->K, 0, 0.0);
            S->flow[f].left = UINT64_MAX;
            S->flow[f].inside = (uint32_t)S->W;
#ifdef MRFQ_TRACE
            S->flow[f].number = (uint64_t)i;
#endif
            for (int p = 0; p < S->W; p++) admit(S, f, 0.0, S->sched, S->qmode);
        }
        S->active = S->max_active = (uint32_t)F;
        serve_next(S, 0, 0.0, S->sched, S->qmode, S->events);
    } else {
        double busiest = 0;
        for (int j = 0; j < R; j++) {
            double load = 0;
            for (int k = 0; k < S->K; k++) load += S->class_cost[k][j];
            if (load > busiest) busiest = load;
        }
        S->mean_size = L;
        S->log_q = log1p(-1.0 / L);
        S->rate = rho * S->K / (L * busiest);           /* lambda_k = rate / K for every class */
        S->next[R] = exponential(S, S->rate);
        if (S->events == EV_HEAP) calendar_push(&S->calendar, S->next[R], (uint32_t)R);
    }

    double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), wall0 = clock_s(CLOCK_MONOTONIC);
    LOOPS[R != 2][S->sched][S->qmode][S->events](S, target);
    double wall = clock_s(CLOCK_MONOTONIC) - wall0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
#ifdef MRFQ_TRACE
    if (S->dump) fclose(S->dump);
#endif

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    size_t model = sizeof *S + (size_t)S->slots * sizeof(Flow), queued = 0;
    if (S->qmode == Q_FLOW) model += ((size_t)S->slots << S->ring_bits) * sizeof(Item);
#ifdef MRFQ_RECORD_DELAYS
    model += ((size_t)S->slots << S->ring_bits) * (R + 1) * sizeof(double);
#endif
    for (int j = 0; j < R; j++) { model += (size_t)S->queue[j].cap * sizeof(Item); queued += S->queue[j].n; }
    uint64_t sig = fnv_word(fnv_word(FNV_BASIS, bits_of(S->now)), S->enqueued);
    for (uint32_t f = 0; f < S->used; f++) sig = fnv_word(sig, S->flow[f].departed);
    for (int k = 0; k < S->K; k++) sig = fnv_word(sig, bits_of(S->fct_sum[k]));

    printf("yardstick sched=%s queue=%s events=%s mode=%s R=%d K=%d W=%d", SCHED_NAMES[S->sched],
           QUEUE_NAMES[S->qmode], EVENT_NAMES[S->events], S->dynamic ? "dynamic" : "static", R, S->K, S->W);
    if (S->dynamic) printf(" L=%g rho=%g", L, rho);
    else printf(" flows=%d", F);
    printf(" services=%llu sim_time=%.6g wall_s=%.4f cpu_s=%.4f Msvc_per_s=%.2f Msvc_per_cpu_s=%.2f "
           "ns_per_svc=%.2f setup_s=%.4f maxrss_kB=%ld model_kB=%.1f queued_now=%zu sig=%016llx",
           (unsigned long long)S->services, S->now, wall, cpu, S->services / wall / 1e6, S->services / cpu / 1e6,
           cpu / S->services * 1e9, wall0 - setup_start, ru.ru_maxrss, model / 1024.0, queued,
           (unsigned long long)sig);
#ifdef MRFQ_TRACE
    printf(" trace=%016llx", (unsigned long long)S->trace);
#endif
#ifdef MRFQ_RECORD_DELAYS
    report_recording(S);
#endif
    printf("\n");

    if (S->dynamic) {
        uint64_t flows_done = 0;
        double packets[MAX_CLASSES] = { 0 };
        char *free_slot = must(calloc(S->used ? S->used : 1, 1));
        for (uint32_t f = S->free_slot; f != NO_SLOT; f = S->flow[f].next_free) free_slot[f] = 1;
        for (int k = 0; k < S->K; k++) { flows_done += S->done[k]; packets[k] = (double)S->done_packets[k]; }
        for (uint32_t f = 0; f < S->used; f++)           /* the flows still in the system count too */
            if (!free_slot[f]) packets[S->flow[f].cls] += (double)S->flow[f].departed;
        free(free_slot);
        count_area(S, S->now);
        printf("dynamic: lambda_total=%.6g flows_arrived=%llu flows_done=%llu active_now=%u mean_active=%.3f "
               "max_active=%u\n", S->rate, (unsigned long long)S->arrived, (unsigned long long)flows_done,
               S->active, S->area / S->now, S->max_active);
        for (int j = 0; j < R; j++) {
            double used = 0, offered = 0;
            for (int k = 0; k < S->K; k++) {
                used += packets[k] * S->class_cost[k][j];
                offered += S->rate / S->K * L * S->class_cost[k][j];
            }
            printf("  resource %d: offered_load=%.4f measured_util=%.4f\n", j, offered, used / S->now);
        }
        for (int k = 0; k < S->K; k++) {
            printf("  class %d (", k);
            for (int j = 0; j < R; j++) printf("%s%g", j ? "," : "", S->class_cost[k][j]);
            printf(") done=%llu mean_fct=%.6g mean_slowdown=%.4f\n", (unsigned long long)S->done[k],
                   S->done[k] ? S->fct_sum[k] / S->done[k] : 0.0, S->done[k] ? S->slowdown_sum[k] / S->done[k] : 0.0);
        }
    }
    return 0;
}
