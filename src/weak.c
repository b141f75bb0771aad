/* Ephemerons and weak arrays (DESIGN §3.4, §6.8).
 *
 * Representation (OCaml 5.2's): an MGC_TAG_ABSTRACT block of 2 + nkeys
 * words in the major heap; field 0 links the owning domain's lists (the
 * collector's own, never scanned), field 1 is the data, keys start at
 * field 2; an empty slot holds MGC_EPHE_NONE, a static NOT_MARKABLE block
 * that is never a valid key.  Being Abstract, an ephemeron is never
 * scanned by marking or promotion: this file decides what its fields keep
 * alive.  A weak array is an ephemeron whose data stays empty.
 *
 * Rules kept here:
 *  - the data is kept alive only while the ephemeron and every key are
 *    alive (invariant 33): during marking, a domain's ephemerons are
 *    examined in rounds, and data is darkened only when the ephemeron and
 *    all its keys are marked (or immediate, young, not markable); marking
 *    ends only when every domain with ephemerons left to examine has
 *    completed a pass in the same round with no marking in between;
 *  - in PHASE_SWEEP_EPHE, unmarked keys are dead: cleaning empties them
 *    and the data; accessors clean before they read, so the program sees
 *    every ephemeron as if all were cleaned at once at the end of marking;
 *  - every value handed out (get_key, get_data) is darkened (invariant
 *    34); check_key never darkens;
 *  - a young value stored into an ephemeron (always old) is recorded in
 *    the storing domain's ephe_ref table, and the minor collection
 *    promotes it unconditionally (invariant 22): the minor collection
 *    keeps ephemeron contents, the major cycle decides what dies.
 *
 * Concurrency: keys and data may be read and written by any domain while
 * the owner examines or cleans the ephemeron; they are accessed with
 * atomics only.  Stores publish with release order, loads acquire.  The
 * collector's rewrites (emptying a dead key or the data, replacing a
 * Forward key by its target) are CASes from the value it examined, so a
 * value a mutator stored meanwhile is never lost.  The lists (field 0) are
 * touched only by the owning domain, or its backup thread, and by the
 * orphan hand-over under orphan_lock.
 *
 * Phases: accessors in the mutator; marking rounds and sweeping in slices
 * of the owner; the round counters under ephe_lock from any domain.
 */
#include "internal.h"

#include <string.h>

/* The empty slot: a static block, never marked, never swept. */
const mgc_header mgc_ephe_none_block[2] = {
    MGC_MAKE_HEADER(0, MGC_TAG_ABSTRACT, 0) | NOT_MARKABLE, 0};

#define NONE MGC_EPHE_NONE
#define LINK(e) MGC_FIELD((e), 0)

static inline aword *field_ptr(mgc_value e, size_t off) {
  return AWORD(&MGC_FIELD(e, off));
}

/* ------------------------------------------------------------------------ */
/* Rounds (DESIGN §6.8): the global ephemeron round, how many domains still */
/* have ephemerons to examine, and how many completed the current round.    */
/* Written under ephe_lock; read without it (acquire) by the phase checks,  */
/* which are decided again inside a STW section.                            */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t ephe_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t round_no;
static _Atomic intptr_t domains_with_todo;
static _Atomic intptr_t domains_done;

/* Orphaned live lists of terminated domains, adopted by others. */
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic mgc_value orphan_live;

void mgc_ephe_init(void) {
  STORE_RELAXED(&round_no, 1);
  STORE_RELAXED(&domains_with_todo, 0);
  STORE_RELAXED(&domains_done, 0);
  STORE_RELAXED(&orphan_live, 0);
}

void mgc_ephe_teardown(void) { STORE_RELAXED(&orphan_live, 0); }

/* Some domain's marking drained: every pass of the current round may have
   missed what it marked, so a new round starts. */
void mgc_ephe_marking_drained(void) {
  pthread_mutex_lock(&ephe_lock);
  STORE_RELEASE(&round_no, LOAD_RELAXED(&round_no) + 1);
  STORE_RELEASE(&domains_done, 0);
  pthread_mutex_unlock(&ephe_lock);
}

