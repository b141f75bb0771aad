/* The major collector: colours, darkening, the mark stack, slices paced by
 * allocation, the phases of a cycle and its end (DESIGN §6.3-6.10).
 *
 * A cycle starts in a STW section with every minor heap empty (the cycle
 * end): the meanings of the colours rotate (MARKED becomes UNMARKED,
 * UNMARKED becomes GARBAGE, GARBAGE becomes MARKED; no header is touched)
 * and each domain sweeps its own pools in slices, marking nothing: the
 * write barrier darkens nothing then, and loads the overwritten value only
 * to store a young one (invariant 12).  Once every pool is swept and the
 * cycle has allocated up to its mark trigger (the cycle idles meanwhile:
 * marking is paid MGC_MARK_SPEEDUP times faster, so that it spans a
 * shorter part of the cycle; see mark_trigger_reached), the snapshot is
 * taken (the mark start): in another STW section, with every
 * minor heap emptied again, every domain darkens its roots.  From then on
 * each domain marks from its own mark stack in slices, while mutators run
 * (a domain out of marking takes entries another domain shares, invariant
 * 43); the write barrier darkens every overwritten major value, new blocks
 * are born MARKED (invariant 19), so every block reachable at the snapshot
 * or allocated since is MARKED once every mark stack, the shared pool and
 * every barrier buffer are empty.  Sweeping first makes the barrier cheap
 * for a part of each cycle, and keeps less garbage: what dies before the
 * snapshot is not marked.
 *
 * The end of marking is detected concurrently, with OCaml 5.2's phases and
 * countdowns (mgc_rt.counts, invariants 31-35):
 *
 *   phase             work in it                  leaves when (global)
 *   PHASE_SWEEP_FIRST sweep, adopt ephemeron      to_sweep = 0 and the mark
 *                     orphans; then idle          trigger reached: mark start
 *   PHASE_MARK_MAIN   sweep, mark, ephemeron      to_sweep = to_mark = 0,
 *                     rounds, adopt orphans       ephemeron rounds stable,
 *                                                 no orphans, nobody orphaning
 *   PHASE_MARK_FINAL  first-kind finalisers       to_final_first = 0,
 *                     found (and darkened), mark,  to_mark = 0, rounds stable,
 *                     ephemeron rounds            no orphans
 *   PHASE_SWEEP_EPHE  ephemerons cleaned,         to_ephe_sweep = 0,
 *                     last-kind finalisers found  to_final_last = 0,
 *                                                 no orphans: cycle end
 *
 * A slice that sees the counts allow a change runs a small STW section in
 * which every domain first drains its barrier buffer (which may re-open its
 * marking) and the last to arrive at the barrier checks again and changes
 * the phase.  The cycle end is a STW section that empties the minor heaps,
 * rotates the colours and starts the next cycle; the mark start one that
 * empties them and darkens the roots.  Neither finishes any marking: their
 * pauses are the major STW pauses of the statistics.
 *
 * Marking only turns UNMARKED into MARKED (invariant 27); on Lazy and
 * Forcing blocks that change is a CAS, because a mutator may be changing
 * the tag at the same moment (invariant 28).  The mark stack never loses an
 * entry (invariant 36).
 *
 * Phases of the code: slices run in the mutator (or on a blocked domain's
 * backup thread); opportunistic work at barriers only sweeps and marks and
 * never reads the phase; the phase changes and cycle ends are STW.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Initial meanings: 0 MARKED, 1 UNMARKED, 2 GARBAGE (DESIGN §1.2). */
struct mgc_colours mgc_colours = {(word)1 << 8, (word)0 << 8, (word)2 << 8, 0,
                                  (word)0 << 8};

/* The first cycle starts in PHASE_MARK_MAIN (mgc_major_init). */
struct mgc_marking_flag mgc_marking = {true};

size_t mgc_mark_stack_cap_for_tests;
_Atomic size_t mgc_mark_stack_prunes;

#define MARK_STACK_INITIAL 4096 /* entries; more than the slots of a pool */
#define CSET_CHUNK_WORDS 64
#define CSET_CHUNK_MASK ((word)(CSET_CHUNK_WORDS * WORD) - 1)
#define SHORT_RANGE 64 /* ranges up to this many fields may be compressed */
#define SHORT_BLOCK 8  /* blocks scanned before they are pushed */

/* ------------------------------------------------------------------------ */
/* Mark stack and compressed set                                            */
/* ------------------------------------------------------------------------ */

static size_t mark_stack_limit(void) {
  if (mgc_mark_stack_cap_for_tests)
    return mgc_mark_stack_cap_for_tests;
  size_t lim = LOAD_RELAXED(&mgc_rt.heap_words) / 32;
  return lim < MARK_STACK_INITIAL ? MARK_STACK_INITIAL : lim;
}

static void cset_insert(struct mark_stack *ms, word addr);

static void cset_grow(struct mark_stack *ms) {
  word *keys = ms->cset_keys;
  uint64_t *bits = ms->cset_bits;
  size_t cap = ms->cset_capacity;
  ms->cset_capacity = cap ? cap * 2 : 1024;
  ms->cset_keys = mgc_xcalloc(ms->cset_capacity, sizeof(word), "mark set");
  ms->cset_bits = mgc_xcalloc(ms->cset_capacity, sizeof(uint64_t), "mark set");
  ms->cset_count = 0;
  for (size_t i = 0; i < cap; i++) {
    if (!keys[i])
      continue;
    for (unsigned b = 0; b < 64; b++)
      if (bits[i] >> b & 1)
        cset_insert(ms, keys[i] + b * WORD);
  }
  free(keys);
  free(bits);
}

/* Records one field address in the compressed set. */
static void cset_insert(struct mark_stack *ms, word addr) {
  if (2 * (ms->cset_count + 1) > ms->cset_capacity)
    cset_grow(ms);
  word key = addr & ~CSET_CHUNK_MASK;
  size_t mask = ms->cset_capacity - 1;
  size_t i = (size_t)((key >> 9) * 0x9E3779B97F4A7C15u) & mask;
  while (ms->cset_keys[i] && ms->cset_keys[i] != key)
    i = (i + 1) & mask;
  if (!ms->cset_keys[i]) {
    ms->cset_keys[i] = key;
    ms->cset_count++;
  }
  ms->cset_bits[i] |= (uint64_t)1 << ((addr & CSET_CHUNK_MASK) / WORD);
}

/* The stack is at its limit: move every short range into the compressed
   set.  What stays are ranges of more than SHORT_RANGE fields, of which
   there can be at most heap/64, so the stack then has room. */
static void mark_stack_prune(struct mark_stack *ms) {
  size_t kept = 0;
  for (size_t i = 0; i < ms->count; i++) {
    struct mark_entry e = ms->stack[i];
    if (e.end - e.start > SHORT_RANGE) {
      ms->stack[kept++] = e;
      continue;
    }
    for (mgc_value *p = e.start; p < e.end; p++)
      cset_insert(ms, (word)p);
  }
  atomic_fetch_add_explicit(&mgc_mark_stack_prunes, 1, memory_order_relaxed);
  mgc_log(MGC_VERBOSE_TABLES, "mark stack pruned: %zu -> %zu entries",
          ms->count, kept);
  ms->count = kept;
}

/* The stack is full (or at the test cap): prune or grow. */
static void mark_stack_make_room(struct mark_stack *ms) {
  if (ms->count >= mark_stack_limit())
    mark_stack_prune(ms);
  if (ms->count == ms->capacity) {
    /* Below the limit, or only long ranges left (at most heap/64). */
    size_t cap = ms->capacity ? ms->capacity * 2 : MARK_STACK_INITIAL;
    ms->stack = mgc_xrealloc(ms->stack, cap * sizeof *ms->stack, "mark stack");
    ms->capacity = cap;
    mgc_log(MGC_VERBOSE_TABLES, "mark stack grown to %zu entries", cap);
  }
}

static inline void mark_stack_push(struct mark_stack *ms, mgc_value *start,
                                   mgc_value *end) {
  if (MGC_UNLIKELY(ms->count == ms->capacity ||
                   (mgc_mark_stack_cap_for_tests &&
                    ms->count >= mgc_mark_stack_cap_for_tests)))
    mark_stack_make_room(ms);
  ms->stack[ms->count].start = start;
  ms->stack[ms->count].end = end;
  ms->count++;
}

/* Refills the empty stack from the compressed set: one chunk's fields,
   coalesced into ranges.  False when the set is empty too. */
static bool mark_stack_refill(struct mark_stack *ms) {
  while (ms->cset_count) {
    size_t cap = ms->cset_capacity;
    size_t i = ms->cset_cursor;
    while (i < cap && !ms->cset_keys[i])
      i++;
    if (i == cap) {
      ms->cset_cursor = 0;
      continue;
    }
    ms->cset_cursor = i;
    word key = ms->cset_keys[i];
    uint64_t bits = ms->cset_bits[i];
    /* Remove the entry, then re-insert the run that follows it so that
       linear probing stays valid. */
    ms->cset_keys[i] = 0;
    ms->cset_bits[i] = 0;
    ms->cset_count--;
    size_t j = (i + 1) & (cap - 1);
    while (ms->cset_keys[j]) {
      word k = ms->cset_keys[j];
      uint64_t b = ms->cset_bits[j];
      ms->cset_keys[j] = 0;
      ms->cset_bits[j] = 0;
      ms->cset_count--;
      for (unsigned t = 0; t < 64; t++)
        if (b >> t & 1)
          cset_insert(ms, k + t * WORD);
      j = (j + 1) & (cap - 1);
    }
    unsigned b = 0;
    while (b < 64) {
      if (!(bits >> b & 1)) {
        b++;
        continue;
      }
      unsigned e = b;
      while (e < 64 && (bits >> e & 1))
        e++;
      mark_stack_push(ms, (mgc_value *)(key + b * WORD),
                      (mgc_value *)(key + e * WORD));
      b = e;
    }
    return true;
  }
  return false;
}

