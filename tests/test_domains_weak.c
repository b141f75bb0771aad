/* test_domains_weak.c: ephemerons, weak arrays and finalisers across domains.
 *
 * The rules (mgc.h "Weak values" and "Finalisers", OCaml 5.2's semantics):
 * an ephemeron's data lives only while the ephemeron and all its keys live;
 * a dead key empties its slot and the data; young keys and data stored into
 * an (always old) ephemeron are promoted by minor collections and only the
 * major GC decides death; when mgc_full_major returns, every key or weak
 * slot whose value was unreachable at the call is empty, for every domain,
 * and every finaliser of such a value registered by the calling domain has
 * run.  Finalisers run once, on the domain that registered them, at its
 * safepoints; those of a terminated domain are adopted by another domain.
 * Domain ids (mgc_domain_self) are never reused, slot indexes
 * (mgc_domain_index) are.
 *
 *   part 1: domain A creates ephemerons and a weak array and publishes them
 *           in a shared old block; domain B stores young keys and data into
 *           them (some data referencing its own key, some keys immediate,
 *           some ephemerons with two keys) and keeps some keys in a root;
 *           collections are forced from A, B or C.  Kept keys keep the data
 *           for everybody; after B drops keys and anybody calls
 *           mgc_full_major, their slots and data are empty for everybody.
 *   part 2: OCaml's ephetest_par.ml: the seven ephetest cases on four
 *           domains at once, with real checks (values, emptiness).
 *   part 3: OCaml's weaktest_par_load.ml (issue 11749): a domain unsets a
 *           weak slot while another reads it, then a long set/unset loop
 *           against a reader while a third domain collects: the reader sees
 *           the slot empty or exactly the original value.
 *   part 4: OCaml's finaliser_handover.ml: four domains register both kinds
 *           of finalisers on trees, then terminate; every finaliser runs
 *           exactly once (first-kind before last-kind), the trees intact.
 *           And finaliser2.ml's test3: a joined domain's finalisers are
 *           adopted and run by the parent, first-kind first.
 *   part 5: while a domain lives, its finalisers run on it; a young value
 *           with only finalise_last dying young is finalised at the end of
 *           the next mgc_minor_collection.
 *   part 6: three rounds of three domains: ids distinct, never reused;
 *           indexes below max_domains and reused.
 *   part 7: a domain sleeping in a blocking section while another allocates
 *           heavily with ephemerons and finalisers: major cycles complete,
 *           the sleeper's ephemerons are cleaned (by its backup thread), its
 *           finalisers wait for it and run when it comes back.
 *   part 8: a weak hash table per domain (buckets of ephemeron cells) keyed
 *           by young values shared by the other domains, random operations
 *           against a shadow model, checked after full majors (seed
 *           printed).
 *   part 9: the heap verifies, and the major stop-the-world pauses were
 *           measured.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"
#include "tally.h"

#include <stdio.h>
#include <time.h>

#define SEED 20240611u
#define MAXDOM 5
#define G_SLOTS 32

static uint64_t seed;
static mgc_value g_shared = MGC_UNIT; /* classic root: old block, G_SLOTS */
static struct mt_barrier bar;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static long scaled(long n, long min) {
  long r = test_scale(n);
  return r < min ? min : r;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void gset(int i, mgc_value v) { mgc_modify(&MGC_FIELD(g_shared, i), v); }
static mgc_value gget(int i) { return MGC_FIELD(g_shared, i); }

static void clear_shared(void) {
  int i;
  for (i = 0; i < G_SLOTS; i++)
    gset(i, MGC_UNIT);
}

/* A young block [n]. */
static mgc_value box(long n) {
  mgc_value b = mgc_alloc_small(1, 0);
  MGC_FIELD(b, 0) = MGC_VAL_INT(n);
  return b;
}

static int box_is(mgc_value b, long n) {
  return MGC_IS_BLOCK(b) && b != MGC_EPHE_NONE && MGC_WOSIZE_VAL(b) == 1 &&
         MGC_TAG_VAL(b) == 0 && MGC_FIELD(b, 0) == MGC_VAL_INT(n);
}

static mgc_value pair(mgc_value a, mgc_value b) {
  MGC_PARAM2(a, b);
  mgc_value p = mgc_alloc_small(2, 0);
  MGC_FIELD(p, 0) = a;
  MGC_FIELD(p, 1) = b;
  MGC_RETURN(p);
}

static void force(int kind) {
  if (kind == 0)
    mgc_minor_collection();
  else if (kind == 1) {
    mgc_minor_collection();
    mgc_major_slice(0);
  } else if (kind == 2)
    mgc_full_major();
}

/* ------------------------------------------------------------------------ */
/* Part 1: keys young in B, ephemerons old from A                           */
/* ------------------------------------------------------------------------ */

#define P1_NE 8 /* ephemerons */
#define P1_NW 8 /* weak array slots */
#define P1_NHELD (2 * P1_NE + P1_NW)
#define S1_E 0
#define S1_W P1_NE
#define S1_HELD (P1_NE + 1)
#define DOM_A 0
#define DOM_B 1
#define P1_NDOM 3

static long p1_iters;

/* Ephemeron kinds by index: 0 one young key, 1 two young keys, 2 an
   immediate key (always alive), 3 data referencing its own key. */
static int p1_kind(int i) { return i % 4; }
static int p1_nkeys(int i) { return p1_kind(i) == 1 ? 2 : 1; }
static int p1_slot(int i, int j) { return 2 * i + j; }
static long p1_key_id(long it, int i, int j) { return it * 100 + 2 * i + j; }
static long p1_data_id(long it, int i) { return -(it * 100 + i) - 1; }
static long p1_weak_id(long it, int j) { return it * 100 + 50 + j; }
static int p1_droppable(int s) {
  return s >= 2 * P1_NE || (p1_kind(s / 2) != 2 && s % 2 < p1_nkeys(s / 2));
}

struct p1_plan {
  int kind;  /* collection after the stores: as force() */
  int coll1; /* who forces it */
  int coll2; /* who calls mgc_full_major after the drops */
  uint32_t drop;
};

static void p1_draw(struct mt_rng *r, struct p1_plan *p) {
  uint64_t k = mt_below(r, 8);
  p->kind = k < 4 ? 0 : k < 6 ? 1 : k < 7 ? 2 : 3;
  p->coll1 = (int)mt_below(r, P1_NDOM);
  p->coll2 = (int)mt_below(r, P1_NDOM);
  p->drop = (uint32_t)mt_rand(r) & ((1u << P1_NHELD) - 1);
}

/* A: fresh ephemerons and weak array, in the shared block. */
static void p1_create(void) {
  int i;
  for (i = 0; i < P1_NE; i++)
    gset(S1_E + i, mgc_ephe_create((size_t)p1_nkeys(i)));
  gset(S1_W, mgc_weak_create(P1_NW));
}

/* B: young keys and data into A's ephemerons, keys held in `held` (a young
   block published in the shared block).  Returns how many keys were young
   when stored. */
static long p1_fill(long it) {
  MGC_PARAM0;
  MGC_LOCAL3(held, k, d);
  long young = 0;
  int i, j;
  held = mgc_alloc(P1_NHELD, 0);
  gset(S1_HELD, held);
  for (i = 0; i < P1_NE; i++) {
    for (j = 0; j < p1_nkeys(i); j++) {
      if (p1_kind(i) == 2) {
        k = MGC_VAL_INT(p1_key_id(it, i, j));
      } else {
        k = box(p1_key_id(it, i, j));
        young += mgc_is_young(k);
        mgc_modify(&MGC_FIELD(held, p1_slot(i, j)), k);
      }
      mgc_ephe_set_key(gget(S1_E + i), (size_t)j, k);
    }
    if (p1_kind(i) == 3)
      d = pair(MGC_VAL_INT(p1_data_id(it, i)), k);
    else
      d = box(p1_data_id(it, i));
    mgc_ephe_set_data(gget(S1_E + i), d);
  }
  for (j = 0; j < P1_NW; j++) {
    k = box(p1_weak_id(it, j));
    young += mgc_is_young(k);
    mgc_modify(&MGC_FIELD(held, 2 * P1_NE + j), k);
    mgc_weak_set(gget(S1_W), (size_t)j, k);
  }
  MGC_DROP;
  return young;
}

/* Everybody: the contents as the rules say, given the dropped keys (0: none
   dropped).  Allocates nothing. */
static void p1_check(struct tally *t, long it, uint32_t dropped,
                     int collected) {
  mgc_value held = gget(S1_HELD), e, w, k = MGC_UNIT, d = MGC_UNIT;
  int i, j;
  for (i = 0; i < P1_NE; i++) {
    int all_alive = 1;
    e = gget(S1_E + i);
    for (j = 0; j < p1_nkeys(i); j++) {
      int s = p1_slot(i, j);
      int imm = p1_kind(i) == 2;
      int alive = imm || !((dropped >> s) & 1);
      if (alive) {
        mgc_value want =
            imm ? MGC_VAL_INT(p1_key_id(it, i, j)) : MGC_FIELD(held, s);
        int got = mgc_ephe_get_key(e, (size_t)j, &k);
        EXPECT(t,
               got && k == want && (imm || box_is(k, p1_key_id(it, i, j))) &&
                   (imm || !collected || !mgc_is_young(k)),
               "it %ld: key %d.%d held by B is present and right (got %d)", it,
               i, j, got);
      } else {
        all_alive = 0;
        EXPECT(t,
               !mgc_ephe_check_key(e, (size_t)j) &&
                   !mgc_ephe_get_key(e, (size_t)j, NULL),
               "it %ld: key %d.%d dropped by B is empty after a full major", it,
               i, j);
      }
    }
    if (all_alive) {
      int got = mgc_ephe_get_data(e, &d);
      EXPECT(t,
             got && MGC_IS_BLOCK(d) &&
                 MGC_FIELD(d, 0) == MGC_VAL_INT(p1_data_id(it, i)) &&
                 (p1_kind(i) != 3 ||
                  MGC_FIELD(d, 1) == MGC_FIELD(held, p1_slot(i, 0))),
             "it %ld: data %d of live keys is present and right (got %d)", it,
             i, got);
    } else {
      EXPECT(t, !mgc_ephe_check_data(e) && !mgc_ephe_get_data(e, NULL),
             "it %ld: data %d (kind %d) of a dead key is empty", it, i,
             p1_kind(i));
    }
  }
  w = gget(S1_W);
  for (j = 0; j < P1_NW; j++) {
    int s = 2 * P1_NE + j;
    if (!((dropped >> s) & 1)) {
      int got = mgc_weak_get(w, (size_t)j, &k);
      EXPECT(t, got && k == MGC_FIELD(held, s) && box_is(k, p1_weak_id(it, j)),
             "it %ld: weak slot %d held by B is present (got %d)", it, j, got);
    } else {
      EXPECT(t,
             !mgc_weak_check(w, (size_t)j) && !mgc_weak_get(w, (size_t)j, NULL),
             "it %ld: weak slot %d dropped by B is empty", it, j);
    }
  }
}

static mgc_value p1_body(mgc_value arg) {
  int self = (int)MGC_INT_VAL(arg);
  struct mt_rng rng;
  struct p1_plan p;
  struct tally t = {0, 0};
  long it, young = 0;
  int s;
  mt_rng_seed(&rng, seed, 1);
  for (it = 0; it < p1_iters; it++) {
    p1_draw(&rng, &p);
    if (self == DOM_A)
      p1_create();
    mt_barrier_wait(&bar);
    if (self == DOM_B)
      young += p1_fill(it);
    mt_barrier_wait(&bar);
    if (self == p.coll1)
      force(p.kind);
    mt_barrier_wait(&bar);
    p1_check(&t, it, 0, p.kind != 3);
    mt_barrier_wait(&bar);
    if (self == DOM_B)
      for (s = 0; s < P1_NHELD; s++)
        if (((p.drop >> s) & 1) && p1_droppable(s))
          mgc_modify(&MGC_FIELD(gget(S1_HELD), s), MGC_UNIT);
    mt_barrier_wait(&bar);
    if (self == p.coll2)
      mgc_full_major();
    mt_barrier_wait(&bar);
    p1_check(&t, it, p.drop, 1);
    mt_barrier_wait(&bar);
  }
  tally_report(&t, "part 1 (young keys into another domain's ephemerons)",
               self);
  return MGC_VAL_INT(young);
}

static void part1(void) {
  mgc_domain *d[P1_NDOM];
  long young = 0;
  int i;
  p1_iters = scaled(300, 3);
  mt_barrier_init(&bar, P1_NDOM);
  for (i = 1; i < P1_NDOM; i++) {
    d[i] = mgc_domain_spawn(p1_body, MGC_VAL_INT(i));
    if (!CHECK(d[i] != NULL, "part 1: spawn %d: error %d", i, mgc_last_error()))
      exit(check_done());
  }
  p1_body(MGC_VAL_INT(DOM_A));
  for (i = 1; i < P1_NDOM; i++) {
    mgc_value r = mgc_domain_join(d[i]);
    if (i == DOM_B)
      young = MGC_INT_VAL(r);
  }
  MT_CHECK(young > 0, "part 1: B's keys were young when stored (%ld)", young);
  clear_shared();
}

/* ------------------------------------------------------------------------ */
/* Part 2: ephetest_par.ml                                                  */
/* ------------------------------------------------------------------------ */

static mgc_value mkref(mgc_value v) {
  MGC_PARAM1(v);
  mgc_value r = mgc_alloc_small(1, 0);
  MGC_FIELD(r, 0) = v;
  MGC_RETURN(r);
}

/* ref_set(r, box(n)), allocation first. */
static void ref_set_box(mgc_value r, long n) {
  MGC_PARAM1(r);
  mgc_value b = box(n);
  mgc_modify(&MGC_FIELD(r, 0), b);
  MGC_DROP;
}

static void ref_set_refbox(mgc_value r, long n) {
  MGC_PARAM1(r);
  MGC_LOCAL1(b);
  b = box(n);
  b = mkref(b);
  mgc_modify(&MGC_FIELD(r, 0), b);
  MGC_DROP;
}

/* K1.make k d */
static mgc_value ephe_make(mgc_value k, mgc_value d) {
  MGC_PARAM2(k, d);
  mgc_value e = mgc_ephe_create(1);
  mgc_ephe_set_key(e, 0, k);
  mgc_ephe_set_data(e, d);
  MGC_RETURN(e);
}

/* is_data_value: the key is present and is k, the data is a box of v. */
static void is_data_value(struct tally *t, const char *test, mgc_value e,
                          mgc_value k, long v) {
  mgc_value kk = MGC_UNIT, d = MGC_UNIT;
  int gk = mgc_ephe_get_key(e, 0, &kk);
  int gd = mgc_ephe_get_data(e, &d);
  EXPECT(t, gk && kk == k && gd && box_is(d, v),
         "%s data set: key %d (same %d), data %d, value %ld wanted %ld", test,
         gk, kk == k, gd,
         gd && MGC_IS_BLOCK(d) ? MGC_INT_VAL(MGC_FIELD(d, 0)) : 0, v);
}

static void is_data_unset(struct tally *t, const char *test, mgc_value e) {
  EXPECT(t,
         !mgc_ephe_check_key(e, 0) && !mgc_ephe_check_data(e) &&
             !mgc_ephe_get_data(e, NULL),
         "%s data unset after the key died", test);
}

/* ra = ref (ref 1), rb = ref (ref (ref 2)), rc = ref No: module state of
   one instance, in `st` = [ra, rb, rc]. */
#define RA(st) MGC_FIELD((st), 0)
#define RB(st) MGC_FIELD((st), 1)
#define RC(st) MGC_FIELD((st), 2)
#define NO MGC_VAL_INT(0)

static void eph_test1(struct tally *t, mgc_value st) {
  MGC_PARAM1(st);
  MGC_LOCAL2(eph, d);
  mgc_minor_collection();
  mgc_full_major();
  d = box(42);
  eph = ephe_make(MGC_FIELD(RA(st), 0), d);
  d = MGC_UNIT;
  is_data_value(t, "test1", eph, MGC_FIELD(RA(st), 0), 42);
  mgc_minor_collection();
  is_data_value(t, "test1", eph, MGC_FIELD(RA(st), 0), 42);
  mgc_full_major();
  is_data_value(t, "test1", eph, MGC_FIELD(RA(st), 0), 42);
  ref_set_box(RA(st), 12);
  mgc_full_major();
  is_data_unset(t, "test1", eph);
  MGC_DROP;
}

static void eph_test2(struct tally *t) {
  MGC_PARAM0;
  MGC_LOCAL3(eph, k, d);
  mgc_minor_collection();
  mgc_full_major();
  k = box(125);
  d = box(42);
  eph = ephe_make(k, d);
  d = MGC_UNIT;
  is_data_value(t, "test2", eph, k, 42);
  mgc_minor_collection();
  is_data_value(t, "test2", eph, k, 42);
  k = MGC_UNIT;
  mgc_full_major();
  is_data_unset(t, "test2", eph);
  MGC_DROP;
}

static void eph_test3(struct tally *t, mgc_value st) {
  MGC_PARAM1(st);
  MGC_LOCAL2(eph, k);
  mgc_minor_collection();
  mgc_full_major();
  ref_set_box(RA(st), 13);
  k = box(125);
  eph = ephe_make(k, MGC_FIELD(RA(st), 0));
  is_data_value(t, "test3", eph, k, 13);
  ref_set_box(RA(st), 14);
  k = MGC_UNIT;
  mgc_minor_collection();
  mgc_full_major();
  is_data_unset(t, "test3", eph);
  MGC_DROP;
}

/* !(!rb) */
static mgc_value rb_key(mgc_value st) {
  return MGC_FIELD(MGC_FIELD(RB(st), 0), 0);
}

static void eph_test45(struct tally *t, mgc_value st, int five) {
  const char *name = five ? "test5" : "test4";
  MGC_PARAM1(st);
  MGC_LOCAL2(eph, d);
  mgc_minor_collection();
  mgc_full_major();
  ref_set_refbox(RB(st), 3);
  d = box(43);
  eph = ephe_make(rb_key(st), d);
  d = MGC_UNIT;
  is_data_value(t, name, eph, rb_key(st), 43);
  if (five)
    ref_set_box(MGC_FIELD(RB(st), 0), 4);
  mgc_minor_collection();
  mgc_minor_collection();
  if (!five) {
    is_data_value(t, name, eph, rb_key(st), 43);
    mgc_full_major();
    is_data_value(t, name, eph, rb_key(st), 43);
  } else {
    mgc_full_major();
    is_data_unset(t, name, eph);
  }
  MGC_DROP;
}

static void eph_test6(struct tally *t, mgc_value st) {
  MGC_PARAM1(st);
  MGC_LOCAL2(eph, d);
  mgc_minor_collection();
  mgc_full_major();
  ref_set_refbox(RB(st), 3);
  d = mkref(rb_key(st));
  eph = ephe_make(rb_key(st), d);
  d = MGC_UNIT;
  mgc_minor_collection();
  ref_set_box(MGC_FIELD(RB(st), 0), 4);
  mgc_full_major();
  is_data_unset(t, "test6", eph);
  MGC_DROP;
}

static void eph_test7(struct tally *t, mgc_value st) {
  MGC_PARAM1(st);
  MGC_LOCAL3(weak, eph, tmp);
  mgc_minor_collection();
  mgc_full_major();
  ref_set_box(RA(st), 42);
  weak = mgc_weak_create(1);
  tmp = ephe_make(MGC_FIELD(RA(st), 0), MGC_FIELD(RC(st), 0));
  eph = mkref(tmp);
  tmp = mkref(MGC_FIELD(eph, 0)); /* Ephe !eph */
  mgc_modify(&MGC_FIELD(RC(st), 0), tmp);
  mgc_weak_set(weak, 0, MGC_FIELD(RC(st), 0));
  tmp = MGC_UNIT;
  mgc_minor_collection();
  EXPECT(t, mgc_weak_check(weak, 0), "test7 before");
  tmp = box(0);
  tmp = ephe_make(tmp, NO);
  mgc_modify(&MGC_FIELD(eph, 0), tmp);
  tmp = MGC_UNIT;
  mgc_modify(&MGC_FIELD(RC(st), 0), NO);
  mgc_full_major();
  mgc_full_major();
  mgc_full_major();
  EXPECT(t, !mgc_weak_check(weak, 0) && !mgc_weak_get(weak, 0, NULL),
         "test7 after");
  MGC_DROP;
}

static mgc_value p2_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(st, tmp);
  struct tally t = {0, 0};
  long rounds = MGC_INT_VAL(arg), r;
  int self = mgc_domain_index();
  for (r = 0; r < rounds; r++) {
    /* let module Mx = M () */
    st = mgc_alloc(3, 0);
    tmp = box(1);
    tmp = mkref(tmp);
    mgc_modify(&RA(st), tmp);
    tmp = box(2);
    tmp = mkref(tmp);
    tmp = mkref(tmp);
    mgc_modify(&RB(st), tmp);
    tmp = mkref(NO);
    mgc_modify(&RC(st), tmp);
    tmp = MGC_UNIT;
    eph_test1(&t, st);
    eph_test2(&t);
    eph_test3(&t, st);
    eph_test45(&t, st, 0);
    eph_test45(&t, st, 1);
    eph_test6(&t, st);
    eph_test7(&t, st);
  }
  tally_report(&t, "part 2 (ephetest_par)", self);
  MGC_RETURN(MGC_VAL_INT(t.bad));
}