/* d's todo list just became empty: it takes no part in later rounds. */
static void todo_emptied(void) {
  pthread_mutex_lock(&ephe_lock);
  STORE_RELEASE(&domains_done, 0);
  STORE_RELEASE(&round_no, LOAD_RELAXED(&round_no) + 1);
  intptr_t n = LOAD_RELAXED(&domains_with_todo);
  MGC_CHECK(n > 0, "ephemeron rounds: no domain left to leave them");
  STORE_RELEASE(&domains_with_todo, n - 1);
  pthread_mutex_unlock(&ephe_lock);
}

/* d completed a pass of round r with its marking done. */
static void record_pass(struct mgc_dom *d, uint64_t r) {
  if (r < LOAD_ACQUIRE(&round_no))
    return;
  pthread_mutex_lock(&ephe_lock);
  if (r == LOAD_RELAXED(&round_no)) {
    d->ephe.round = r;
    STORE_RELEASE(&domains_done, LOAD_RELAXED(&domains_done) + 1);
  }
  pthread_mutex_unlock(&ephe_lock);
}

/* Both counts read together, under the lock that changes them: two
   separate loads could pair a count from before a change with one from
   after it and see a stability that never was. */
bool mgc_ephe_marking_stable(void) {
  pthread_mutex_lock(&ephe_lock);
  bool stable = LOAD_RELAXED(&domains_with_todo) == LOAD_RELAXED(&domains_done);
  pthread_mutex_unlock(&ephe_lock);
  return stable;
}

/* STW, single domain (the mark start): every participant has a todo list
   until it says otherwise. */
void mgc_ephe_cycle_reset(int n) {
  STORE_RELAXED(&domains_with_todo, n);
  STORE_RELAXED(&round_no, 1);
  STORE_RELAXED(&domains_done, 0);
}

/* ------------------------------------------------------------------------ */
/* Liveness tests                                                           */
/* ------------------------------------------------------------------------ */

static inline bool no_shortcut_tag(unsigned t) {
  return t == MGC_TAG_FORWARD || t == MGC_TAG_LAZY || t == MGC_TAG_FORCING ||
         t == MGC_TAG_DOUBLE;
}

static void remember_young(struct mgc_dom *d, mgc_value e, size_t off) {
  struct ephe_ref_entry *r = mgc_table_add(d, &d->ephe_ref);
  r->ephe = e;
  r->offset = off;
}

/* The key in field off, after the Forward short-cut of DESIGN §1.3 (a
   Forward key whose target is not lazy-like or a double is replaced by
   the target, with a CAS so that a concurrent store wins). */
static mgc_value key_value(struct mgc_dom *d, mgc_value e, size_t off) {
  mgc_value k = (mgc_value)LOAD_ACQUIRE(field_ptr(e, off));
  while (k != NONE && MGC_IS_BLOCK(k) && !mgc_is_young(k) &&
         MGC_TAG_VAL(k) == MGC_TAG_FORWARD) {
    mgc_value f = (mgc_value)LOAD_ACQUIRE(AWORD(k));
    if (!MGC_IS_BLOCK(f) || no_shortcut_tag(MGC_TAG_VAL(f)))
      break;
    word expected = (word)k;
    if (atomic_compare_exchange_strong_explicit(field_ptr(e, off), &expected,
                                                (word)f, memory_order_acq_rel,
                                                memory_order_acquire)) {
      if (mgc_is_young(f))
        remember_young(d, e, off);
      k = f;
    } else {
      k = (mgc_value)expected;
    }
  }
  return k;
}

/* A key or data value the major collector may still free: an unmarked
   major block (after stepping back from an infix pointer). */
static inline bool dead_candidate(mgc_value v) {
  return v != NONE && MGC_IS_BLOCK(v) && !mgc_is_young(v) && mgc_is_unmarked(v);
}

/* ------------------------------------------------------------------------ */
/* Cleaning (PHASE_SWEEP_EPHE only: then unmarked means dead)               */
/* ------------------------------------------------------------------------ */

static void clear_field(mgc_value e, size_t off, mgc_value seen) {
  word expected = (word)seen;
  /* Release: pairs with the acquire loads of readers. */
  atomic_compare_exchange_strong_explicit(field_ptr(e, off), &expected,
                                          (word)NONE, memory_order_release,
                                          memory_order_relaxed);
}

