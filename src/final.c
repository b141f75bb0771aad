/* Finalisers (DESIGN §6.9): first-kind (mgc_finalise: called with the
 * value when it first becomes unreachable, which keeps it alive for the
 * call) and last-kind (mgc_finalise_last: called without it once it is
 * dead).
 *
 * Per domain, two tables of watched values, each split by two indices:
 * [0, old) values in the major heap, [old, young) registered since the
 * last minor collection (possibly young).  Values whose finaliser is due
 * wait in a queue of batches; the queued first-kind values are roots of
 * the major collector, the watched ones are not.
 *
 * When values are found dead:
 *  - minor collection (the owner, after the end barrier, invariant 23):
 *    young first-kind values were promoted unconditionally (invariant 22);
 *    a young last-kind value that was not promoted is dead: queued;
 *  - PHASE_MARK_FINAL, once per domain per cycle: unmarked first-kind
 *    values are queued and darkened (they live until their finaliser has
 *    run), which may restart marking;
 *  - PHASE_SWEEP_EPHE, once per domain per cycle: unmarked last-kind
 *    values are queued without their value (invariant 35).
 * At the mark start every minor heap is empty: every entry becomes old
 * (with or without a minor collection just before).  Values registered
 * during a cycle's marking are marked (held by the mutator) or young, so a
 * domain whose table was empty at the mark start has nothing to examine
 * in that cycle: it counts its update as done at once.  (Before the mark
 * start, in PHASE_SWEEP_FIRST, the tables are left as the last cycle
 * settled them.)
 *
 * Order: the values found dead by one examination form a batch; batches
 * run in the order they were found, and within a batch finalisers run in
 * the reverse order of their registration (most recent first), as OCaml
 * does.  For one value with both kinds, the first-kind finaliser runs
 * first (the value is kept alive by it, so the last-kind one is found a
 * cycle later at the earliest).
 *
 * Finalisers run on the domain that registered them (or adopted them from
 * a terminated domain), at a safepoint outside the collector: an
 * allocation that takes the slow path, mgc_poll, the end of an explicit
 * collection call, or mgc_run_finalisers; never on a backup thread, never
 * two at once on a domain.  With the F=1 parameter only
 * mgc_run_finalisers runs them, and the pending hook says when there are
 * some.
 *
 * Phases: registration and running in the mutator; the updates in slices
 * or in the minor collection's section, by the owner or its backup thread.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

union final_fn {
  mgc_finaliser first;
  void (*last)(void *data);
};

struct final_entry {
  mgc_value val; /* the block (the closure, for an infix pointer) */
  size_t offset; /* bytes from val to the value registered */
  union final_fn fn;
  void *data;
  bool with_value; /* queued first-kind: call fn with the value */
};

struct final_table {
  struct final_entry *e;
  size_t old;
  size_t young;
  size_t cap;
};

struct final_batch {
  struct final_batch *next;
  size_t count; /* items still to run; they run from the end */
  size_t cap;
  struct final_entry items[];
};

struct mgc_final_info {
  struct final_table first;
  struct final_table last;
  struct final_batch *head, *tail; /* the queue */
  bool updated_first, updated_last;
  bool running;          /* a finaliser of this domain is running */
  bool notified;         /* the pending hook was called for the current queue */
  mgc_value running_val; /* a root while its first-kind finaliser runs */
  struct mgc_final_info *next; /* orphan list */
};

/* Tables of terminated domains, adopted during PHASE_MARK_MAIN. */
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct mgc_final_info *) orphans;

void mgc_final_init(void) { STORE_RELAXED(&orphans, NULL); }

struct mgc_final_info *mgc_final_info_new(void) {
  struct mgc_final_info *f = mgc_xcalloc(1, sizeof *f, "finaliser tables");
  f->running_val = MGC_UNIT;
  return f;
}