static void part2(void) {
  mgc_domain *d[3];
  long rounds = 1, tries = scaled(5, 1), k;
  int i;
  for (k = 0; k < tries; k++) {
    for (i = 0; i < 3; i++) {
      d[i] = mgc_domain_spawn(p2_body, MGC_VAL_INT(rounds));
      if (!CHECK(d[i] != NULL, "part 2: spawn: error %d", mgc_last_error()))
        exit(check_done());
    }
    p2_body(MGC_VAL_INT(rounds));
    for (i = 0; i < 3; i++)
      mgc_domain_join(d[i]);
  }
}

/* ------------------------------------------------------------------------ */
/* Part 3: weaktest_par_load.ml                                             */
/* ------------------------------------------------------------------------ */

#define S3_T 0
#define S3_ORIG 1
#define P3_SLOT 3
#define P3_VAL 2

static atomic_int p3_wait;
static atomic_int p3_done;
static atomic_long p3_bad, p3_full, p3_empty;

/* got / v from a weak_get of slot 3: empty, or the original value. */
static void p3_judge(int got, mgc_value v) {
  if (!got)
    atomic_fetch_add(&p3_empty, 1);
  else if (v == gget(S3_ORIG) && box_is(v, P3_VAL))
    atomic_fetch_add(&p3_full, 1);
  else
    atomic_fetch_add(&p3_bad, 1);
}

