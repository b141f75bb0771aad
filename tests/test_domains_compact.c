/* test_domains_compact.c: compaction with several domains.
 *
 * mgc_compact is one stop-the-world pause in which every domain sweeps,
 * evacuates its own sparse pools and updates every pointer it owns (its
 * pools' fields, local roots, held fibers, continuations' stacks,
 * ephemerons, finaliser tables), a domain in a blocking section through
 * its backup thread (mgc.h, DESIGN.md section 6.11).
 *   part 1: three spawned domains and domain 0 each build a fragmented set
 *           of values (plain blocks of every size class and tags 0..9,
 *           strings, double arrays, closures held through an infix
 *           pointer, blocks pointing to a child), held in their own local
 *           roots, a rooted array of small (movable) chunks, a held fiber
 *           and a fiber inside a continuation, every fourth with a
 *           finaliser; they keep replacing, allocating garbage and checking
 *           them against their shadow while domain 0 calls mgc_compact
 *           again and again (and domain 1 now and then, concurrently).
 *           Every value stays exact, values are seen to move, the
 *           compaction count rises by at least the number of calls, and
 *           each finaliser runs once, after its value died, on an intact
 *           value.
 *   part 2: two domains hold such data and sit in a blocking section (one
 *           waits on a condition variable, one sleeps) while domain 0
 *           compacts three times: their backup threads sweep, evacuate and
 *           update their heaps; when they leave, their data is intact and
 *           has moved, and none of their kept values was finalised.
 *   part 3: cross-domain pointers: domain A publishes its blocks (made
 *           among garbage) in a shared block rooted globally; domain B
 *           copies them into its own rooted array; A keeps half of them
 *           only; domain 0, A or B (in turn) compacts; B's copies are
 *           still the very blocks the shared block holds (identity), with
 *           A's contents, and so are A's own.  Several rounds, in lockstep
 *           (barriers).
 *   part 4: a domain builds values among garbage, ephemerons (one key
 *           alive, one dead), a weak array and finalisers, publishes them
 *           in a rooted block and terminates; domain 0 compacts: its values
 *           are intact and moved, its ephemerons and weak array right, the
 *           adopted finalisers run once each, when their values die.
 * Values cross domains only through rooted blocks; shared C variables are
 * atomics or under a mutex.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>
#include <time.h>

#define SEED 424242u
#define MAXDOM 8
#define NWORK 3 /* spawned domains in part 1 */

static uint64_t seed;

static long scaled(long n, long min) {
  long v = test_scale(n);
  return v < min ? min : v;
}

static uint64_t compactions(void) {
  mgc_stats s;
  mgc_get_stats(&s);
  return s.compactions;
}

/* ------------------------------------------------------------------------ */
/* Values: every field derived from an id                                   */
/* ------------------------------------------------------------------------ */

#define PAT(id, i) MGC_VAL_INT((long)(id)*1000 + (long)(i))
#define WORDB ((mgc_value)sizeof(mgc_value))
#define INFIX_OFF 3
#define CLOS_ENV 5
/* Word-aligned addresses outside the heap standing for code pointers. */
static const mgc_value code_area[4] = {0, 0, 0, 0};
#define CODE(i) ((mgc_value)(uintptr_t)&code_area[i])

enum { K_PLAIN, K_STRING, K_DARRAY, K_CLOSURE, K_PARENT, NK };

static int v_kind(long id) { return (int)(id % NK); }
static size_t v_size(long id) { return 1 + (size_t)((id * 7) % 127); }
static size_t v_len(long id) { return v_size(id) * 8 - 1 - (size_t)(id % 7); }
static size_t clos_size(long id) { return 8 + (v_size(id) - 1) % 120; }
static unsigned char str_byte(long id, size_t i) {
  return (unsigned char)('a' + (unsigned long)(id * 5 + (long)i) % 26);
}
static double darr_of(long id, size_t i) {
  return (double)id + (double)i * 0.25;
}

/* A new value for id (young); the caller roots it at once. */
static mgc_value make_val(long id) {
  MGC_PARAM0;
  MGC_LOCAL2(v, c);
  size_t s = v_size(id), i;
  switch (v_kind(id)) {
  case K_PLAIN:
    v = mgc_alloc_small(s, (unsigned)(id % 10));
    MGC_FIELD(v, 0) = MGC_VAL_INT(id);
    for (i = 1; i < s; i++)
      MGC_FIELD(v, i) = PAT(id, i);
    break;
  case K_STRING:
    v = mgc_alloc_string(v_len(id));
    for (i = 0; i < v_len(id); i++)
      ((unsigned char *)v)[i] = str_byte(id, i);
    break;
  case K_DARRAY:
    v = mgc_alloc_double_array(s);
    for (i = 0; i < s; i++)
      mgc_store_double_field(v, i, darr_of(id, i));
    break;
  case K_CLOSURE:
    s = clos_size(id);
    v = mgc_alloc_small(s, MGC_TAG_CLOSURE);
    MGC_FIELD(v, 0) = CODE(0);
    MGC_FIELD(v, 1) = MGC_CLOSINFO(2, CLOS_ENV);
    MGC_FIELD(v, 2) = (mgc_value)MGC_MAKE_HEADER(INFIX_OFF, MGC_TAG_INFIX, 0);
    MGC_FIELD(v, 3) = CODE(2);
    MGC_FIELD(v, 4) = MGC_CLOSINFO(1, CLOS_ENV - INFIX_OFF);
    MGC_FIELD(v, 5) = MGC_VAL_INT(id);
    for (i = 6; i < s; i++)
      MGC_FIELD(v, i) = PAT(id, i);
    v += INFIX_OFF * WORDB; /* held through its infix pointer */
    break;
  default:
    c = mgc_alloc_small(2, 3);
    MGC_FIELD(c, 0) = MGC_VAL_INT(~id);
    MGC_FIELD(c, 1) = MGC_VAL_INT(id);
    if (s < 2)
      s = 2;
    v = mgc_alloc_small(s, 1);
    MGC_FIELD(v, 0) = MGC_VAL_INT(id);
    MGC_FIELD(v, 1) = c;
    for (i = 2; i < s; i++)
      MGC_FIELD(v, i) = PAT(id, i);
  }
  MGC_RETURN(v);
}