/* Empties the dead keys of e and, if any key was dead, its data. */
static void clean(struct mgc_dom *d, mgc_value e) {
  size_t size = MGC_WOSIZE_VAL(e);
  mgc_value data = (mgc_value)LOAD_ACQUIRE(field_ptr(e, MGC_EPHE_DATA_OFFSET));
  bool release = false;
  for (size_t off = MGC_EPHE_FIRST_KEY; off < size; off++) {
    mgc_value k = key_value(d, e, off);
    if (dead_candidate(k)) {
      release = true;
      clear_field(e, off, k);
    }
  }
  if (release && data != NONE)
    clear_field(e, MGC_EPHE_DATA_OFFSET, data);
}

/* Before a key slot is read or written: a dead key empties itself and the
   data (DESIGN §6.8, "accessors"). */
static void clean_key(struct mgc_dom *d, mgc_value e, size_t off) {
  if (mgc_gc_phase() != PHASE_SWEEP_EPHE)
    return;
  mgc_value data = (mgc_value)LOAD_ACQUIRE(field_ptr(e, MGC_EPHE_DATA_OFFSET));
  /* The key as clean() sees it (after the Forward short-cut), so that an
     accessor and the sweep never disagree on whether it is dead. */
  mgc_value k = key_value(d, e, off);
  if (dead_candidate(k)) {
    clear_field(e, off, k);
    if (data != NONE)
      clear_field(e, MGC_EPHE_DATA_OFFSET, data);
  }
}

static void clean_all(struct mgc_dom *d, mgc_value e) {
  if (mgc_gc_phase() == PHASE_SWEEP_EPHE)
    clean(d, e);
}

/* ------------------------------------------------------------------------ */
/* Marking rounds                                                           */
/* ------------------------------------------------------------------------ */

/* Examines d's todo list from the cursor of round r (or from its head):
   an ephemeron whose data is alive moves to live, its data darkened.
   With force, every ephemeron and its data are darkened (a terminating
   domain: its rounds cannot be followed any more).  Returns the budget
   left; > 0 means the pass reached the end of the list. */
static intptr_t ephe_mark(struct mgc_dom *d, intptr_t budget, uint64_t r,
                          bool force) {
  struct mgc_ephe_info *info = &d->ephe;
  mgc_value *prev;
  if (info->cursor_round == r && info->cursor && !force) {
    prev = info->cursor;
  } else {
    prev = &info->todo;
  }
  mgc_value todo = *prev;
  while (todo && budget > 0) {
    mgc_value e = todo;
    todo = LINK(e);
    if (force)
      mgc_darken(d, e);
    mgc_value data =
        (mgc_value)LOAD_ACQUIRE(field_ptr(e, MGC_EPHE_DATA_OFFSET));
    bool alive = true;
    size_t size = MGC_WOSIZE_VAL(e);
    if (!dead_candidate(data)) {
      /* Nothing to darken, now or later in this cycle (a value stored
         from now on is held by the mutator, hence marked): no need to
         look at the keys again (oxcaml #3621). */
      budget -= 2;
    } else {
      if (!force && mgc_is_unmarked(e))
        alive = false;
      for (size_t off = MGC_EPHE_FIRST_KEY; alive && off < size; off++)
        if (dead_candidate(key_value(d, e, off)))
          alive = false;
      budget -= (intptr_t)WHSIZE(size);
    }
    if (force || alive) {
      if (dead_candidate(data))
        mgc_darken(d, data);
      LINK(e) = info->live;
      info->live = e;
      *prev = todo;
    } else {
      prev = &LINK(e);
    }
  }
  info->cursor_round = r;
  info->cursor = prev;
  return budget;
}

/* d has ephemerons to examine and has not passed over them in the
   current round. */
uint64_t mgc_ephe_round(void) { return LOAD_ACQUIRE(&round_no); }

bool mgc_ephe_pass_due(struct mgc_dom *d) {
  return d->ephe.todo && LOAD_ACQUIRE(&round_no) > d->ephe.round;
}

intptr_t mgc_ephe_mark_step(struct mgc_dom *d, intptr_t budget,
                            bool *reopened) {
  struct mgc_ephe_info *info = &d->ephe;
  *reopened = false;
  uint64_t r = LOAD_ACQUIRE(&round_no);
  if (!info->todo || r <= info->round || budget <= 0)
    return 0;
  intptr_t left = ephe_mark(d, budget, r, false);
  if (!info->todo)
    todo_emptied();
  if (left > 0) {
    /* A whole pass of round r: it counts only with marking done (what it
       darkened must be marked first, and then a new round starts). */
    if (d->marking_done && d->grey_count == 0)
      record_pass(d, r);
    else
      *reopened = true;
  }
  return budget - (left > 0 ? left : 0);
}