void mgc_final_info_free(struct mgc_final_info *f) {
  if (!f)
    return;
  free(f->first.e);
  free(f->last.e);
  while (f->head) {
    struct final_batch *b = f->head;
    f->head = b->next;
    free(b);
  }
  free(f);
}

void mgc_final_teardown(void) {
  struct mgc_final_info *f = LOAD_RELAXED(&orphans);
  while (f) {
    struct mgc_final_info *n = f->next;
    mgc_final_info_free(f);
    f = n;
  }
  STORE_RELAXED(&orphans, NULL);
}

/* ------------------------------------------------------------------------ */
/* Tables and the queue                                                     */
/* ------------------------------------------------------------------------ */

static void table_reserve(struct final_table *t, size_t more) {
  if (t->young + more <= t->cap)
    return;
  size_t cap = t->cap ? t->cap : 32;
  while (cap < t->young + more)
    cap *= 2;
  /* The minor collection reads the entries registered since the last
     one: their pages are touched again if the table moved (mgc_xgrow). */
  t->e = mgc_xgrow(t->e, cap * sizeof *t->e, t->young * sizeof *t->e,
                   "finaliser table");
  t->cap = cap;
}

static struct final_batch *batch_new(size_t cap) {
  struct final_batch *b =
      mgc_xmalloc(sizeof *b + cap * sizeof b->items[0], "finaliser queue");
  b->next = NULL;
  b->count = 0;
  b->cap = cap;
  return b;
}

/* Appends a non-empty batch to d's queue and makes the domain look at it
   at its next safepoint. */
static void enqueue(struct mgc_dom *d, struct final_batch *b) {
  struct mgc_final_info *f = d->final;
  if (f->tail)
    f->tail->next = b;
  else
    f->head = b;
  f->tail = b;
  f->notified = false;
  /* The owner's young limit: its next allocation or poll takes the slow
     path (a relaxed store of all-ones, like any interrupt). */
  __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
}

bool mgc_final_pending(struct mgc_dom *d) { return d->final->head != NULL; }

/* Moves the entries of t in [from, to) that `dead` selects into a new
   batch (one predicate for the choice and the move: ocaml PR #13502) and
   closes the gap; returns the batch or NULL. */
static struct final_batch *take_dead(struct final_table *t, size_t from,
                                     size_t to, bool (*dead)(mgc_value),
                                     bool with_value) {
  struct final_batch *b = NULL;
  size_t j = from;
  for (size_t i = from; i < to; i++) {
    struct final_entry e = t->e[i];
    if (!dead(e.val)) {
      t->e[j++] = e;
      continue;
    }
    if (!b)
      b = batch_new(to - i);
    e.with_value = with_value;
    if (!with_value) {
      e.val = MGC_UNIT;
      e.offset = 0;
    }
    b->items[b->count++] = e;
  }
  if (j < to) {
    memmove(&t->e[j], &t->e[to], (t->young - to) * sizeof *t->e);
    size_t gone = to - j;
    if (t->old >= to)
      t->old -= gone;
    else if (t->old > j)
      t->old = j;
    t->young -= gone;
  }
  return b;
}

/* ------------------------------------------------------------------------ */
/* Registration                                                             */
/* ------------------------------------------------------------------------ */