void mgc_mark_stack_free(struct mark_stack *ms) {
  free(ms->conts);
  free(ms->stack);
  free(ms->cset_keys);
  free(ms->cset_bits);
  memset(ms, 0, sizeof *ms);
}

static inline bool mark_stack_empty(const struct mark_stack *ms) {
  return ms->count == 0 && ms->cset_count == 0 && ms->conts_count == 0;
}

/* Compaction: an empty mark stack gives its memory back (a heap that
   shrank needs a smaller one; the next push starts it again small). */
void mgc_mark_stack_trim(struct mark_stack *ms) {
  if (mark_stack_empty(ms))
    mgc_mark_stack_free(ms);
}

/* ------------------------------------------------------------------------ */
/* Darkening and marking                                                    */
/* ------------------------------------------------------------------------ */

/* UNMARKED -> MARKED.  Relaxed stores suffice for most tags: the only
   concurrent writers of such a header are other markers storing the very
   same value.  Lazy and Forcing headers may be CASed by a mutator changing
   the tag, so their colour changes by CAS too (invariant 28, oxcaml #6109).
   Returns false when another domain marked it first. */
static inline bool set_marked(mgc_value v, word hd,
                              const struct mgc_colours *col) {
  unsigned tag = MGC_TAG_HD(hd);
  word marked = col->marked;
  /* tag is LAZY or FORCING (CONT, between them, never comes here). */
  _Static_assert((MGC_TAG_FORCING | 2) == MGC_TAG_LAZY &&
                     MGC_TAG_FORCING + 1 == MGC_TAG_CONT,
                 "lazy tags");
  if (MGC_UNLIKELY((tag | 2) == MGC_TAG_LAZY)) {
    word unmarked = col->unmarked;
    while (!atomic_compare_exchange_weak_explicit(
        HDR_PTR(v), &hd, WITH_COLOUR(hd, marked), memory_order_relaxed,
        memory_order_relaxed)) {
      if (COLOUR_HD(hd) != unmarked)
        return false;
    }
    return true;
  }
  STORE_RELAXED(HDR_PTR(v), WITH_COLOUR(hd, marked));
  return true;
}

/* The fields of a block the major GC scans: closures from their start of
   environment (code pointers and infix headers are never followed). */
static inline mgc_value *scan_start(mgc_value v, word hd) {
  if (MGC_TAG_HD(hd) == MGC_TAG_CLOSURE && MGC_WOSIZE_HD(hd) >= 2)
    return (mgc_value *)v + mgc_closure_env_start(v, MGC_WOSIZE_HD(hd));
  return (mgc_value *)v;
}

/* New work on a domain whose marking was over: counted again (the only
   way to_mark goes up, invariant 32). */
static void reopen_marking(struct mgc_dom *d) {
  d->marking_done = false;
  /* Relaxed: see mgc_count_down. */
  atomic_fetch_add_explicit(&mgc_rt.counts.to_mark, 1, memory_order_relaxed);
}

/* An UNMARKED continuation is put aside, still UNMARKED, to be locked and
   scanned by the mark loop (scan_cont): marking a chain of continuations
   needs no recursion.  It may be put aside twice; the second is a no-op. */
static intptr_t push_cont(struct mgc_dom *d, mgc_value k, bool may_reopen) {
  struct mark_stack *ms = &d->mark;
  if (ms->conts_count == ms->conts_capacity) {
    ms->conts_capacity = ms->conts_capacity ? 2 * ms->conts_capacity : 64;
    ms->conts = mgc_xrealloc(ms->conts, ms->conts_capacity * sizeof(mgc_value),
                             "mark stack (continuations)");
  }
  ms->conts[ms->conts_count++] = k;
  if (may_reopen && MGC_UNLIKELY(d->marking_done))
    reopen_marking(d);
  return 1;
}

/* Marks v if it is UNMARKED; returns the work, and in [*sp, *ep) the
   fields left to scan (an empty range when there are none), which the
   caller pushes or scans at once.  col: mgc_colours, which only change
   while the world is stopped, copied by the caller so that the stores
   into headers do not make the compiler load them again.  may_reopen: d's
   marking may be over (a darkening from outside the mark loop), in which
   case marking anything re-opens it. */
static inline __attribute__((always_inline)) intptr_t
mark_core(struct mgc_dom *d, mgc_value v, const struct mgc_colours *col,
          bool may_reopen, mgc_value **sp, mgc_value **ep) {
  *sp = *ep = NULL;
  word hd = LOAD_RELAXED(HDR_PTR(v));
  mgc_value *first;
  bool scanned;
  if (MGC_LIKELY(MGC_TAG_HD(hd) < MGC_TAG_FORCING)) {
    /* Not an infix, lazy, continuation, closure or unscanned block: the
       common case, marked by a relaxed store (set_marked). */
    if (COLOUR_HD(hd) != col->unmarked)
      return 0;
    STORE_RELAXED(HDR_PTR(v), WITH_COLOUR(hd, col->marked));
    first = (mgc_value *)v;
    scanned = true;
  } else {
    if (MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
      v -= (mgc_value)(MGC_WOSIZE_HD(hd) * WORD);
      hd = LOAD_RELAXED(HDR_PTR(v));
    }
    if (COLOUR_HD(hd) != col->unmarked)
      return 0;
    if (MGC_UNLIKELY(MGC_TAG_HD(hd) == MGC_TAG_CONT))
      return push_cont(d, v, may_reopen);
    if (!set_marked(v, hd, col))
      return 0;
    first = scan_start(v, hd);
    scanned = MGC_TAG_HD(hd) < MGC_TAG_NO_SCAN;
  }
  mgc_pool_stamp_at(v, hd, col->cycle);
  /* Marking anything from outside the mark loop re-opens marking, pushed
     or not: when it drains again a new ephemeron round starts, and a pass
     that ran before this block was marked (it may be a key) is redone. */
  if (may_reopen && MGC_UNLIKELY(d->marking_done))
    reopen_marking(d);
  size_t wosize = MGC_WOSIZE_HD(hd);
  mgc_value *start = first, *end = (mgc_value *)v + wosize;
  if (!scanned || start == end)
    return 1 + (intptr_t)wosize;
  if (end - start <= SHORT_BLOCK) {
    /* A short block is scanned from its first field that is not an
       immediate, and not at all when there is none (DESIGN §6.4): leaves,
       boxed integers, a list cell's head.  A field stored later holds a
       value the mutator had, marked by the snapshot; what it overwrites is
       darkened by the barrier.  The fields skipped are counted as work, as
       if scanned.  Acquire loads: see mark_loop. */
    while (start < end && MGC_IS_INT((mgc_value)LOAD_ACQUIRE(AWORD(start))))
      start++;
    if (start == end)
      return 1 + (intptr_t)wosize;
  }
  *sp = start;
  *ep = end;
  return 1 + (start - first);
}

/* Marks v if it is UNMARKED and pushes what is left to scan of its fields;
   returns the work. */
static inline __attribute__((always_inline)) intptr_t
mark_block_with(struct mgc_dom *d, mgc_value v, bool may_reopen) {
  mgc_value *start, *end;
  struct mgc_colours col = mgc_colours;
  intptr_t work = mark_core(d, v, &col, may_reopen, &start, &end);
  if (start != end)
    mark_stack_push(&d->mark, start, end);
  return work;
}

/* Inside the mark loop, marking is not over. */
static inline __attribute__((always_inline)) intptr_t
mark_block(struct mgc_dom *d, mgc_value v) {
  return mark_block_with(d, v, false);
}

bool mgc_is_unmarked(mgc_value v) {
  word hd = LOAD_RELAXED(HDR_PTR(v));
  if (MGC_TAG_HD(hd) == MGC_TAG_INFIX)
    hd = LOAD_RELAXED(HDR_PTR(v - (mgc_value)(MGC_WOSIZE_HD(hd) * WORD)));
  return COLOUR_HD(hd) == mgc_colours.unmarked;
}

struct cont_scan {
  struct mgc_dom *d;
  bool may_reopen;
};

static void mark_stack_slot(void *ctx, mgc_value v, mgc_value *slot) {
  (void)slot;
  struct cont_scan *cs = ctx;
  if (MGC_IS_BLOCK(v) && v != 0 && !mgc_is_young(v))
    mark_block_with(cs->d, v, cs->may_reopen);
}

/* The continuation protocol (DESIGN §6.4): whoever turns k from UNMARKED
   into NOT_MARKABLE scans its stack, then stores MARKED; anyone else waits
   until it sees MARKED.  So a stack is scanned once per cycle, and never
   while it runs: a taker darkens first, and takes only after MARKED.
   Acquire on the CAS and the waits, release on MARKED: the scanner's reads
   of the stack happen before the taker's writes (fiber.c).  The stack's
   values are marked from here (pushed, or set aside if continuations). */