static mgc_value p3_unsetter(mgc_value arg) {
  unsigned long spins = 0;
  (void)arg;
  while (atomic_load_explicit(&p3_wait, memory_order_acquire))
    mt_relax(&spins);
  mgc_weak_unset(gget(S3_T), P3_SLOT);
  return MGC_UNIT;
}

static mgc_value p3_reader(mgc_value arg) {
  mgc_value v = MGC_UNIT;
  int got;
  (void)arg;
  atomic_store_explicit(&p3_wait, 0, memory_order_release);
  got = mgc_weak_get(gget(S3_T), P3_SLOT, &v);
  p3_judge(got, v);
  return MGC_UNIT;
}

/* The same race, between two long-lived domains: in each round the unsetter
   waits for the reader's signal, as in the original, and domain 0 prepares
   a fresh weak array and value between rounds. */
static long p3_rounds;

static mgc_value p3_racer(mgc_value arg) {
  long r;
  for (r = 0; r < p3_rounds; r++) {
    mt_barrier_wait(&bar); /* domain 0 prepared the round */
    if (MGC_INT_VAL(arg) == 0)
      p3_unsetter(MGC_UNIT);
    else
      p3_reader(MGC_UNIT);
    mt_barrier_wait(&bar);
  }
  return MGC_UNIT;
}

/* The loop version: sets and unsets the slot n times. */
static mgc_value p3_setter_loop(mgc_value arg) {
  long n = MGC_INT_VAL(arg), i;
  for (i = 0; i < n; i++) {
    mgc_weak_set(gget(S3_T), P3_SLOT, gget(S3_ORIG));
    if ((i & 15) == 0)
      (void)box(i); /* garbage: minor collections */
    mgc_weak_unset(gget(S3_T), P3_SLOT);
    if ((i & 7) == 0)
      mgc_poll();
  }
  /* Leave it set: it must survive what follows. */
  mgc_weak_set(gget(S3_T), P3_SLOT, gget(S3_ORIG));
  atomic_fetch_add_explicit(&p3_done, 1, memory_order_release);
  return MGC_UNIT;
}

