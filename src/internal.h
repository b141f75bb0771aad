/* Internal declarations shared by the components of mgc, grouped by the file
 * that defines them.  Nothing here is part of the public API; every symbol
 * with external linkage is built with hidden visibility.
 *
 * Phases named in comments: "mutator" (a domain running embedder code or the
 * allocation slow path), "STW" (inside a stop-the-world section, all
 * participants stopped), "slice" (a major slice run by a domain while others
 * may be running mutator code).
 */
#ifndef MGC_INTERNAL_H
#define MGC_INTERNAL_H

#include "../include/mgc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef MGC_DEBUG
#define MGC_DEBUG 0
#endif

#define WORD sizeof(mgc_value)
typedef uintptr_t word;

/* ------------------------------------------------------------------------ */
/* Atomics shorthands.  Every use says why its order suffices.              */
/* ------------------------------------------------------------------------ */

#define LOAD_RELAXED(p) atomic_load_explicit((p), memory_order_relaxed)
#define LOAD_ACQUIRE(p) atomic_load_explicit((p), memory_order_acquire)
#define STORE_RELAXED(p, v)                                                    \
  atomic_store_explicit((p), (v), memory_order_relaxed)
#define STORE_RELEASE(p, v)                                                    \
  atomic_store_explicit((p), (v), memory_order_release)

/* Heap words accessed by several domains (headers of major blocks, fields
   read by markers and promoters) are accessed through this view. */
typedef _Atomic word aword;
#define AWORD(p) ((aword *)(p))
#define HDR_PTR(v) (AWORD((word *)(v)-1))

/* Relaxed counter increment by the only writer: other domains only read it
   (statistics), so a load and a store suffice and no RMW is needed. */
#define COUNTER_ADD(p, n) STORE_RELAXED((p), LOAD_RELAXED(p) + (n))

/* ------------------------------------------------------------------------ */
/* Header colours (bits 8-9)                                                */
/* ------------------------------------------------------------------------ */

#define COLOUR_MASK ((word)3 << 8)
#define COLOUR_HD(h) ((word)(h)&COLOUR_MASK)
#define WITH_COLOUR(h, c) (((word)(h) & ~COLOUR_MASK) | (c))
/* Atoms, MGC_EPHE_NONE, the embedder's out-of-heap blocks (invariant 39),
   and for a moment a continuation being scanned (DESIGN §6.4). */
#define NOT_MARKABLE ((word)MGC_COLOUR_NOT_MARKABLE)
/* The promotion-in-progress marker: wosize 0, colour 1, tag 0.  No young
   block has wosize 0, so it is unambiguous (DESIGN §1.2). */
#define IN_PROGRESS_HD ((word)0x100)

#define WHSIZE(wosize) ((wosize) + 1)
#define IS_YOUNG_BLOCK(v) (MGC_IS_BLOCK(v) && mgc_is_young(v))

/* The first field of a closure of sz >= 2 fields that holds a value: its
   start of environment, clamped to its size (before it: code pointers,
   closure info, infix headers).  Relaxed load: a marker may read a closure
   whose info another domain's promoter has just written (Note [publishing
   copies] in minor.c). */
static inline size_t mgc_closure_env_start(mgc_value closure, size_t sz) {
  size_t start =
      MGC_CLOSINFO_STARTENV(LOAD_RELAXED(AWORD(&MGC_FIELD(closure, 1))));
  return start < sz ? start : sz;
}

/* ------------------------------------------------------------------------ */
/* platform.c: fatal errors, asserts, OS memory, clocks, spin and futex     */
/* ------------------------------------------------------------------------ */