static intptr_t scan_cont(struct mgc_dom *d, mgc_value k, bool may_reopen) {
  aword *hp = HDR_PTR(k);
  word unmarked = mgc_colours.unmarked;
  word hd = LOAD_ACQUIRE(hp);
  for (;;) {
    if (COLOUR_HD(hd) == unmarked) {
      if (atomic_compare_exchange_weak_explicit(
              hp, &hd, WITH_COLOUR(hd, NOT_MARKABLE), memory_order_acquire,
              memory_order_acquire))
        break;
    } else if (COLOUR_HD(hd) == NOT_MARKABLE) {
      mgc_cpu_relax();
      hd = LOAD_ACQUIRE(hp);
    } else {
      return 0; /* MARKED: scanned already */
    }
  }
  if (may_reopen && MGC_UNLIKELY(d->marking_done))
    reopen_marking(d);
  intptr_t work = 3;
  mgc_stack *s =
      mgc_cont_field_stack(LOAD_ACQUIRE(AWORD(&MGC_FIELD(k, 0)))); /* fiber.c */
  if (s) {
    struct cont_scan cs = {d, may_reopen};
    mgc_stack_scan(s, mark_stack_slot, &cs);
    if (mgc_stack_is_fiber(s))
      work += (intptr_t)((mgc_fiber *)s)->depth;
  }
  STORE_RELEASE(hp, WITH_COLOUR(hd, mgc_colours.marked));
  mgc_pool_stamp(k, hd);
  return work;
}

/* A taker's darkening (fiber.c): the stack is scanned before it runs. */
void mgc_darken_cont(struct mgc_dom *d, mgc_value k) {
  if (mgc_marking_on())
    scan_cont(d, k, true);
}

/* Darkens one value now (roots, weak getters, finalised values).  Before
   marking starts nothing needs it: the snapshot, not yet taken, will see
   v wherever the program keeps it. */
void mgc_darken(struct mgc_dom *d, mgc_value v) {
  if (!MGC_IS_BLOCK(v) || mgc_is_young(v) || v == 0 || !mgc_marking_on())
    return;
  mark_block_with(d, v, true);
}

/* Darkens the values the write barrier buffered, prefetching their headers
   a few entries ahead. */
void mgc_grey_drain(struct mgc_dom *d) {
  size_t n = d->grey_count;
  if (n == 0)
    return;
  for (size_t i = 0; i < n; i++) {
    if (i + 8 < n)
      __builtin_prefetch((word *)d->grey[i + 8] - 1, 1);
    mark_block_with(d, d->grey[i], true);
  }
  d->grey_count = 0;
}

/* ------------------------------------------------------------------------ */
/* Sharing marking between domains (DESIGN §6.4)                              */
/* ------------------------------------------------------------------------ */

/* A domain marks what its own roots and barrier reach.  When one domain's
   roots hold most of the live graph (a main domain that built a large
   structure before spawning workers), it would do nearly all the marking
   of every cycle, paying in its own slices the debt of the others, whose
   stacks are empty.  So a domain that runs out of marking says it is
   hungry, and a marking domain that sees that moves the oldest part of
   its stack (the ranges nearest its roots: the largest subgraphs left)
   into a packet in a global pool, where any domain takes it.

   Invariant 43: while a packet is in the pool, to_mark > 0.  Only a
   domain whose marking is not done puts a packet in; a domain counts its
   marking down only after it found the pool empty, which it checks after
   its own last donation; a domain whose marking is done re-opens it
   (to_mark + 1) before it looks for a packet.  So no phase changes, and
   no cycle ends, while marking waits in the pool; and every entry taken
   is marked by its taker, whose drain starts a new ephemeron round as
   any drain does. */
#define SHARE_PACKET 128 /* entries per packet, at most */
#define SHARE_MIN 4      /* a stack shorter than this keeps its entries */

