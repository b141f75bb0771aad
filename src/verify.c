/* The heap verifier (DESIGN §6.12, §8.1).  Runs with the world stopped.
 *
 * Checks, on the whole heap:
 *   1  every even word reachable by the GC (fields of live blocks, roots)
 *      points to a well-formed block: a young block start, a pool slot
 *      start, a large block, an atom, or a NOT_MARKABLE block (39: not a
 *      continuation; its fields are not checked: the GC never reads them);
 *   2  heap blocks have wosize >= 1 (and fit their slot);
 *   4  infix pointers step back to a closure, infix headers lie before the
 *      closure's start of environment;
 *   6  young_start <= young_floor <= young_ptr <= young_end, and the minor
 *      heap parses;
 *   7  young_trigger is young_floor or a slice point: in the part in use,
 *      a whole number of young_slice_steps below young_end;
 *   10 every non-young field holding a young pointer is remembered;
 *   13 tables: base <= ptr <= limit <= end;
 *   14 generational roots are in the right set;
 *   26 no GARBAGE block in swept pools (anywhere, at a cycle end); no
 *      MARKED block in a pool not stamped with the cycle under way;
 *   29 pools are owned by the domain whose lists hold them;
 *   30 free slots have header 0 and the free list covers exactly them;
 *      the heap statistics equal a recount;
 *   ephemerons on the domains' lists are live Abstract blocks whose keys
 *      and data are empty, immediates or valid blocks, a young one being
 *      recorded in some ephe_ref table (invariant 10 for ephemerons);
 *   finalised values are valid blocks, the old ones and the queued ones
 *      not young.
 * At the end of a major cycle (before the colours rotate), marking must be
 * complete: every root, every field of a MARKED block, every finalised
 * value, and the data of every ephemeron whose keys are all alive is
 * MARKED (or not markable), and no ephemeron key is unmarked (cleaning
 * emptied the dead ones): invariants 33 and 35, and the proof that the
 * concurrent detection of the end of marking did not stop too early.
 * Fields of GARBAGE blocks are not checked (they may point to freed
 * blocks), nor, at a cycle end, the colours of UNMARKED blocks' fields
 * (they are dead).  Invariants about the collection in progress (15-25)
 * are checked by the collector itself in debug builds.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A set of non-zero words (open addressing). */
struct wset {
  word *keys;
  size_t cap;
  size_t count;
};

static void wset_add(struct wset *s, word k);

static void wset_grow(struct wset *s) {
  struct wset old = *s;
  s->cap = old.cap ? old.cap * 2 : 1024;
  s->keys = mgc_xcalloc(s->cap, sizeof(word), "verifier");
  s->count = 0;
  for (size_t i = 0; i < old.cap; i++)
    if (old.keys[i])
      wset_add(s, old.keys[i]);
  free(old.keys);
}

static size_t wset_hash(word k, size_t cap) {
  return (size_t)((k >> 3) * 0x9E3779B97F4A7C15u >> 11) & (cap - 1);
}

static void wset_add(struct wset *s, word k) {
  if (2 * (s->count + 1) > s->cap)
    wset_grow(s);
  size_t i = wset_hash(k, s->cap);
  while (s->keys[i] && s->keys[i] != k)
    i = (i + 1) & (s->cap - 1);
  if (!s->keys[i]) {
    s->keys[i] = k;
    s->count++;
  }
}

static bool wset_has(const struct wset *s, word k) {
  if (!s->cap)
    return false;
  size_t i = wset_hash(k, s->cap);
  while (s->keys[i]) {
    if (s->keys[i] == k)
      return true;
    i = (i + 1) & (s->cap - 1);
  }
  return false;
}

struct verifier {
  struct wset pools;      /* pool base addresses */
  struct wset large;      /* large block header addresses */
  struct wset young;      /* young block values */
  struct wset remembered; /* remembered field addresses */
  struct wset ephe_slots; /* ephemeron fields in ephe_ref tables */
  int errors;
  size_t pool_count;
  size_t large_words;
  bool cycle_end;        /* marking complete, sweeping complete */
  uint64_t stamp;        /* marks the stacks seen by this verification */
  struct mgc_dom *owner; /* pools being walked belong to this domain */
};