/* ------------------------------------------------------------------------ */
/* Sweeping (PHASE_SWEEP_EPHE)                                              */
/* ------------------------------------------------------------------------ */

static mgc_value *list_tail(mgc_value *head) {
  while (*head)
    head = &LINK(*head);
  return head;
}

/* Final arriver of the barrier that enters PHASE_SWEEP_EPHE: every
   participant with ephemerons must sweep them once; returns how many. */
int mgc_ephe_start_sweep_phase(struct mgc_dom **parts, int n) {
  int with = 0;
  for (int i = 0; i < n; i++) {
    struct mgc_ephe_info *info = &parts[i]->ephe;
    info->must_sweep = info->todo || info->live;
    with += info->must_sweep;
  }
  return with;
}

bool mgc_ephe_sweep_pending(struct mgc_dom *d) {
  return d->ephe.must_sweep || d->ephe.todo;
}

/* Dead ephemerons (unmarked) leave the lists; the others are cleaned and
   go to live.  Counts this domain's sweep down once it is over. */
intptr_t mgc_ephe_sweep_step(struct mgc_dom *d, intptr_t budget) {
  struct mgc_ephe_info *info = &d->ephe;
  intptr_t work = 0;
  if (info->must_sweep) {
    /* Live ephemerons may hold keys that died since they went live. */
    info->must_sweep = false;
    *list_tail(&info->todo) = info->live;
    info->live = 0;
    if (!info->todo) {
      mgc_count_down(&mgc_rt.counts.to_ephe_sweep);
      return 1;
    }
  }
  if (!info->todo)
    return 0;
  while (info->todo && work < budget) {
    mgc_value e = info->todo;
    info->todo = LINK(e);
    if (mgc_is_unmarked(e)) {
      work += 1;
      continue;
    }
    clean(d, e);
    LINK(e) = info->live;
    info->live = e;
    work += (intptr_t)MGC_WOSIZE_VAL(e);
  }
  if (!info->todo)
    mgc_count_down(&mgc_rt.counts.to_ephe_sweep);
  return work;
}

/* ------------------------------------------------------------------------ */
/* Cycle start, orphans                                                     */
/* ------------------------------------------------------------------------ */

static void adopt_list(struct mgc_dom *d) {
  if (!LOAD_ACQUIRE(&orphan_live))
    return;
  pthread_mutex_lock(&orphan_lock);
  mgc_value l = LOAD_RELAXED(&orphan_live);
  STORE_RELEASE(&orphan_live, 0);
  pthread_mutex_unlock(&orphan_lock);
  if (l) {
    *list_tail(&l) = d->ephe.live;
    d->ephe.live = l;
  }
}

/* STW, each domain, at the mark start (after the colours rotated and the
   pools were swept): everything is examined again. */
void mgc_ephe_cycle_start(struct mgc_dom *d) {
  struct mgc_ephe_info *info = &d->ephe;
  adopt_list(d);
  MGC_ASSERT(info->todo == 0);
  info->todo = info->live;
  info->live = 0;
  info->must_sweep = false;
  info->round = 0;
  info->cursor_round = 0;
  info->cursor = NULL;
  if (!info->todo)
    todo_emptied();
}

/* Slices of a domain that is not terminating. */
void mgc_ephe_adopt(struct mgc_dom *d) { adopt_list(d); }

bool mgc_ephe_no_orphans(void) { return LOAD_ACQUIRE(&orphan_live) == 0; }

/* A terminating domain (still a participant) hands its ephemerons over.
   While marking goes on, the ones left to examine are forced alive (their
   rounds cannot be followed any more); during PHASE_SWEEP_EPHE they are
   swept now, since an adopter may have swept its own already.  The live
   list then goes to the orphans. */