static mgc_value p3_reader_loop(mgc_value arg) {
  long reads = 0, bad_other = 0;
  (void)arg;
  while (atomic_load_explicit(&p3_done, memory_order_acquire) == 0) {
    mgc_value v = MGC_UNIT;
    int got = mgc_weak_get(gget(S3_T), P3_SLOT, &v);
    p3_judge(got, v);
    /* A slot nobody sets stays empty. */
    bad_other += mgc_weak_check(gget(S3_T), P3_SLOT + 1);
    reads++;
    if ((reads & 3) == 0)
      mgc_poll();
    if ((reads & 255) == 0)
      sched_yield();
  }
  atomic_fetch_add_explicit(&p3_bad, bad_other, memory_order_relaxed);
  atomic_fetch_add_explicit(&p3_done, 1, memory_order_release);
  return MGC_VAL_INT(reads);
}

static void p3_fresh(void) {
  gset(S3_T, mgc_weak_create(8));
  gset(S3_ORIG, box(P3_VAL));
  mgc_weak_set(gget(S3_T), P3_SLOT, gget(S3_ORIG));
}

static void part3(void) {
  mgc_domain *d1, *d2;
  long rounds = scaled(10, 3), r, n = scaled(200000, 200), k = 0, reads;
  mgc_value v = MGC_UNIT;
  /* As weaktest_par_load.ml: fresh domains each round (few rounds: a
     spawn and join costs much more than the race). */
  for (r = 0; r < rounds; r++) {
    p3_fresh();
    atomic_store(&p3_wait, 1);
    d1 = mgc_domain_spawn(p3_unsetter, MGC_UNIT);
    d2 = mgc_domain_spawn(p3_reader, MGC_UNIT);
    if (!CHECK(d1 != NULL && d2 != NULL, "part 3: spawn: error %d",
               mgc_last_error()))
      exit(check_done());
    mgc_domain_join(d1);
    mgc_domain_join(d2);
    CHECK_VERIFY("part 3 round");
  }
  /* Its 101 rounds, with long-lived domains. */
  p3_rounds = scaled(101, 10);
  mt_barrier_init(&bar, 3);
  d1 = mgc_domain_spawn(p3_racer, MGC_VAL_INT(0));
  d2 = mgc_domain_spawn(p3_racer, MGC_VAL_INT(1));
  if (!CHECK(d1 != NULL && d2 != NULL, "part 3: spawn: error %d",
             mgc_last_error()))
    exit(check_done());
  for (r = 0; r < p3_rounds; r++) {
    p3_fresh();
    atomic_store(&p3_wait, 1);
    if (r % 8 == 7)
      mgc_minor_collection();
    mt_barrier_wait(&bar);
    mt_barrier_wait(&bar);
  }
  mgc_domain_join(d1);
  mgc_domain_join(d2);
  MT_CHECK(atomic_load(&p3_bad) == 0 &&
               atomic_load(&p3_empty) + atomic_load(&p3_full) ==
                   rounds + p3_rounds,
           "part 3 (weaktest_par_load): %ld rounds: %ld bad reads, %ld "
           "empty, %ld the original",
           rounds + p3_rounds, atomic_load(&p3_bad), atomic_load(&p3_empty),
           atomic_load(&p3_full));
  /* The loop version, with domain 0 collecting meanwhile. */
  atomic_store(&p3_bad, 0);
  atomic_store(&p3_empty, 0);
  atomic_store(&p3_full, 0);
  atomic_store(&p3_done, 0);
  p3_fresh();
  d1 = mgc_domain_spawn(p3_setter_loop, MGC_VAL_INT(n));
  d2 = mgc_domain_spawn(p3_reader_loop, MGC_UNIT);
  if (!CHECK(d1 != NULL && d2 != NULL, "part 3: spawn: error %d",
             mgc_last_error()))
    exit(check_done());
  while (atomic_load_explicit(&p3_done, memory_order_acquire) < 2) {
    k++;
    if (k % 20 == 0)
      mgc_full_major();
    else if (k % 3 == 0)
      mgc_major_slice(0);
    else
      mgc_minor_collection();
    sched_yield();
  }
  mgc_domain_join(d1);
  reads = MGC_INT_VAL(mgc_domain_join(d2));
  MT_CHECK(atomic_load(&p3_bad) == 0,
           "part 3 loop: %ld set/unset, %ld reads, %ld collections: %ld bad, "
           "%ld empty, %ld the original",
           n, reads, k, atomic_load(&p3_bad), atomic_load(&p3_empty),
           atomic_load(&p3_full));
  mgc_full_major();
  CHECK(mgc_weak_get(gget(S3_T), P3_SLOT, &v) && v == gget(S3_ORIG) &&
            box_is(v, P3_VAL) && !mgc_weak_check(gget(S3_T), 0),
        "part 3: the slot left set survives a full major, others empty");
  clear_shared();
}

/* ------------------------------------------------------------------------ */
/* Part 4: finaliser_handover.ml and finaliser2.ml                          */
/* ------------------------------------------------------------------------ */

#define EMPTY MGC_VAL_INT(0)

static int p4_depth;
static long p4_per_domain, p4_total;
static atomic_long p4_next, p4_work, p4_first, p4_last, p4_tree_bad,
    p4_order_bad, p4_on_zero;
static atomic_int *p4_first_runs, *p4_last_runs;

static mgc_value make_tree(int depth) {
  MGC_PARAM0;
  MGC_LOCAL2(l, r);
  mgc_value n;
  if (depth > 0) {
    l = make_tree(depth - 1);
    r = make_tree(depth - 1);
  } else {
    l = r = EMPTY;
  }
  n = mgc_alloc_small(2, 0);
  MGC_FIELD(n, 0) = l;
  MGC_FIELD(n, 1) = r;
  MGC_RETURN(n);
}

static long tree_count(mgc_value t) {
  if (t == EMPTY)
    return 0;
  if (!MGC_IS_BLOCK(t) || MGC_WOSIZE_VAL(t) != 2)
    return -1000000;
  return 1 + tree_count(MGC_FIELD(t, 0)) + tree_count(MGC_FIELD(t, 1));
}

static long tree_size(int depth) { return (2L << depth) - 1; }

static void p4_fin_first(mgc_value v, void *data) {
  long idx = (long)(intptr_t)data;
  if (tree_count(v) != tree_size(p4_depth))
    atomic_fetch_add(&p4_tree_bad, 1);
  atomic_fetch_add(&p4_first_runs[idx], 1);
  atomic_fetch_add(&p4_first, 1);
  if (mgc_domain_self() == 0)
    atomic_fetch_add(&p4_on_zero, 1);
}

static void p4_fin_last(void *data) {
  long idx = (long)(intptr_t)data;
  if (atomic_load(&p4_first_runs[idx]) != 1)
    atomic_fetch_add(&p4_order_bad, 1);
  atomic_fetch_add(&p4_last_runs[idx], 1);
  atomic_fetch_add(&p4_last, 1);
}

static mgc_value p4_worker(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL1(v);
  long i;
  for (i = 0; i < p4_per_domain; i++) {
    long idx = atomic_fetch_add(&p4_next, 1);
    v = make_tree(p4_depth);
    if (idx < p4_total) {
      mgc_finalise(v, p4_fin_first, (void *)(intptr_t)idx);
      mgc_finalise_last(v, p4_fin_last, (void *)(intptr_t)idx);
      atomic_fetch_add(&p4_work, 1);
    }
  }
  MGC_RETURN(MGC_UNIT);
}

/* Hand-over between a cycle end and the mark start: the child's trees are
   found dead (queued, not yet run) while it terminates, as the parent
   finishes cycle after cycle; the queue it hands over is kept by the
   adopter's cycles until the finalisers run. */
#define P4H_TREES 16
static atomic_long p4h_ran, p4h_bad;
static atomic_int p4h_done;

static void p4h_fin(mgc_value v, void *data) {
  (void)data;
  if (tree_count(v) != tree_size(5))
    atomic_fetch_add(&p4h_bad, 1);
  atomic_fetch_add(&p4h_ran, 1);
}

static mgc_value p4h_child(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL1(v);
  for (int i = 0; i < P4H_TREES; i++) {
    v = make_tree(5);
    mgc_finalise(v, p4h_fin, NULL);
  }
  v = MGC_UNIT;
  atomic_store(&p4h_done, 1);
  MGC_RETURN(MGC_UNIT); /* no safepoint from here on: terminates */
}