static int val_ok(mgc_value v, long id) {
  size_t s = v_size(id), i;
  mgc_value c;
  if (!MGC_IS_BLOCK(v) || v == 0)
    return 0;
  switch (v_kind(id)) {
  case K_PLAIN:
    if (MGC_TAG_VAL(v) != (unsigned)(id % 10) || MGC_WOSIZE_VAL(v) != s ||
        MGC_FIELD(v, 0) != MGC_VAL_INT(id))
      return 0;
    for (i = 1; i < s; i++)
      if (MGC_FIELD(v, i) != PAT(id, i))
        return 0;
    return 1;
  case K_STRING:
    if (MGC_TAG_VAL(v) != MGC_TAG_STRING || mgc_string_length(v) != v_len(id))
      return 0;
    for (i = 0; i < v_len(id); i++)
      if (((unsigned char *)v)[i] != str_byte(id, i))
        return 0;
    return 1;
  case K_DARRAY:
    if (MGC_TAG_VAL(v) != MGC_TAG_DOUBLE_ARRAY || MGC_WOSIZE_VAL(v) != s)
      return 0;
    for (i = 0; i < s; i++)
      if (MGC_DOUBLE_FIELD(v, i) != darr_of(id, i))
        return 0;
    return 1;
  case K_CLOSURE:
    if (MGC_TAG_VAL(v) != MGC_TAG_INFIX || MGC_WOSIZE_VAL(v) != INFIX_OFF)
      return 0;
    v -= INFIX_OFF * WORDB;
    s = clos_size(id);
    if (MGC_TAG_VAL(v) != MGC_TAG_CLOSURE || MGC_WOSIZE_VAL(v) != s ||
        MGC_FIELD(v, 0) != CODE(0) ||
        MGC_FIELD(v, 1) != MGC_CLOSINFO(2, CLOS_ENV) ||
        MGC_FIELD(v, 2) !=
            (mgc_value)MGC_MAKE_HEADER(INFIX_OFF, MGC_TAG_INFIX, 0) ||
        MGC_FIELD(v, 3) != CODE(2) ||
        MGC_FIELD(v, 4) != MGC_CLOSINFO(1, CLOS_ENV - INFIX_OFF) ||
        MGC_FIELD(v, 5) != MGC_VAL_INT(id))
      return 0;
    for (i = 6; i < s; i++)
      if (MGC_FIELD(v, i) != PAT(id, i))
        return 0;
    return 1;
  default:
    if (s < 2)
      s = 2;
    if (MGC_TAG_VAL(v) != 1 || MGC_WOSIZE_VAL(v) != s ||
        MGC_FIELD(v, 0) != MGC_VAL_INT(id))
      return 0;
    c = MGC_FIELD(v, 1);
    if (!MGC_IS_BLOCK(c) || MGC_TAG_VAL(c) != 3 || MGC_WOSIZE_VAL(c) != 2 ||
        MGC_FIELD(c, 0) != MGC_VAL_INT(~id) ||
        MGC_FIELD(c, 1) != MGC_VAL_INT(id))
      return 0;
    for (i = 2; i < s; i++)
      if (MGC_FIELD(v, i) != PAT(id, i))
        return 0;
    return 1;
  }
}

/* ------------------------------------------------------------------------ */
/* A domain's kept values and their shadow                                  */
/* ------------------------------------------------------------------------ */

#define NLOC 10 /* slots in local roots */
#define FSH 16  /* slots in the held fiber */
#define FSC 16  /* slots in the fiber inside a continuation */
#define CHK 32  /* fields per array chunk: small blocks, they move */
#define TR 2048 /* garbage kept in the trash array until it is dropped */

struct dom {
  int who;
  long n;          /* kept values */
  long *ids;       /* the id in each slot */
  uintptr_t *addr; /* where an old value was, 0 if unknown */
  mgc_value *loc[NLOC];
  mgc_value *arr;   /* a local root: a large block of chunks */
  mgc_value *trash; /* a local root: a large block, garbage */
  mgc_value *kont;  /* a local root: the continuation */
  mgc_fiber *held;
  mgc_fiber *cf; /* the continuation's fiber while taken, else NULL */
  long trash_n;
  long next_id;
  struct mt_rng rng;
  long checks, bad, moved, replaced, iterations;
  /* Finalisers on every fourth value: registered, run, run while the value
     was still kept, run on a broken value. */
  long fin_reg, fin_run, fin_early, fin_bad;
};