void mgc_ephe_orphan(struct mgc_dom *d) {
  struct mgc_ephe_info *info = &d->ephe;
  if (mgc_gc_phase() == PHASE_SWEEP_EPHE) {
    while (mgc_ephe_sweep_pending(d))
      mgc_ephe_sweep_step(d, INTPTR_MAX / 2);
  } else if (info->todo) {
    while (info->todo)
      ephe_mark(d, INTPTR_MAX / 2, 0, true);
    todo_emptied();
  }
  if (info->live) {
    pthread_mutex_lock(&orphan_lock);
    *list_tail(&info->live) = LOAD_RELAXED(&orphan_live);
    STORE_RELEASE(&orphan_live, info->live);
    pthread_mutex_unlock(&orphan_lock);
    info->live = 0;
  }
  info->cursor = NULL;
}

/* ------------------------------------------------------------------------ */
/* Minor collection                                                         */
/* ------------------------------------------------------------------------ */

/* The owner, inside the minor collection's section: every young key or
   data recorded in its table is promoted (invariant 22).  The same slot
   may sit in two domains' tables: both write the same winner's copy, with
   atomic stores. */
void mgc_ephe_scan_young(struct mgc_dom *d, mgc_root_action f, void *ctx) {
  size_t n = mgc_table_count(&d->ephe_ref);
  struct ephe_ref_entry *r = (struct ephe_ref_entry *)d->ephe_ref.base;
  for (size_t i = 0; i < n; i++) {
    aword *slot = field_ptr(r[i].ephe, r[i].offset);
    mgc_value v = (mgc_value)LOAD_RELAXED(slot);
    if (!IS_YOUNG_BLOCK(v))
      continue;
    mgc_value nv = v;
    f(ctx, v, &nv);
    STORE_RELEASE(slot, (word)nv);
  }
}

/* ------------------------------------------------------------------------ */
/* The API                                                                  */
/* ------------------------------------------------------------------------ */

bool mgc_is_ephemeron_block(mgc_value e) {
  if (!MGC_IS_BLOCK(e) || e == 0 || mgc_is_young(e) || mgc_is_atom(e))
    return false;
  mgc_header hd = MGC_HD_VAL(e);
  return MGC_TAG_HD(hd) == MGC_TAG_ABSTRACT &&
         MGC_WOSIZE_HD(hd) > MGC_EPHE_FIRST_KEY &&
         COLOUR_HD(hd) != NOT_MARKABLE;
}

/* The number of keys of e, after checking that it is one. */
static size_t checked_keys(const char *fn, mgc_value e) {
  MGC_CHECK(mgc_is_ephemeron_block(e),
            "%s: %#lx is not an ephemeron or weak array", fn, (unsigned long)e);
  return MGC_WOSIZE_VAL(e) - MGC_EPHE_FIRST_KEY;
}

static size_t checked_key_offset(const char *fn, mgc_value e, size_t i) {
  size_t n = checked_keys(fn, e);
  MGC_CHECK(i < n, "%s: index %zu out of range [0, %zu)", fn, i, n);
  return MGC_EPHE_FIRST_KEY + i;
}

static mgc_value create(const char *fn, size_t nkeys) {
  struct mgc_dom *d = mgc_self_or_fatal(fn);
  MGC_CHECK(nkeys >= 1 && nkeys <= MGC_EPHE_MAX_KEYS,
            "%s: %zu keys is out of range [1, %zu]", fn, nkeys,
            (size_t)MGC_EPHE_MAX_KEYS);
  size_t size = nkeys + MGC_EPHE_FIRST_KEY;
  mgc_value e = mgc_alloc_major(d, size, MGC_TAG_ABSTRACT, 0, false);
  for (size_t i = MGC_EPHE_DATA_OFFSET; i < size; i++)
    STORE_RELAXED(field_ptr(e, i), (word)NONE);
  /* Created during the cycle's marking: born MARKED, on the live list
     (its data is set by the mutator, which holds it: nothing for the
     rounds to do).  Created before the mark start: born UNMARKED, on the
     live list, which the mark start makes the todo list. */
  LINK(e) = d->ephe.live;
  d->ephe.live = e;
  return mgc_check_urgent_gc(d, e);
}

/* Stores v; a young v is recorded unless the slot held a young value
   already (then some domain's table has the slot, DESIGN §3.4). */