/* finaliser2.ml test3 */
static atomic_int f2_c, f2_bad, f2_where_first, f2_where_last;

static void f2_first(mgc_value v, void *data) {
  (void)v;
  (void)data;
  if (atomic_load(&f2_c) != 0)
    atomic_fetch_add(&f2_bad, 1);
  atomic_store(&f2_c, 1);
  atomic_store(&f2_where_first, mgc_domain_self());
}

static void f2_last(void *data) {
  (void)data;
  if (atomic_load(&f2_c) != 1)
    atomic_fetch_add(&f2_bad, 1);
  atomic_store(&f2_c, 2);
  atomic_store(&f2_where_last, mgc_domain_self());
}

static mgc_value f2_child(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(r, r2);
  r = box(0);
  r2 = box(0);
  mgc_full_major(); /* both old now */
  mgc_finalise_last(r2, f2_last, NULL);
  mgc_finalise(r, f2_first, NULL);
  MGC_RETURN(MGC_VAL_INT(mgc_domain_self()));
}

static void part4(void) {
  MGC_PARAM0;
  MGC_LOCAL1(v);
  mgc_domain *d[3];
  long iterations = scaled(10, 1), it, i, once_first = 0, once_last = 0;
  long child;
  p4_depth = test_scale(1000) >= 20 ? 7 : 4;
  p4_per_domain = scaled(251, 2);
  p4_total = (iterations + 1) * 3 * p4_per_domain;
  p4_first_runs = calloc((size_t)p4_total, sizeof *p4_first_runs);
  p4_last_runs = calloc((size_t)p4_total, sizeof *p4_last_runs);
  if (!CHECK(p4_first_runs && p4_last_runs, "part 4: calloc"))
    exit(check_done());
  for (it = 0; it <= iterations; it++) {
    for (i = 0; i < 3; i++) {
      d[i] = mgc_domain_spawn(p4_worker, MGC_UNIT);
      if (!CHECK(d[i] != NULL, "part 4: spawn: error %d", mgc_last_error()))
        exit(check_done());
    }
    v = make_tree(p4_depth);
    CHECK(tree_count(v) == tree_size(p4_depth), "part 4: main's tree");
    for (i = 0; i < 3; i++)
      mgc_domain_join(d[i]);
  }
  v = MGC_UNIT;
  /* The first full major runs every first-kind finaliser; a value kept
     alive by its queued first-kind finaliser dies for its last-kind one in
     the second. */
  mgc_full_major();
  mgc_run_finalisers();
  CHECK(atomic_load(&p4_first) == atomic_load(&p4_work),
        "part 4: after joining and one full major, every first-kind "
        "finaliser ran: %ld of %ld",
        atomic_load(&p4_first), atomic_load(&p4_work));
  mgc_full_major();
  mgc_run_finalisers();
  for (i = 0; i < p4_total; i++) {
    once_first += atomic_load(&p4_first_runs[i]) == 1;
    once_last += atomic_load(&p4_last_runs[i]) == 1;
  }
  CHECK(atomic_load(&p4_work) == p4_total && once_first == p4_total &&
            once_last == p4_total &&
            atomic_load(&p4_first) == atomic_load(&p4_work) &&
            atomic_load(&p4_last) == atomic_load(&p4_work),
        "part 4 (finaliser_handover): %ld registered of each kind; "
        "first-kind ran %ld times (%ld exactly once), last-kind %ld times "
        "(%ld exactly once)",
        atomic_load(&p4_work), atomic_load(&p4_first), once_first,
        atomic_load(&p4_last), once_last);
  CHECK(atomic_load(&p4_tree_bad) == 0 && atomic_load(&p4_order_bad) == 0,
        "part 4: trees intact in their finalisers (%ld bad), first-kind "
        "before last-kind (%ld out of order)",
        atomic_load(&p4_tree_bad), atomic_load(&p4_order_bad));
  printf("part 4: %ld of %ld first-kind finalisers ran on domain 0\n",
         atomic_load(&p4_on_zero), p4_total);
  free(p4_first_runs);
  free(p4_last_runs);

  {
    long rounds = scaled(120, 4), k;
    atomic_store(&p4h_ran, 0);
    atomic_store(&p4h_bad, 0);
    for (k = 0; k < rounds; k++) {
      atomic_store(&p4h_done, 0);
      d[0] = mgc_domain_spawn(p4h_child, MGC_UNIT);
      if (!CHECK(d[0] != NULL, "part 4: spawn: error %d", mgc_last_error()))
        exit(check_done());
      while (!atomic_load(&p4h_done))
        mgc_major_collection();
      for (i = 0; i < 4; i++)
        mgc_major_collection();
      mgc_domain_join(d[0]);
      for (i = 0; i < 200; i++)
        v = make_tree(3); /* reuses what a sweep freed */
      v = MGC_UNIT;
      mgc_full_major();
      mgc_run_finalisers();
    }
    CHECK(atomic_load(&p4h_ran) == rounds * P4H_TREES &&
              atomic_load(&p4h_bad) == 0,
          "part 4: finalisers handed over before a mark start: %ld of %ld "
          "ran, %ld on a damaged tree",
          atomic_load(&p4h_ran), rounds * P4H_TREES, atomic_load(&p4h_bad));
  }

  /* finaliser2.ml test3 */
  mgc_full_major();
  d[0] = mgc_domain_spawn(f2_child, MGC_UNIT);
  if (!CHECK(d[0] != NULL, "part 4: spawn: error %d", mgc_last_error()))
    exit(check_done());
  child = MGC_INT_VAL(mgc_domain_join(d[0]));
  mgc_full_major();
  CHECK(atomic_load(&f2_c) == 2 && atomic_load(&f2_bad) == 0,
        "part 4 (finaliser2 test3): the joined child's finalisers ran after "
        "the parent's full major, first-kind first (c = %d, %d out of order)",
        atomic_load(&f2_c), atomic_load(&f2_bad));
  CHECK(atomic_load(&f2_where_first) == 0 && atomic_load(&f2_where_last) == 0,
        "part 4: they ran on the parent (domain %d and %d; child was %ld)",
        atomic_load(&f2_where_first), atomic_load(&f2_where_last), child);
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 5: finalisers run on their domain while it lives                    */
/* ------------------------------------------------------------------------ */

struct p5_item {
  int owner;
  atomic_int ran;
  atomic_int wrong;
};

static long p5_n;

static void p5_note(struct p5_item *it) {
  if (mgc_domain_self() != it->owner)
    atomic_fetch_add(&it->wrong, 1);
  atomic_fetch_add(&it->ran, 1);
}

static void p5_first(mgc_value v, void *data) {
  (void)v;
  p5_note(data);
}

static void p5_last(void *data) { p5_note(data); }

static mgc_value p5_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL1(v);
  struct tally t = {0, 0};
  long n = p5_n, k, ran = 0, wrong = 0, twice = 0, pending_first = 0;
  int self = mgc_domain_self();
  struct p5_item *items = calloc((size_t)(2 * n), sizeof *items);
  if (items == NULL)
    abort();
  for (k = 0; k < 2 * n; k++)
    items[k].owner = self;
  for (k = 0; k < n; k++) {
    struct p5_item *a = &items[2 * k], *b = &items[2 * k + 1];
    v = box(k);
    switch (k % 4) {
    case 0: /* first-kind, dies young */
      mgc_finalise(v, p5_first, a);
      atomic_store(&b->ran, 1);
      break;
    case 1: /* last-kind, dies young: run at the end of the next minor */
      mgc_finalise_last(v, p5_last, a);
      atomic_store(&b->ran, 1);
      if (k % 40 == 1 && mgc_is_young(v)) {
        v = MGC_UNIT;
        mgc_minor_collection();
        EXPECT(&t, atomic_load(&a->ran) == 1,
               "a young dead value's finalise_last ran at the end of the "
               "next mgc_minor_collection (ran %d)",
               atomic_load(&a->ran));
      }
      break;
    case 2: /* both kinds on an old value */
      mgc_minor_collection();
      mgc_finalise(v, p5_first, a);
      mgc_finalise_last(v, p5_last, b);
      break;
    default: /* last-kind on an old value, collected by slices */
      mgc_minor_collection();
      mgc_finalise_last(v, p5_last, a);
      atomic_store(&b->ran, 1);
      mgc_major_slice(0);
      break;
    }
    v = MGC_UNIT;
    (void)box(-k); /* garbage; a safepoint */
  }
  /* Two full majors: the second for the last-kind finalisers of values
     kept alive by their first-kind ones. */
  mgc_full_major();
  for (k = 0; k < n; k++)
    pending_first += k % 4 == 0 && atomic_load(&items[2 * k].ran) != 1;
  EXPECT(&t, pending_first == 0,
         "after a full major, every first-kind finaliser of the domain ran "
         "(%ld did not)",
         pending_first);
  mgc_full_major();
  for (k = 0; k < 2 * n; k++) {
    int r = atomic_load(&items[k].ran);
    ran += r == 1;
    twice += r > 1;
    wrong += atomic_load(&items[k].wrong);
  }
  EXPECT(&t, ran == 2 * n && twice == 0 && wrong == 0,
         "domain %d: %ld of %ld finalisers ran once, %ld more than once, %ld "
         "on another domain",
         self, ran, 2 * n, twice, wrong);
  mt_barrier_wait(&bar);
  free(items);
  tally_report(&t, "part 5 (finalisers run on their domain)", self);
  MGC_RETURN(MGC_UNIT);
}