struct mark_packet {
  struct mark_packet *next;
  size_t count;
  struct mark_entry entries[SHARE_PACKET];
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mark_packet *share_pool; /* under share_lock */
/* Packets in the pool: written under share_lock, read without it as a
   hint (a stale value only delays a take or costs an empty look). */
static _Atomic size_t share_packets;
/* Some domain found its stack and the pool empty: a hint for the donors,
   relaxed for the same reason. */
static _Atomic bool share_hungry;

static bool share_pool_has_work(void) {
  return LOAD_RELAXED(&share_packets) != 0;
}

/* Raises the flag (written only when it changes: the line is shared). */
static void share_say_hungry(void) {
  if (!LOAD_RELAXED(&share_hungry))
    STORE_RELAXED(&share_hungry, true);
}

/* Moves the oldest half of d's stack (at most a packet) into the pool.
   The hole left at the bottom is closed by moving the rest down, or, on a
   long stack, by moving the top n entries into it (the order of a stack's
   entries only matters for locality), so a donation costs O(n) however
   long the stack. */
#define SHARE_SHIFT_MAX 1024

static void share_give(struct mgc_dom *d) {
  struct mark_stack *ms = &d->mark;
  size_t n = ms->count / 2;
  if (n > SHARE_PACKET)
    n = SHARE_PACKET;
  struct mark_packet *pk = mgc_xmalloc(sizeof *pk, "mark packet");
  pk->count = n;
  memcpy(pk->entries, ms->stack, n * sizeof *ms->stack);
  size_t rest = ms->count - n; /* >= n */
  if (rest <= SHARE_SHIFT_MAX)
    memmove(ms->stack, ms->stack + n, rest * sizeof *ms->stack);
  else
    memcpy(ms->stack, ms->stack + rest, n * sizeof *ms->stack);
  ms->count -= n;
  d->mark_given += n;
  pthread_mutex_lock(&share_lock);
  pk->next = share_pool;
  share_pool = pk;
  STORE_RELAXED(&share_packets, LOAD_RELAXED(&share_packets) + 1);
  STORE_RELAXED(&share_hungry, false);
  pthread_mutex_unlock(&share_lock);
}

/* d's stack is empty and its marking not done: takes a packet onto it.
   False when the pool is empty, which then counts as d being hungry. */
static bool share_take(struct mgc_dom *d) {
  struct mark_packet *pk = NULL;
  /* Without the lock when the count reads 0: it was 0 at some moment
     after this domain's own last donation (coherence), which is all that
     invariant 43 needs. */
  if (share_pool_has_work()) {
    pthread_mutex_lock(&share_lock);
    if (share_pool) {
      pk = share_pool;
      share_pool = pk->next;
      STORE_RELAXED(&share_packets, LOAD_RELAXED(&share_packets) - 1);
    }
    pthread_mutex_unlock(&share_lock);
  }
  if (!pk) {
    if (!mgc_single_domain())
      share_say_hungry();
    return false;
  }
  for (size_t i = 0; i < pk->count; i++)
    mark_stack_push(&d->mark, pk->entries[i].start, pk->entries[i].end);
  d->mark_taken += pk->count;
  free(pk);
  return true;
}

/* Shutdown in the middle of a cycle may leave packets. */
void mgc_mark_share_teardown(void) {
  while (share_pool) {
    struct mark_packet *pk = share_pool;
    share_pool = pk->next;
    free(pk);
  }
  STORE_RELAXED(&share_packets, 0);
  STORE_RELAXED(&share_hungry, false);
}

/* Marks within budget words; returns the work done.  The loop scans one
   range at a time (large ones in chunks of MARK_CHUNK fields), loading
   each field with acquire order: a mutator of another domain may store
   into the field at the same time (mgc_modify's release store), and
   during a minor collection a promoter may rewrite a remembered field with
   the address of a copy (release store): acquiring the field orders our
   reads of the copy's header, and of the infix header an infix pointer
   steps back over, after their writes (Note [publishing copies] in
   minor.c).  On x86 an acquire load is a plain load.

   Each child found goes through a ring of MARK_RING entries after
   prefetches of its header and second field, so that many cache misses
   are in flight at once, and is marked when it leaves the ring.  The
   fields left to scan of a block so marked become the range under way if
   that one is finished (a list is followed without touching the stack),
   and are pushed otherwise.  A finished range is followed by the top of
   the stack, or, when the stack is empty, by the fields of the next block
   the ring gives up.  The range under way is only left when finished, and
   the ring is drained into the stack on the way out: nothing taken from
   the stack is lost (invariant 36).  (With 16 entries and the header's
   prefetch alone, a full cycle over a queue of lists or over a binary
   tree took about 1.2 times as long, on a 2-core AMD EPYC.) */
#define MARK_RING 32
#define MARK_CHUNK 1024

/* [s, e) becomes the range under way, its rest beyond MARK_CHUNK fields
   pushed back; returns its length, the work of scanning it. */
static inline intptr_t take_range(struct mark_stack *ms, mgc_value **pp,
                                  mgc_value **endp, mgc_value *s,
                                  mgc_value *e) {
  if (e - s > MARK_CHUNK) {
    mark_stack_push(ms, s + MARK_CHUNK, e);
    e = s + MARK_CHUNK;
  }
  *pp = s;
  *endp = e;
  return e - s;
}

/* Aligned on a cache line: where the loop fell relative to 64-byte
   boundaries moved full major cycles by up to 15 % on an AMD EPYC VM
   (tools/ab-cycle.sh; docs/PERFORMANCE.md, "The mark loop's alignment"),
   and code added anywhere before it in the link could move it. */
__attribute__((aligned(64))) static intptr_t mark_loop(struct mgc_dom *d,
                                                       intptr_t budget) {
  struct mark_stack *ms = &d->mark;
  const struct mgc_colours col = mgc_colours;
  /* The young range only changes while the world is stopped, never during
     a slice or a barrier's opportunistic work: read once. */
  const uintptr_t young_start = mgc_young_range.start;
  const uintptr_t young_end = mgc_young_range.end;
  intptr_t work = 0;
  mgc_value ring[MARK_RING];
  unsigned head = 0, tail = 0;
  mgc_value *p = NULL, *end = NULL, *s, *e;
  /* A look at the hungry flag per call, that is per slice chunk (at most
     SLICE_CHUNK words of work), not per range: nothing in the loop. */
  if (MGC_UNLIKELY(LOAD_RELAXED(&share_hungry)) && ms->count >= SHARE_MIN)
    share_give(d);
  for (;;) {
    if (p == end) {
      if (work >= budget)
        break;
      if (ms->count > 0 || mark_stack_refill(ms)) {
        struct mark_entry en = ms->stack[--ms->count];
        work += take_range(ms, &p, &end, en.start, en.end);
      } else if (head != tail) {
        work += mark_core(d, ring[head++ % MARK_RING], &col, false, &s, &e);
        if (s != e)
          work += take_range(ms, &p, &end, s, e);
      } else if (ms->conts_count > 0) {
        work += scan_cont(d, ms->conts[--ms->conts_count], false);
      } else {
        break;
      }
      continue;
    }
    mgc_value v = (mgc_value)LOAD_ACQUIRE(AWORD(p));
    p++;
    if (!MGC_IS_BLOCK(v) ||
        ((uintptr_t)v > young_start && (uintptr_t)v < young_end))
      continue;
    if (tail - head == MARK_RING) {
      work += mark_core(d, ring[head++ % MARK_RING], &col, false, &s, &e);
      if (s != e) {
        if (p == end && work < budget)
          work += take_range(ms, &p, &end, s, e);
        else
          mark_stack_push(ms, s, e);
      }
    }
    /* Its header, to be written; its second field, on the next cache line
       for a quarter of the three-word blocks (list cells, tree nodes); and
       its pool's stamp (mgc_pool_stamp), read at the mark.  Past a short
       block's end, or for a large block's pool, some mapped or unmapped
       address: a prefetch never faults. */
    __builtin_prefetch((word *)v - 1, 1);
    __builtin_prefetch((word *)v + 1, 0);
    __builtin_prefetch(mgc_pool_of((word)v), 0);
    ring[tail++ % MARK_RING] = v;
  }
  while (head != tail)
    work += mark_block(d, ring[head++ % MARK_RING]);
  return work;
}

/* The barrier's buffer first, then the stack; when both are empty this
   domain's marking is over until something darkens again, and the
   ephemeron rounds start over (what was marked may revive data). */
static intptr_t mark(struct mgc_dom *d, intptr_t budget) {
  intptr_t work = (intptr_t)d->grey_count;
  mgc_grey_drain(d);
  if (d->marking_done)
    return work;
  /* One call site, so that the loop is inlined here.  A stack left empty
     takes a packet; one still empty after that found the pool empty since
     this domain's last donation: invariant 43. */
  for (intptr_t loop_budget = budget;; loop_budget = budget - work) {
    work += mark_loop(d, loop_budget);
    if (!mark_stack_empty(&d->mark) || !share_take(d) || work >= budget)
      break;
  }
  if (mark_stack_empty(&d->mark)) {
    d->marking_done = true;
    mgc_count_down(&mgc_rt.counts.to_mark);
    mgc_ephe_marking_drained();
  }
  return work > 0 ? work : 1;
}

/* A domain whose pools are all swept counts its sweeping down, once. */
static void note_sweep(struct mgc_dom *d) {
  if (!d->sweeping_done && mgc_heap_sweep_done(d)) {
    d->sweeping_done = true;
    mgc_count_down(&mgc_rt.counts.to_sweep);
  }
}

/* ------------------------------------------------------------------------ */
/* Pacing                                                                   */
/* ------------------------------------------------------------------------ */

/* Words of marking and sweeping owed per word allocated in the major heap.
   With o = space_overhead, a cycle marks the live words L and sweeps the
   heap H (counted at a quarter of a word each: a sequential scan).  A
   block allocated in cycle n is freed during cycle n + 2 at the latest, so
   the heap holds L plus up to two cycles of allocation; a cycle may
   therefore take about L * o / 200 words for the heap to stay near
   (1 + o/100) L, and work / allocated word = (L + H / 4) / (L o / 200),
   about (200 + o) / o once H / 4 and the roots are counted.  Measured on
   the benchmarks, this keeps the peak heap at or below OCaml's.  (A block
   allocated before its cycle's mark start and dead at it is freed by the
   next cycle's sweep, so the heap holds less than that since marking runs
   in a short stretch of each cycle, mark_trigger_reached; a lower rate
   that spends the difference on fewer cycles raised the peak of two
   domains building trees together past OCaml's: docs/PERFORMANCE.md.) */
static double model_work_per_word(void) {
  double o = mgc_rt.params.space_overhead;
  return (200.0 + o) / o;
}

/* The held heap.  The model keeps the heap near (1 + o/100) L.  But a heap
   that was larger once (a burst of live data, dead since) has its memory
   mapped already: running cycles to stay below it saves nothing in peak
   memory.  So the rate is scaled down, never up, to let the heap grow
   towards HELD_FILL x held and no further, held being the largest heap
   since the last compaction (DESIGN §6.10).

   The heap grows only when an allocation takes a new pool, so by at most
   what is allocated (give or take a partly used pool per size class and
   domain).  A cycle may therefore allocate the room
   HELD_FILL x held - heap words, taken at its start (the heap then still
   holds the last cycle's garbage, so this errs low), at a rate of
   left / room, left being the cycle's work still to do, estimated as the
   last cycle's work less what this one has done.  Each slice takes the
   rate again, with the room as it is now if that is smaller: as the room
   shrinks, the rate rises up to the model's.  Live data that grows makes
   a cycle longer than the estimate; the estimate of what is left is
   therefore at least half the last cycle's work, and the scale at least
   1/4 (a cycle allocates at most four times what the model allows). */
#define HELD_FILL 0.9
#define MIN_PACING_SCALE 0.25
#define HELD_FREEZE 3 /* see pace_cycle_end */

static double held_room(void) {
  return HELD_FILL * (double)LOAD_RELAXED(&mgc_rt.held_heap_words) -
         (double)LOAD_RELAXED(&mgc_rt.heap_words);
}

static double work_per_word(void) {
  double model = model_work_per_word();
  /* Relaxed: pacing inputs; a stale value only moves a rate within its
     bounds. */
  int64_t last = LOAD_RELAXED(&mgc_rt.last_cycle_work);
  double room = held_room();
  double cycle_room = (double)LOAD_RELAXED(&mgc_rt.cycle_room);
  if (cycle_room < room)
    room = cycle_room;
  if (last <= 0 || room <= 0)
    return model;
  int64_t left = last - (LOAD_RELAXED(&mgc_rt.work_paid) -
                         LOAD_RELAXED(&mgc_rt.cycle_paid_start));
  if (left < last / 2)
    left = last / 2;
  double scale = (double)left / room / model;
  if (scale >= 1.0)
    return model;
  if (LOAD_RELAXED(&mgc_rt.held_frozen) != HELD_FREEZE)
    STORE_RELAXED(&mgc_rt.held_frozen, HELD_FREEZE);
  return model * (scale < MIN_PACING_SCALE ? MIN_PACING_SCALE : scale);
}

/* Growth at a scaled rate must not raise its own target: held follows the
   heap again only after two cycle ends paced by the model alone, once
   what the scaled cycle allocated is swept (its blocks were born marked:
   they are garbage for the next cycle, freed by the one after).  A scaled
   slice sets the count; cycle ends count it down.  A slice and a cycle
   end may race on it: either outcome keeps held from following too soon
   by at most a cycle, or lets it follow a cycle early.

   In the single section of a cycle end, by the last arriver, before the
   leftover debt is dropped: the cycle's work, and the next one's room. */
static void pace_cycle_end(bool forced) {
  int64_t paid = LOAD_RELAXED(&mgc_rt.work_paid);
  int64_t work = paid - LOAD_RELAXED(&mgc_rt.cycle_paid_start);
  int64_t marking = paid - LOAD_RELAXED(&mgc_rt.mark_paid_start);
  STORE_RELAXED(&mgc_rt.last_cycle_work, work);
  STORE_RELAXED(&mgc_rt.last_mark_work, marking);
  /* A forced cycle's work was not paced by allocation: the next one marks
     as soon as it has swept. */
  STORE_RELAXED(&mgc_rt.mark_trigger,
                forced ? 0
                       : work - (int64_t)((double)marking / MGC_MARK_SPEEDUP));
  STORE_RELAXED(&mgc_rt.cycle_clock, 0);
  STORE_RELAXED(&mgc_rt.cycle_paid_start, LOAD_RELAXED(&mgc_rt.work_owed));
  double room = held_room();
  STORE_RELAXED(&mgc_rt.cycle_room, room > 0 ? (size_t)room : 0);
  int wait = LOAD_RELAXED(&mgc_rt.held_frozen);
  if (wait > 0)
    STORE_RELAXED(&mgc_rt.held_frozen, wait - 1);
}

/* Slice points per minor cycle: as many more while marking as marking is
   paid faster, so that a slice then is no longer than one while sweeping
   (start_slice spreads the debt over the points left). */
unsigned mgc_major_slices_per_minor(void) {
  return mgc_gc_phase() == PHASE_SWEEP_FIRST ? 2 : 2 * MGC_MARK_SPEEDUP;
}

/* The mark trigger.  The snapshot barrier darkens while marking runs, and
   every block allocated meanwhile is born marked and kept until the next
   cycle: both cost in proportion to how long marking lasts.  So marking
   is paid at MGC_MARK_SPEEDUP times the model's rate, over a
   proportionally shorter stretch of allocation, and the cycle keeps its
   length: after its sweeping it idles (nothing owed, the barrier off,
   blocks born unmarked) until it has allocated what the last cycle's
   work would have taken at the model's rate, less the shortened marking.
   cycle_clock counts the cycle's allocation in work at the model's rate;
   mark_trigger is the count at which marking is due (pace_cycle_end; 0
   after a forced cycle).  Live data that grows makes a cycle's marking
   longer than its trigger allowed for; the next trigger follows.
   Relaxed: pacing counters, only compared; a stale value moves the mark
   start by a slice at most. */
static bool mark_trigger_reached(void) {
  return LOAD_RELAXED(&mgc_rt.cycle_clock) >=
         LOAD_RELAXED(&mgc_rt.mark_trigger);
}

static double total_cycle_work(void) {
  double h = (double)LOAD_RELAXED(&mgc_rt.heap_words);
  double o = mgc_rt.params.space_overhead;
  return h + h * 100.0 / (100.0 + o);
}

void mgc_note_major_alloc(struct mgc_dom *d, size_t words) {
  d->allocated_words += words;
  if (d->allocated_words > d->minor_heap_words / 5 && !d->requested_major_slice)
    mgc_request_major_slice(d);
}

/* A block allocated in the major heap directly (mgc_alloc_shr, a large
   block), not by promotion.  The other domains take slices at their own
   slice points, when asked once per state of the cycle, and at the global
   slice epoch, which minor cycles bring (minor.c,
   request_global_slices_once).  A domain that allocates only in the major
   heap brings no minor cycles: beside a domain that does not allocate
   (walking its data, polling) and still owes its part of the cycle's
   sweeping or marking, the cycle would not end, and the heap would grow
   with everything allocated (tests/test_domains_share.c, part 4).  So
   every minor heap's worth of direct major allocation asks every domain
   for a slice, as a minor cycle does.  (OCaml 5's caml_alloc_shr asks
   every fifth of a minor heap; here that gave fewer cycle ends in part 4,
   9-14 against 13-25, and heaps of up to 8.5M words against 2.6M:
   docs/PERFORMANCE.md.)  The request is sent
   at the next safepoint (mgc_poll_gc_work): the allocation itself may
   not be one. */
void mgc_note_direct_major_alloc(struct mgc_dom *d, size_t words) {
  mgc_note_major_alloc(d, words);
  d->direct_major_words += words;
  if (d->direct_major_words >= d->minor_heap_words) {
    d->direct_major_words = 0;
    d->requested_global_slices = true;
    mgc_request_major_slice(d);
  }
}

void mgc_adjust_gc_speed(struct mgc_dom *d, size_t mem, size_t max) {
  if (max == 0) {
    max = LOAD_RELAXED(&mgc_rt.heap_words) * WORD / 150 *
          mgc_rt.params.custom_major_ratio;
    if (max == 0)
      max = 1;
  }
  if (mem > max)
    mem = max;
  d->extra_resources += (double)mem / (double)max;
  if (d->extra_resources > 0.2 && !d->requested_major_slice)
    mgc_request_major_slice(d);
}

/* ------------------------------------------------------------------------ */
/* Phases                                                                   */
/* ------------------------------------------------------------------------ */

/* Relaxed: the phase is written only by the last domain at a barrier of a
   STW section (invariant 31), and read by participants after that barrier
   or by mutators outside any section. */
enum mgc_phase mgc_gc_phase(void) {
  return (enum mgc_phase)LOAD_RELAXED(&mgc_rt.phase);
}

/* By the last arriver at a barrier of a STW section: the phase, and with
   it whether the barrier darkens (invariant 31). */
static void set_phase(enum mgc_phase p) {
  STORE_RELAXED(&mgc_rt.phase, (int)p);
  STORE_RELAXED(&mgc_marking.on, p != PHASE_SWEEP_FIRST);
}

static bool no_orphans(void) {
  return mgc_ephe_no_orphans() && mgc_final_no_orphans();
}

/* Every pool swept: marking may start (mgc_major_mark_start). */
static bool complete_sweep_first(void) {
  return mgc_gc_phase() == PHASE_SWEEP_FIRST &&
         LOAD_ACQUIRE(&mgc_rt.counts.to_sweep) == 0;
}

static bool complete_main(void) {
  struct mgc_cycle_counts *c = &mgc_rt.counts;
  return mgc_gc_phase() == PHASE_MARK_MAIN && LOAD_ACQUIRE(&c->to_sweep) == 0 &&
         LOAD_ACQUIRE(&c->to_mark) == 0 &&
         LOAD_ACQUIRE(&c->orphaning_finalisers) == 0 &&
         mgc_ephe_marking_stable() && no_orphans();
}

static bool complete_final(void) {
  struct mgc_cycle_counts *c = &mgc_rt.counts;
  return mgc_gc_phase() == PHASE_MARK_FINAL &&
         LOAD_ACQUIRE(&c->to_final_first) == 0 &&
         LOAD_ACQUIRE(&c->to_mark) == 0 && mgc_ephe_marking_stable() &&
         no_orphans();
}

static bool complete_sweep_ephe(void) {
  struct mgc_cycle_counts *c = &mgc_rt.counts;
  return mgc_gc_phase() == PHASE_SWEEP_EPHE &&
         LOAD_ACQUIRE(&c->to_ephe_sweep) == 0 &&
         LOAD_ACQUIRE(&c->to_final_last) == 0 && no_orphans();
}

static const char *phase_name(enum mgc_phase p) {
  return p == PHASE_SWEEP_FIRST  ? "sweeping before marking"
         : p == PHASE_MARK_MAIN  ? "main marking"
         : p == PHASE_MARK_FINAL ? "final marking"
                                 : "ephemeron sweeping";
}

/* Inside a STW section, every participant: the barrier buffers are
   drained first (a drain may re-open marking), then the last to arrive
   decides, on counts that nobody can change any more, and may go through
   both marking phases at once (a cycle without finalisers to examine). */
static bool decided_cycle_end; /* by the last arriver, read after */

static bool change_phase_body(struct mgc_dom *d, int n,
                              struct mgc_dom **parts) {
  uint64_t t0 = mgc_now_ns();
  mgc_grey_drain(d);
  if (mgc_stw_barrier_begin(n)) {
    enum mgc_phase before = mgc_gc_phase();
    if (complete_main())
      set_phase(PHASE_MARK_FINAL);
    if (complete_final()) {
      STORE_RELAXED(&mgc_rt.counts.to_ephe_sweep,
                    mgc_ephe_start_sweep_phase(parts, n));
      set_phase(PHASE_SWEEP_EPHE);
    }
    if (mgc_gc_phase() != before) {
      mgc_log(MGC_VERBOSE_MINOR, "major phase: %s", phase_name(mgc_gc_phase()));
      /* Every domain runs a slice for the new phase (its updates). */
      atomic_fetch_add(&mgc_rt.slice_epoch, 1);
    }
    decided_cycle_end = complete_sweep_ephe();
    mgc_stw_barrier_release();
  }
  bool end = decided_cycle_end;
  mgc_histogram_add(&d->major_pauses, mgc_now_ns() - t0, false);
  return end;
}

static void stw_change_phase(struct mgc_dom *d, void *data, int idx, int n,
                             struct mgc_dom **parts) {
  (void)data;
  (void)idx;
  mgc_ev_begin(d, MGC_EVN_PHASE_CHANGE);
  (void)change_phase_body(d, n, parts);
  mgc_ev_end(d, MGC_EVN_PHASE_CHANGE);
}

/* ------------------------------------------------------------------------ */
/* Cycle end                                                                */
/* ------------------------------------------------------------------------ */

static void darken_action(void *ctx, mgc_value v, mgc_value *slot) {
  (void)slot;
  mgc_darken(ctx, v);
}

static void rotate_colours(void) {
  struct mgc_colours c = mgc_colours;
  mgc_colours.marked = c.garbage;
  mgc_colours.unmarked = c.marked;
  mgc_colours.garbage = c.unmarked;
  mgc_colours.cycle = c.cycle + 1; /* major_cycles, incremented next */
  mgc_colours.alloc = c.marked;    /* UNMARKED: PHASE_SWEEP_FIRST */
}

/* Single domain, at the barrier after the rotation: the cycle starts by
   sweeping (every participant counted), with nothing to mark. */
static void reset_sweep_counts(int n) {
  STORE_RELAXED(&mgc_rt.counts.to_sweep, n);
  STORE_RELAXED(&mgc_rt.counts.to_mark, 0);
  set_phase(PHASE_SWEEP_FIRST);
}

/* Single domain, at the first barrier of the mark start: the countdowns
   of marking and of the later phases (to_sweep is 0 already). */
static void reset_mark_counts(int n) {
  struct mgc_cycle_counts *c = &mgc_rt.counts;
  MGC_ASSERT(LOAD_RELAXED(&c->to_sweep) == 0);
  mgc_colours.alloc = mgc_colours.marked;
  STORE_RELAXED(&c->to_mark, n);
  STORE_RELAXED(&c->to_ephe_sweep, 0);
  STORE_RELAXED(&c->to_final_first, n);
  STORE_RELAXED(&c->to_final_last, n);
  STORE_RELAXED(&c->global_roots_started, 0);
  mgc_ephe_cycle_reset(n);
  set_phase(PHASE_MARK_MAIN);
}

/* The cycle end (DESIGN §6.7), every participant: empty the minor heaps;
   the last to arrive rotates the colours, resets the sweeping count and
   enters PHASE_SWEEP_FIRST; each domain starts its sweeping (the roots are
   darkened at the mark start).  Colours are plain globals: written by one
   domain between two barriers, read by the others after them. */
static void cycle_end_body(struct mgc_dom *d, int idx, int n,
                           struct mgc_dom **parts, bool forced) {
  if (mgc_stw_barrier_begin(n)) {
    mgc_minor_leader_setup();
    mgc_stw_barrier_release();
  }
  mgc_minor_from_stw(d, idx, n, parts);
  uint64_t t0 = mgc_now_ns();
  mgc_ev_begin(d, MGC_EVN_CYCLE_END);
  /* Marking is complete: what the barrier buffered is marked already. */
  mgc_grey_drain(d);
  if (mgc_stw_barrier_begin(n)) {
    /* Decided again on counts nobody can change now: a slice outside the
       section may have read them at different moments. */
    decided_cycle_end = complete_sweep_ephe();
    if (!decided_cycle_end) {
      mgc_stw_barrier_release();
      goto out;
    }
    MGC_ASSERT(LOAD_RELAXED(&mgc_rt.counts.to_mark) == 0);
    MGC_ASSERT(LOAD_RELAXED(&mgc_rt.counts.to_sweep) == 0);
    MGC_ASSERT(LOAD_RELAXED(&mgc_rt.counts.to_ephe_sweep) == 0);
    if (mgc_rt.params.verify || MGC_DEBUG >= 3)
      mgc_verify_from_stw();
    rotate_colours();
    atomic_fetch_add_explicit(&mgc_rt.major_cycles, 1, memory_order_relaxed);
    mgc_compact_decide(n, parts);
    if (forced)
      atomic_fetch_add_explicit(&mgc_rt.forced_major, 1, memory_order_relaxed);
    reset_sweep_counts(n);
    /* The finished cycle's work is all done: a debt left over means the
       allocation overestimated it, and is not carried into the next cycle
       (which would only shorten it). */
    pace_cycle_end(forced);
    STORE_RELAXED(&mgc_rt.work_paid, LOAD_RELAXED(&mgc_rt.work_owed));
    atomic_fetch_add(&mgc_rt.slice_epoch, 1);
    mgc_log(MGC_VERBOSE_MAJOR, "major cycle %llu ends, heap %zu words",
            (unsigned long long)LOAD_RELAXED(&mgc_rt.major_cycles),
            (size_t)LOAD_RELAXED(&mgc_rt.heap_words));
    mgc_stw_barrier_release();
  }
out:
  if (!decided_cycle_end) {
    mgc_ev_end(d, MGC_EVN_CYCLE_END);
    return;
  }
  mgc_heap_cycle_start(d);
  if (idx == 0) {
    mgc_heap_adopt_orphans(d);
    mgc_ev_counter(d, MGC_EVN_HEAP_WORDS, LOAD_RELAXED(&mgc_rt.heap_words));
  }
  if (mgc_compact_now())
    mgc_compact_from_stw(d, idx, n);
  d->sweeping_done = false;
  MGC_ASSERT(d->marking_done && d->grey_count == 0);
  note_sweep(d);
  /* Nobody may sweep or allocate before every participant is through
     (the compaction moves blocks of every domain). */
  mgc_stw_barrier(n);
  mgc_ev_end(d, MGC_EVN_CYCLE_END);
  mgc_histogram_add(&d->major_pauses, mgc_now_ns() - t0, false);
}

static void stw_cycle_end(struct mgc_dom *d, void *data, int idx, int n,
                          struct mgc_dom **parts) {
  (void)data;
  cycle_end_body(d, idx, n, parts, false);
}

/* ------------------------------------------------------------------------ */
/* Mark start                                                               */
/* ------------------------------------------------------------------------ */

/* The snapshot (DESIGN §6.7), every participant, every minor heap empty
   and every pool swept: the last to arrive resets the marking countdowns
   and enters PHASE_MARK_MAIN (from then on the barrier darkens); each
   domain darkens its roots and restarts its ephemeron and finaliser
   bookkeeping.  Before it, in PHASE_SWEEP_FIRST, nothing was darkened:
   what the program dropped meanwhile is not kept by this cycle. */
void mgc_major_mark_start(struct mgc_dom *d, int n) {
  uint64_t t0 = mgc_now_ns();
  mgc_ev_begin(d, MGC_EVN_PHASE_CHANGE);
  if (mgc_stw_barrier_begin(n)) {
    reset_mark_counts(n);
    STORE_RELAXED(&mgc_rt.mark_paid_start, LOAD_RELAXED(&mgc_rt.work_paid));
    atomic_fetch_add(&mgc_rt.slice_epoch, 1);
    mgc_log(MGC_VERBOSE_MINOR, "major phase: %s", phase_name(PHASE_MARK_MAIN));
    mgc_stw_barrier_release();
  }
  /* Nothing was darkened since the cycle end. */
  MGC_ASSERT(d->marking_done && d->grey_count == 0 &&
             mark_stack_empty(&d->mark));
  d->marking_done = false;
  mgc_scan_local_roots(d, darken_action, d, MGC_SCAN_FULL);
  mgc_final_scan_roots(d, darken_action, d);
  int unstarted = 0;
  if (atomic_compare_exchange_strong(&mgc_rt.counts.global_roots_started,
                                     &unstarted, 1)) {
    mgc_scan_global_roots(darken_action, d, false);
    mgc_final_scan_orphan_roots(darken_action, d);
  }
  /* No look at the shared pool (invariant 43): it is empty, since the last
     cycle's marking is over and nobody has marked in this one yet. */
  if (mark_stack_empty(&d->mark)) {
    d->marking_done = true;
    mgc_count_down(&mgc_rt.counts.to_mark);
  }
  mgc_ephe_cycle_start(d);
  mgc_final_cycle_start(d);
  /* No mutator may run while the global roots are being read. */
  mgc_stw_barrier(n);
  mgc_ev_end(d, MGC_EVN_PHASE_CHANGE);
  mgc_histogram_add(&d->major_pauses, mgc_now_ns() - t0, false);
}

/* Inside a section, every participant: whether every pool is swept, so
   that marking starts now; decided by the last arriver on a count nobody
   can change while all wait (sweeping only counts down).  Outside
   PHASE_SWEEP_FIRST, false without a barrier: the phase changes only in
   sections, so every participant reads the same one here. */
static bool decided_mark_start;
/* Set by stw_mark_start for the minor collection it runs: marking is due
   whatever the trigger says (the slice's debt says so). */
static bool mark_start_forced;

bool mgc_major_mark_start_due(int n, bool forced) {
  if (mgc_gc_phase() != PHASE_SWEEP_FIRST)
    return false;
  if (mgc_stw_barrier_begin(n)) {
    decided_mark_start =
        complete_sweep_first() &&
        (forced || mark_start_forced || mark_trigger_reached());
    mark_start_forced = false;
    mgc_stw_barrier_release();
  }
  return decided_mark_start;
}

/* From a slice that cannot wait for the next minor collection: its own
   minor collection, which ends with the mark start if still due (the
   snapshot is taken with every minor heap empty: a young block is no
   root that marking could follow).  When no participant has allocated a
   young block since the last one (the slice of a minor collection's
   interrupt), the heaps are empty already: the mark start alone. */
static bool mark_start_heaps_empty;

static void stw_mark_start(struct mgc_dom *d, void *data, int idx, int n,
                           struct mgc_dom **parts) {
  (void)data;
  if (mgc_stw_barrier_begin(n)) {
    /* Every participant waits at the barrier: its allocation pointer
       cannot move. */
    mark_start_heaps_empty = true;
    /* Only where the minor collection will decide (and clear it): the
       phase may have moved on since this section was asked for. */
    mark_start_forced = mgc_gc_phase() == PHASE_SWEEP_FIRST;
    for (int i = 0; i < n; i++)
      if (parts[i]->fast.young_ptr != parts[i]->young_end)
        mark_start_heaps_empty = false;
    if (!mark_start_heaps_empty)
      mgc_minor_leader_setup();
    mgc_stw_barrier_release();
  }
  if (!mark_start_heaps_empty)
    mgc_minor_from_stw(d, idx, n, parts);
  else if (mgc_major_mark_start_due(n, true))
    mgc_major_mark_start(d, n);
}

/* The debt a slice may leave unpaid while every pool is swept and marking
   waits for the next minor collection to start it, in words of work:
   past it (a program that allocates in the major heap directly, its minor
   heap filling slowly) the slice starts marking itself, with a minor
   collection of its own.  A sixteenth of a cycle's work at most, so that
   marking never starts late by more than that. */
static int64_t mark_start_wait_debt(struct mgc_dom *d) {
  int64_t by_minor = 4 * (int64_t)d->minor_heap_words;
  int64_t by_cycle = (int64_t)(total_cycle_work() / 16);
  return by_minor < by_cycle ? by_minor : by_cycle;
}

/* ------------------------------------------------------------------------ */
/* Slices                                                                   */
/* ------------------------------------------------------------------------ */

#define SLICE_CHUNK 16384

struct slice {
  struct mgc_dom *d;
  enum slice_mode mode;
  int64_t target;  /* SLICE_AUTO: the value of work_paid to reach */
  intptr_t budget; /* SLICE_BUDGET: words left */
};

/* The next chunk of work the slice may do, 0 when it is over.  Between
   chunks an automatic or explicit slice serves a pending STW request: a
   slice must not hold the other domains' collections back. */
static intptr_t chunk(struct slice *s) {
  if (s->mode == SLICE_IN_STW)
    return SLICE_CHUNK;
  if (atomic_load_explicit(&s->d->interrupt_pending, memory_order_acquire))
    mgc_stw_participate(s->d);
  intptr_t left = s->mode == SLICE_AUTO
                      ? (intptr_t)(s->target - LOAD_RELAXED(&mgc_rt.work_paid))
                      : s->budget;
  return left <= 0 ? 0 : left < SLICE_CHUNK ? left : SLICE_CHUNK;
}

static void pay(struct slice *s, intptr_t w) {
  mgc_pay_work(w);
  s->budget -= w;
}

/* Asks the other domains for a slice when the state of the cycle (its
   number, phase, ephemeron round) changed since the last such request:
   each state needs every domain's part once, and asking again for the
   same state would only interrupt them for nothing. */
static _Atomic uint64_t last_request_stamp;

static void request_slices_for_phase(struct mgc_dom *d) {
  if (mgc_single_domain())
    return;
  uint64_t stamp = (LOAD_RELAXED(&mgc_rt.major_cycles) << 34) ^
                   ((uint64_t)mgc_gc_phase() << 32) ^ mgc_ephe_round();
  uint64_t last = LOAD_RELAXED(&last_request_stamp);
  /* Relaxed CAS: it only elects the domain that sends the requests. */
  if (last != stamp && atomic_compare_exchange_strong_explicit(
                           &last_request_stamp, &last, stamp,
                           memory_order_relaxed, memory_order_relaxed))
    mgc_request_global_slices(d);
}

/* A domain's part of the current phase that cannot wait for a budget:
   without it the phase cannot end, whatever the others do. */
static bool owes_phase_work(struct mgc_dom *d) {
  enum mgc_phase ph = mgc_gc_phase();
  return (ph == PHASE_MARK_FINAL && !mgc_final_settled_first(d)) ||
         (ph == PHASE_SWEEP_EPHE &&
          (!mgc_final_settled(d) || mgc_ephe_sweep_pending(d))) ||
         (ph != PHASE_SWEEP_EPHE && mgc_ephe_pass_due(d));
}

#define PHASE_WORK_CHUNK 4096

/* The chunk for phase work: the slice's, or a small one when its budget
   is spent (a domain asked by the others must still do its part). */
static intptr_t phase_chunk(struct slice *s) {
  intptr_t c = chunk(s);
  return c > 0 ? c : PHASE_WORK_CHUNK;
}

/* A domain whose marking is done, with a slice to spend, re-opens it for
   the pool's packets: before it takes one (invariant 43).  With the pool
   empty it is hungry instead, so that a domain still marking shares.  Not
   in PHASE_SWEEP_EPHE: the pool is empty then (to_mark was 0 when it
   began, and marking does not re-open in it), and a stale look at the
   count must not re-open marking there. */
static void share_join(struct mgc_dom *d) {
  if (!d->marking_done || mgc_single_domain() ||
      mgc_gc_phase() == PHASE_SWEEP_EPHE)
    return;
  if (share_pool_has_work())
    reopen_marking(d);
  else if (LOAD_RELAXED(&mgc_rt.counts.to_mark))
    share_say_hungry();
}

/* The slice order of DESIGN §6.10: sweep, mark, this phase's finaliser
   update, adoption of orphans, ephemeron rounds or sweeping, then (outside
   a STW section) a phase change when the counts allow one.  Returns
   whether the counts allow the cycle to end. */
static bool run_slice(struct slice *s) {
  struct mgc_dom *d = s->d;
  uint64_t cycle = LOAD_RELAXED(&mgc_rt.major_cycles);
  intptr_t c;
  if (!d->sweeping_done && chunk(s) > 0) {
    mgc_ev_begin(d, MGC_EVN_SWEEP);
    while (!d->sweeping_done && (c = chunk(s)) > 0) {
      pay(s, mgc_heap_sweep(d, c));
      note_sweep(d);
    }
    mgc_ev_end(d, MGC_EVN_SWEEP);
  }
  if (mgc_gc_phase() == PHASE_SWEEP_FIRST && s->mode != SLICE_IN_STW) {
    /* Every pool swept: the next minor collection starts marking, unless
       this slice owes more than it may leave unpaid meanwhile (an
       explicit budget is always spent).  An automatic slice waits for the
       mark trigger too: before it, what is owed is what the sweeping left
       unpaid, which marking pays once started.  chunk() may have served a
       section that started marking already. */
    bool auto_mode = s->mode == SLICE_AUTO;
    if (complete_sweep_first() && (!auto_mode || mark_trigger_reached())) {
      int64_t left = auto_mode ? LOAD_RELAXED(&mgc_rt.work_owed) -
                                     LOAD_RELAXED(&mgc_rt.work_paid)
                               : (int64_t)s->budget;
      if (left > (auto_mode ? mark_start_wait_debt(d) : 0)) {
        mgc_log(MGC_VERBOSE_MINOR, "mark start from a slice, %lld words owed",
                (long long)left);
        mgc_try_run_on_all_domains(d, stw_mark_start, NULL, NULL);
      }
    }
    /* Marking waits for another domain's sweeping: ask it for a slice (a
       blocked one sweeps on its backup thread), once. */
    if (mgc_gc_phase() == PHASE_SWEEP_FIRST && d->sweeping_done)
      request_slices_for_phase(d);
  }
  if (mgc_gc_phase() == PHASE_SWEEP_FIRST)
    return false;
  for (;;) {
    if (chunk(s) > 0)
      share_join(d);
    if ((!d->marking_done || d->grey_count) && chunk(s) > 0) {
      mgc_ev_begin(d, MGC_EVN_MARK);
      while ((!d->marking_done || d->grey_count) && (c = chunk(s)) > 0)
        pay(s, mark(d, c));
      mgc_ev_end(d, MGC_EVN_MARK);
    }
    if (chunk(s) <= 0 && !owes_phase_work(d))
      break;
    enum mgc_phase ph = mgc_gc_phase();
    if (ph == PHASE_MARK_FINAL && mgc_final_update_first(d)) {
      mgc_count_down(&mgc_rt.counts.to_final_first);
      if (!d->marking_done && chunk(s) > 0)
        continue;
    }
    if (ph == PHASE_SWEEP_EPHE && mgc_final_update_last(d))
      mgc_count_down(&mgc_rt.counts.to_final_last);
    /* Ephemerons may be orphaned in any phase (cleaned first during
       PHASE_SWEEP_EPHE); finalisers only in PHASE_MARK_MAIN. */
    mgc_ephe_adopt(d);
    if (ph == PHASE_MARK_MAIN)
      mgc_final_adopt(d);
    /* chunk() may serve a section that changes the phase, or ends the
       cycle: the phase is read again after each, before the step that
       depends on it (a sweep step run after a cycle end would drop the
       new cycle's unmarked ephemerons from the lists). */
    if (ph != PHASE_SWEEP_EPHE) {
      bool reopened = false;
      while (mgc_gc_phase() != PHASE_SWEEP_EPHE) {
        c = phase_chunk(s);
        if (mgc_gc_phase() == PHASE_SWEEP_EPHE)
          break;
        intptr_t w = mgc_ephe_mark_step(d, c, &reopened);
        pay(s, w);
        if (w < c || reopened || chunk(s) <= 0)
          break;
      }
      if (reopened && chunk(s) > 0)
        continue;
    } else {
      while (mgc_gc_phase() == PHASE_SWEEP_EPHE && mgc_ephe_sweep_pending(d)) {
        c = phase_chunk(s);
        if (mgc_gc_phase() != PHASE_SWEEP_EPHE || !mgc_ephe_sweep_pending(d))
          break;
        pay(s, mgc_ephe_sweep_step(d, c));
        if (chunk(s) <= 0)
          break;
      }
    }
    if (s->mode != SLICE_IN_STW && (complete_main() || complete_final())) {
      enum mgc_phase before = mgc_gc_phase();
      mgc_try_run_on_all_domains(d, stw_change_phase, NULL, NULL);
      if (mgc_gc_phase() != before &&
          LOAD_RELAXED(&mgc_rt.major_cycles) == cycle)
        continue;
    }
    break;
  }
  if (s->mode == SLICE_IN_STW)
    return false;
  if (complete_sweep_ephe())
    return LOAD_RELAXED(&mgc_rt.major_cycles) == cycle;
  /* The phase waits for other domains: ask them for a slice, so that an
     idle or blocked one does its part (once per state of the cycle). */
  if (!owes_phase_work(d) && d->marking_done && d->sweeping_done)
    request_slices_for_phase(d);
  return false;
}

static void end_cycle(struct slice *s) {
  uint64_t start = LOAD_RELAXED(&mgc_rt.major_cycles);
  while (LOAD_RELAXED(&mgc_rt.major_cycles) == start && complete_sweep_ephe())
    mgc_try_run_on_all_domains(s->d, stw_cycle_end, NULL, NULL);
  /* Outside the pause: unmapping pools takes a system call each. */
  mgc_heap_release_free_pools(false);
}

/* Adds what this domain allocated in the major heap since its last slice,
   converted to work, and the custom blocks' extra resources, to the global
   debt (DESIGN §6.10); an automatic slice then works until everybody's
   debt is paid (any domain's work pays for all), an explicit one for its
   budget. */
static void start_slice(struct slice *s, struct mgc_dom *d, intptr_t work,
                        enum slice_mode mode) {
  memset(s, 0, sizeof *s);
  s->d = d;
  s->mode = mode;
  s->budget = work;
  /* At the model's rate while sweeping, nothing while idle before the
     mark trigger, MGC_MARK_SPEEDUP times the model's rate once marking.
     Before the mark start the cycle's clock runs with the allocation and
     the custom blocks' resources alike: those bring the trigger nearer
     while the cycle idles. */
  double at_model = (double)d->allocated_words * work_per_word();
  double extra = d->extra_resources * total_cycle_work();
  double owed;
  if (mgc_gc_phase() != PHASE_SWEEP_FIRST)
    owed = at_model * MGC_MARK_SPEEDUP + extra;
  else {
    atomic_fetch_add_explicit(&mgc_rt.cycle_clock, (int64_t)(at_model + extra),
                              memory_order_relaxed);
    owed = complete_sweep_first() && !mark_trigger_reached() ? 0
                                                             : at_model + extra;
  }
  COUNTER_ADD(&d->stats.major_words, d->allocated_words);
  d->allocated_words = 0;
  d->extra_resources = 0;
  s->target = atomic_fetch_add_explicit(&mgc_rt.work_owed, (int64_t)owed,
                                        memory_order_relaxed) +
              (int64_t)owed;
  /* An automatic slice pays its share of the debt: the debt spread over
     the slice points left in this minor cycle, so that the debt a minor
     collection's promotion brings is paid in even slices. */
  if (mode == SLICE_AUTO) {
    int64_t paid = LOAD_RELAXED(&mgc_rt.work_paid);
    if (s->target > paid)
      s->target = paid + (s->target - paid) / mgc_minor_slices_left(d);
  }
  atomic_store_explicit(&d->slice_epoch, atomic_load(&mgc_rt.slice_epoch),
                        memory_order_relaxed);
}

void mgc_major_slice_run(struct mgc_dom *d, intptr_t work,
                         enum slice_mode mode) {
  mgc_call_hook(&mgc_rt.slice_begin_hook);
  mgc_ev_begin(d, MGC_EVN_MAJOR_SLICE);
  COUNTER_ADD(&d->stats.major_slices, 1);
  struct slice s;
  start_slice(&s, d, work, mode);
  bool end = run_slice(&s);
  mgc_ev_end(d, MGC_EVN_MAJOR_SLICE);
  mgc_call_hook(&mgc_rt.slice_end_hook);
  if (end)
    end_cycle(&s);
}

/* Opportunistic work while waiting at a barrier (DESIGN §4.6): a small
   budget of this domain's own sweeping or marking, never a phase change,
   never a look at the phase (another domain may be changing it).  Returns
   whether there was work. */
bool mgc_major_opportunistic_work(void *dom) {
  struct mgc_dom *d = dom;
  if (!d->sweeping_done) {
    mgc_pay_work(mgc_heap_sweep(d, 512));
    note_sweep(d);
    return true;
  }
  if (!d->marking_done || d->grey_count) {
    mgc_pay_work(mark(d, 512));
    return true;
  }
  return false;
}

/* ------------------------------------------------------------------------ */
/* Finishing cycles                                                         */
/* ------------------------------------------------------------------------ */

struct finish_request {
  uint64_t start;
  bool forced;
};

/* Every participant does all the work it can, then meets the others at a
   barrier where the last to arrive changes the phase or decides the cycle
   end (on counts nobody changes while all wait there), until the cycle has
   ended.  A domain never commits to a barrier on its own reading of the
   counts: another domain's ephemeron pass may still start a new round that
   needs this domain's pass too (OCaml's stw_finish_major_cycle, made safe
   against that). */
static void stw_finish_cycle(struct mgc_dom *d, void *data, int idx, int n,
                             struct mgc_dom **parts) {
  struct finish_request r = *(struct finish_request *)data;
  if (mgc_stw_barrier_begin(n)) {
    mgc_minor_leader_setup();
    mgc_stw_barrier_release();
  }
  mgc_minor_from_stw(d, idx, n, parts);
  mgc_grey_drain(d);
  mgc_stw_barrier(n);
  mgc_ev_begin(d, MGC_EVN_MAJOR_FINISH);
  struct slice s;
  while (LOAD_RELAXED(&mgc_rt.major_cycles) == r.start) {
    start_slice(&s, d, 0, SLICE_IN_STW);
    run_slice(&s);
    /* The minor heaps are empty here (emptied above, and nothing
       allocates in the section). */
    if (mgc_major_mark_start_due(n, true))
      mgc_major_mark_start(d, n);
    else if (change_phase_body(d, n, parts))
      cycle_end_body(d, idx, n, parts, r.forced);
  }
  mgc_ev_end(d, MGC_EVN_MAJOR_FINISH);
}

/* Runs `cycles` cycle ends (mutator context); a cycle ended meanwhile by
   another domain counts too. */
void mgc_major_finish_cycle(struct mgc_dom *d, int cycles, bool forced) {
  for (int i = 0; i < cycles; i++) {
    struct finish_request r = {LOAD_RELAXED(&mgc_rt.major_cycles), forced};
    while (LOAD_RELAXED(&mgc_rt.major_cycles) == r.start)
      mgc_try_run_on_all_domains(d, stw_finish_cycle, &r, NULL);
  }
  mgc_heap_release_free_pools(false);
  mgc_reset_young_limit(d);
}

static void stw_sweep_all(struct mgc_dom *d, void *data, int idx, int n,
                          struct mgc_dom **parts) {
  (void)data;
  (void)idx;
  while (!d->sweeping_done) {
    mgc_pay_work(mgc_heap_sweep(d, SLICE_CHUNK));
    note_sweep(d);
  }
  if (mgc_stw_barrier_begin(n)) {
    uint64_t live = 0;
    for (int i = 0; i < n; i++)
      live += mgc_heap_live_words(parts[i]);
    STORE_RELAXED(&mgc_rt.live_words, live);
    mgc_stw_barrier_release();
  }
}

/* After the call's first cycle end, a value unreachable at the call is
   found dead in the next cycle: its first-kind finaliser queued, keys to
   it emptied.  A value kept alive for its first-kind finaliser is found
   dead one cycle later, for its last-kind one and the keys to it.  So
   three cycle ends, then a sweep of everything (DESIGN §6.7: OCaml's
   Gc.full_major). */
static void full_major(struct mgc_dom *d) {
  /* This domain's due finalisers run after each cycle, as OCaml's
     Gc.full_major does: a value kept alive only by a finalisable value
     found dead in one cycle is found dead in the next. */
  for (int i = 0; i < 3; i++) {
    mgc_major_finish_cycle(d, 1, true);
    mgc_final_run_at_safepoint(d);
  }
  while (!mgc_try_run_on_all_domains(d, stw_sweep_all, NULL, NULL)) {
  }
  mgc_reset_young_limit(d);
}

void mgc_major_slice(intptr_t work) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_major_slice");
  mgc_major_slice_run(d, work, work > 0 ? SLICE_BUDGET : SLICE_AUTO);
  mgc_reset_young_limit(d);
  mgc_final_run_at_safepoint(d);
}