static void do_set(struct mgc_dom *d, mgc_value e, size_t off, mgc_value v) {
  aword *s = field_ptr(e, off);
  mgc_value old = (mgc_value)LOAD_RELAXED(s);
  /* Release: whoever reads v from here sees the block as initialised. */
  STORE_RELEASE(s, (word)v);
  if (IS_YOUNG_BLOCK(v) && !IS_YOUNG_BLOCK(old))
    remember_young(d, e, off);
}

/* Reads a slot for the program: NONE, or a value the collector will not
   free in this cycle (darkened: invariant 34). */
static int get_field(struct mgc_dom *d, mgc_value e, size_t off,
                     mgc_value *out) {
  mgc_value v = (mgc_value)LOAD_ACQUIRE(field_ptr(e, off));
  if (v == NONE)
    return 0;
  mgc_darken(d, v);
  if (out)
    *out = v;
  return 1;
}

mgc_value mgc_ephe_create(size_t nkeys) {
  return create("mgc_ephe_create", nkeys);
}

mgc_value mgc_weak_create(size_t n) { return create("mgc_weak_create", n); }

size_t mgc_ephe_num_keys(mgc_value e) {
  return checked_keys("mgc_ephe_num_keys", e);
}

/* The key slots, shared by the ephemeron and weak array calls; fn names
   the call in error messages. */
static void key_set(const char *fn, mgc_value e, size_t i, mgc_value k) {
  struct mgc_dom *d = mgc_self_or_fatal(fn);
  size_t off = checked_key_offset(fn, e, i);
  MGC_CHECK(k != 0, "%s: NULL is not a value", fn);
  clean_key(d, e, off);
  do_set(d, e, off, k);
}

static int key_get(const char *fn, mgc_value e, size_t i, mgc_value *out) {
  struct mgc_dom *d = mgc_self_or_fatal(fn);
  size_t off = checked_key_offset(fn, e, i);
  clean_key(d, e, off);
  return get_field(d, e, off, out);
}

static int key_check(const char *fn, mgc_value e, size_t i) {
  struct mgc_dom *d = mgc_self_or_fatal(fn);
  size_t off = checked_key_offset(fn, e, i);
  clean_key(d, e, off);
  return (mgc_value)LOAD_ACQUIRE(field_ptr(e, off)) != NONE;
}

void mgc_ephe_set_key(mgc_value e, size_t i, mgc_value k) {
  key_set("mgc_ephe_set_key", e, i, k);
}

void mgc_ephe_unset_key(mgc_value e, size_t i) {
  key_set("mgc_ephe_unset_key", e, i, NONE);
}

int mgc_ephe_get_key(mgc_value e, size_t i, mgc_value *out) {
  return key_get("mgc_ephe_get_key", e, i, out);
}

int mgc_ephe_check_key(mgc_value e, size_t i) {
  return key_check("mgc_ephe_check_key", e, i);
}

void mgc_ephe_set_data(mgc_value e, mgc_value v) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_ephe_set_data");
  checked_keys("mgc_ephe_set_data", e);
  MGC_CHECK(v != 0, "mgc_ephe_set_data: NULL is not a value");
  clean_all(d, e);
  do_set(d, e, MGC_EPHE_DATA_OFFSET, v);
}

void mgc_ephe_unset_data(mgc_value e) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_ephe_unset_data");
  checked_keys("mgc_ephe_unset_data", e);
  clean_all(d, e);
  do_set(d, e, MGC_EPHE_DATA_OFFSET, NONE);
}

int mgc_ephe_get_data(mgc_value e, mgc_value *out) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_ephe_get_data");
  checked_keys("mgc_ephe_get_data", e);
  clean_all(d, e);
  return get_field(d, e, MGC_EPHE_DATA_OFFSET, out);
}

int mgc_ephe_check_data(mgc_value e) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_ephe_check_data");
  checked_keys("mgc_ephe_check_data", e);
  clean_all(d, e);
  return (mgc_value)LOAD_ACQUIRE(field_ptr(e, MGC_EPHE_DATA_OFFSET)) != NONE;
}

/* Copies len keys; both ephemerons are cleaned first, so no key copied
   during PHASE_SWEEP_EPHE is a dead one.  Keys need no darkening (they
   are weak). */