#define S_LOC 0
#define S_HELD NLOC
#define S_CONT (NLOC + FSH)
#define S_ARR (NLOC + FSH + FSC)

static mgc_value slot_get(struct dom *d, long i) {
  mgc_value ch;
  if (i < S_HELD)
    return *d->loc[i];
  if (i < S_CONT)
    return MGC_FIBER_SLOT(d->held, (size_t)(i - S_HELD));
  if (i < S_ARR)
    return d->cf ? MGC_FIBER_SLOT(d->cf, (size_t)(i - S_CONT)) : 0;
  ch = MGC_FIELD(*d->arr, (i - S_ARR) / CHK);
  return MGC_IS_BLOCK(ch) ? MGC_FIELD(ch, (i - S_ARR) % CHK) : 0;
}

/* v must not be live across an allocation: slot_set allocates only
   through make_chunk, before it reads v from the root it was put in. */
static void slot_set(struct dom *d, long i, mgc_value v) {
  if (i < S_HELD)
    *d->loc[i] = v;
  else if (i < S_CONT)
    MGC_FIBER_SLOT(d->held, (size_t)(i - S_HELD)) = v;
  else if (i < S_ARR) {
    if (d->cf)
      MGC_FIBER_SLOT(d->cf, (size_t)(i - S_CONT)) = v;
  } else
    mgc_modify(
        &MGC_FIELD(MGC_FIELD(*d->arr, (i - S_ARR) / CHK), (i - S_ARR) % CHK),
        v);
}

static long new_id(struct dom *d) {
  return (long)(d->who + 1) * 10000000L + d->next_id++;
}

/* Garbage like the value of a random id: into the trash (promoted with
   the kept values, dead once the trash is dropped) or nowhere. */
static void garbage(struct dom *d, long n, int to_trash) {
  MGC_PARAM0;
  MGC_LOCAL1(g);
  long j;
  for (j = 0; j < n; j++) {
    g = make_val(new_id(d));
    if (to_trash && d->trash_n < TR) {
      mgc_modify(&MGC_FIELD(*d->trash, d->trash_n), g);
      d->trash_n++;
    }
  }
  MGC_DROP;
}

static void trash_reset(struct dom *d) {
  mgc_value t = mgc_alloc(TR, 0); /* a large block: never moves */
  *d->trash = t;
  d->trash_n = 0;
}

/* A finaliser's record: run on the domain that registered it, at one of
   its safepoints. */
struct finrec {
  struct dom *d;
  long slot, id;
};

static void dom_fin(mgc_value v, void *data) {
  struct finrec *f = data;
  struct dom *d = f->d;
  d->fin_run++;
  if (d->ids[f->slot] == f->id)
    d->fin_early++;
  if (v_kind(f->id) == K_CLOSURE)
    v += INFIX_OFF * WORDB;
  if (!val_ok(v, f->id))
    d->fin_bad++;
  free(f);
}

/* A new value in slot i, among garbage. */
static void replace(struct dom *d, long i, int garbage_per_value) {
  MGC_PARAM0;
  MGC_LOCAL1(v);
  long id, before = (long)mt_below(&d->rng, (uint64_t)garbage_per_value + 1);
  garbage(d, before, 1);
  id = new_id(d); /* (after the garbage: ids of every kind) */
  v = make_val(id);
  slot_set(d, i, v);
  d->ids[i] = id;
  d->addr[i] = 0;
  if (id % 4 == 1) {
    struct finrec *f = malloc(sizeof *f);
    if (f == NULL)
      abort();
    f->d = d;
    f->slot = i;
    f->id = id;
    mgc_finalise(v_kind(id) == K_CLOSURE ? v - INFIX_OFF * WORDB : v, dom_fin,
                 f);
    d->fin_reg++;
  }
  garbage(d, garbage_per_value - before, 1);
  d->replaced++;
  MGC_DROP;
}

static void cont_take(struct dom *d) {
  if (d->cf == NULL) {
    d->cf = mgc_cont_take(*d->kont);
    d->checks++;
    if (d->cf == NULL || mgc_fiber_depth(d->cf) != FSC) {
      d->bad++;
      if (d->bad <= 5)
        MT_CHECK(0, "domain %d: its continuation taken back", d->who);
    }
    *d->kont = MGC_UNIT;
  }
}

static void cont_suspend(struct dom *d) {
  if (d->cf != NULL) {
    mgc_value k = mgc_cont_new(d->cf);
    *d->kont = k;
    d->cf = NULL;
  }
}

/* Checks every kept value; record: note where the old ones are; moved:
   count those still the same value at another address. */
static void check_all(struct dom *d, const char *where, int record) {
  long i;
  cont_take(d);
  for (i = 0; i < d->n; i++) {
    mgc_value v = slot_get(d, i);
    d->checks++;
    if (!val_ok(v, d->ids[i])) {
      d->bad++;
      if (d->bad <= 5)
        MT_CHECK(0, "domain %d, %s: slot %ld (id %ld, kind %d) broken", d->who,
                 where, i, d->ids[i], v_kind(d->ids[i]));
      continue;
    }
    if (d->addr[i] != 0 && d->addr[i] != (uintptr_t)v)
      d->moved++;
    if (record || d->addr[i] != 0)
      d->addr[i] = mgc_is_young(v) ? 0 : (uintptr_t)v;
  }
  cont_suspend(d);
}