void mgc_major_collection(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_major_collection");
  mgc_major_finish_cycle(d, 1, true);
  mgc_final_run_at_safepoint(d);
}

/* The cycle under way ends with a compaction (OCaml's
   caml_finish_major_cycle(1)).  The request is a flag read by whichever
   cycle end comes next (mgc_compact_decide): if another domain ends the
   cycle between our store and our finishing, that end compacts, and we
   finish one more cycle, as mgc_major_collection would have. */
void mgc_major_collection_compact(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_major_collection_compact");
  atomic_store(&mgc_rt.compact_requested, true);
  mgc_major_finish_cycle(d, 1, true);
  mgc_final_run_at_safepoint(d);
}

void mgc_full_major(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_full_major");
  full_major(d);
  mgc_final_run_at_safepoint(d);
}

/* A full major whose last cycle end compacts (compact.c): everything
   unreachable at the call is dead by then, and swept by the compaction. */
void mgc_compact(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_compact");
  for (int i = 0; i < 2; i++) {
    mgc_major_finish_cycle(d, 1, true);
    mgc_final_run_at_safepoint(d);
  }
  atomic_store(&mgc_rt.compact_requested, true);
  mgc_major_finish_cycle(d, 1, true);
  while (!mgc_try_run_on_all_domains(d, stw_sweep_all, NULL, NULL)) {
  }
  mgc_reset_young_limit(d);
  mgc_final_run_at_safepoint(d);
}