void mgc_ephe_blit_keys(mgc_value src, size_t si, mgc_value dst, size_t di,
                        size_t len) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_ephe_blit_keys");
  size_t ns = checked_keys("mgc_ephe_blit_keys", src);
  size_t nd = checked_keys("mgc_ephe_blit_keys", dst);
  MGC_CHECK(si <= ns && len <= ns - si && di <= nd && len <= nd - di,
            "mgc_ephe_blit_keys: ranges [%zu, +%zu) of %zu keys and "
            "[%zu, +%zu) of %zu keys out of bounds",
            si, len, ns, di, len, nd);
  if (len == 0)
    return;
  clean_all(d, src);
  clean_all(d, dst);
  size_t so = MGC_EPHE_FIRST_KEY + si, doff = MGC_EPHE_FIRST_KEY + di;
  if (src == dst && doff > so) {
    for (size_t k = len; k-- > 0;)
      do_set(d, dst, doff + k, (mgc_value)LOAD_ACQUIRE(field_ptr(src, so + k)));
  } else {
    for (size_t k = 0; k < len; k++)
      do_set(d, dst, doff + k, (mgc_value)LOAD_ACQUIRE(field_ptr(src, so + k)));
  }
}

/* The copied data is darkened: dst may be on a live list, never examined
   again in this cycle (ocaml #9391). */
void mgc_ephe_blit_data(mgc_value src, mgc_value dst) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_ephe_blit_data");
  checked_keys("mgc_ephe_blit_data", src);
  checked_keys("mgc_ephe_blit_data", dst);
  clean_all(d, src);
  clean_all(d, dst);
  mgc_value v = (mgc_value)LOAD_ACQUIRE(field_ptr(src, MGC_EPHE_DATA_OFFSET));
  if (v != NONE)
    mgc_darken(d, v);
  do_set(d, dst, MGC_EPHE_DATA_OFFSET, v);
}

size_t mgc_weak_length(mgc_value w) {
  return checked_keys("mgc_weak_length", w);
}

void mgc_weak_set(mgc_value w, size_t i, mgc_value v) {
  key_set("mgc_weak_set", w, i, v);
}

void mgc_weak_unset(mgc_value w, size_t i) {
  key_set("mgc_weak_unset", w, i, NONE);
}

int mgc_weak_get(mgc_value w, size_t i, mgc_value *out) {
  return key_get("mgc_weak_get", w, i, out);
}

int mgc_weak_check(mgc_value w, size_t i) {
  return key_check("mgc_weak_check", w, i);
}

/* ------------------------------------------------------------------------ */
/* Verifier                                                                 */
/* ------------------------------------------------------------------------ */

static void for_each_in(mgc_value l, void (*f)(void *, mgc_value), void *ctx) {
  for (; l; l = LINK(l))
    f(ctx, l);
}

void mgc_ephe_for_each(struct mgc_dom *d, void (*f)(void *, mgc_value),
                       void *ctx) {
  for_each_in(d->ephe.todo, f, ctx);
  for_each_in(d->ephe.live, f, ctx);
}

/* Compaction (STW): the list heads, links and fields of every ephemeron
   of a list; f may move the ephemeron itself, so each link is followed
   after it was updated. */
static void compact_list(mgc_value *head, mgc_root_action f, void *ctx) {
  for (mgc_value *slot = head; *slot;) {
    f(ctx, *slot, slot);
    mgc_value e = *slot;
    size_t n = MGC_WOSIZE_VAL(e);
    for (size_t i = 1; i < n; i++) {
      mgc_value *p = (mgc_value *)field_ptr(e, i);
      f(ctx, *p, p);
    }
    slot = &LINK(e);
  }
}

void mgc_ephe_compact_update(struct mgc_dom *d, mgc_root_action f, void *ctx) {
  MGC_ASSERT(d->ephe.cursor == NULL || d->ephe.todo == 0);
  compact_list(&d->ephe.todo, f, ctx);
  compact_list(&d->ephe.live, f, ctx);
}

void mgc_ephe_compact_update_orphans(mgc_root_action f, void *ctx) {
  mgc_value l = LOAD_RELAXED(&orphan_live);
  compact_list(&l, f, ctx);
  STORE_RELAXED(&orphan_live, l);
}

void mgc_ephe_for_each_orphan(void (*f)(void *, mgc_value), void *ctx) {
  for_each_in(LOAD_ACQUIRE(&orphan_live), f, ctx);
}