static void do_register(const char *fn_name, struct final_table *t, mgc_value v,
                        union final_fn fn, bool null_fn, void *data) {
  MGC_CHECK(!null_fn, "%s: NULL finaliser", fn_name);
  MGC_CHECK(MGC_IS_BLOCK(v) && v != 0,
            "%s: %#lx is an integer, not a block of the heap", fn_name,
            (unsigned long)v);
  mgc_header hd = MGC_HD_VAL(v);
  size_t offset = 0;
  if (MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
    offset = MGC_WOSIZE_HD(hd) * WORD;
    hd = MGC_HD_VAL(v - (mgc_value)offset);
  }
  MGC_CHECK(mgc_is_young(v) || COLOUR_HD(hd) != NOT_MARKABLE,
            "%s: %#lx is a static block (an atom or a block outside the "
            "heap), which never dies",
            fn_name, (unsigned long)v);
  unsigned tag = MGC_TAG_HD(hd);
  MGC_CHECK(tag != MGC_TAG_LAZY && tag != MGC_TAG_FORCING &&
                tag != MGC_TAG_FORWARD,
            "%s: a block of tag %u (Lazy, Forcing or Forward) may be "
            "short-circuited by the collector; its death is not defined",
            fn_name, tag);
  table_reserve(t, 1);
  struct final_entry *e = &t->e[t->young++];
  e->val = v - (mgc_value)offset;
  e->offset = offset;
  e->fn = fn;
  e->data = data;
  e->with_value = false;
}

void mgc_finalise(mgc_value v, mgc_finaliser f, void *data) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_finalise");
  union final_fn fn = {.first = f};
  do_register("mgc_finalise", &d->final->first, v, fn, f == NULL, data);
}