/* ------------------------------------------------------------------------ */
/* Domains joining and leaving                                              */
/* ------------------------------------------------------------------------ */

/* Under all_domains_lock, no section running: a new domain has nothing to
   sweep or mark in this cycle, no ephemeron to examine, and its finalised
   values (registered from now on) cannot die in this cycle. */
void mgc_major_domain_join(struct mgc_dom *d) {
  d->sweeping_done = true;
  d->marking_done = true;
  mgc_final_join(d);
}

/* One turn of a terminating domain's loop (DESIGN §4.5): finish its
   sweeping, empty the minor heaps, finish its marking, hand its ephemerons
   and finalisers over.  Requests of other domains are served meanwhile. */
void mgc_major_domain_terminate(struct mgc_dom *d) {
  while (!d->sweeping_done) {
    mgc_pay_work(mgc_heap_sweep(d, SLICE_CHUNK));
    note_sweep(d);
    if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
      mgc_stw_participate(d);
  }
  mgc_empty_minor_heaps(d);
  mgc_ephe_orphan(d);
  while (!d->marking_done || d->grey_count) {
    mgc_pay_work(mark(d, SLICE_CHUNK));
    if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
      mgc_stw_participate(d);
  }
  mgc_final_orphan(d);
}

/* Whether d may leave the participants (invariant 37), under the lock. */
bool mgc_major_domain_done(struct mgc_dom *d) {
  return d->sweeping_done && d->marking_done && d->grey_count == 0 &&
         !d->ephe.todo && !d->ephe.live && !d->ephe.must_sweep &&
         !mgc_final_has_any(d) && mgc_final_settled(d);
}

/* Interrupts every other participant so that it runs a slice soon (a
   domain in a blocking section through its backup thread).  The seq_cst
   increment pairs with the owner's limit reset, as interrupts do. */
void mgc_request_global_slices(struct mgc_dom *self) {
  atomic_fetch_add(&mgc_rt.slice_epoch, 1);
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  int n = LOAD_RELAXED(&mgc_rt.n_participants);
  for (int i = 0; i < n; i++)
    if (mgc_rt.participants[i] != self)
      mgc_domain_interrupt(mgc_rt.participants[i]);
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
}

void mgc_major_init(void) {
  memset(&mgc_rt.counts, 0, sizeof mgc_rt.counts);
  set_phase(PHASE_MARK_MAIN);
  STORE_RELAXED(&mgc_rt.slice_epoch, 0);
  mgc_ephe_init();
  mgc_final_init();
}