static void report(struct verifier *v, const char *fmt, ...) {
  v->errors++;
  if (v->errors > 20)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mgc: verify: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Is hp (a header address) the start of a live slot of a known pool? */
static bool pool_slot(struct verifier *vf, word *hp) {
  word base = (word)mgc_pool_of((word)hp);
  if (!wset_has(&vf->pools, base))
    return false;
  word *start, *end;
  size_t wh;
  mgc_pool_bounds((struct pool *)base, &start, &end, &wh);
  return hp >= start && hp < end && (size_t)(hp - start) % wh == 0;
}

/* Where a value was found; turned into text only when something is wrong
   (the verifier runs after every collection with V=1). */
struct where {
  const char *what; /* a root, or NULL for a field */
  mgc_value block;
  size_t field;
  bool young;
  bool need_marked; /* a major block found here must be MARKED */
};

#define DESCRIBE(w, buf)                                                       \
  char buf[112];                                                               \
  if ((w)->what)                                                               \
    snprintf(buf, sizeof buf, "%s", (w)->what);                                \
  else                                                                         \
    snprintf(buf, sizeof buf, "field %zu of %s block %p (tag %u)", (w)->field, \
             (w)->young ? "young" : "major", (void *)(w)->block,               \
             MGC_TAG_VAL((w)->block))

/* Invariant 1 for one value. */
static bool check_value(struct verifier *vf, mgc_value v,
                        const struct where *w) {
  if (MGC_IS_INT(v))
    return true;
  if (v == 0) {
    DESCRIBE(w, where);
    report(vf, "%s holds NULL", where);
    return false;
  }
  if (mgc_is_young(v)) {
    if (wset_has(&vf->young, (word)v))
      return true;
    word hd = LOAD_RELAXED(HDR_PTR(v));
    if (MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
      mgc_value c = v - (mgc_value)(MGC_WOSIZE_HD(hd) * WORD);
      if (wset_has(&vf->young, (word)c) && MGC_TAG_VAL(c) == MGC_TAG_CLOSURE)
        return true;
    }
    DESCRIBE(w, where);
    report(vf, "%s holds %p, not a young block start (invariant 1)", where,
           (void *)v);
    return false;
  }
  if (mgc_is_atom(v))
    return true;
  word *hp = (word *)v - 1;
  if (pool_slot(vf, hp) || wset_has(&vf->large, (word)hp)) {
    word hd = LOAD_RELAXED(AWORD(hp));
    const char *bad = NULL;
    if (MGC_TAG_HD(hd) == MGC_TAG_INFIX)
      bad = "an infix header at a block start";
    else if (hd == 0)
      bad = "a free slot (invariant 30)";
    else if (COLOUR_HD(hd) == mgc_colours.garbage)
      bad = "a GARBAGE block";
    else if (w->need_marked && COLOUR_HD(hd) != mgc_colours.marked)
      bad = "a block left unmarked at the end of marking";
    if (!bad)
      return true;
    DESCRIBE(w, where);
    report(vf, "%s points to %s: %p", where, bad, (void *)v);
    return false;
  }
  word hd = LOAD_RELAXED(AWORD(hp));
  if (MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
    mgc_value c = v - (mgc_value)(MGC_WOSIZE_HD(hd) * WORD);
    word *chp = (word *)c - 1;
    if ((pool_slot(vf, chp) || wset_has(&vf->large, (word)chp)) &&
        MGC_TAG_VAL(c) == MGC_TAG_CLOSURE) {
      if (!w->need_marked ||
          COLOUR_HD(LOAD_RELAXED(AWORD(chp))) == mgc_colours.marked)
        return true;
      DESCRIBE(w, where);
      report(vf,
             "%s: infix pointer %p into a closure left unmarked at the "
             "end of marking",
             where, (void *)v);
      return false;
    }
    DESCRIBE(w, where);
    report(vf, "%s: infix pointer %p does not lead to a closure (inv. 4)",
           where, (void *)v);
    return false;
  }
  if (COLOUR_HD(hd) == NOT_MARKABLE) {
    /* An atom-like block outside every heap (invariant 39): accepted, not
       descended into; a continuation there would make the marking
       protocol (which uses this colour as its lock) spin forever. */
    if (MGC_TAG_HD(hd) != MGC_TAG_CONT)
      return true;
    DESCRIBE(w, where);
    report(vf, "%s holds %p, an out-of-heap block of tag Cont (invariant 39)",
           where, (void *)v);
    return false;
  }
  DESCRIBE(w, where);
  report(vf, "%s holds %p, which is no block of the heap (invariant 1)", where,
         (void *)v);
  return false;
}

/* A stack's slots (invariants 1, 24b). */
struct stack_check {
  struct verifier *vf;
  mgc_value cont; /* 0 for a held stack */
  bool old;       /* inside an old continuation */
  bool need_marked;
};

static void check_stack_slot(void *ctx, mgc_value v, mgc_value *slot) {
  (void)slot;
  struct stack_check *sc = ctx;
  char what[96];
  snprintf(what, sizeof what, "a slot of the stack of continuation %p",
           (void *)sc->cont);
  struct where w = {what, 0, 0, false, sc->need_marked};
  check_value(sc->vf, v, &w);
  if (sc->old && IS_YOUNG_BLOCK(v))
    report(sc->vf,
           "the stack of old continuation %p holds young %p (invariant 24b)",
           (void *)sc->cont, (void *)v);
}

/* A stack is seen once per verification: in one continuation, or on the
   held list of its holder (invariant 24a). */
static bool stack_seen_once(struct verifier *vf, mgc_stack *s,
                            const char *where) {
  if (s->magic != STACK_MAGIC) {
    report(vf, "%s: %p is not a live stack (bad magic)", where, (void *)s);
    return false;
  }
  if (s->verify_stamp == vf->stamp) {
    report(vf,
           "%s: stack %p is also held or in another continuation "
           "(invariant 24a)",
           where, (void *)s);
    return false;
  }
  s->verify_stamp = vf->stamp;
  return true;
}

static void check_cont(struct verifier *vf, mgc_value k, bool young,
                       bool need_marked) {
  word f0 = (word)LOAD_RELAXED(AWORD(&MGC_FIELD(k, 0)));
  if (f0 == CONT_EMPTY)
    return;
  if (!(f0 & 1)) {
    report(vf, "continuation %p: field 0 %#lx is not a stack address + 1",
           (void *)k, (unsigned long)f0);
    return;
  }
  mgc_stack *s = mgc_cont_field_stack(f0);
  char where[64];
  snprintf(where, sizeof where, "continuation %p", (void *)k);
  if (!stack_seen_once(vf, s, where))
    return;
  if (s->state != STACK_IN_CONT || s->holder != NULL)
    report(vf,
           "continuation %p: its stack %p is in state %d, not inside a "
           "continuation (invariant 24a)",
           (void *)k, (void *)s, s->state);
  struct stack_check sc = {vf, k, !young, need_marked};
  mgc_stack_scan(s, check_stack_slot, &sc);
}

static void check_held_stacks(struct verifier *vf, struct mgc_dom *d) {
  for (mgc_stack *s = d->held_stacks.next; s != &d->held_stacks; s = s->next) {
    char where[64];
    snprintf(where, sizeof where, "domain %d's held stacks", d->id);
    if (!stack_seen_once(vf, s, where))
      return;
    if (s->state != STACK_HELD || s->holder != d)
      report(vf, "%s: stack %p in state %d held by %p (invariant 24a)", where,
             (void *)s, s->state, s->holder);
    if (s->next->prev != s)
      report(vf, "%s: list broken after %p", where, (void *)s);
  }
}

/* The fields of a block; young fields of a non-young block must be
   remembered (invariant 10). */
static void check_fields(struct verifier *vf, mgc_value v, word hd,
                         bool young) {
  unsigned tag = MGC_TAG_HD(hd);
  bool need_marked =
      vf->cycle_end && !young && COLOUR_HD(hd) == mgc_colours.marked;
  size_t sz = MGC_WOSIZE_HD(hd);
  if (tag == MGC_TAG_CONT) {
    if (sz != 2)
      report(vf, "continuation %p has %zu fields, not 2", (void *)v, sz);
    else
      check_cont(vf, v, young, need_marked);
    return;
  }
  if (tag >= MGC_TAG_NO_SCAN)
    return;
  size_t start = 0;
  if (tag == MGC_TAG_CLOSURE) {
    if (sz < 2) {
      report(vf, "closure %p has %zu fields", (void *)v, sz);
      return;
    }
    start = MGC_CLOSINFO_STARTENV(MGC_FIELD(v, 1));
    if (start > sz) {
      report(vf, "closure %p: start of env %zu beyond %zu fields", (void *)v,
             start, sz);
      return;
    }
    /* A word there is an infix header or a code pointer (any bits): only
       one whose offset could lie inside the prefix can be a header. */
    for (size_t i = 2; i < start; i++) {
      word f = (word)MGC_FIELD(v, i);
      if (MGC_TAG_HD(f) == MGC_TAG_INFIX && MGC_WOSIZE_HD(f) <= start &&
          MGC_WOSIZE_HD(f) != i + 1)
        report(vf,
               "closure %p: infix header at field %zu has offset %zu "
               "(invariant 4)",
               (void *)v, i, (size_t)MGC_WOSIZE_HD(f));
    }
  }
  for (size_t i = start; i < sz; i++) {
    mgc_value f = (mgc_value)LOAD_RELAXED(AWORD(&MGC_FIELD(v, i)));
    struct where w = {NULL, v, i, young, need_marked};
    check_value(vf, f, &w);
    if (!young && IS_YOUNG_BLOCK(f) &&
        !wset_has(&vf->remembered, (word)&MGC_FIELD(v, i))) {
      DESCRIBE(&w, where);
      report(vf, "%s holds young %p but is not remembered (invariant 10)",
             where, (void *)f);
    }
  }
}

static void check_major_block(struct verifier *vf, word *hp, size_t max_wh,
                              bool swept) {
  word hd = LOAD_RELAXED(AWORD(hp));
  mgc_value v = (mgc_value)(hp + 1);
  if (MGC_WOSIZE_HD(hd) == 0 || WHSIZE(MGC_WOSIZE_HD(hd)) > max_wh) {
    report(vf,
           "major block %p: size %zu does not fit its slot of %zu "
           "(invariant 2)",
           (void *)v, (size_t)MGC_WOSIZE_HD(hd), max_wh);
    return;
  }
  if (COLOUR_HD(hd) == mgc_colours.garbage) {
    if (swept || vf->cycle_end)
      report(vf, "GARBAGE block %p in a swept pool (invariant 26)", (void *)v);
    return;
  }
  if (MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
    report(vf, "major block %p has an infix header", (void *)v);
    return;
  }
  check_fields(vf, v, hd, false);
}

static void index_pool(void *data, struct pool *p, bool swept) {
  struct verifier *vf = data;
  (void)swept;
  wset_add(&vf->pools, (word)p);
  vf->pool_count++;
}

static void index_large(void *data, word *hp, bool swept) {
  struct verifier *vf = data;
  (void)swept;
  wset_add(&vf->large, (word)hp);
  vf->large_words += ((struct large *)hp - 1)->whsize;
}

static void check_pool(void *data, struct pool *p, bool swept) {
  struct verifier *vf = data;
  /* An adopted pool takes its owner when it is first swept. */
  if (p->owner != vf->owner && !(p->owner == NULL && !swept))
    report(vf, "pool %p owned by %p found in the lists of %p (inv. 29)",
           (void *)p, (void *)p->owner, (void *)vf->owner);
  if (p->cls == 0 || p->cls >= NUM_SIZE_CLASSES) {
    report(vf, "pool %p has a bad size class %u", (void *)p, p->cls);
    return;
  }
  if (p->whsize != mgc_class_whsize[p->cls]) {
    report(vf, "pool %p of class %u has slots of %u words, not %u", (void *)p,
           p->cls, p->whsize, (unsigned)mgc_class_whsize[p->cls]);
    return;
  }
  word *start, *end;
  size_t wh;
  mgc_pool_bounds(p, &start, &end, &wh);
  /* A block turns MARKED only in a pool stamped with the cycle under way
     (invariant 26): sweeping gives pools with old stamps back unread. */
  uint64_t stamp = atomic_load_explicit(&p->marked_cycle, memory_order_relaxed);
  if (stamp > mgc_colours.cycle)
    report(vf, "pool %p is stamped with cycle %llu, after %llu (inv. 26)",
           (void *)p, (unsigned long long)stamp,
           (unsigned long long)mgc_colours.cycle);
  size_t free_slots = 0;
  for (word *s = start; s < end; s += wh) {
    word hd = LOAD_RELAXED(AWORD(s));
    if (hd == 0) {
      free_slots++;
      continue;
    }
    if (stamp < mgc_colours.cycle && COLOUR_HD(hd) == mgc_colours.marked)
      report(vf,
             "MARKED block %p in pool %p, whose last stamp is cycle "
             "%llu of %llu (invariant 26)",
             (void *)(s + 1), (void *)p, (unsigned long long)stamp,
             (unsigned long long)mgc_colours.cycle);
    check_major_block(vf, s, wh, swept);
  }
  if (!swept)
    return;
  size_t listed = 0;
  for (word *f = p->free; f; f = (word *)f[1]) {
    if (f < start || f >= end || (size_t)(f - start) % wh != 0 ||
        LOAD_RELAXED(AWORD(f)) != 0) {
      report(vf, "pool %p: bad free-list entry %p (invariant 30)", (void *)p,
             (void *)f);
      return;
    }
    if (++listed > free_slots)
      break;
  }
  if (listed != free_slots)
    report(vf, "pool %p: %zu free slots but %zu on the free list (inv. 30)",
           (void *)p, free_slots, listed);
}

static void check_large(void *data, word *hp, bool swept) {
  check_major_block(data, hp, SIZE_MAX, swept);
}

static void check_minor_heap(struct verifier *vf, struct mgc_dom *d) {
  if (!(d->young_start <= d->young_floor &&
        d->young_floor <= d->fast.young_ptr &&
        d->fast.young_ptr <= d->young_end))
    report(vf, "domain %d: young_ptr outside its heap (invariant 6)", d->id);
  word step = d->young_slice_step;
  if (d->young_trigger != d->young_floor &&
      (step == 0 || d->young_trigger < d->young_floor ||
       d->young_trigger >= d->young_end ||
       (d->young_end - d->young_trigger) % step != 0))
    report(vf,
           "domain %d: young_trigger is neither a slice point nor the floor "
           "(invariant 7)",
           d->id);
  for (word *p = (word *)d->fast.young_ptr; p < (word *)d->young_end;) {
    word hd = *p;
    size_t sz = MGC_WOSIZE_HD(hd);
    if (sz == 0 || sz > MGC_MAX_YOUNG_WOSIZE ||
        p + 1 + sz > (word *)d->young_end || MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
      report(vf, "domain %d: minor heap does not parse at %p (header %#lx)",
             d->id, (void *)p, (unsigned long)hd);
      return;
    }
    wset_add(&vf->young, (word)(p + 1));
    p += 1 + sz;
  }
}

static void check_young_fields(struct verifier *vf, struct mgc_dom *d) {
  for (word *p = (word *)d->fast.young_ptr; p < (word *)d->young_end;) {
    word hd = *p;
    size_t sz = MGC_WOSIZE_HD(hd);
    if (sz == 0 || p + 1 + sz > (word *)d->young_end)
      return;
    check_fields(vf, (mgc_value)(p + 1), hd, true);
    p += 1 + sz;
  }
}

static void check_table(struct verifier *vf, struct mgc_dom *d,
                        struct mgc_table *t, const char *name) {
  if (!t->base)
    return;
  if (!(t->base <= t->ptr && t->ptr <= t->limit && t->limit <= t->end))
    report(vf, "domain %d: table %s out of bounds (invariant 13)", d->id, name);
}

static void check_root(void *ctx, mgc_value v, mgc_value *slot) {
  (void)slot;
  struct verifier *vf = ctx;
  struct where w = {"a local root", 0, 0, false, vf->cycle_end};
  check_value(vf, v, &w);
}

static bool check_global(void *ctx, mgc_value v, const char *what) {
  struct verifier *vf = ctx;
  struct where w = {what, 0, 0, false, vf->cycle_end};
  return check_value(vf, v, &w);
}

/* One ephemeron of a domain's lists. */
static void check_ephemeron(void *ctx, mgc_value e) {
  struct verifier *vf = ctx;
  word *hp = (word *)e - 1;
  if (!MGC_IS_BLOCK(e) || mgc_is_young(e) ||
      !(pool_slot(vf, hp) || wset_has(&vf->large, (word)hp))) {
    report(vf, "ephemeron list holds %p, not a major block", (void *)e);
    return;
  }
  word hd = LOAD_RELAXED(AWORD(hp));
  if (hd == 0 || MGC_TAG_HD(hd) != MGC_TAG_ABSTRACT ||
      MGC_WOSIZE_HD(hd) <= MGC_EPHE_FIRST_KEY ||
      COLOUR_HD(hd) == mgc_colours.garbage ||
      (vf->cycle_end && COLOUR_HD(hd) != mgc_colours.marked)) {
    report(vf, "ephemeron %p: bad header %#lx on its domain's list", (void *)e,
           (unsigned long)hd);
    return;
  }
  size_t size = MGC_WOSIZE_HD(hd);
  bool keys_alive = true;
  for (size_t i = MGC_EPHE_DATA_OFFSET; i < size; i++) {
    mgc_value f = (mgc_value)LOAD_RELAXED(AWORD(&MGC_FIELD(e, i)));
    if (f == MGC_EPHE_NONE || MGC_IS_INT(f))
      continue;
    bool is_data = i == MGC_EPHE_DATA_OFFSET;
    struct where w = {NULL, e, i, false, false};
    if (!check_value(vf, f, &w))
      continue;
    if (IS_YOUNG_BLOCK(f) &&
        !wset_has(&vf->ephe_slots, (word)&MGC_FIELD(e, i))) {
      report(vf,
             "ephemeron %p: young %s %p not in any ephemeron table "
             "(invariant 10)",
             (void *)e, is_data ? "data" : "key", (void *)f);
    } else if (!is_data && vf->cycle_end && !mgc_is_young(f) &&
               mgc_is_unmarked(f)) {
      keys_alive = false;
      report(vf,
             "ephemeron %p: dead key %p not emptied by the end of the "
             "cycle (DESIGN §6.8)",
             (void *)e, (void *)f);
    }
  }
  mgc_value data =
      (mgc_value)LOAD_RELAXED(AWORD(&MGC_FIELD(e, MGC_EPHE_DATA_OFFSET)));
  if (vf->cycle_end && keys_alive && data != MGC_EPHE_NONE &&
      MGC_IS_BLOCK(data) && !mgc_is_young(data) && mgc_is_unmarked(data))
    report(vf,
           "ephemeron %p: data %p unmarked though every key is alive "
           "(invariant 33)",
           (void *)e, (void *)data);
}

static void check_finalised(void *ctx, mgc_value v, bool queued, bool old) {
  struct verifier *vf = ctx;
  struct where w = {queued ? "a value waiting for its finaliser"
                           : "a finalised value",
                    0, 0, false, vf->cycle_end};
  if (!MGC_IS_BLOCK(v) || v == 0) {
    report(vf, "%s is %#lx, not a block", w.what, (unsigned long)v);
    return;
  }
  if (check_value(vf, v, &w) && old && mgc_is_young(v))
    report(vf, "%s %p is young in the old part of its table", w.what,
           (void *)v);
}

static void report_global(void *ctx, const char *msg) {
  report(ctx, "%s", msg);
}

static int verify_world(bool cycle_end) {
  struct verifier vf;
  memset(&vf, 0, sizeof vf);
  vf.cycle_end = cycle_end;
  /* Only one verification runs at a time (inside a STW section). */
  static uint64_t stamps;
  vf.stamp = ++stamps;
  int n = LOAD_RELAXED(&mgc_rt.n_participants);
  struct mgc_dom **parts = mgc_rt.participants;
  for (int i = 0; i < n; i++) {
    struct mgc_dom *d = parts[i];
    mgc_heap_for_each(d, index_pool, index_large, &vf);
    check_minor_heap(&vf, d);
    size_t cnt = mgc_table_count(&d->major_ref);
    for (size_t k = 0; k < cnt; k++)
      wset_add(&vf.remembered, (word)((mgc_value **)d->major_ref.base)[k]);
    cnt = mgc_table_count(&d->ephe_ref);
    struct ephe_ref_entry *er = (struct ephe_ref_entry *)d->ephe_ref.base;
    for (size_t k = 0; k < cnt; k++)
      wset_add(&vf.ephe_slots, (word)&MGC_FIELD(er[k].ephe, er[k].offset));
    check_table(&vf, d, &d->major_ref, "major_ref");
    check_table(&vf, d, &d->custom, "custom");
    check_table(&vf, d, &d->ephe_ref, "ephe_ref");
  }
  mgc_heap_for_each_orphan(index_pool, index_large, &vf);
  for (int i = 0; i < n; i++) {
    vf.owner = parts[i];
    mgc_heap_for_each(parts[i], check_pool, check_large, &vf);
    check_young_fields(&vf, parts[i]);
    mgc_scan_local_roots(parts[i], check_root, &vf, MGC_SCAN_FULL);
    check_held_stacks(&vf, parts[i]);
    mgc_ephe_for_each(parts[i], check_ephemeron, &vf);
    mgc_final_for_each(parts[i], check_finalised, &vf);
  }
  vf.owner = NULL;
  mgc_heap_for_each_orphan(check_pool, check_large, &vf);
  mgc_ephe_for_each_orphan(check_ephemeron, &vf);
  mgc_verify_global_roots_with(check_global, report_global, &vf);
  size_t expect = vf.pool_count * POOL_WORDS + vf.large_words;
  size_t heap = LOAD_RELAXED(&mgc_rt.heap_words);
  if (heap != expect)
    report(&vf, "heap_words is %zu but the pools and large blocks hold %zu",
           heap, expect);
  free(vf.pools.keys);
  free(vf.large.keys);
  free(vf.young.keys);
  free(vf.remembered.keys);
  free(vf.ephe_slots.keys);
  if (vf.errors > 20)
    fprintf(stderr, "mgc: verify: ... %d errors in all\n", vf.errors);
  return vf.errors ? -1 : 0;
}

/* Called by one domain while all are stopped, at a cycle end before the
   colours rotate: everything has been swept and marking is complete. */
int mgc_verify_from_stw(void) {
  int r = verify_world(true);
  if (r)
    mgc_fatal("heap verification failed at the end of a major cycle");
  return r;
}

/* Inside a minor collection's section (V=1 after it, level 3 also before):
   one domain verifies while the others wait at the barrier. */
void mgc_verify_in_stw(struct mgc_dom *d, int idx, int n) {
  (void)d;
  (void)idx;
  if (mgc_stw_barrier_begin(n)) {
    int r = verify_world(false);
    if (r)
      mgc_fatal("heap verification failed around a minor collection");
    mgc_stw_barrier_release();
  }
}

struct verify_request {
  int result;
};

static void stw_verify(struct mgc_dom *d, void *data, int idx, int n,
                       struct mgc_dom **parts) {
  (void)d;
  (void)idx;
  (void)parts;
  struct verify_request *r = data;
  if (mgc_stw_barrier_begin(n)) {
    r->result = verify_world(false);
    mgc_stw_barrier_release();
  }
}

int mgc_verify_heap(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_verify_heap");
  struct verify_request r = {0};
  while (!mgc_try_run_on_all_domains(d, stw_verify, &r, NULL)) {
  }
  mgc_reset_young_limit(d);
  return r.result;
}