/* Sets up the structures of d around the local roots of its caller, then
   fills every slot among garbage (trash dropped at the end). */
static void dom_build(struct dom *d, long n, int garbage_per_value) {
  long i, nch = n / CHK + 1;
  mgc_value a;
  d->n = S_ARR + n;
  d->ids = calloc((size_t)d->n, sizeof(long));
  d->addr = calloc((size_t)d->n, sizeof(uintptr_t));
  if (nch < 130)
    nch = 130; /* a large block */
  a = mgc_alloc((size_t)nch, 0);
  *d->arr = a;
  for (i = 0; i < nch; i++) {
    mgc_value ch = mgc_alloc(CHK, 0);
    mgc_modify(&MGC_FIELD(*d->arr, i), ch);
  }
  trash_reset(d);
  d->held = mgc_fiber_new(0);
  for (i = 0; i < FSH; i++)
    mgc_fiber_push(d->held, MGC_UNIT);
  d->cf = mgc_fiber_new(0);
  for (i = 0; i < FSC; i++)
    mgc_fiber_push(d->cf, MGC_UNIT);
  for (i = 0; i < d->n; i++) {
    if (d->trash_n >= TR - garbage_per_value - 1) {
      mgc_minor_collection(); /* the trash's garbage promoted first */
      trash_reset(d);
    }
    replace(d, i, garbage_per_value);
  }
  d->replaced = 0;
  cont_suspend(d);
  mgc_minor_collection();
  trash_reset(d);
  {
    long kinds[NK] = {0}, k, missing = 0;
    for (i = 0; i < d->n; i++)
      kinds[v_kind(d->ids[i])]++;
    for (k = 0; k < NK; k++)
      missing += kinds[k] == 0;
    MT_CHECK(missing == 0 && d->fin_reg > 0,
             "domain %d holds values of every kind (%ld kinds missing) and "
             "%ld with finalisers",
             d->who, missing, d->fin_reg);
  }
}

/* Drops every kept value: after a full major every finaliser has run,
   once, never early. */
static void dom_finish(struct dom *d, const char *part) {
  long i;
  cont_take(d);
  for (i = 0; i < d->n; i++) {
    slot_set(d, i, MGC_UNIT);
    d->ids[i] = 0;
  }
  *d->arr = MGC_UNIT;
  mgc_full_major();
  mgc_run_finalisers();
  MT_CHECK(d->fin_run == d->fin_reg && d->fin_early == 0 && d->fin_bad == 0 &&
               d->fin_reg > 0,
           "%s, domain %d: %ld finalisers registered, %ld ran (%ld while "
           "the value was kept, %ld on a broken value)",
           part, d->who, d->fin_reg, d->fin_run, d->fin_early, d->fin_bad);
}

static void dom_free(struct dom *d) {
  cont_take(d);
  if (d->cf)
    mgc_fiber_free(d->cf);
  mgc_fiber_free(d->held);
  d->cf = d->held = NULL;
  free(d->ids);
  free(d->addr);
}

/* A random step of a mutating domain. */
static void dom_step(struct dom *d) {
  long i = S_HELD + (long)mt_below(&d->rng, (uint64_t)(d->n - S_HELD));
  switch (mt_below(&d->rng, 8)) {
  case 0:
  case 1:
    if (i >= S_CONT && i < S_ARR)
      i -= FSC; /* (the continuation's slots change in check_all only) */
    replace(d, i, 3);
    break;
  case 2:
    i = (long)mt_below(&d->rng, NLOC);
    replace(d, i, 3);
    break;
  case 3:
    garbage(d, 8, 0);
    break;
  case 4:
    if (d->trash_n > TR - 64)
      trash_reset(d);
    else
      garbage(d, 4, 1);
    break;
  case 5: {
    long k;
    for (k = 0; k < 8; k++) {
      mgc_value v;
      i = S_HELD + (long)mt_below(&d->rng, (uint64_t)(d->n - S_HELD));
      if (i >= S_CONT && i < S_ARR)
        continue;
      v = slot_get(d, i);
      d->checks++;
      if (!val_ok(v, d->ids[i])) {
        d->bad++;
        if (d->bad <= 5)
          MT_CHECK(0, "domain %d: slot %ld (id %ld) broken", d->who, i,
                   d->ids[i]);
      }
    }
    break;
  }
  case 6:
    if (mt_below(&d->rng, 16) == 0)
      mgc_minor_collection();
    else
      mgc_poll();
    break;
  default:
    if (mt_below(&d->rng, 32) == 0)
      check_all(d, "step", 0);
  }
  d->iterations++;
}

static void dom_report(struct dom *d, const char *part) {
  MT_CHECK(d->bad == 0 && d->checks > 0,
           "%s, domain %d: %ld of %ld checks failed (%ld iterations, %ld "
           "values replaced, %ld seen moved)",
           part, d->who, d->bad, d->checks, d->iterations, d->replaced,
           d->moved);
}

/* ------------------------------------------------------------------------ */
/* Part 1: mutators while domain 0 compacts again and again                 */
/* ------------------------------------------------------------------------ */

static atomic_int p1_stop;
static atomic_long p1_ready;
static atomic_long p1_moved;
static atomic_long p1_iterations;