static void part5(void) {
  mgc_domain *d[3];
  int i;
  p5_n = scaled(2000, 8);
  mt_barrier_init(&bar, 3);
  for (i = 0; i < 3; i++) {
    d[i] = mgc_domain_spawn(p5_body, MGC_UNIT);
    if (!CHECK(d[i] != NULL, "part 5: spawn: error %d", mgc_last_error()))
      exit(check_done());
  }
  for (i = 0; i < 3; i++)
    mgc_domain_join(d[i]);
}

/* ------------------------------------------------------------------------ */
/* Part 6: domain ids and indexes                                           */
/* ------------------------------------------------------------------------ */

static mgc_value p6_body(mgc_value arg) {
  int self = mgc_domain_self(), idx = mgc_domain_index();
  (void)arg;
  mt_barrier_wait(&bar); /* all three alive at once */
  return pair(MGC_VAL_INT(self), MGC_VAL_INT(idx));
}

static void part6(void) {
  MGC_PARAM0;
  MGC_LOCAL1(r);
  mgc_domain *d[3];
  int ids[9], idx[9], round, i, j, distinct = 1, in_range = 1, reused = 0;
  int round_distinct = 1;
  CHECK(mgc_domain_self() == 0 && mgc_domain_index() == 0,
        "part 6: the first domain has id 0 and index 0 (%d, %d)",
        mgc_domain_self(), mgc_domain_index());
  mt_barrier_init(&bar, 3);
  for (round = 0; round < 3; round++) {
    for (i = 0; i < 3; i++) {
      d[i] = mgc_domain_spawn(p6_body, MGC_UNIT);
      if (!CHECK(d[i] != NULL, "part 6: spawn: error %d", mgc_last_error()))
        exit(check_done());
    }
    for (i = 0; i < 3; i++) {
      r = mgc_domain_join(d[i]);
      ids[round * 3 + i] = (int)MGC_INT_VAL(MGC_FIELD(r, 0));
      idx[round * 3 + i] = (int)MGC_INT_VAL(MGC_FIELD(r, 1));
    }
  }
  for (i = 0; i < 9; i++) {
    distinct &= ids[i] > 0;
    in_range &= idx[i] > 0 && idx[i] < MAXDOM;
    for (j = 0; j < i; j++) {
      distinct &= ids[i] != ids[j];
      if (i / 3 == j / 3)
        round_distinct &= idx[i] != idx[j];
      else
        reused += idx[i] == idx[j];
    }
  }
  printf("part 6: ids");
  for (i = 0; i < 9; i++)
    printf(" %d/%d", ids[i], idx[i]);
  printf(" (id/index)\n");
  CHECK(distinct, "part 6: the nine ids are distinct, never 0");
  CHECK(in_range && round_distinct,
        "part 6: indexes in (0, %d), distinct among live domains", MAXDOM);
  CHECK(reused >= 6,
        "part 6: indexes reused across rounds (%d pairs; 4 free slots for 3 "
        "domains a round make at least 6)",
        reused);
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 7: a domain in a blocking section                                   */
/* ------------------------------------------------------------------------ */

#define P7_NE 16
#define P7_NW 16
#define S7_E 0
#define S7_W P7_NE
#define S7_HELD (P7_NE + 1)
#define P7_RING 32

static long p7_nf;
static atomic_int p7_state, p7_wake, p7_s_self;
static atomic_long p7_s_first, p7_s_last, p7_s_wrong, p7_snap;
static atomic_long p7_h_runs;

static void p7_s_note(void) {
  if (mgc_domain_self() != atomic_load(&p7_s_self))
    atomic_fetch_add(&p7_s_wrong, 1);
}

static void p7_s_fin_first(mgc_value v, void *data) {
  (void)v;
  (void)data;
  p7_s_note();
  atomic_fetch_add(&p7_s_first, 1);
}

static void p7_s_fin_last(void *data) {
  (void)data;
  p7_s_note();
  atomic_fetch_add(&p7_s_last, 1);
}

static void p7_h_fin_first(mgc_value v, void *data) {
  (void)v;
  (void)data;
  atomic_fetch_add(&p7_h_runs, 1);
}

static void p7_h_fin_last(void *data) {
  (void)data;
  atomic_fetch_add(&p7_h_runs, 1);
}

/* The sleeper's ephemerons: even keys held in `held`, odd ones dropped. */
static void p7_check_sleeper(struct tally *t) {
  mgc_value held = gget(S7_HELD), k = MGC_UNIT, d = MGC_UNIT;
  int i;
  for (i = 0; i < P7_NE; i++) {
    mgc_value e = gget(S7_E + i);
    if (i % 2 == 0) {
      EXPECT(t,
             mgc_ephe_get_key(e, 0, &k) && k == MGC_FIELD(held, i) &&
                 box_is(k, 7000 + i) && mgc_ephe_get_data(e, &d) &&
                 box_is(d, -7000 - i),
             "sleeper's ephemeron %d with a held key is intact", i);
    } else {
      EXPECT(t, !mgc_ephe_check_key(e, 0) && !mgc_ephe_check_data(e),
             "sleeper's ephemeron %d with a dead key was cleaned", i);
    }
  }
  for (i = 0; i < P7_NW; i++) {
    mgc_value w = gget(S7_W);
    if (i % 2 == 0)
      EXPECT(t,
             mgc_weak_get(w, (size_t)i, &k) &&
                 k == MGC_FIELD(held, P7_NE + i) && box_is(k, 7100 + i),
             "sleeper's weak slot %d held", i);
    else
      EXPECT(t, !mgc_weak_check(w, (size_t)i),
             "sleeper's weak slot %d (dead) was cleaned", i);
  }
}

static mgc_value p7_sleeper(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL3(held, k, d);
  struct tally t = {0, 0};
  struct timespec ts = {0, 1000000};
  long f;
  int i;
  atomic_store(&p7_s_self, mgc_domain_self());
  held = mgc_alloc(P7_NE + P7_NW, 0);
  gset(S7_HELD, held);
  for (i = 0; i < P7_NE; i++) {
    gset(S7_E + i, mgc_ephe_create(1));
    k = box(7000 + i);
    if (i % 2 == 0)
      mgc_modify(&MGC_FIELD(held, i), k);
    mgc_ephe_set_key(gget(S7_E + i), 0, k);
    d = box(-7000 - i);
    mgc_ephe_set_data(gget(S7_E + i), d);
  }
  gset(S7_W, mgc_weak_create(P7_NW));
  for (i = 0; i < P7_NW; i++) {
    k = box(7100 + i);
    if (i % 2 == 0)
      mgc_modify(&MGC_FIELD(held, P7_NE + i), k);
    mgc_weak_set(gget(S7_W), (size_t)i, k);
  }
  k = d = MGC_UNIT;
  for (f = 0; f < p7_nf; f++) {
    k = box(f);
    if (f % 2)
      mgc_finalise(k, p7_s_fin_first, NULL);
    else
      mgc_finalise_last(k, p7_s_fin_last, NULL);
  }
  k = MGC_UNIT;
  atomic_store(&p7_snap, atomic_load(&p7_s_first) + atomic_load(&p7_s_last));
  atomic_store_explicit(&p7_state, 1, memory_order_release);
  mgc_enter_blocking_section();
  while (!atomic_load_explicit(&p7_wake, memory_order_acquire))
    nanosleep(&ts, NULL);
  mgc_leave_blocking_section();
  atomic_store_explicit(&p7_state, 2, memory_order_release);
  mgc_run_finalisers();
  EXPECT(&t,
         atomic_load(&p7_s_first) == p7_nf / 2 &&
             atomic_load(&p7_s_last) == p7_nf - p7_nf / 2 &&
             atomic_load(&p7_s_wrong) == 0,
         "back from blocking, the sleeper ran its finalisers: %ld first, %ld "
         "last of %ld, %ld elsewhere",
         atomic_load(&p7_s_first), atomic_load(&p7_s_last), p7_nf,
         atomic_load(&p7_s_wrong));
  p7_check_sleeper(&t);
  tally_report(&t, "part 7 (the sleeper)", 1);
  MGC_RETURN(MGC_UNIT);
}

static void part7(void) {
  MGC_PARAM0;
  MGC_LOCAL4(ring, hring, k, d);
  struct tally t = {0, 0};
  mgc_domain *s;
  mgc_stats st;
  uint64_t c0, c1;
  long n, h_reg = 0, min_n = scaled(20000, 100), slot;
  unsigned long spins = 0;
  double t0;
  p7_nf = scaled(400, 10);
  s = mgc_domain_spawn(p7_sleeper, MGC_UNIT);
  if (!CHECK(s != NULL, "part 7: spawn: error %d", mgc_last_error()))
    exit(check_done());
  while (atomic_load_explicit(&p7_state, memory_order_acquire) != 1)
    mt_relax(&spins);
  mgc_get_stats(&st);
  c0 = st.major_collections;
  ring = mgc_alloc(P7_RING, 0);  /* this domain's ephemerons */
  hring = mgc_alloc(P7_RING, 0); /* their held keys */
  t0 = now_s();
  for (n = 0;; n++) {
    slot = n % P7_RING;
    d = mgc_ephe_create(1);
    mgc_modify(&MGC_FIELD(ring, slot), d);
    k = box(n);
    mgc_modify(&MGC_FIELD(hring, slot), n % 2 == 0 ? k : MGC_UNIT);
    mgc_ephe_set_key(MGC_FIELD(ring, slot), 0, k);
    d = pair(MGC_VAL_INT(n), k);
    mgc_ephe_set_data(MGC_FIELD(ring, slot), d);
    k = d = MGC_UNIT;
    if (n % 4 == 1) {
      /* Not on the data: a first-kind finaliser keeps its value alive,
         and the data references its key. */
      d = box(-n);
      if (n % 8 == 1)
        mgc_finalise(d, p7_h_fin_first, NULL);
      else
        mgc_finalise_last(d, p7_h_fin_last, NULL);
      d = MGC_UNIT;
      h_reg++;
    }
    (void)mgc_alloc(1 + (size_t)(n % 20), 0);
    if (n % 64 == 63)
      mgc_major_slice(0);
    else if (n % 64 == 31)
      mgc_major_slice(20000); /* progress whatever the pacing says */
    if (n % 256 == 255) {
      mgc_get_stats(&st);
      if (n >= min_n && st.major_collections >= c0 + 2)
        break;
      if (now_s() - t0 > 8)
        break;
    }
  }
  mgc_get_stats(&st);
  c1 = st.major_collections;
  CHECK(c1 >= c0 + 2 && atomic_load(&p7_state) == 1,
        "part 7: %lu major cycles completed in %ld allocation rounds while "
        "a domain slept in a blocking section",
        (unsigned long)(c1 - c0), n);
  mgc_full_major();
  p7_check_sleeper(&t);
  for (slot = 0; slot < P7_RING; slot++) {
    mgc_value e = MGC_FIELD(ring, slot);
    long id = n - ((n - slot) % P7_RING + P7_RING) % P7_RING;
    mgc_value kk = MGC_UNIT, dd = MGC_UNIT;
    if (id % 2 == 0)
      EXPECT(&t,
             mgc_ephe_get_key(e, 0, &kk) && kk == MGC_FIELD(hring, slot) &&
                 box_is(kk, id) && mgc_ephe_get_data(e, &dd) &&
                 MGC_FIELD(dd, 0) == MGC_VAL_INT(id) && MGC_FIELD(dd, 1) == kk,
             "heavy domain's ephemeron %ld (held key) intact", id);
    else
      EXPECT(&t, !mgc_ephe_check_key(e, 0) && !mgc_ephe_check_data(e),
             "heavy domain's ephemeron %ld (dead key) cleaned", id);
  }
  EXPECT(&t, atomic_load(&p7_h_runs) == h_reg,
         "heavy domain's finalisers ran: %ld of %ld", atomic_load(&p7_h_runs),
         h_reg);
  EXPECT(&t,
         atomic_load(&p7_state) == 1 &&
             atomic_load(&p7_s_first) + atomic_load(&p7_s_last) ==
                 atomic_load(&p7_snap),
         "the sleeper's finalisers waited for it (%ld ran before it blocked, "
         "%ld now)",
         atomic_load(&p7_snap),
         atomic_load(&p7_s_first) + atomic_load(&p7_s_last));
  atomic_store_explicit(&p7_wake, 1, memory_order_release);
  mgc_domain_join(s);
  tally_report(&t, "part 7 (the heavy domain)", 0);
  clear_shared();
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 8: weak hash tables keyed by other domains' young values            */
/* ------------------------------------------------------------------------ */

#define P8_NDOM 3
#define P8_POOL 8
#define P8_NB 16
#define P8_MAXE 256
#define P8_OPS 24
#define P8_CHECK_EVERY 5

struct p8_entry {
  long id;
  long dv;
  int refkey;
  int found;
};

struct p8_model {
  struct p8_entry e[P8_MAXE];
  int n;
  long inserts, lookups, removes, hits, dead_gone, live_seen;
};

static struct p8_model p8_models[P8_NDOM];
static long p8_rounds;

static int p8_pool_slot(int p, int j) { return p * P8_POOL + j; }

static struct p8_entry *p8_model_find(struct p8_model *m, long id) {
  int i;
  for (i = 0; i < m->n; i++)
    if (m->e[i].id == id)
      return &m->e[i];
  return NULL;
}

static void p8_model_del(struct p8_model *m, struct p8_entry *x) {
  *x = m->e[--m->n];
}

/* The cell [ephemeron, next] whose live key has this id, or MGC_UNIT. */
static mgc_value p8_find(mgc_value table, long id) {
  mgc_value c, k = MGC_UNIT;
  for (c = MGC_FIELD(table, id % P8_NB); c != MGC_UNIT; c = MGC_FIELD(c, 1))
    if (mgc_ephe_get_key(MGC_FIELD(c, 0), 0, &k) &&
        MGC_FIELD(k, 0) == MGC_VAL_INT(id))
      return c;
  return MGC_UNIT;
}

static void p8_insert(mgc_value table, mgc_value key, long dv, int refkey) {
  MGC_PARAM2(table, key);
  MGC_LOCAL3(e, d, cell);
  long id = MGC_INT_VAL(MGC_FIELD(key, 0));
  cell = p8_find(table, id);
  d = refkey ? pair(MGC_VAL_INT(dv), key) : box(dv);
  if (cell != MGC_UNIT) {
    mgc_ephe_set_data(MGC_FIELD(cell, 0), d);
  } else {
    e = mgc_ephe_create(1);
    mgc_ephe_set_key(e, 0, key);
    mgc_ephe_set_data(e, d);
    cell = mgc_alloc_small(2, 0);
    MGC_FIELD(cell, 0) = e;
    MGC_FIELD(cell, 1) = MGC_FIELD(table, id % P8_NB);
    mgc_modify(&MGC_FIELD(table, id % P8_NB), cell);
  }
  MGC_DROP;
}

static void p8_remove(mgc_value table, long id) {
  mgc_value *prev = &MGC_FIELD(table, id % P8_NB), c, k = MGC_UNIT;
  while ((c = *prev) != MGC_UNIT) {
    if (mgc_ephe_get_key(MGC_FIELD(c, 0), 0, &k) &&
        MGC_FIELD(k, 0) == MGC_VAL_INT(id)) {
      mgc_modify(prev, MGC_FIELD(c, 1));
      return;
    }
    prev = &MGC_FIELD(c, 1);
  }
}

static int p8_data_ok(mgc_value e, struct p8_entry *x, mgc_value key) {
  mgc_value d = MGC_UNIT;
  return mgc_ephe_get_data(e, &d) && MGC_IS_BLOCK(d) &&
         MGC_FIELD(d, 0) == MGC_VAL_INT(x->dv) &&
         (x->refkey ? MGC_WOSIZE_VAL(d) == 2 && MGC_FIELD(d, 1) == key
                    : MGC_WOSIZE_VAL(d) == 1);
}

/* Phase B: random operations on the own table with keys from the pools. */
static void p8_ops(struct tally *t, struct mt_rng *rng, mgc_value table,
                   struct p8_model *m) {
  MGC_PARAM1(table);
  MGC_LOCAL1(key);
  int op;
  for (op = 0; op < P8_OPS; op++) {
    int p = (int)mt_below(rng, P8_NDOM), r = (int)mt_below(rng, 10);
    long id;
    struct p8_entry *x;
    mgc_value c;
    key = gget(p8_pool_slot(p, (int)mt_below(rng, P8_POOL)));
    id = MGC_INT_VAL(MGC_FIELD(key, 0));
    x = p8_model_find(m, id);
    if (r < 5) {
      long dv = (long)mt_below(rng, 1000000);
      int refkey = (int)mt_below(rng, 2);
      if (x == NULL && m->n == P8_MAXE)
        continue;
      p8_insert(table, key, dv, refkey);
      if (x == NULL) {
        x = &m->e[m->n++];
        x->id = id;
      }
      x->dv = dv;
      x->refkey = refkey;
      m->inserts++;
    } else if (r < 8) {
      c = p8_find(table, id);
      m->lookups++;
      if (x != NULL) {
        m->hits++;
        EXPECT(t, c != MGC_UNIT && p8_data_ok(MGC_FIELD(c, 0), x, key),
               "lookup of live key %ld finds its data %ld", id, x->dv);
      } else {
        EXPECT(t, c == MGC_UNIT, "lookup of absent key %ld finds nothing", id);
      }
    } else {
      p8_remove(table, id);
      if (x != NULL)
        p8_model_del(m, x);
      EXPECT(t, p8_find(table, id) == MGC_UNIT, "key %ld removed", id);
      m->removes++;
    }
    if ((op & 3) == 0)
      (void)box(op); /* garbage */
  }
  MGC_DROP;
}

static int p8_id_alive(long id) {
  int s;
  for (s = 0; s < P8_NDOM * P8_POOL; s++)
    if (MGC_FIELD(gget(s), 0) == MGC_VAL_INT(id))
      return 1;
  return 0;
}

/* Phase C, after a full major: the table against the model; dead entries
   must be empty, and are pruned. */
static void p8_check(struct tally *t, mgc_value table, struct p8_model *m) {
  int b, i;
  for (i = 0; i < m->n; i++)
    m->e[i].found = 0;
  for (b = 0; b < P8_NB; b++) {
    mgc_value *prev = &MGC_FIELD(table, b), c, k = MGC_UNIT;
    while ((c = *prev) != MGC_UNIT) {
      mgc_value e = MGC_FIELD(c, 0);
      if (mgc_ephe_get_key(e, 0, &k)) {
        long id = MGC_INT_VAL(MGC_FIELD(k, 0));
        struct p8_entry *x = p8_model_find(m, id);
        EXPECT(t, x != NULL && !x->found,
               "entry %ld in the table is in the model, once", id);
        EXPECT(t, p8_id_alive(id),
               "entry %ld: its key is no longer held, yet present after a "
               "full major",
               id);
        if (x != NULL) {
          x->found = 1;
          EXPECT(t, p8_data_ok(e, x, k), "entry %ld has data %ld", id, x->dv);
        }
        prev = &MGC_FIELD(c, 1);
      } else {
        EXPECT(t, !mgc_ephe_check_data(e), "dead entry's data is empty");
        mgc_modify(prev, MGC_FIELD(c, 1));
      }
    }
  }
  for (i = 0; i < m->n;) {
    struct p8_entry *x = &m->e[i];
    if (p8_id_alive(x->id)) {
      EXPECT(t, x->found, "live entry %ld is in the table", x->id);
      m->live_seen++;
      i++;
    } else {
      m->dead_gone += !x->found;
      p8_model_del(m, x);
    }
  }
}

static mgc_value p8_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(table, key);
  int self = (int)MGC_INT_VAL(arg), j;
  struct mt_rng rng, plan;
  struct tally t = {0, 0};
  struct p8_model *m = &p8_models[self];
  long round, next_id = 1;
  mt_rng_seed(&rng, seed, 10 + (uint64_t)self);
  mt_rng_seed(&plan, seed, 9);
  table = mgc_alloc(P8_NB, 0);
  for (round = 0; round < p8_rounds; round++) {
    int last = round == p8_rounds - 1;
    int collector = (int)mt_below(&plan, P8_NDOM);
    int check = last || round % P8_CHECK_EVERY == P8_CHECK_EVERY - 1;
    /* Phase A: fresh young keys into the own pool. */
    for (j = 0; j < P8_POOL; j++)
      if (round == 0 || mt_below(&rng, 4) == 0) {
        key = box((self + 1) * 10000000L + next_id++);
        gset(p8_pool_slot(self, j), key);
      }
    key = MGC_UNIT;
    mt_barrier_wait(&bar);
    p8_ops(&t, &rng, table, m);
    mt_barrier_wait(&bar);
    if (check) {
      if (self == collector)
        mgc_full_major();
      mt_barrier_wait(&bar);
      p8_check(&t, table, m);
      mt_barrier_wait(&bar);
    }
  }
  printf("part 8 domain %d: %ld inserts, %ld lookups (%ld hits), %ld "
         "removes; %ld entries seen live at checks, %ld died with their "
         "keys\n",
         self, m->inserts, m->lookups, m->hits, m->removes, m->live_seen,
         m->dead_gone);
  MT_CHECK(m->dead_gone > 0 && m->live_seen > 0,
           "part 8 domain %d: entries both died and survived", self);
  tally_report(&t, "part 8 (weak hash tables)", self);
  MGC_RETURN(MGC_UNIT);
}

static void part8(void) {
  mgc_domain *d[P8_NDOM];
  int i;
  p8_rounds = scaled(250, 2 * P8_CHECK_EVERY);
  mt_barrier_init(&bar, P8_NDOM);
  for (i = 1; i < P8_NDOM; i++) {
    d[i] = mgc_domain_spawn(p8_body, MGC_VAL_INT(i));
    if (!CHECK(d[i] != NULL, "part 8: spawn: error %d", mgc_last_error()))
      exit(check_done());
  }
  p8_body(MGC_VAL_INT(0));
  for (i = 1; i < P8_NDOM; i++)
    mgc_domain_join(d[i]);
  clear_shared();
}

/* ------------------------------------------------------------------------ */

/* MGC_TEST_PARTS=137 runs parts 1, 3 and 7 only (for debugging). */
static void timed(const char *name, void (*part)(void)) {
  const char *only = getenv("MGC_TEST_PARTS");
  double t0 = now_s();
  if (only != NULL && only[0] != '\0' && strchr(only, name[5]) == NULL)
    return;
  part();
  printf("%s: %.2f s\n", name, now_s() - t0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  mgc_params p;
  mgc_stats st;
  int i;
  mt_watchdog(300);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = MAXDOM;
  p.minor_heap_words = 16384;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  g_shared = mgc_alloc_shr(G_SLOTS, 0);
  for (i = 0; i < G_SLOTS; i++)
    mgc_initialize(&MGC_FIELD(g_shared, i), MGC_UNIT);
  mgc_register_global_root(&g_shared);
  timed("part 1", part1);
  timed("part 2", part2);
  timed("part 3", part3);
  timed("part 4", part4);
  timed("part 5", part5);
  timed("part 6", part6);
  timed("part 7", part7);
  timed("part 8", part8);
  CHECK_VERIFY("the end");
  mgc_get_stats(&st);
  CHECK(st.major_stw_pause_max_ns > 0 &&
            st.major_stw_pause_p99_ns <= st.major_stw_pause_max_ns,
        "major stop-the-world pauses measured: max %lu ns, p99 %lu ns",
        (unsigned long)st.major_stw_pause_max_ns,
        (unsigned long)st.major_stw_pause_p99_ns);
  mgc_remove_global_root(&g_shared);
  mgc_shutdown();
  return check_mt_done();
}