void mgc_finalise_last(mgc_value v, void (*f)(void *data), void *data) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_finalise_last");
  union final_fn fn = {.last = f};
  do_register("mgc_finalise_last", &d->final->last, v, fn, f == NULL, data);
  /* A young block of another domain: after the next minor collection we
     read its header in that domain's minor heap, which must not be reused
     before we have (mgc_minor_from_stw).  Relaxed: the flag is read
     inside a section, after its enter barrier. */
  if (mgc_is_young(v) && !((word)v >= d->young_start && (word)v < d->young_end))
    atomic_store_explicit(&mgc_rt.young_last_foreign, true,
                          memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* Minor collection                                                         */
/* ------------------------------------------------------------------------ */

/* Promotion, step 3 (DESIGN §5.5): first-kind values registered since the
   last minor collection survive it (a young finalisable value always
   survives its first minor collection). */
void mgc_final_scan_young(struct mgc_dom *d, mgc_root_action act, void *ctx) {
  struct final_table *t = &d->final->first;
  for (size_t i = t->old; i < t->young; i++)
    act(ctx, t->e[i].val, &t->e[i].val);
}

static bool young_and_dead(mgc_value v) {
  /* After the end barrier a young block is promoted (header 0) or dead. */
  return mgc_is_young(v) && LOAD_RELAXED(HDR_PTR(v)) != 0;
}

/* After the end barrier (invariant 23): young last-kind values that were
   not promoted are dead; the others now live at their copy.  Then every
   entry is old. */
void mgc_final_after_minor(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  struct final_table *t = &f->last;
  if (t->young > t->old) {
    struct final_batch *b =
        take_dead(t, t->old, t->young, young_and_dead, false);
    for (size_t i = t->old; i < t->young; i++)
      if (mgc_is_young(t->e[i].val))
        t->e[i].val = (mgc_value)LOAD_RELAXED(AWORD(t->e[i].val));
    if (b)
      enqueue(d, b);
  }
  f->first.old = f->first.young;
  f->last.old = f->last.young;
}

/* ------------------------------------------------------------------------ */
/* Major collection                                                         */
/* ------------------------------------------------------------------------ */

static bool unmarked(mgc_value v) { return mgc_is_unmarked(v); }

bool mgc_final_update_first(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  if (f->updated_first)
    return false;
  f->updated_first = true;
  struct final_batch *b = take_dead(&f->first, 0, f->first.old, unmarked, true);
  if (b) {
    /* The finaliser gets the value: it must survive this cycle. */
    for (size_t i = 0; i < b->count; i++)
      mgc_darken(d, b->items[i].val);
    enqueue(d, b);
  }
  return true;
}

bool mgc_final_update_last(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  if (f->updated_last)
    return false;
  f->updated_last = true;
  struct final_batch *b = take_dead(&f->last, 0, f->last.old, unmarked, false);
  if (b)
    enqueue(d, b);
  return true;
}

/* Queued values (and the one whose finaliser runs) are roots. */
static void scan_queue(struct mgc_final_info *f, mgc_root_action act,
                       void *ctx) {
  for (struct final_batch *b = f->head; b; b = b->next)
    for (size_t i = 0; i < b->count; i++)
      if (b->items[i].with_value)
        act(ctx, b->items[i].val, &b->items[i].val);
  if (f->running_val != MGC_UNIT)
    act(ctx, f->running_val, &f->running_val);
}

void mgc_final_scan_roots(struct mgc_dom *d, mgc_root_action act, void *ctx) {
  scan_queue(d->final, act, ctx);
}

/* STW, at the mark start, by the domain that darkens the global roots: the
   queues of terminated domains not adopted yet.  A domain that terminates
   before the mark start (in PHASE_SWEEP_FIRST) hands over values that its
   own roots no longer hold, and that this cycle must keep for their
   finalisers.  (One that terminates later had them darkened as its
   roots.)  No mutator runs, so the list cannot change meanwhile. */
void mgc_final_scan_orphan_roots(mgc_root_action act, void *ctx) {
  for (struct mgc_final_info *f = LOAD_ACQUIRE(&orphans); f; f = f->next)
    scan_queue(f, act, ctx);
}

/* STW, each domain, at the mark start: every minor heap is empty, so the
   entries registered since the last minor collection ([old, young)) hold
   major blocks (a young one would have been allocated since): they become
   old, and this cycle examines them.  The mark start may come without a
   minor collection (a slice when nothing was allocated since the last
   one: stw_mark_start), and left young, an entry whose value died before
   the mark start would be skipped by this cycle's update and its block
   swept under it.  A domain with no watched value has nothing to examine
   in this cycle (see the file comment). */
void mgc_final_cycle_start(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
#if MGC_DEBUG
  for (size_t i = f->first.old; i < f->first.young; i++)
    MGC_ASSERT(!mgc_is_young(f->first.e[i].val));
  for (size_t i = f->last.old; i < f->last.young; i++)
    MGC_ASSERT(!mgc_is_young(f->last.e[i].val));
#endif
  f->first.old = f->first.young;
  f->last.old = f->last.young;
  f->updated_first = f->first.young == 0;
  f->updated_last = f->last.young == 0;
  if (f->updated_first)
    mgc_count_down(&mgc_rt.counts.to_final_first);
  if (f->updated_last)
    mgc_count_down(&mgc_rt.counts.to_final_last);
}

void mgc_final_join(struct mgc_dom *d) {
  d->final->updated_first = d->final->updated_last = true;
}

bool mgc_final_settled_first(struct mgc_dom *d) {
  return d->final->updated_first;
}

bool mgc_final_settled(struct mgc_dom *d) {
  return d->final->updated_first && d->final->updated_last;
}

bool mgc_final_has_any(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  return f->head || f->first.young || f->last.young;
}

/* ------------------------------------------------------------------------ */
/* Orphans                                                                  */
/* ------------------------------------------------------------------------ */

/* A terminating domain (a participant still, its minor heap empty) hands
   its tables and queue over, in PHASE_SWEEP_FIRST or PHASE_MARK_MAIN only:
   there no domain has examined its tables in this cycle yet, so the
   adopter (in PHASE_MARK_MAIN) examines the merged ones with its own.
   Then its countdowns are settled (in PHASE_SWEEP_FIRST they are from the
   last cycle, settled already: the mark start counts the domain in only
   if it is still a participant then). */
void mgc_final_orphan(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  if (mgc_final_has_any(d)) {
    atomic_fetch_add_explicit(&mgc_rt.counts.orphaning_finalisers, 1,
                              memory_order_relaxed);
    enum mgc_phase ph = mgc_gc_phase();
    if (ph != PHASE_MARK_MAIN && ph != PHASE_SWEEP_FIRST)
      mgc_major_finish_cycle(d, 1, false);
    ph = mgc_gc_phase();
    MGC_CHECK(ph == PHASE_MARK_MAIN || ph == PHASE_SWEEP_FIRST,
              "finalisers orphaned outside the main marking phase");
    f = d->final; /* unchanged: finishing a cycle keeps the tables */
    MGC_ASSERT(f->first.old == f->first.young && f->last.old == f->last.young);
    /* The flags are read before the hand-over: an adopter may free f as
       soon as it is on the list. */
    struct mgc_final_info *fresh = mgc_final_info_new();
    fresh->updated_first = f->updated_first;
    fresh->updated_last = f->updated_last;
    pthread_mutex_lock(&orphan_lock);
    f->next = LOAD_RELAXED(&orphans);
    STORE_RELEASE(&orphans, f);
    pthread_mutex_unlock(&orphan_lock);
    d->final = fresh;
    atomic_fetch_sub_explicit(&mgc_rt.counts.orphaning_finalisers, 1,
                              memory_order_relaxed);
    f = fresh;
  }
  if (!f->updated_first) {
    f->updated_first = true;
    mgc_count_down(&mgc_rt.counts.to_final_first);
  }
  if (!f->updated_last) {
    f->updated_last = true;
    mgc_count_down(&mgc_rt.counts.to_final_last);
  }
}

bool mgc_final_no_orphans(void) { return LOAD_ACQUIRE(&orphans) == NULL; }

/* Prepends the old entries of src to the old part of dst. */
static void merge_table(struct final_table *dst, struct final_table *src) {
  size_t n = src->young;
  if (n == 0)
    return;
  table_reserve(dst, n);
  memmove(&dst->e[dst->old + n], &dst->e[dst->old],
          (dst->young - dst->old) * sizeof *dst->e);
  memcpy(&dst->e[dst->old], src->e, n * sizeof *dst->e);
  dst->old += n;
  dst->young += n;
}

/* Slices in PHASE_MARK_MAIN: d takes every orphaned table and queue.  If
   d had counted its update as done (its tables were empty at the cycle
   start), the merged entries must be examined in this cycle after all. */
void mgc_final_adopt(struct mgc_dom *d) {
  if (!LOAD_ACQUIRE(&orphans))
    return;
  pthread_mutex_lock(&orphan_lock);
  struct mgc_final_info *o = LOAD_RELAXED(&orphans);
  STORE_RELEASE(&orphans, NULL);
  pthread_mutex_unlock(&orphan_lock);
  struct mgc_final_info *f = d->final;
  while (o) {
    struct mgc_final_info *next = o->next;
    if (o->first.young && f->updated_first) {
      f->updated_first = false;
      atomic_fetch_add_explicit(&mgc_rt.counts.to_final_first, 1,
                                memory_order_relaxed);
    }
    if (o->last.young && f->updated_last) {
      f->updated_last = false;
      atomic_fetch_add_explicit(&mgc_rt.counts.to_final_last, 1,
                                memory_order_relaxed);
    }
    merge_table(&f->first, &o->first);
    merge_table(&f->last, &o->last);
    if (o->head) {
      if (f->tail)
        f->tail->next = o->head;
      else
        f->head = o->head;
      f->tail = o->tail;
      o->head = o->tail = NULL;
      f->notified = false;
      __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
    }
    mgc_final_info_free(o);
    o = next;
  }
}

/* ------------------------------------------------------------------------ */
/* Running                                                                  */
/* ------------------------------------------------------------------------ */

/* Takes the next finaliser to run; false when the queue is empty. */
static bool dequeue(struct mgc_final_info *f, struct final_entry *out) {
  while (f->head && f->head->count == 0) {
    struct final_batch *b = f->head;
    f->head = b->next;
    if (!f->head)
      f->tail = NULL;
    free(b);
  }
  if (!f->head)
    return false;
  *out = f->head->items[--f->head->count];
  return true;
}

static void run_all(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  if (f->running)
    return;
  struct final_entry e;
  while (dequeue(f, &e)) {
    f->running = true;
    if (e.with_value) {
      f->running_val = e.val;
      mgc_log(MGC_VERBOSE_FINAL, "running a finaliser");
      e.fn.first(e.val + (mgc_value)e.offset, e.data);
      f->running_val = MGC_UNIT;
    } else {
      mgc_log(MGC_VERBOSE_FINAL, "running a last-kind finaliser");
      e.fn.last(e.data);
    }
    /* The finaliser may have run collections: d->final is the same (only
       termination replaces it). */
    f->running = false;
  }
}

void mgc_run_finalisers(void) {
  run_all(mgc_self_or_fatal("mgc_run_finalisers"));
}

int mgc_finalisers_pending(void) {
  return mgc_final_pending(mgc_self_or_fatal("mgc_finalisers_pending"));
}

void mgc_set_finalisers_pending_hook(void (*hook)(void)) {
  /* Release: pairs with the acquire load in mgc_call_hook. */
  atomic_store_explicit(&mgc_rt.finalisers_pending_hook, hook,
                        memory_order_release);
}

/* The domain's own thread, at a safepoint outside the collector. */
void mgc_final_run_at_safepoint(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  if (!f->head || f->running)
    return;
  if (mgc_rt.params.manual_finalisers) {
    if (!f->notified) {
      f->notified = true;
      mgc_call_hook(&mgc_rt.finalisers_pending_hook);
    }
    return;
  }
  run_all(d);
}

/* Whether the limit must stay all-ones for the queue to be looked at. */
bool mgc_final_wants_safepoint(struct mgc_dom *d) {
  struct mgc_final_info *f = d->final;
  return f->head && !f->running &&
         (!mgc_rt.params.manual_finalisers || !f->notified);
}

/* ------------------------------------------------------------------------ */
/* Verifier                                                                 */
/* ------------------------------------------------------------------------ */

/* Compaction (STW): every value a table, the queue or a running
   finaliser holds (queued last-kind entries hold no value). */
static void compact_info(struct mgc_final_info *f, mgc_root_action fn,
                         void *ctx) {
  struct final_table *ts[2] = {&f->first, &f->last};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < ts[k]->young; i++)
      fn(ctx, ts[k]->e[i].val, &ts[k]->e[i].val);
  for (struct final_batch *b = f->head; b; b = b->next)
    for (size_t i = 0; i < b->count; i++)
      if (b->items[i].with_value)
        fn(ctx, b->items[i].val, &b->items[i].val);
  if (f->running_val != MGC_UNIT)
    fn(ctx, f->running_val, &f->running_val);
}

void mgc_final_compact_update(struct mgc_dom *d, mgc_root_action fn,
                              void *ctx) {
  compact_info(d->final, fn, ctx);
}

void mgc_final_compact_update_orphans(mgc_root_action fn, void *ctx) {
  for (struct mgc_final_info *f = LOAD_RELAXED(&orphans); f; f = f->next)
    compact_info(f, fn, ctx);
}

void mgc_final_for_each(struct mgc_dom *d,
                        void (*fn)(void *, mgc_value, bool, bool), void *ctx) {
  struct mgc_final_info *f = d->final;
  struct final_table *ts[2] = {&f->first, &f->last};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < ts[k]->young; i++)
      fn(ctx, ts[k]->e[i].val, false, i < ts[k]->old);
  for (struct final_batch *b = f->head; b; b = b->next)
    for (size_t i = 0; i < b->count; i++)
      if (b->items[i].with_value)
        fn(ctx, b->items[i].val, true, true);
  if (f->running_val != MGC_UNIT)
    fn(ctx, f->running_val, true, true);
}