static mgc_value p1_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL5(l0, l1, l2, l3, l4);
  MGC_LOCAL5(l5, l6, l7, l8, l9);
  MGC_LOCAL3(arr, trash, kont);
  struct dom d;
  memset(&d, 0, sizeof d);
  d.who = (int)MGC_INT_VAL(arg);
  d.loc[0] = &l0, d.loc[1] = &l1, d.loc[2] = &l2, d.loc[3] = &l3;
  d.loc[4] = &l4, d.loc[5] = &l5, d.loc[6] = &l6, d.loc[7] = &l7;
  d.loc[8] = &l8, d.loc[9] = &l9;
  d.arr = &arr;
  d.trash = &trash;
  d.kont = &kont;
  mt_rng_seed(&d.rng, seed, (uint64_t)d.who + 1);
  dom_build(&d, scaled(2000, 60), 9);
  check_all(&d, "built", 1);
  atomic_fetch_add(&p1_ready, 1);
  while (!atomic_load_explicit(&p1_stop, memory_order_acquire)) {
    dom_step(&d);
    /* Domain 1 asks for compactions too, now and then, concurrently with
       domain 0's. */
    if (d.who == 1 && d.iterations % 5000 == 0)
      mgc_compact();
  }
  check_all(&d, "end", 0);
  atomic_fetch_add(&p1_moved, d.moved);
  atomic_fetch_add(&p1_iterations, d.iterations);
  dom_report(&d, "part 1");
  dom_finish(&d, "part 1");
  dom_free(&d);
  MGC_RETURN(MGC_VAL_INT(d.bad));
}

static void part1(void) {
  MGC_PARAM0;
  MGC_LOCAL5(l0, l1, l2, l3, l4);
  MGC_LOCAL5(l5, l6, l7, l8, l9);
  MGC_LOCAL4(arr, trash, kont, res);
  mgc_domain *w[NWORK];
  struct dom d;
  long k, rounds = scaled(60, 6), i;
  uint64_t c0, c1;
  atomic_store(&p1_stop, 0);
  atomic_store(&p1_ready, 0);
  atomic_store(&p1_moved, 0);
  atomic_store(&p1_iterations, 0);
  for (i = 0; i < NWORK; i++) {
    w[i] = mgc_domain_spawn(p1_body, MGC_VAL_INT(i + 1));
    if (!CHECK(w[i] != NULL, "part 1: spawn %ld (error %d)", i,
               mgc_last_error()))
      exit(check_mt_done());
  }
  memset(&d, 0, sizeof d);
  d.who = 0;
  d.loc[0] = &l0, d.loc[1] = &l1, d.loc[2] = &l2, d.loc[3] = &l3;
  d.loc[4] = &l4, d.loc[5] = &l5, d.loc[6] = &l6, d.loc[7] = &l7;
  d.loc[8] = &l8, d.loc[9] = &l9;
  d.arr = &arr;
  d.trash = &trash;
  d.kont = &kont;
  mt_rng_seed(&d.rng, seed, 0);
  dom_build(&d, scaled(2000, 60), 9);
  check_all(&d, "built", 1);
  mt_wait_at_least(&p1_ready, NWORK);
  c0 = compactions();
  for (k = 0; k < rounds; k++) {
    for (i = 0; i < 20; i++)
      dom_step(&d);
    mgc_compact();
    check_all(&d, "after a compaction", 0);
  }
  c1 = compactions();
  atomic_store_explicit(&p1_stop, 1, memory_order_release);
  for (i = 0; i < NWORK; i++) {
    res = mgc_domain_join(w[i]);
    MT_CHECK(res == MGC_VAL_INT(0), "part 1: domain %ld's result", i + 1);
  }
  atomic_fetch_add(&p1_moved, d.moved);
  dom_report(&d, "part 1");
  dom_finish(&d, "part 1");
  dom_free(&d);
  printf("part 1: %ld compactions, %llu counted, %ld values seen moved, %ld "
         "mutator steps\n",
         rounds, (unsigned long long)(c1 - c0), atomic_load(&p1_moved),
         atomic_load(&p1_iterations));
  MT_CHECK(c1 - c0 >= (uint64_t)rounds,
           "part 1: the compaction count rose by %llu for %ld calls",
           (unsigned long long)(c1 - c0), rounds);
  MT_CHECK(atomic_load(&p1_moved) > 0,
           "part 1: kept values moved (and were found intact) (%ld)",
           atomic_load(&p1_moved));
  MT_CHECK(mgc_verify_heap() == 0, "part 1: verify");
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 2: domains in blocking sections while domain 0 compacts             */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t p2_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t p2_cond = PTHREAD_COND_INITIALIZER;
static int p2_go; /* under p2_lock */
static atomic_int p2_sleep_stop;
static atomic_long p2_blocked;
static atomic_long p2_moved[2];

/* arg = [who, mode]: mode 0 waits on p2_cond, 1 sleeps. */
static mgc_value p2_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL5(l0, l1, l2, l3, l4);
  MGC_LOCAL5(l5, l6, l7, l8, l9);
  MGC_LOCAL3(arr, trash, kont);
  struct dom d;
  long mode = MGC_INT_VAL(MGC_FIELD(arg, 1));
  memset(&d, 0, sizeof d);
  d.who = (int)MGC_INT_VAL(MGC_FIELD(arg, 0));
  d.loc[0] = &l0, d.loc[1] = &l1, d.loc[2] = &l2, d.loc[3] = &l3;
  d.loc[4] = &l4, d.loc[5] = &l5, d.loc[6] = &l6, d.loc[7] = &l7;
  d.loc[8] = &l8, d.loc[9] = &l9;
  d.arr = &arr;
  d.trash = &trash;
  d.kont = &kont;
  mt_rng_seed(&d.rng, seed, (uint64_t)d.who + 100);
  dom_build(&d, scaled(2000, 150), 9);
  *d.trash = MGC_UNIT; /* the garbage is dead */
  check_all(&d, "built", 1);

  mgc_enter_blocking_section();
  atomic_fetch_add(&p2_blocked, 1);
  if (mode == 0) {
    pthread_mutex_lock(&p2_lock);
    while (!p2_go)
      pthread_cond_wait(&p2_cond, &p2_lock);
    pthread_mutex_unlock(&p2_lock);
  } else {
    struct timespec ts = {0, 1000000};
    while (!atomic_load_explicit(&p2_sleep_stop, memory_order_acquire))
      nanosleep(&ts, NULL);
  }
  mgc_leave_blocking_section();

  check_all(&d, "after the blocking section", 0);
  atomic_store(&p2_moved[mode], d.moved);
  dom_report(&d, mode ? "part 2 (sleeper)" : "part 2 (condition waiter)");
  MT_CHECK(d.moved > 0,
           "part 2: values of a blocked domain (mode %ld) moved by its "
           "backup thread and intact (%ld moved)",
           mode, d.moved);
  MT_CHECK(d.fin_early == 0,
           "part 2: no kept value of a blocked domain finalised (%ld)",
           d.fin_early);
  dom_finish(&d, "part 2");
  dom_free(&d);
  MGC_RETURN(MGC_VAL_INT(d.bad));
}