_Noreturn void mgc_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
_Noreturn void mgc_out_of_memory(size_t bytes, const char *what);
void mgc_call_oom_handler(size_t bytes);
FILE *mgc_log_stream(void);
void mgc_log_open(const char *path);
void mgc_log_close(void);
void mgc_log(unsigned mask, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mgc_set_last_error(int err);
int mgc_params_validate(const mgc_params *p); /* params.c */

#if MGC_DEBUG >= 1
#define MGC_ASSERT(c)                                                          \
  do {                                                                         \
    if (!(c))                                                                  \
      mgc_fatal("assertion failed at %s:%d: %s", __FILE__, __LINE__, #c);      \
  } while (0)
#else
#define MGC_ASSERT(c) ((void)0)
#endif
/* Checks kept in release builds: they guard against misuse by embedders. */
#define MGC_CHECK(c, ...)                                                      \
  do {                                                                         \
    if (MGC_UNLIKELY(!(c)))                                                    \
      mgc_fatal(__VA_ARGS__);                                                  \
  } while (0)

void *mgc_xmalloc(size_t bytes, const char *what);
void *mgc_xcalloc(size_t n, size_t size, const char *what);
void *mgc_xrealloc(void *p, size_t bytes, const char *what);
/* realloc that, when the block moved, rewrites a word of each page of
   its first `used` bytes (mgc_retouch_moved, see platform.c). */
void *mgc_xgrow(void *p, size_t bytes, size_t used, const char *what);
void mgc_retouch_moved(void *p, uintptr_t was, size_t used);
extern _Atomic uint64_t mgc_xgrow_calls, mgc_xgrow_touched; /* for tests */
void *mgc_os_reserve(size_t bytes, size_t align);
int mgc_os_commit(void *p, size_t bytes);
int mgc_os_populate(void *p, size_t bytes);
void mgc_os_decommit(void *p, size_t bytes);
void mgc_os_release(void *p, size_t bytes);
/* The system calls mgc_os_release has made (tests count them). */
extern _Atomic uint64_t mgc_os_release_calls;
size_t mgc_page_size(void);
uint64_t mgc_now_ns(void);
void mgc_cpu_relax(void);
void mgc_futex_wait(_Atomic uint32_t *addr, uint32_t expected);
void mgc_futex_wake_all(_Atomic uint32_t *addr);

/* Wait until *addr != old, doing work(arg) meanwhile when given: spin
   briefly, then yield, then sleep on the futex; when mgc_crowded(), spin
   briefly and sleep. */
void mgc_wait_change_working(_Atomic uint32_t *addr, uint32_t old,
                             bool (*work)(void *), void *arg);

/* ------------------------------------------------------------------------ */
/* table.c: growable tables (remembered sets) and the write barrier         */
/* ------------------------------------------------------------------------ */

/* A table of fixed-size entries (DESIGN §3.1).  Invariant 13: ptr never
   passes end; crossing threshold requests a minor collection and opens the
   reserve (limit = end); exhausting the reserve doubles the table. */
struct mgc_table {
  char *base;
  char *ptr;
  char *threshold;
  char *limit;
  char *end;
  size_t entry_size; /* bytes */
  size_t size;       /* entries before the threshold */
  size_t reserve;    /* entries after it */
};

struct mgc_dom;
void mgc_table_init(struct mgc_table *t, size_t entry_size);
void *mgc_table_add_slow(struct mgc_dom *d, struct mgc_table *t);
void mgc_table_clear(struct mgc_table *t);
/* Empties a domain's remembered set and its filter (table.c). */
void mgc_remembered_clear(struct mgc_dom *d);
/* The remembered filter (DESIGN §3.2): its entries, a power of 2, and the
   entry for field fp. */
#define REMEMBER_FILTER 512
static inline size_t mgc_remember_filter_index(const void *fp) {
  uintptr_t a = (uintptr_t)fp;
  return ((a >> 3) ^ (a >> 12)) & (REMEMBER_FILTER - 1);
}
void mgc_table_free(struct mgc_table *t);
static inline size_t mgc_table_count(const struct mgc_table *t) {
  return t->base ? (size_t)(t->ptr - t->base) / t->entry_size : 0;
}
static inline void *mgc_table_add(struct mgc_dom *d, struct mgc_table *t) {
  if (MGC_LIKELY(t->ptr < t->limit)) {
    void *e = t->ptr;
    t->ptr += t->entry_size;
    return e;
  }
  return mgc_table_add_slow(d, t);
}

/* A custom-table entry (DESIGN §3.5). */
struct custom_entry {
  mgc_value block;
  size_t mem;
  size_t max;
};

/* An ephemeron-table entry: a field of an old ephemeron that was given a
   young value (DESIGN §3.4). */
struct ephe_ref_entry {
  mgc_value ephe;
  size_t offset;
};

/* ------------------------------------------------------------------------ */
/* pool.c: the shared heap (DESIGN §6.1, §6.6)                              */
/* ------------------------------------------------------------------------ */

#define POOL_WORDS 4096
#define POOL_BYTES (POOL_WORDS * WORD)
#define NUM_SIZE_CLASSES 32
#define MAX_POOL_WHSIZE 128

/* A pool: 32 KiB, POOL_BYTES-aligned, slots of one size class.  Invariants
   29-30: only the owner allocates from or sweeps a pool; a free slot has
   header 0 and links the free list through its first field; a live slot
   never has header 0. */
struct pool {
  struct pool *next;
  word *free; /* first free slot below bump (its header), or NULL */
  word *bump; /* slots from here to the end have never been used */
  struct mgc_dom *owner;
  uint32_t cls;
  uint32_t live; /* live slots after the last sweep/alloc */
  /* mgc_colours.cycle + 1 at the moment the pool was taken fresh while
     blocks are born MARKED, until it is first swept; 0 after, and 0 for a
     pool taken before the mark start.  A pool taken during the marking of
     cycle n holds only blocks born MARKED in cycle n, so the sweep of
     cycle n + 1 would free nothing: it is skipped (invariant 26 holds for
     it as it is). */
  uint64_t born;
  /* mgc_colours.cycle when a block of the pool was last marked, or when
     the pool was last put on avail (where blocks are born MARKED).
     Markers of every domain store it: relaxed atomics, each storing the
     current cycle, whose value the STW barrier that moved it published.
     A pool not stamped during the cycle before the one under way holds
     only GARBAGE (or free) slots: its sweep gives it back whole without
     reading it (DESIGN 6.6). */
  _Atomic uint64_t marked_cycle;
  uint32_t finalisable; /* Custom blocks or continuations were put in it */
  uint32_t whsize;      /* mgc_class_whsize[cls], read by every allocation */
};
#define POOL_HEADER_WORDS (sizeof(struct pool) / WORD)

/* The pool an address inside a pool belongs to (pools are POOL_BYTES
   aligned); for any other address, a meaningless one. */
static inline struct pool *mgc_pool_of(word addr) {
  return (struct pool *)(addr & ~(word)(POOL_BYTES - 1));
}

/* A large block (more than MAX_POOL_WHSIZE words with header): malloc'd
   with this prefix; the header follows it. */
struct large {
  struct large *next;
  size_t whsize;
};

struct mgc_heap {
  struct pool *avail[NUM_SIZE_CLASSES]; /* swept, with free slots */
  struct pool *full[NUM_SIZE_CLASSES];  /* swept, no free slot */
  /* not yet swept this cycle: pools that had room at the cycle start, and
     pools that were full (allocation sweeps only the former) */
  struct pool *unswept_avail[NUM_SIZE_CLASSES];
  struct pool *unswept_full[NUM_SIZE_CLASSES];
  struct large *large; /* swept large blocks */
  struct large *unswept_large;
  int sweep_cls;          /* next class the sweeper looks at */
  size_t large_words;     /* words in owned large blocks */
  struct pool *evacuated; /* compaction: emptied, released after the update */
  size_t sweeps_skipped;  /* sweeps that read nothing: pools born last cycle */
  size_t pools_dead;      /* pools given back whole, unread, by sweeping */
};

extern const uint16_t mgc_class_whsize[NUM_SIZE_CLASSES];
/* The size class of a block of wh words with its header, for wh up to
   MAX_POOL_WHSIZE (filled by mgc_heap_init). */
extern uint8_t mgc_class_of[MAX_POOL_WHSIZE + 1];

static inline word *mgc_pool_end(struct pool *p) {
  return (word *)p + POOL_WORDS;
}
static inline bool mgc_pool_has_room(struct pool *p) {
  return p->free || p->bump + p->whsize <= mgc_pool_end(p);
}

void mgc_heap_init(void);
/* mgc_heap_alloc (below, inline) for the cases it leaves out. */
word *mgc_heap_alloc_slow(struct mgc_dom *d, size_t wosize, unsigned tag,
                          unsigned reserved);
static inline void mgc_pool_push(struct pool **list, struct pool *p) {
  p->next = *list;
  *list = p;
}
/* Sweeps up to budget words; returns the work done. */
intptr_t mgc_heap_sweep(struct mgc_dom *d, intptr_t budget);
bool mgc_heap_sweep_done(struct mgc_dom *d);
void mgc_heap_cycle_start(struct mgc_dom *d);   /* STW: all pools unswept */
void mgc_heap_orphan(struct mgc_dom *d);        /* terminating domain */
void mgc_heap_adopt_orphans(struct mgc_dom *d); /* STW */
void mgc_heap_release_free_pools(bool all);     /* any, pool_lock */
void mgc_heap_free_domain(struct mgc_dom *d);   /* shutdown */
void mgc_heap_teardown(void);
size_t mgc_heap_free_pool_count(void);
void mgc_heap_prefault_pools(struct mgc_dom *d,
                             size_t want); /* mutator, pool_lock */
/* How long a pool stays unused in the cache of free pools before a cycle
   end unmaps it (DESIGN §6.1); tests may set another (0: this one). */
#define MGC_POOL_RELEASE_DELAY_NS (10 * (uint64_t)1000000000)
void mgc_heap_set_release_delay(uint64_t ns);
/* Compaction (compact.c), STW, own domain, every pool swept: moves the live
   blocks of the least occupied pools of each class into the others' free
   slots, leaving in each old block field 0 = the new address and the colour
   MARKED (no other block is MARKED right after the rotation).  Returns the
   words moved. */
size_t mgc_heap_evacuate(struct mgc_dom *d);
/* Gives the evacuated pools back; returns how many. */
size_t mgc_heap_release_evacuated(struct mgc_dom *d);
size_t mgc_heap_live_words(struct mgc_dom *d);
void mgc_heap_reset_held(void);
/* Verifier: the used slots of a pool, and every pool and large block. */
void mgc_pool_bounds(struct pool *p, word **start, word **end, size_t *wh);
void mgc_heap_for_each(struct mgc_dom *d,
                       void (*pool_f)(void *, struct pool *, bool swept),
                       void (*large_f)(void *, word *hp, bool swept),
                       void *data);
void mgc_heap_for_each_orphan(void (*pool_f)(void *, struct pool *, bool),
                              void (*large_f)(void *, word *, bool),
                              void *data);

/* ------------------------------------------------------------------------ */
/* major.c: marking, pacing, cycles (DESIGN §6.3-6.7, §6.10)                */
/* ------------------------------------------------------------------------ */

struct mark_entry {
  mgc_value *start;
  mgc_value *end;
};

/* The mark stack never loses an entry (invariant 36): it grows up to
   max(heap/32, initial) entries, beyond which short ranges are moved into
   a compressed set (chunk address -> bitmap of fields to visit). */
struct mark_stack {
  struct mark_entry *stack;
  size_t count;
  size_t capacity;
  /* Continuations found UNMARKED, to lock and scan (DESIGN §6.4): kept
     apart so that a chain of continuations is marked without recursion. */
  mgc_value *conts;
  size_t conts_count;
  size_t conts_capacity;
  /* compressed set: open addressing, keys are 64-word-aligned addresses */
  word *cset_keys;
  uint64_t *cset_bits;
  size_t cset_capacity;
  size_t cset_count;
  size_t cset_cursor;
};

struct mgc_colours {
  word unmarked;
  word marked;
  word garbage;
  /* The number of the cycle under way (mgc_rt.major_cycles, moved with
     the colours): the stamp of a pool's marked_cycle. */
  uint64_t cycle;
  /* The colour of new major blocks (invariant 19): UNMARKED before the
     mark start (PHASE_SWEEP_FIRST: the snapshot, taken later, traces
     them), MARKED from then on. */
  word alloc;
};
extern struct mgc_colours mgc_colours;

/* A block just marked (hd: its header) stamps its pool with the number of
   the cycle, unless it is a large block (no pool: it is not in a
   POOL_BYTES-aligned pool). */
static inline void mgc_pool_stamp_at(mgc_value v, word hd, uint64_t now) {
  /* WHSIZE(wosize) > MAX_POOL_WHSIZE, with one operation less. */
  if (MGC_WOSIZE_HD(hd) >= MAX_POOL_WHSIZE)
    return;
  struct pool *p = mgc_pool_of((word)v);
  if (atomic_load_explicit(&p->marked_cycle, memory_order_relaxed) != now)
    atomic_store_explicit(&p->marked_cycle, now, memory_order_relaxed);
}

static inline void mgc_pool_stamp(mgc_value v, word hd) {
  mgc_pool_stamp_at(v, hd, mgc_colours.cycle);
}

/* The phases of a major cycle (DESIGN §6.7), changed only inside a STW
   section by the last domain to arrive at its barrier (invariant 31). */
enum mgc_phase {
  PHASE_MARK_MAIN,  /* sweep, mark, ephemeron rounds, adopt orphans */
  PHASE_MARK_FINAL, /* first-kind finalisers found, marking finishes */
  PHASE_SWEEP_EPHE, /* ephemerons cleaned, last-kind finalisers found */
  PHASE_SWEEP_FIRST /* the cycle's start: sweep only, nothing marked yet */
};

/* Whether marking is under way: in every phase but PHASE_SWEEP_FIRST,
   before whose end no snapshot is taken, so that nothing needs darkening
   (invariant 12).  Written with the phase, inside STW sections only; read
   by every write barrier, hence on a cache line of its own (the phase's
   line also holds counts that slices write).  Relaxed: it changes only
   while no mutator runs, and the sections' barriers order that store
   before any mutator's later load. */
struct mgc_marking_flag {
  _Alignas(64) _Atomic bool on;
};
extern struct mgc_marking_flag mgc_marking;
static inline bool mgc_marking_on(void) {
  return LOAD_RELAXED(&mgc_marking.on);
}

/* Per-cycle countdowns (invariant 32), reset at each cycle start to the
   number of participants, each decremented at most once per domain per
   cycle, except to_mark which a darkening may raise again. */
struct mgc_cycle_counts {
  _Atomic intptr_t to_sweep;
  _Atomic intptr_t to_mark;
  _Atomic intptr_t to_ephe_sweep;
  _Atomic intptr_t to_final_first;
  _Atomic intptr_t to_final_last;
  _Atomic intptr_t orphaning_finalisers;
  _Atomic int global_roots_started;
};

static inline void mgc_count_down(_Atomic intptr_t *c) {
  /* Relaxed: the counts are read only to decide whether a phase may end,
     and that decision is taken again inside a STW section, after barriers
     that order every domain's writes. */
  intptr_t was = atomic_fetch_sub_explicit(c, 1, memory_order_relaxed);
  if (was <= 0)
    mgc_fatal("a cycle countdown went below zero");
}

void mgc_darken(struct mgc_dom *d, mgc_value v);
#define GREY_CAPACITY 1024
void mgc_grey_drain(struct mgc_dom *d);

/* How a slice is run: paid by allocation and interruptible; with a given
   budget (explicit calls); or inside a STW section whose participants
   change phases at barriers instead of starting sections of their own. */
enum slice_mode { SLICE_AUTO, SLICE_BUDGET, SLICE_IN_STW };
void mgc_major_slice_run(struct mgc_dom *d, intptr_t work, enum slice_mode m);
/* Every participant of a section: whether marking starts in it (in
   PHASE_SWEEP_FIRST, every pool swept; a barrier only then); then, with
   every minor heap empty, the mark start itself (from then on blocks are
   born MARKED). */
bool mgc_major_mark_start_due(int n, bool forced);
/* Marking is paid at this many times the pacing model's rate, over a
   correspondingly shorter stretch of the cycle (the mark trigger, DESIGN
   §6.10). */
#ifndef MGC_MARK_SPEEDUP
#define MGC_MARK_SPEEDUP 4
#endif
/* Major slices asked for per minor cycle: 2 while sweeping first, 2 x the
   marking speed-up while marking (DESIGN §6.10). */
unsigned mgc_major_slices_per_minor(void);
/* The slice points of a domain's empty minor heap (invariant 7), and how
   many are left in this minor cycle, the slice now running counted. */
void mgc_minor_place_trigger(struct mgc_dom *d);
unsigned mgc_minor_slices_left(const struct mgc_dom *d);
void mgc_major_mark_start(struct mgc_dom *d, int n);
void mgc_major_finish_cycle(struct mgc_dom *d, int cycles, bool forced);
void mgc_mark_stack_free(struct mark_stack *ms);
void mgc_mark_share_teardown(void);
void mgc_mark_stack_trim(struct mark_stack *ms);
bool mgc_major_opportunistic_work(void *dom);
void mgc_adjust_gc_speed(struct mgc_dom *d, size_t mem, size_t max);
void mgc_note_major_alloc(struct mgc_dom *d, size_t words);
void mgc_note_direct_major_alloc(struct mgc_dom *d, size_t words);
/* Global state of the cycle, read by the ephemeron and finaliser code. */
enum mgc_phase mgc_gc_phase(void);
bool mgc_is_unmarked(mgc_value v); /* a major block, infix resolved */
void mgc_major_domain_join(struct mgc_dom *d);      /* under the lock */
void mgc_major_domain_terminate(struct mgc_dom *d); /* loop body */
bool mgc_major_domain_done(struct mgc_dom *d);
void mgc_request_global_slices(struct mgc_dom *self);
void mgc_major_init(void);
/* White-box test knob: cap the mark stack at this many entries (0 = the
   normal rule). */
extern size_t mgc_mark_stack_cap_for_tests;
extern _Atomic size_t mgc_mark_stack_prunes; /* how often (tests) */

/* ------------------------------------------------------------------------ */
/* weak.c: ephemerons and weak arrays (DESIGN §3.4, §6.8)                   */
/* ------------------------------------------------------------------------ */

/* A domain's ephemerons, linked through field 0 (0 ends a list).  todo:
   still to be examined in this cycle's ephemeron rounds (data not yet
   known to be alive); live: found alive, or created this cycle.  Touched
   only by the domain (or its backup thread). */
struct mgc_ephe_info {
  mgc_value todo;
  mgc_value live;
  uint64_t round;        /* the last round this domain completed a pass of */
  uint64_t cursor_round; /* the round of the pass cursor belongs to */
  mgc_value *cursor;     /* the link where that pass resumes */
  bool must_sweep;       /* PHASE_SWEEP_EPHE: live still to join todo */
};

typedef void (*mgc_root_action)(void *ctx, mgc_value v, mgc_value *slot);

void mgc_ephe_init(void);
void mgc_ephe_teardown(void);
/* Marking: one step of this domain's ephemeron rounds; returns the work
   done and sets *reopened when it darkened data (marking must go on). */
intptr_t mgc_ephe_mark_step(struct mgc_dom *d, intptr_t budget, bool *reopened);
void mgc_ephe_marking_drained(void); /* a domain's marking just ended */
bool mgc_ephe_marking_stable(void);
bool mgc_ephe_pass_due(struct mgc_dom *d);
uint64_t mgc_ephe_round(void);
intptr_t mgc_ephe_sweep_step(struct mgc_dom *d, intptr_t budget);
bool mgc_ephe_sweep_pending(struct mgc_dom *d);
int mgc_ephe_start_sweep_phase(struct mgc_dom **parts, int n); /* single */
void mgc_ephe_cycle_reset(int n);                              /* single */
void mgc_ephe_cycle_start(struct mgc_dom *d);
void mgc_ephe_orphan(struct mgc_dom *d);
void mgc_ephe_adopt(struct mgc_dom *d);
bool mgc_ephe_no_orphans(void);
/* Minor collection: promote the young values of d's ephemeron table. */
void mgc_ephe_scan_young(struct mgc_dom *d, mgc_root_action f, void *ctx);
/* Verifier: every ephemeron of d's lists (and of the orphan list). */
void mgc_ephe_for_each(struct mgc_dom *d, void (*f)(void *, mgc_value),
                       void *ctx);
void mgc_ephe_for_each_orphan(void (*f)(void *, mgc_value), void *ctx);
bool mgc_is_ephemeron_block(mgc_value v);

/* ------------------------------------------------------------------------ */
/* final.c: finalisers (DESIGN §6.9)                                        */
/* ------------------------------------------------------------------------ */

struct mgc_final_info;
struct mgc_final_info *mgc_final_info_new(void);
void mgc_final_info_free(struct mgc_final_info *f);
void mgc_final_init(void);
void mgc_final_teardown(void);
/* Minor collection: first-kind young values are roots (invariant 22). */
void mgc_final_scan_young(struct mgc_dom *d, mgc_root_action f, void *ctx);
/* After the end barrier: dead young last-kind values (invariant 23). */
void mgc_final_after_minor(struct mgc_dom *d);
/* Major: the values waiting for their finaliser are roots. */
void mgc_final_scan_roots(struct mgc_dom *d, mgc_root_action f, void *ctx);
void mgc_final_scan_orphan_roots(mgc_root_action f, void *ctx);
bool mgc_final_update_first(struct mgc_dom *d); /* true: done just now */
bool mgc_final_update_last(struct mgc_dom *d);
void mgc_final_cycle_start(struct mgc_dom *d);
bool mgc_final_has_any(struct mgc_dom *d);
void mgc_final_orphan(struct mgc_dom *d);
void mgc_final_adopt(struct mgc_dom *d);
bool mgc_final_no_orphans(void);
bool mgc_final_pending(struct mgc_dom *d);
bool mgc_final_wants_safepoint(struct mgc_dom *d);
void mgc_final_run_at_safepoint(struct mgc_dom *d);
void mgc_final_join(struct mgc_dom *d); /* a new domain: nothing to examine */
bool mgc_final_settled(struct mgc_dom *d); /* both updates counted */
bool mgc_final_settled_first(struct mgc_dom *d);
/* Verifier: every value of d's tables; queued says whether it waits for
   its finaliser (a root) or is only watched. */
void mgc_final_for_each(struct mgc_dom *d,
                        void (*f)(void *, mgc_value, bool queued, bool old),
                        void *ctx);

/* ------------------------------------------------------------------------ */
/* fiber.c: fibers, embedder stacks and continuations (DESIGN §5.6)          */
/* ------------------------------------------------------------------------ */

enum { STACK_HELD = 1, STACK_IN_CONT = 2, STACK_FREED = 3 };
#define STACK_MAGIC 0x57AC4B1D
/* Field 0 of a continuation whose stack was taken: Val_ptr(NULL). */
#define CONT_EMPTY ((word)1)

/* The stack of a continuation's field 0, or NULL once taken. */
static inline mgc_stack *mgc_cont_field_stack(word f0) {
  return f0 == CONT_EMPTY ? NULL : (mgc_stack *)(f0 - 1);
}
void mgc_stack_scan(mgc_stack *s, mgc_root_action f, void *ctx);
/* Every stack d holds is a root of d. */
void mgc_stacks_scan_held(struct mgc_dom *d, mgc_root_action f, void *ctx);
/* Frees the stacks d holds (a terminating domain, shutdown). */
void mgc_stacks_release_held(struct mgc_dom *d);
/* A dead continuation k (a young one after the minor end barrier, a major
   one when swept): frees its stack unless it was taken. */
void mgc_cont_dead(mgc_value k);
/* STW, after the end barrier: d's young continuations that died. */
void mgc_conts_after_minor(struct mgc_dom *d);
void mgc_stacks_init_domain(struct mgc_dom *d);
/* Shutdown: every stack still held or inside a continuation is freed. */
void mgc_stacks_teardown(void);
bool mgc_stack_is_fiber(const mgc_stack *s);
/* major.c: the marking protocol for a continuation (DESIGN §6.4). */
void mgc_darken_cont(struct mgc_dom *d, mgc_value k);

/* compact.c and the compaction parts of weak.c, final.c */
void mgc_compact_decide(int n, struct mgc_dom **parts); /* single section */
bool mgc_compact_now(void);
void mgc_compact_from_stw(struct mgc_dom *d, int idx, int n);
void mgc_ephe_compact_update(struct mgc_dom *d, mgc_root_action f, void *ctx);
void mgc_ephe_compact_update_orphans(mgc_root_action f, void *ctx);
void mgc_final_compact_update(struct mgc_dom *d, mgc_root_action f, void *ctx);
void mgc_final_compact_update_orphans(mgc_root_action f, void *ctx);

/* ------------------------------------------------------------------------ */
/* minor.c: minor heaps, allocation slow path, promotion (DESIGN §2, §5)     */
/* ------------------------------------------------------------------------ */

int mgc_minor_arena_init(size_t max_domains, size_t slot_words);
void mgc_minor_arena_free(void);
int mgc_minor_heap_commit(struct mgc_dom *d, size_t words);
void mgc_minor_heap_decommit(struct mgc_dom *d);
int mgc_minor_heap_recommit(struct mgc_dom *d); /* joining, under the lock */
void mgc_reset_young_limit(struct mgc_dom *d);
/* True on a backup thread (domain.c): the limit-reset hook and the
   clearing of embedder interrupts belong to the domain's own thread. */
extern _Thread_local bool mgc_tls_on_backup;
void mgc_request_minor(struct mgc_dom *d);
void mgc_request_major_slice(struct mgc_dom *d);
void mgc_empty_minor_heaps(struct mgc_dom *d);
void mgc_poll_gc_work(struct mgc_dom *d);
void mgc_handle_gc_interrupt(struct mgc_dom *d);
/* The promotion body of one participant, callable from any STW handler that
   already holds every participant (DESIGN §4.6 "from inside another STW"). */
void mgc_minor_from_stw(struct mgc_dom *d, int idx, int n,
                        struct mgc_dom **parts);
void mgc_minor_leader_setup(void);
/* Sizes the part of d's empty minor heap that the next minor cycle uses
   (DESIGN §5.8), at the end of d's collection: pause_ns is its pause,
   promoted and allocated its words since its last one.  Called from
   mgc_minor_from_stw, and by the white-box test with made-up figures. */
void mgc_minor_size_part(struct mgc_dom *d, uint64_t pause_ns, size_t promoted,
                         word allocated);
/* STW, after the world's minor heaps are empty: custom and table cleanup. */
extern _Atomic uint64_t mgc_minor_gcs_started;

/* ------------------------------------------------------------------------ */
/* roots.c: local, global and generational roots, scan hook                  */
/* ------------------------------------------------------------------------ */

/* d's frames, held stacks and the embedder's hook, told the kind of scan;
   mgc_domain_user() gives d's pointer meanwhile, whatever the thread. */
void mgc_scan_local_roots(struct mgc_dom *d, mgc_root_action f, void *ctx,
                          mgc_scan_kind kind);
/* The domain whose roots this thread is scanning, or NULL. */
extern _Thread_local struct mgc_dom *mgc_tls_scanning;
void mgc_scan_global_roots(mgc_root_action f, void *ctx, bool minor);
void mgc_global_roots_young_to_old(void);
void mgc_global_roots_teardown(void);
void mgc_roots_init(void);
/* Verifier: checks every global root's value and invariant 14. */
int mgc_verify_global_roots_with(bool (*check)(void *, mgc_value, const char *),
                                 void (*report)(void *, const char *),
                                 void *ctx);

/* ------------------------------------------------------------------------ */
/* stw.c: stop-the-world sections and barriers (DESIGN §4)                   */
/* ------------------------------------------------------------------------ */

typedef void (*mgc_stw_handler)(struct mgc_dom *d, void *data, int idx, int n,
                                struct mgc_dom **parts);

/* Runs handler on every participant; returns 0 when another section was
   running (ours did not run; the caller retries), 1 when ours ran. */
int mgc_try_run_on_all_domains(struct mgc_dom *d, mgc_stw_handler h, void *data,
                               void (*leader_setup)(void *));
/* Global barrier inside a handler: returns true to exactly one caller (the
   last to arrive), which must then call mgc_stw_barrier_release(); the
   others wait inside mgc_stw_barrier_begin until it does. */
bool mgc_stw_barrier_begin(int n);
void mgc_stw_barrier_release(void);
/* When the last barrier of the current section was released (monotonic
   nanoseconds): read by a participant after that barrier and before its
   next one. */
uint64_t mgc_stw_last_release_ns(void);
/* Plain barrier: everybody waits for everybody. */
void mgc_stw_barrier(int n);
/* The same, where a waiting domain may do opportunistic major work of its
   own (only at barriers where no domain changes global GC state). */
void mgc_stw_barrier_working(int n, struct mgc_dom *d);
void mgc_stw_interrupt(struct mgc_dom *target);
void mgc_domain_interrupt(struct mgc_dom *target);
void mgc_stw_participate(struct mgc_dom *d);
bool mgc_stw_in_progress(void);
void mgc_stw_init(size_t max_domains);
void mgc_stw_teardown(void);

/* ------------------------------------------------------------------------ */
/* domain.c: domain state, spawn/join, blocking sections, backup threads    */
/* ------------------------------------------------------------------------ */

enum backup_state { BACKUP_RUNNING = 0, BACKUP_BLOCKING, BACKUP_TERMINATE };

/* A log-scale latency histogram: PAUSE_SUB buckets per power of two (each
   at most 6.25 % of its lower end wide), exact under PAUSE_SUB ns; 1024
   buckets reach past 2^64 ns (src/stats.c).  Written by one thread, read
   by any. */
#define PAUSE_SUB_LOG2 4
#define PAUSE_SUB (1u << PAUSE_SUB_LOG2)
#define PAUSE_BUCKETS 1024
struct mgc_histogram {
  _Atomic uint64_t counts[PAUSE_BUCKETS];
  _Atomic uint64_t max_ns;
};
void mgc_histogram_add(struct mgc_histogram *h, uint64_t ns, bool shared);

/* Statistics a domain writes (relaxed stores by the owner, see
   COUNTER_ADD) and anyone may read. */
struct mgc_dom_stats {
  _Atomic uint64_t minor_words;
  _Atomic uint64_t promoted_words;
  _Atomic uint64_t major_words;
  _Atomic uint64_t major_slices;
  _Atomic uint64_t remset_overflows;
};

/* Per-domain state.  Fields without a note are touched only by the thread
   that holds the domain lock: the domain's own thread, or its backup thread
   while the domain sits in a blocking section. */
struct mgc_dom {
  struct mgc_fast_state fast; /* first: read by the inline fast paths */
  int id;                     /* slot index (mgc_domain_index) */
  int unique_id;              /* never reused (mgc_domain_self) */

  /* minor heap: young_start <= young_floor <= young_ptr <= young_end
     (invariant 6); [young_floor, young_end) is the part in use this minor
     cycle (the pause-aware size, DESIGN §5.8) */
  word young_start;
  word young_end;
  word young_floor;
  /* young_trigger: the next slice point, end - j * young_slice_step for
     some j >= 1 above floor, or floor (invariant 7) */
  word young_trigger;
  word young_slice_step;
  size_t minor_heap_words;
  /* The pause model of mgc_minor_size_part: decaying sums of own pause ns
     and promoted words, the decaying peak of promoted / used words, and
     the last own pause (ns). */
  double pause_ns_sum, promoted_sum, survival_peak;
  uint64_t last_pause_ns;
  /* Its probe: the part before the probe under way (0: none), what the
     collection before it promoted and allocated, the collections to wait
     before the next probe (probe_backoff after one that did not pay,
     doubling each time), and whether the last probe paid. */
  word probe_from;
  double probe_promoted, probe_allocated;
  uint32_t probe_wait, probe_backoff;
  bool probe_paid;
  uint64_t arena_generation; /* of the reservation it was committed in */
  bool requested_minor;
  bool requested_major_slice;
  bool requested_global_slices; /* mgc_note_direct_major_alloc */
  size_t torture_count;
  uint64_t minor_seq;    /* number of the last minor GC this domain was in */
  uint64_t prefault_seq; /* minor_seq when pools were last faulted ahead */
  int promote_sweeps;    /* pools promotion may still sweep in this minor GC */
  /* Pools this domain took from the cache outside promotion (direct major
     allocation) since its last minor GC, and in the minor cycle before. */
  size_t direct_pools, direct_pools_last;
  struct mgc_table major_ref; /* remembered set: mgc_value * entries */
  /* Fields remembered in this minor cycle, by a hash of their address
     (the remembered filter, DESIGN §3.2): a hit means the field is in
     major_ref.  Emptied with major_ref. */
  mgc_value *remember_filter[REMEMBER_FILTER];
  struct mgc_table custom;   /* struct custom_entry */
  struct mgc_table ephe_ref; /* struct ephe_ref_entry */
  struct mgc_table conts;    /* young continuations (mgc_value) */
  /* Sentinel of the stacks this domain holds (invariant 24a). */
  mgc_stack held_stacks;
  double extra_minor_resources;

  /* STW: set by the leader (release), cleared by the participant */
  _Atomic int interrupt_pending;
  /* mgc_interrupt (possibly from a signal handler on the domain's thread):
     set before the limit is stored all-ones, cleared by the domain's own
     thread only, before it resets the limit (DESIGN §2.3). */
  _Atomic int embedder_interrupt;
  /* The embedder's pointer (mgc_domain_set_user): written by the domain's
     thread, read by whoever acts for the domain. */
  _Atomic(void *) user;
  int stw_index; /* position in the current section, written by leader */

  /* major heap and collector */
  struct mgc_heap heap;
  struct mark_stack mark;
  /* Values overwritten by the write barrier, to darken in a batch (with
     prefetching); every STW phase change drains them first. */
  mgc_value *grey;
  size_t grey_count;
  /* This cycle's sweeping and marking are over for this domain; each was
     counted down once in mgc_rt.counts (marking may be re-opened). */
  bool sweeping_done;
  bool marking_done;
  /* Mark stack entries this domain moved into the shared pool, and took
     from it (DESIGN §6.4); owner only. */
  size_t mark_given;
  size_t mark_taken;
  struct mgc_ephe_info ephe;
  struct mgc_final_info *final;
  _Atomic uint64_t slice_epoch; /* the global slice request last served */
  size_t allocated_words;       /* major words since the last slice */
  size_t direct_major_words;    /* allocated outside promotion, see
                                   mgc_note_direct_major_alloc */
  double extra_resources;

  struct mgc_dom_stats stats;
  struct mgc_histogram pauses;
  struct mgc_histogram major_pauses;   /* this domain's part of major STW */
  struct mgc_histogram compact_pauses; /* its part of compactions */
  struct mgc_ring *ring;               /* runtime events (events.c) */

  /* threads */
  pthread_mutex_t domain_lock; /* held while running mutator code */
  pthread_mutex_t intr_lock;   /* protects backup_state, with intr_cond */
  pthread_cond_t intr_cond;
  enum backup_state backup_state;
  uint64_t backup_wakeups; /* returns from the backup's wait (intr_lock) */
  bool has_backup;
  pthread_t backup_thread;
  bool in_use; /* slot taken (under all_domains_lock) */
  bool terminating;
};

/* The runtime: one instance, set up by mgc_init. */
struct mgc_runtime {
  bool initialised;
  mgc_params params;
  size_t max_domains;
  struct mgc_dom **slots; /* max_domains entries, allocated on demand */

  /* all_domains_lock protects participants, n_participants, slot use and
     stw_leader changes (DESIGN §4.1). */
  pthread_mutex_t all_domains_lock;
  pthread_cond_t all_domains_cond;
  struct mgc_dom **participants;
  _Atomic int n_participants; /* read without the lock by fast checks */
  _Atomic(struct mgc_dom *) stw_leader;
  /* New domains that waited through two sections already: no new section
     starts until they are in (OCaml 5.3's remedy for spawn starvation). */
  _Atomic int joiners_waiting;
  _Atomic size_t domains_alive;
  /* Domains in a blocking section (their threads are off the processors
     unless the backup thread serves a section for them). */
  _Atomic size_t domains_blocking;
  /* The processors this process may run on, read once at mgc_init. */
  size_t cpus;
  int next_unique_id; /* under all_domains_lock */

  /* major collector globals, written only inside STW sections */
  _Atomic uint64_t major_cycles;
  _Atomic int phase; /* enum mgc_phase (invariant 31) */
  struct mgc_cycle_counts counts;
  /* Global slice requests: a domain that finds half its minor heap used
     bumps the epoch and interrupts the others, which then run a slice (a
     blocked domain through its backup thread), as OCaml's major slice
     epoch does. */
  _Atomic uint64_t slice_epoch;
  /* Pacing (DESIGN §6.10): work owed for everybody's major allocation and
     work done by anybody, in words; any domain's work pays for all. */
  _Atomic int64_t work_owed;
  _Atomic int64_t work_paid;
  /* The held heap (§6.10): work_paid as the current cycle began; the work
     the last cycle did; cycle ends to wait before held_heap_words follows
     the heap again; the room the current cycle may grow into. */
  _Atomic int64_t cycle_paid_start;
  _Atomic int64_t last_cycle_work;
  _Atomic int held_frozen;
  _Atomic size_t cycle_room;
  /* The mark trigger (§6.10): allocation since the cycle began, counted in
     words of work at the unhurried rate; the count at which marking is
     due; work_paid at the mark start; the last cycle's marking work. */
  _Atomic int64_t cycle_clock;
  _Atomic int64_t mark_trigger;
  _Atomic int64_t mark_paid_start;
  _Atomic int64_t last_mark_work;
  _Atomic uint64_t forced_major;
  _Atomic uint64_t compactions;
  _Atomic uint64_t compacted_words; /* moved by compactions */
  _Atomic bool compact_requested;   /* by mgc_compact: the next cycle end */
  /* A last-kind finaliser was registered on another domain's young block
     (final.c), cleared by the next minor collection; read by the enter
     barrier of each section into final_barrier, which makes its minor
     collections wait for everybody's finaliser update before any minor
     heap is reused. */
  _Atomic bool young_last_foreign;
  bool final_barrier;
  _Atomic uint64_t live_words;

  /* shared heap */
  pthread_mutex_t pool_lock;
  _Atomic size_t heap_words;
  _Atomic size_t top_heap_words;
  /* The largest heap_words since the last compaction: memory the process
     has held already, which pacing may fill again (§6.10). */
  _Atomic size_t held_heap_words;

  /* statistics of terminated domains (under all_domains_lock) */
  struct mgc_dom_stats orphan_stats;
  struct mgc_histogram orphan_pauses;
  struct mgc_histogram orphan_major_pauses;
  struct mgc_histogram orphan_compact_pauses;
  struct mgc_histogram stw_latency;
  _Atomic uint64_t minor_collections;

  /* hooks (atomic: set by any thread, read by collectors) */
  _Atomic(void (*)(void)) minor_begin_hook;
  _Atomic(void (*)(void)) minor_end_hook;
  _Atomic(void (*)(void)) slice_begin_hook;
  _Atomic(void (*)(void)) slice_end_hook;
  /* The one roots hook (mgc_set_scan_roots_hook_kind); a hook set with
     the older mgc_set_scan_roots_hook is called through a trampoline
     that reads scan_roots_hook_plain. */
  _Atomic(void (*)(mgc_scanning_action, void *, mgc_scan_kind)) scan_roots_hook;
  _Atomic(void (*)(mgc_scanning_action, void *)) scan_roots_hook_plain;
  _Atomic(void (*)(void)) young_limit_reset_hook;
  _Atomic(void (*)(void)) finalisers_pending_hook;
};
extern struct mgc_runtime mgc_rt;

/* Relaxed: the pacing counters are only compared, never used to order. */
static inline void mgc_pay_work(intptr_t w) {
  atomic_fetch_add_explicit(&mgc_rt.work_paid, w, memory_order_relaxed);
}

/* Bytes above a slot taken from a free list that allocation prefetches:
   8 cache lines, a few allocations' worth of free slots. */
#define MGC_FREE_LIST_AHEAD 512

/* Takes a slot from p, the first pool of its class on d's avail list,
   which has room (invariant 30: only the owner allocates from a pool).  A
   pool left full goes to the full list, where it gets no allocation until
   its next sweep. */
static inline word *mgc_pool_take(struct mgc_dom *d, struct pool *p) {
  word *hp = p->free;
  bool full;
  p->live++;
  if (hp) {
    word *next = (word *)hp[1];
    p->free = next;
    /* The next allocation will write there: start fetching it now.  That
       is one allocation ahead only (the list's links are in the slots),
       but the list runs up the pool (sweep_pool), so the lines a few
       allocations ahead are those just above this slot: fetch those too
       (past the pool's end, a prefetch never faults). */
    __builtin_prefetch(next, 1);
    __builtin_prefetch((char *)hp + MGC_FREE_LIST_AHEAD, 1);
    full = !next && p->bump + p->whsize > mgc_pool_end(p);
  } else {
    /* The free list is empty and stays so: only the bump region is left
       (the tests are mgc_pool_has_room's, each path's half). */
    word *bump = hp = p->bump;
    bump += p->whsize;
    p->bump = bump;
    full = bump + p->whsize > mgc_pool_end(p);
  }
  if (full) {
    d->heap.avail[p->cls] = p->next;
    mgc_pool_push(&d->heap.full[p->cls], p);
  }
  return hp;
}

/* Allocates wosize words in the major heap of d; returns the header address
   with the header written (colour MARKED) or NULL when out of memory.
   mgc_heap_alloc_hd takes the header whole (its colour is replaced):
   promotion passes the young block's, which it has at hand.
   Inline, since promotion calls it for every block it copies: the common
   case takes a slot from the class's first pool on avail, every other
   case goes to mgc_heap_alloc_slow (src/pool.c). */
static inline word *mgc_heap_alloc_hd(struct mgc_dom *d, word hd) {
  size_t wosize = MGC_WOSIZE_HD(hd);
  unsigned tag = MGC_TAG_HD(hd);
  size_t wh = WHSIZE(wosize);
  struct pool *p;
  if (MGC_UNLIKELY(wh > MAX_POOL_WHSIZE) || tag == MGC_TAG_CUSTOM ||
      tag == MGC_TAG_CONT ||
      MGC_UNLIKELY(!(p = d->heap.avail[mgc_class_of[wh]])))
    return mgc_heap_alloc_slow(d, wosize, tag, MGC_RESERVED_HD(hd));
  word *hp = mgc_pool_take(d, p);
  /* Born in the allocation colour (invariant 19).  Relaxed store: the
     block becomes visible to other domains only through a later release
     store of its address.  The pool was stamped when it went on avail in
     this cycle (push_avail): a block born MARKED needs no more. */
  STORE_RELAXED(AWORD(hp), WITH_COLOUR(hd, mgc_colours.alloc));
  return hp;
}
static inline word *mgc_heap_alloc(struct mgc_dom *d, size_t wosize,
                                   unsigned tag, unsigned reserved) {
  return mgc_heap_alloc_hd(d, MGC_MAKE_HEADER(wosize, tag, reserved));
}

extern struct mgc_fast_state mgc_no_domain_state;
_Noreturn void mgc_self_or_fatal_slow(const char *what);
/* The calling thread's domain; a fatal error naming `what` on a thread that
   is not a domain.  Inline: the barrier's and allocation's slow paths take
   it on every call. */
static inline struct mgc_dom *mgc_self_or_fatal(const char *what) {
  struct mgc_fast_state *s = mgc_tls_state;
  if (MGC_UNLIKELY(s == &mgc_no_domain_state))
    mgc_self_or_fatal_slow(what);
  return (struct mgc_dom *)s;
}
static inline struct mgc_dom *mgc_self(void) {
  return (struct mgc_dom *)mgc_tls_state;
}
static inline bool mgc_single_domain(void) {
  return LOAD_RELAXED(&mgc_rt.n_participants) == 1;
}
/* More domains running (alive, not in a blocking section) than
   processors to run them: a domain waited for may be off every processor.
   Relaxed loads: counts one spawn, exit or blocking section behind only
   pick the other way of waiting or of sizing the minor heap (DESIGN
   §4.3, §5.8); the two counts may disagree for a moment, hence the
   guard. */
static inline bool mgc_crowded(void) {
  size_t alive = LOAD_RELAXED(&mgc_rt.domains_alive);
  size_t blocking = LOAD_RELAXED(&mgc_rt.domains_blocking);
  return alive > blocking && alive - blocking > mgc_rt.cpus;
}
void mgc_domain_set_self(struct mgc_dom *d);
void mgc_call_hook(_Atomic(void (*)(void)) *hook);

/* ------------------------------------------------------------------------ */
/* custom.c, alloc.c                                                         */
/* ------------------------------------------------------------------------ */

void mgc_custom_after_minor(struct mgc_dom *d);
void mgc_atoms_init(void);
bool mgc_is_atom(mgc_value v);
bool mgc_tag_is_valid_alloc(size_t wosize, unsigned tag);
mgc_value mgc_alloc_young(struct mgc_dom *d, size_t wosize, unsigned tag,
                          unsigned reserved);
mgc_value mgc_alloc_major(struct mgc_dom *d, size_t wosize, unsigned tag,
                          unsigned reserved, bool fill);
mgc_value mgc_check_urgent_gc(struct mgc_dom *d, mgc_value v);

/* ------------------------------------------------------------------------ */
/* stats.c, verify.c, events.c                                               */
/* ------------------------------------------------------------------------ */

uint64_t mgc_histogram_percentile(const struct mgc_histogram *const *hs,
                                  size_t nh, double pct);
void mgc_stats_orphan(struct mgc_dom *d);
void mgc_stats_print(void);
int mgc_verify_from_stw(void);
void mgc_verify_in_stw(struct mgc_dom *d, int idx, int n);

struct mgc_ring;
void mgc_events_init(size_t max_domains);
void mgc_events_teardown(void);
struct mgc_ring *mgc_events_ring_for(int slot);
void mgc_ev(struct mgc_dom *d, unsigned kind, unsigned name, uint64_t value);
static inline void mgc_ev_begin(struct mgc_dom *d, unsigned name) {
  mgc_ev(d, MGC_EV_BEGIN, name, 0);
}
static inline void mgc_ev_end(struct mgc_dom *d, unsigned name) {
  mgc_ev(d, MGC_EV_END, name, 0);
}
static inline void mgc_ev_counter(struct mgc_dom *d, unsigned name,
                                  uint64_t v) {
  mgc_ev(d, MGC_EV_COUNTER, name, v);
}
void mgc_trace_open(const char *path);
void mgc_trace_close(void);
void mgc_trace_emergency_close(void);

#endif /* MGC_INTERNAL_H */