static void part2(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *w[2];
  long i, k;
  uint64_t c0;
  atomic_store(&p2_blocked, 0);
  atomic_store(&p2_sleep_stop, 0);
  pthread_mutex_lock(&p2_lock);
  p2_go = 0;
  pthread_mutex_unlock(&p2_lock);
  for (i = 0; i < 2; i++) {
    arg = mgc_alloc_small(2, 0);
    MGC_FIELD(arg, 0) = MGC_VAL_INT(10 + i);
    MGC_FIELD(arg, 1) = MGC_VAL_INT(i);
    w[i] = mgc_domain_spawn(p2_body, arg);
    if (!CHECK(w[i] != NULL, "part 2: spawn %ld", i))
      exit(check_mt_done());
  }
  mt_wait_at_least(&p2_blocked, 2);
  c0 = compactions();
  for (k = 0; k < 3; k++) {
    arg = mgc_alloc(1000, 0);
    mgc_compact();
  }
  MT_CHECK(compactions() >= c0 + 3 && atomic_load(&p2_blocked) == 2,
           "part 2: three compactions while both domains were blocked");
  pthread_mutex_lock(&p2_lock);
  p2_go = 1;
  pthread_cond_broadcast(&p2_cond);
  pthread_mutex_unlock(&p2_lock);
  atomic_store_explicit(&p2_sleep_stop, 1, memory_order_release);
  for (i = 0; i < 2; i++) {
    res = mgc_domain_join(w[i]);
    MT_CHECK(res == MGC_VAL_INT(0), "part 2: domain %ld's result", i);
  }
  printf("part 2: moved %ld (condition waiter), %ld (sleeper)\n",
         atomic_load(&p2_moved[0]), atomic_load(&p2_moved[1]));
  MT_CHECK(mgc_verify_heap() == 0, "part 2: verify");
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 3: cross-domain pointers                                            */
/* ------------------------------------------------------------------------ */

#define NX 96 /* slots of the shared block: small, it moves */

static mgc_value g_x = MGC_UNIT; /* classic global root */
static struct mt_barrier p3_bar;
static atomic_long p3_moved;
static long p3_rounds;

static long x_id(long round, long i) { return 50000000L + round * 1000 + i; }

/* arg: 0 = A (publishes), 1 = B (copies). */
static mgc_value p3_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL3(mine, trash, v);
  int role = (int)MGC_INT_VAL(arg);
  long round, i, bad = 0, checks = 0, moved = 0;
  uintptr_t addr[NX];
  struct dom g; /* for garbage only */
  memset(&g, 0, sizeof g);
  g.who = 20 + role;
  g.trash = &trash;
  mine = mgc_alloc(NX, 0);
  for (round = 0; round < p3_rounds; round++) {
    /* 1. A makes its blocks among garbage and publishes them. */
    if (role == 0) {
      trash_reset(&g);
      for (i = 0; i < NX; i++) {
        garbage(&g, 6, 1);
        v = make_val(x_id(round, i));
        mgc_modify(&MGC_FIELD(mine, i), v);
        mgc_modify(&MGC_FIELD(g_x, i), v);
        garbage(&g, 6, 1);
      }
      mgc_minor_collection();
      trash = MGC_UNIT;
      /* A keeps only the even ones. */
      for (i = 1; i < NX; i += 2)
        mgc_modify(&MGC_FIELD(mine, i), MGC_UNIT);
    }
    mt_barrier_wait(&p3_bar);
    /* 2. B copies them into its own rooted array. */
    if (role == 1) {
      mine = mgc_alloc(NX, 0); /* a new block: the old copies die */
      for (i = 0; i < NX; i++)
        mgc_modify(&MGC_FIELD(mine, i), MGC_FIELD(g_x, i));
      mgc_minor_collection();
      for (i = 0; i < NX; i++)
        addr[i] = (uintptr_t)MGC_FIELD(mine, i);
    }
    mt_barrier_wait(&p3_bar);
    /* 3. domain 0, A or B compacts. */
    if (round % 3 == role + 1)
      mgc_compact();
    mt_barrier_wait(&p3_bar);
    /* 4. Both check. */
    for (i = 0; i < NX; i++) {
      mgc_value x = MGC_FIELD(g_x, i), m = MGC_FIELD(mine, i);
      if (role == 0 && i % 2 == 1)
        continue;
      checks++;
      if (m != x || !val_ok(m, x_id(round, i))) {
        bad++;
        if (bad <= 5)
          MT_CHECK(0,
                   "part 3 round %ld: %s's slot %ld is %s the shared slot "
                   "(id %ld%s)",
                   round, role ? "B" : "A", i, m == x ? "" : "not",
                   x_id(round, i), val_ok(m, x_id(round, i)) ? "" : ", broken");
      }
      if (role == 1 && addr[i] != (uintptr_t)m)
        moved++;
    }
    mt_barrier_wait(&p3_bar);
  }
  MT_CHECK(bad == 0 && checks > 0,
           "part 3: domain %s, %ld rounds: %ld of %ld cross-domain values "
           "wrong",
           role ? "B" : "A", p3_rounds, bad, checks);
  if (role == 1)
    atomic_store(&p3_moved, moved);
  MGC_RETURN(MGC_VAL_INT(bad));
}

static void part3(void) {
  MGC_PARAM0;
  MGC_LOCAL1(res);
  mgc_domain *w[2];
  long round, i;
  uint64_t c0;
  p3_rounds = scaled(32, 3);
  atomic_store(&p3_moved, 0);
  g_x = mgc_alloc(NX, 0);
  mt_barrier_init(&p3_bar, 3);
  for (i = 0; i < 2; i++) {
    w[i] = mgc_domain_spawn(p3_body, MGC_VAL_INT(i));
    if (!CHECK(w[i] != NULL, "part 3: spawn %ld", i))
      exit(check_mt_done());
  }
  c0 = compactions();
  for (round = 0; round < p3_rounds; round++) {
    mt_barrier_wait(&p3_bar);
    mt_barrier_wait(&p3_bar);
    if (round % 3 == 0)
      mgc_compact();
    mt_barrier_wait(&p3_bar);
    mt_barrier_wait(&p3_bar);
  }
  for (i = 0; i < 2; i++) {
    res = mgc_domain_join(w[i]);
    MT_CHECK(res == MGC_VAL_INT(0), "part 3: domain %ld's result", i);
  }
  printf("part 3: %ld rounds, %ld of B's copies seen moved\n", p3_rounds,
         atomic_load(&p3_moved));
  MT_CHECK(compactions() >= c0 + (uint64_t)p3_rounds,
           "part 3: a compaction per round");
  MT_CHECK(atomic_load(&p3_moved) > 0,
           "part 3: cross-domain values moved (%ld)", atomic_load(&p3_moved));
  g_x = MGC_UNIT;
  MT_CHECK(mgc_verify_heap() == 0, "part 3: verify");
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 4: the data of a terminated domain                                  */
/* ------------------------------------------------------------------------ */

#define NX4 64
/* g_x4: slots 0..NX4-1 the values D made, then two ephemerons and a weak
   array D made. */
#define X4_E1 NX4
#define X4_E2 (NX4 + 1)
#define X4_W (NX4 + 2)

static mgc_value g_x4 = MGC_UNIT; /* classic global root */
static atomic_int p4_fin[2], p4_fin_bad;

static long x4_id(long i) { return 60000000L + i; }

static void p4_fin_cb(mgc_value v, void *data) {
  int k = (int)(intptr_t)data;
  if (!val_ok(v, x4_id(k ? 103 : 1)))
    atomic_fetch_add(&p4_fin_bad, 1);
  atomic_fetch_add(&p4_fin[k], 1);
}

/* D: values among garbage, ephemerons, a weak array and finalisers, all
   published in g_x4; then it terminates. */
static mgc_value p4_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL4(trash, v, k2, e);
  struct dom g; /* for garbage only */
  long i;
  memset(&g, 0, sizeof g);
  g.who = 30;
  g.trash = &trash;
  trash_reset(&g);
  for (i = 0; i < NX4; i++) {
    garbage(&g, 8, 1);
    v = make_val(x4_id(i));
    mgc_modify(&MGC_FIELD(g_x4, i), v);
    garbage(&g, 8, 1);
  }
  mgc_minor_collection();
  e = mgc_ephe_create(1);
  mgc_modify(&MGC_FIELD(g_x4, X4_E1), e);
  v = make_val(x4_id(100));
  mgc_ephe_set_key(MGC_FIELD(g_x4, X4_E1), 0, MGC_FIELD(g_x4, 0));
  mgc_ephe_set_data(MGC_FIELD(g_x4, X4_E1), v);
  e = mgc_ephe_create(1);
  mgc_modify(&MGC_FIELD(g_x4, X4_E2), e);
  k2 = make_val(x4_id(101));
  v = make_val(x4_id(102));
  mgc_ephe_set_key(MGC_FIELD(g_x4, X4_E2), 0, k2);
  mgc_ephe_set_data(MGC_FIELD(g_x4, X4_E2), v);
  e = mgc_weak_create(9);
  mgc_modify(&MGC_FIELD(g_x4, X4_W), e);
  for (i = 0; i < 8; i++)
    mgc_weak_set(MGC_FIELD(g_x4, X4_W), (size_t)i, MGC_FIELD(g_x4, i));
  mgc_weak_set(MGC_FIELD(g_x4, X4_W), 8, k2);
  mgc_finalise(MGC_FIELD(g_x4, 1), p4_fin_cb, (void *)(intptr_t)0);
  v = make_val(x4_id(103));
  mgc_finalise(v, p4_fin_cb, (void *)(intptr_t)1);
  trash = v = k2 = e = MGC_UNIT;
  MGC_RETURN(MGC_VAL_INT(0));
}

static void part4(void) {
  MGC_PARAM0;
  MGC_LOCAL1(res);
  mgc_domain *w;
  long i, bad = 0, moved = 0;
  uintptr_t addr[NX4];
  mgc_value x, d;
  atomic_store(&p4_fin[0], 0);
  atomic_store(&p4_fin[1], 0);
  atomic_store(&p4_fin_bad, 0);
  g_x4 = mgc_alloc(NX4 + 3, 0);
  w = mgc_domain_spawn(p4_body, MGC_UNIT);
  if (!CHECK(w != NULL, "part 4: spawn"))
    exit(check_mt_done());
  res = mgc_domain_join(w);
  MT_CHECK(res == MGC_VAL_INT(0), "part 4: the domain's result");
  mgc_minor_collection();
  for (i = 0; i < NX4; i++)
    addr[i] = (uintptr_t)MGC_FIELD(g_x4, i);
  mgc_compact();
  MT_CHECK(mgc_verify_heap() == 0, "part 4: verify after the compaction");
  for (i = 0; i < NX4; i++) {
    x = MGC_FIELD(g_x4, i);
    bad += !val_ok(x, x4_id(i));
    moved += addr[i] != (uintptr_t)x;
  }
  printf("part 4: %ld of %d values of the terminated domain moved\n", moved,
         NX4);
  MT_CHECK(bad == 0,
           "part 4: %ld of %d values of a terminated domain broken after "
           "the compaction",
           bad, NX4);
  MT_CHECK(moved > 0,
           "part 4: the terminated domain's sparse pools were compacted "
           "(%ld values moved)",
           moved);
  x = 0;
  d = 0;
  MT_CHECK(mgc_ephe_get_key(MGC_FIELD(g_x4, X4_E1), 0, &x) &&
               x == MGC_FIELD(g_x4, 0) &&
               mgc_ephe_get_data(MGC_FIELD(g_x4, X4_E1), &d) &&
               val_ok(d, x4_id(100)),
           "part 4: the terminated domain's ephemeron with a live key keeps "
           "its key and data");
  MT_CHECK(!mgc_ephe_check_key(MGC_FIELD(g_x4, X4_E2), 0) &&
               !mgc_ephe_check_data(MGC_FIELD(g_x4, X4_E2)),
           "part 4: its ephemeron with a dead key is emptied");
  for (i = 0, bad = 0; i < 8; i++) {
    x = 0;
    bad += !mgc_weak_get(MGC_FIELD(g_x4, X4_W), (size_t)i, &x) ||
           x != MGC_FIELD(g_x4, i);
  }
  MT_CHECK(bad == 0 && !mgc_weak_check(MGC_FIELD(g_x4, X4_W), 8),
           "part 4: its weak array: live slots are the same blocks (%ld "
           "wrong), the dead one is empty",
           bad);
  MT_CHECK(atomic_load(&p4_fin[0]) == 0 && atomic_load(&p4_fin[1]) <= 1,
           "part 4: its finalisers: none for the live value (%d), at most "
           "one for the dead one (%d)",
           atomic_load(&p4_fin[0]), atomic_load(&p4_fin[1]));
  mgc_full_major();
  mgc_run_finalisers();
  MT_CHECK(atomic_load(&p4_fin[1]) == 1,
           "part 4: the adopted finaliser of the dead value ran once (%d)",
           atomic_load(&p4_fin[1]));
  mgc_modify(&MGC_FIELD(g_x4, 1), MGC_UNIT);
  mgc_compact();
  mgc_run_finalisers();
  MT_CHECK(atomic_load(&p4_fin[0]) == 1 && atomic_load(&p4_fin_bad) == 0,
           "part 4: once dropped, the other value is finalised once (%d), "
           "intact",
           atomic_load(&p4_fin[0]));
  g_x4 = MGC_UNIT;
  MGC_DROP;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void timed(const char *name, void (*f)(void)) {
  double t0 = now_s();
  f();
  printf("%s: %.2fs\n", name, now_s() - t0);
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(300);
  setvbuf(stdout, NULL, _IOLBF, 0);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = MAXDOM;
  p.minor_heap_words = 32768;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  mgc_register_global_root(&g_x);
  mgc_register_global_root(&g_x4);
  timed("part 1: mutators and repeated compactions", part1);
  timed("part 2: blocked domains", part2);
  timed("part 3: cross-domain pointers", part3);
  timed("part 4: a terminated domain's data", part4);
  mgc_remove_global_root(&g_x);
  mgc_remove_global_root(&g_x4);
  mgc_shutdown();
  return check_mt_done();
}
