/* test_fibers: continuations, fibers and embedder stacks on one domain.
 *
 * The contract is mgc.h's "Continuations: fibers and embedder stacks":
 * a held stack (fiber or embedder stack) is a root of its domain; inside a
 * continuation (a young two-field MGC_TAG_CONT block, field 0 the stack's
 * address + 1, field 1 an opaque word) its values live as long as the
 * continuation; a dead continuation's stack is freed (young: after the
 * minor collection that finds it dead; old: when swept) unless it was taken
 * before; mgc_cont_take is one-shot and darkens an old continuation while
 * marking runs; misuse goes to the fatal handler naming the call.
 *
 *   part 1: basics: new/push/pop/depth/MGC_FIBER_SLOT, growth from capacity
 *           1 to 10^4, the continuation's layout, take, second take NULL,
 *           field 0 then MGC_VAL_INT(0), field 1 kept verbatim (and never
 *           read: it holds a wild even word) across promotion.
 *   part 2: a held fiber is a root: young blocks (and a nested structure)
 *           survive minor, major and full major collections with intact
 *           contents; slot writes of young values between collections too.
 *   part 3: a fiber inside a continuation keeps its values alive: young
 *           continuation + minor; old continuation + full majors + heavy
 *           reuse of freed slots; a continuation reachable only from a
 *           field of another block (young and old holders, mgc_modify) or
 *           only from an ephemeron's data; continuations nested in fibers.
 *   part 4: dead continuations free their stacks: embedder stacks whose
 *           free function counts its calls (young dead: after the minor;
 *           promoted dead: after mgc_full_major; taken then dropped: never
 *           by the collector; mgc_stack_free; nested dead stacks; a
 *           continuation in the data of an ephemeron whose key dies); and
 *           many fiber continuations dropped young and old (ASan's leak
 *           check at exit sees a leak).
 *   part 5: embedder stacks are scanned: young values in a held stack and
 *           in one inside a continuation are updated to their promoted
 *           copies, contents intact across minor/major/full majors.
 *   part 6: a deep fiber (10^5 slots, scaled) held and in a continuation.
 *   part 7: a random model: 64 fibers/embedder stacks, a rooted array of 64
 *           continuations, random pushes, pops, slot writes, suspends,
 *           takes (twice), drops, frees, collections and garbage, checked
 *           against a shadow (seed printed).
 *   part 8: darken-before-take: an old continuation at the end of a long
 *           list holds the only reference to an old block; right after
 *           mgc_full_major (a new cycle marking, the continuation not yet
 *           reached) it is taken; two major collections and heavy reuse
 *           later the block is intact.
 *   part 9: misuse, each in a fork()ed child (every error of the contract,
 *           the OOM handler at the l limit, a returning OOM handler).  It
 *           runs first, before this process initialises mgc.
 *   part 10: mgc_shutdown with stacks held and inside live continuations
 *           frees each embedder stack exactly once; mgc_init again works.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tally.h"

#define SEED 20240901u

/* Classic global roots. */
enum { NR = 16 };
static mgc_value r[NR];

static void clear_roots(void) {
  int i;
  for (i = 0; i < NR; i++)
    r[i] = MGC_UNIT;
}

static void register_roots(void) {
  int i;
  for (i = 0; i < NR; i++) {
    r[i] = MGC_UNIT;
    mgc_register_global_root(&r[i]);
  }
}

static long scaled(long n, long min) {
  long v = test_scale(n);
  return v < min ? min : v;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* Blocks carrying ids                                                      */
/* ------------------------------------------------------------------------ */

/* A young block for id: 1 + id % 4 fields, tag id % 3; field 0 = id, the
   others a pattern of id. */
static long umod(long a, long m) { return ((a % m) + m) % m; }
static size_t idb_size(long id) { return 1 + (size_t)umod(id, 4); }
static unsigned idb_tag(long id) { return (unsigned)umod(id, 3); }
static long idb_pat(long id, size_t i) {
  return (id * 2654435761L) ^ (long)(i * 40503u);
}

static mgc_value idb(long id) {
  size_t n = idb_size(id), i;
  mgc_value v = mgc_alloc_small(n, idb_tag(id));
  MGC_FIELD(v, 0) = MGC_VAL_INT(id);
  for (i = 1; i < n; i++)
    MGC_FIELD(v, i) = MGC_VAL_INT(idb_pat(id, i));
  return v;
}

static int idb_ok(mgc_value v, long id) {
  size_t n = idb_size(id), i;
  if (!MGC_IS_BLOCK(v) || v == 0 || MGC_WOSIZE_VAL(v) != n ||
      MGC_TAG_VAL(v) != idb_tag(id) || MGC_FIELD(v, 0) != MGC_VAL_INT(id))
    return 0;
  for (i = 1; i < n; i++)
    if (MGC_FIELD(v, i) != MGC_VAL_INT(idb_pat(id, i)))
      return 0;
  return 1;
}

/* The id a value carries, for messages (-1: not an id block). */
static long idb_id(mgc_value v) {
  if (!MGC_IS_BLOCK(v) || v == 0)
    return MGC_IS_INT(v) ? -1000000 - MGC_INT_VAL(v) : -1;
  return MGC_IS_INT(MGC_FIELD(v, 0)) ? MGC_INT_VAL(MGC_FIELD(v, 0)) : -2;
}

/* Some garbage: young blocks of random sizes and now and then a large
   one. */
static void garbage(long n) {
  long i;
  for (i = 0; i < n; i++) {
    size_t sz = 1 + (size_t)test_rand_below(12);
    mgc_value v = mgc_alloc_small(sz, 0);
    size_t j;
    for (j = 0; j < sz; j++)
      MGC_FIELD(v, j) = MGC_VAL_INT(-7);
  }
  if (test_rand_below(8) == 0)
    (void)mgc_alloc(300 + test_rand_below(200), 0);
}

/* ------------------------------------------------------------------------ */
/* Embedder stacks                                                          */
/* ------------------------------------------------------------------------ */

/* Each embedder stack has an id; its free function counts the calls per
   id and releases the stack's memory (so a use after free is seen by
   ASan). */
#define ES_MAX_IDS (1 << 18)
static unsigned char es_frees[ES_MAX_IDS];
static long es_next_id = 1;
static long es_total_frees;
static long es_scans;

struct estack {
  mgc_stack hdr; /* first */
  long id;
  mgc_value *slots;
  size_t n, cap;
};

static void es_scan(mgc_stack *s, mgc_scanning_action act, void *data) {
  struct estack *e = (struct estack *)s;
  size_t i;
  es_scans++;
  for (i = 0; i < e->n; i++)
    act(data, e->slots[i], &e->slots[i]);
}

static void es_release(mgc_stack *s) {
  struct estack *e = (struct estack *)s;
  if (e->id > 0 && e->id < ES_MAX_IDS && es_frees[e->id] < 255)
    es_frees[e->id]++;
  es_total_frees++;
  e->id = -999;
  free(e->slots);
  free(e);
}

static const mgc_stack_ops es_ops = {es_scan, es_release};

static struct estack *es_new(size_t cap) {
  struct estack *e = calloc(1, sizeof *e);
  if (e == NULL)
    abort();
  e->id = es_next_id++;
  if (e->id >= ES_MAX_IDS)
    abort();
  e->cap = cap < 1 ? 1 : cap;
  e->slots = malloc(e->cap * sizeof(mgc_value));
  if (e->slots == NULL)
    abort();
  e->n = 0;
  mgc_stack_register(&e->hdr, &es_ops);
  return e;
}

static void es_push(struct estack *e, mgc_value v) {
  if (e->n == e->cap) {
    e->cap *= 2;
    e->slots = realloc(e->slots, e->cap * sizeof(mgc_value));
    if (e->slots == NULL)
      abort();
  }
  e->slots[e->n++] = v;
}

/* ------------------------------------------------------------------------ */
/* Part 1: basics                                                           */
/* ------------------------------------------------------------------------ */

#define WILD_WORD ((mgc_value)0x7ff0deadbee0) /* even, never mapped */

static void part1_basics(void) {
  mgc_fiber *f, *g;
  mgc_stack *s;
  struct tally t = {0, 0};
  long i, n = 10000;
  mgc_value k;
  printf("part 1: basics\n");
  fflush(stdout);

  f = mgc_fiber_new(1);
  if (!CHECK(f != NULL, "mgc_fiber_new(1) -> %p (error %d)", (void *)f,
             mgc_last_error()))
    return;
  CHECK(mgc_fiber_depth(f) == 0, "a new fiber is empty: depth %zu",
        mgc_fiber_depth(f));
  for (i = 0; i < n; i++) {
    mgc_fiber_push(f, MGC_VAL_INT(i * 3));
    EXPECT(&t, mgc_fiber_depth(f) == (size_t)i + 1,
           "depth %zu after %ld pushes", mgc_fiber_depth(f), i + 1);
  }
  for (i = 0; i < n; i++)
    EXPECT(&t, MGC_FIBER_SLOT(f, i) == MGC_VAL_INT(i * 3),
           "slot %ld after growth from 1: %ld", i,
           (long)MGC_INT_VAL(MGC_FIBER_SLOT(f, i)));
  for (i = 0; i < n; i += 2)
    MGC_FIBER_SLOT(f, i) = MGC_VAL_INT(-i);
  for (i = 0; i < n; i++)
    EXPECT(&t,
           MGC_FIBER_SLOT(f, i) ==
               (i % 2 ? MGC_VAL_INT(i * 3) : MGC_VAL_INT(-i)),
           "slot %ld after writes", i);
  for (i = n - 1; i >= n / 2; i--) {
    mgc_value v = mgc_fiber_pop(f);
    EXPECT(&t, v == (i % 2 ? MGC_VAL_INT(i * 3) : MGC_VAL_INT(-i)),
           "pop %ld -> %ld", i, (long)MGC_INT_VAL(v));
  }
  EXPECT(&t, mgc_fiber_depth(f) == (size_t)(n / 2), "depth %zu after pops",
         mgc_fiber_depth(f));
  /* Push again over popped slots. */
  for (i = n / 2; i < n; i++)
    mgc_fiber_push(f, MGC_VAL_INT(i + 1000000));
  for (i = n - 1; i >= 0; i--) {
    mgc_value v = mgc_fiber_pop(f);
    mgc_value want = i >= n / 2 ? MGC_VAL_INT(i + 1000000)
                     : i % 2    ? MGC_VAL_INT(i * 3)
                                : MGC_VAL_INT(-i);
    EXPECT(&t, v == want, "second pop %ld -> %ld", i, (long)MGC_INT_VAL(v));
  }
  EXPECT(&t, mgc_fiber_depth(f) == 0, "empty after popping all: %zu",
         mgc_fiber_depth(f));
  tally_report(&t, "part 1: push/pop/slot with growth from capacity 1");

  /* A continuation of a fiber holding ints and young blocks. */
  mgc_fiber_push(f, MGC_VAL_INT(11));
  mgc_fiber_push(f, idb(101));
  mgc_fiber_push(f, MGC_VAL_INT(12));
  mgc_fiber_push(f, idb(102));
  k = mgc_cont_new(f);
  r[0] = k;
  CHECK(MGC_IS_BLOCK(k) && MGC_TAG_VAL(k) == MGC_TAG_CONT,
        "continuation tag %u (want %d)", MGC_TAG_VAL(k), MGC_TAG_CONT);
  CHECK(MGC_WOSIZE_VAL(k) == 2, "continuation wosize %zu (want 2)",
        (size_t)MGC_WOSIZE_VAL(k));
  CHECK(MGC_FIELD(k, 0) == (mgc_value)f + 1,
        "field 0 is the fiber's address + 1: %#lx, fiber %p",
        (unsigned long)MGC_FIELD(k, 0), (void *)f);
  CHECK(MGC_FIELD(k, 1) == MGC_UNIT, "field 1 starts as MGC_UNIT: %#lx",
        (unsigned long)MGC_FIELD(k, 1));
  CHECK(mgc_is_young(k), "a new continuation is young");
  g = mgc_cont_take(r[0]);
  CHECK(g == f, "take returns the fiber: %p (want %p)", (void *)g, (void *)f);
  if (g == f) {
    CHECK(mgc_fiber_depth(f) == 4, "depth after take: %zu", mgc_fiber_depth(f));
    CHECK(MGC_FIBER_SLOT(f, 0) == MGC_VAL_INT(11) &&
              idb_ok(MGC_FIBER_SLOT(f, 1), 101) &&
              MGC_FIBER_SLOT(f, 2) == MGC_VAL_INT(12) &&
              idb_ok(MGC_FIBER_SLOT(f, 3), 102),
          "contents after take: %ld %ld %ld %ld", idb_id(MGC_FIBER_SLOT(f, 0)),
          idb_id(MGC_FIBER_SLOT(f, 1)), idb_id(MGC_FIBER_SLOT(f, 2)),
          idb_id(MGC_FIBER_SLOT(f, 3)));
  }
  g = mgc_cont_take(r[0]);
  CHECK(g == NULL, "a second take returns NULL: %p", (void *)g);
  s = mgc_cont_take_stack(r[0]);
  CHECK(s == NULL, "take_stack of a taken continuation returns NULL: %p",
        (void *)s);
  CHECK(MGC_FIELD(r[0], 0) == MGC_VAL_INT(0),
        "field 0 of a taken continuation is MGC_VAL_INT(0): %#lx",
        (unsigned long)MGC_FIELD(r[0], 0));
  /* A taken continuation survives collections harmlessly. */
  mgc_minor_collection();
  mgc_full_major();
  CHECK(MGC_TAG_VAL(r[0]) == MGC_TAG_CONT &&
            MGC_FIELD(r[0], 0) == MGC_VAL_INT(0),
        "a taken continuation promoted: tag %u, field 0 %#lx",
        MGC_TAG_VAL(r[0]), (unsigned long)MGC_FIELD(r[0], 0));
  CHECK(mgc_cont_take(r[0]) == NULL, "a taken promoted continuation: NULL");
  CHECK(mgc_fiber_depth(f) == 4 && idb_ok(MGC_FIBER_SLOT(f, 1), 101) &&
            idb_ok(MGC_FIBER_SLOT(f, 3), 102) &&
            !mgc_is_young(MGC_FIBER_SLOT(f, 1)),
        "the retaken fiber is a root again (promoted values intact)");

  /* Field 1: an opaque word copied on promotion and never read (a wild
     even word, which a collector reading it would crash on). */
  k = mgc_cont_new(f);
  r[0] = k;
  MGC_FIELD(k, 1) = WILD_WORD;
  mgc_minor_collection();
  CHECK(!mgc_is_young(r[0]) && MGC_TAG_VAL(r[0]) == MGC_TAG_CONT &&
            MGC_FIELD(r[0], 0) == (mgc_value)f + 1 &&
            MGC_FIELD(r[0], 1) == WILD_WORD,
        "promoted continuation: field 0 %#lx (fiber %p), field 1 %#lx",
        (unsigned long)MGC_FIELD(r[0], 0), (void *)f,
        (unsigned long)MGC_FIELD(r[0], 1));
  mgc_full_major();
  mgc_full_major();
  CHECK(MGC_FIELD(r[0], 1) == WILD_WORD &&
            MGC_FIELD(r[0], 0) == (mgc_value)f + 1,
        "field 1 kept across full majors: %#lx",
        (unsigned long)MGC_FIELD(r[0], 1));
  CHECK_VERIFY("part 1 with a wild field 1");
  s = mgc_cont_take_stack(r[0]);
  CHECK(s == &f->stack, "take_stack of a fiber continuation: %p (want %p)",
        (void *)s, (void *)&f->stack);
  CHECK(MGC_FIELD(r[0], 1) == WILD_WORD && MGC_FIELD(r[0], 0) == MGC_VAL_INT(0),
        "take leaves field 1 alone");
  CHECK(mgc_fiber_depth(f) == 4 && MGC_FIBER_SLOT(f, 0) == MGC_VAL_INT(11) &&
            idb_ok(MGC_FIBER_SLOT(f, 1), 101) &&
            MGC_FIBER_SLOT(f, 2) == MGC_VAL_INT(12) &&
            idb_ok(MGC_FIBER_SLOT(f, 3), 102),
        "contents after an old continuation");
  r[0] = MGC_UNIT;

  /* An empty fiber in a continuation; the same fiber again and again. */
  while (mgc_fiber_depth(f) > 0)
    (void)mgc_fiber_pop(f);
  for (i = 0; i < 100; i++) {
    k = mgc_cont_new(f);
    g = mgc_cont_take(k);
    EXPECT(&t, g == f && mgc_fiber_depth(f) == (size_t)i,
           "round %ld: take %p depth %zu", i, (void *)g, mgc_fiber_depth(f));
    mgc_fiber_push(f, MGC_VAL_INT(i));
  }
  tally_report(&t, "part 1: a fiber suspended and taken 100 times");
  mgc_fiber_free(f);

  /* Capacity 0: a small default, growing. */
  f = mgc_fiber_new(0);
  if (CHECK(f != NULL, "mgc_fiber_new(0)")) {
    for (i = 0; i < 1000; i++)
      mgc_fiber_push(f, MGC_VAL_INT(i));
    CHECK(mgc_fiber_depth(f) == 1000 &&
              MGC_FIBER_SLOT(f, 999) == MGC_VAL_INT(999) &&
              MGC_FIBER_SLOT(f, 0) == MGC_VAL_INT(0),
          "a fiber of capacity 0 grows to 1000");
    mgc_fiber_free(f);
  }
  CHECK_VERIFY("part 1");
}

/* ------------------------------------------------------------------------ */
/* Part 2: a held fiber is a root                                           */
/* ------------------------------------------------------------------------ */

/* Nested: a block [id, young idb(id + 1), young idb(id + 2)]. */
static mgc_value nested(long id) {
  MGC_PARAM0;
  MGC_LOCAL2(a, b);
  mgc_value v;
  a = idb(id + 1);
  b = idb(id + 2);
  v = mgc_alloc_small(3, 0);
  MGC_FIELD(v, 0) = MGC_VAL_INT(id);
  MGC_FIELD(v, 1) = a;
  MGC_FIELD(v, 2) = b;
  MGC_RETURN(v);
}

static int nested_ok(mgc_value v, long id) {
  return MGC_IS_BLOCK(v) && MGC_WOSIZE_VAL(v) == 3 &&
         MGC_FIELD(v, 0) == MGC_VAL_INT(id) &&
         idb_ok(MGC_FIELD(v, 1), id + 1) && idb_ok(MGC_FIELD(v, 2), id + 2);
}

/* Fiber model: slot i holds idb(ids[i]), or nested(ids[i]) when ids[i] is
   a multiple of 1000 (plus 1000000), or MGC_VAL_INT(-ids[i]) when
   ids[i] % 7 == 0. */
static mgc_value fresh_value(long id) {
  if (id % 7 == 0)
    return MGC_VAL_INT(-id);
  if (id % 1000 == 500)
    return nested(id);
  return idb(id);
}

static int value_ok(mgc_value v, long id) {
  if (id % 7 == 0)
    return v == MGC_VAL_INT(-id);
  if (id % 1000 == 500)
    return nested_ok(v, id);
  return idb_ok(v, id);
}

static void check_fiber(struct tally *t, const char *where, mgc_fiber *f,
                        const long *ids, size_t n, int want_old) {
  size_t i;
  EXPECT(t, mgc_fiber_depth(f) == n, "%s: depth %zu (want %zu)", where,
         mgc_fiber_depth(f), n);
  if (mgc_fiber_depth(f) != n)
    return;
  for (i = 0; i < n; i++) {
    mgc_value v = MGC_FIBER_SLOT(f, i);
    EXPECT(t, value_ok(v, ids[i]), "%s: slot %zu holds %ld (want %ld)", where,
           i, idb_id(v), ids[i]);
    if (want_old && MGC_IS_BLOCK(v))
      EXPECT(t, !mgc_is_young(v), "%s: slot %zu still young", where, i);
  }
}

static void part2_held_root(void) {
  struct tally t = {0, 0};
  mgc_fiber *f;
  size_t n = 300, i, j;
  long ids[300];
  long next = 2000;
  int round;
  printf("part 2: a held fiber is a root\n");
  fflush(stdout);
  f = mgc_fiber_new(4);
  if (!CHECK(f != NULL, "mgc_fiber_new"))
    return;
  for (i = 0; i < n; i++) {
    ids[i] = next++;
    mgc_fiber_push(f, fresh_value(ids[i]));
  }
  check_fiber(&t, "before any collection", f, ids, n, 0);
  for (round = 0; round < 6; round++) {
    /* Young values written into slots between collections. */
    for (j = 0; j < 40; j++) {
      i = (size_t)test_rand_below(n);
      ids[i] = next++;
      MGC_FIBER_SLOT(f, i) = fresh_value(ids[i]);
      garbage(3);
    }
    switch (round % 3) {
    case 0:
      mgc_minor_collection();
      break;
    case 1:
      mgc_major_collection();
      break;
    default:
      mgc_full_major();
      break;
    }
    check_fiber(&t,
                round % 3 == 0   ? "after a minor collection"
                : round % 3 == 1 ? "after mgc_major_collection"
                                 : "after mgc_full_major",
                f, ids, n, 1);
    /* Heavy allocation of the same sizes: freed slots are reused. */
    for (j = 0; j < 3000; j++)
      (void)idb(-5 - (long)j * 4);
    mgc_major_slice(0);
    check_fiber(&t, "after garbage and a slice", f, ids, n, 0);
  }
  /* Pops return the promoted values. */
  for (i = n; i-- > n - 50;) {
    mgc_value v = mgc_fiber_pop(f);
    EXPECT(&t, value_ok(v, ids[i]), "pop slot %zu: %ld (want %ld)", i,
           idb_id(v), ids[i]);
  }
  mgc_full_major();
  check_fiber(&t, "after pops and a full major", f, ids, n - 50, 1);
  tally_report(&t, "part 2: values only in a held fiber survive collections");
  CHECK_VERIFY("part 2");
  mgc_fiber_free(f);
  mgc_full_major();
  CHECK_VERIFY("part 2 after mgc_fiber_free");
}

/* ------------------------------------------------------------------------ */
/* Part 3: a fiber inside a continuation keeps its values alive             */
/* ------------------------------------------------------------------------ */

static mgc_fiber *filled_fiber(long base, size_t n, long *ids) {
  mgc_fiber *f = mgc_fiber_new(2);
  size_t i;
  if (f == NULL)
    return NULL;
  for (i = 0; i < n; i++) {
    ids[i] = base + (long)i;
    mgc_fiber_push(f, fresh_value(ids[i]));
  }
  return f;
}

/* Same-sized garbage in the major heap too: freed slots reused. */
static void heavy_reuse(long n) {
  long j;
  for (j = 0; j < n; j++) {
    mgc_value v = idb(-3 - j);
    if (j % 4 == 0) {
      mgc_value o = mgc_alloc_shr(idb_size(j), 0);
      size_t i;
      for (i = 0; i < idb_size(j); i++)
        mgc_initialize(&MGC_FIELD(o, i), MGC_VAL_INT(-j));
    }
    (void)v;
  }
}

static void take_and_check(struct tally *t, const char *where, mgc_value k,
                           mgc_fiber *f, const long *ids, size_t n) {
  mgc_fiber *g = mgc_cont_take(k);
  EXPECT(t, g == f, "%s: take -> %p (want %p)", where, (void *)g, (void *)f);
  if (g != f)
    return;
  check_fiber(t, where, f, ids, n, 0);
}

static void part3_cont_keeps_alive(void) {
  struct tally t = {0, 0};
  mgc_fiber *f, *f2, *g;
  long ids[64], ids2[64];
  size_t n = 64, i;
  int rep;
  mgc_value k;
  printf("part 3: a fiber inside a continuation keeps its values alive\n");
  fflush(stdout);

  for (rep = 0; rep < 3; rep++) {
    /* Young continuation, young values, a minor collection. */
    f = filled_fiber(30000 + rep * 1000, n, ids);
    if (f == NULL)
      return;
    r[0] = mgc_cont_new(f);
    garbage(100);
    mgc_minor_collection();
    EXPECT(&t, !mgc_is_young(r[0]), "the continuation was promoted");
    garbage(100);
    take_and_check(&t, "young continuation after a minor", r[0], f, ids, n);
    for (i = 0; i < n; i++)
      if (MGC_IS_BLOCK(MGC_FIBER_SLOT(f, i)))
        EXPECT(&t, !mgc_is_young(MGC_FIBER_SLOT(f, i)),
               "slot %zu was promoted with the continuation", i);

    /* Old continuation: several full majors, heavy reuse of freed slots. */
    r[0] = mgc_cont_new(f);
    mgc_minor_collection();
    EXPECT(&t, !mgc_is_young(r[0]), "old continuation");
    mgc_full_major();
    heavy_reuse(5000);
    mgc_full_major();
    heavy_reuse(5000);
    mgc_full_major();
    mgc_major_slice(0);
    take_and_check(&t, "old continuation after full majors", r[0], f, ids, n);

    /* Young values pushed, then the continuation old at once: promotion
       of the values through the continuation's scan by the major cycle. */
    for (i = 0; i < 8; i++) {
      (void)mgc_fiber_pop(f);
    }
    for (i = n - 8; i < n; i++) {
      ids[i] = 39000 + rep * 100 + (long)i;
      mgc_fiber_push(f, fresh_value(ids[i]));
    }
    r[0] = mgc_cont_new(f);
    mgc_major_collection();
    heavy_reuse(3000);
    mgc_major_collection();
    take_and_check(&t, "continuation with young values, major collections",
                   r[0], f, ids, n);

    /* Only in a field of another block: a young holder. */
    r[1] = mgc_alloc(4, 0);
    k = mgc_cont_new(f);
    mgc_modify(&MGC_FIELD(r[1], 2), k);
    r[0] = MGC_UNIT;
    mgc_minor_collection();
    heavy_reuse(3000);
    mgc_full_major();
    take_and_check(&t, "continuation in a young holder's field",
                   MGC_FIELD(r[1], 2), f, ids, n);
    /* An old holder, a young continuation stored with mgc_modify (the
       remembered set must keep it). */
    EXPECT(&t, !mgc_is_young(r[1]), "the holder is old");
    k = mgc_cont_new(f);
    mgc_modify(&MGC_FIELD(r[1], 3), k);
    k = MGC_UNIT;
    mgc_minor_collection();
    heavy_reuse(3000);
    mgc_major_collection();
    mgc_full_major();
    take_and_check(&t, "young continuation in an old holder's field",
                   MGC_FIELD(r[1], 3), f, ids, n);
    r[1] = MGC_UNIT;

    /* Only in an ephemeron's data, its key alive. */
    r[2] = idb(77777);
    r[3] = mgc_ephe_create(1);
    mgc_ephe_set_key(r[3], 0, r[2]);
    k = mgc_cont_new(f);
    mgc_ephe_set_data(r[3], k);
    k = MGC_UNIT;
    mgc_minor_collection();
    mgc_full_major();
    heavy_reuse(3000);
    mgc_full_major();
    {
      mgc_value d = MGC_UNIT;
      int got = mgc_ephe_get_data(r[3], &d);
      EXPECT(&t, got && MGC_IS_BLOCK(d) && MGC_TAG_VAL(d) == MGC_TAG_CONT,
             "the ephemeron's data is still the continuation");
      if (got && MGC_IS_BLOCK(d) && MGC_TAG_VAL(d) == MGC_TAG_CONT)
        take_and_check(&t, "continuation in an ephemeron's data", d, f, ids, n);
      else
        f = NULL; /* lost: do not touch it again */
    }
    r[2] = r[3] = MGC_UNIT;

    /* Nested: a young continuation of f2 in a slot of the held fiber f,
       then f itself in a continuation. */
    if (f == NULL)
      break;
    f2 = filled_fiber(50000 + rep * 1000, n, ids2);
    if (f2 == NULL)
      break;
    k = mgc_cont_new(f2);
    mgc_fiber_push(f, k);
    mgc_minor_collection();
    k = MGC_FIBER_SLOT(f, n);
    EXPECT(&t, !mgc_is_young(k) && MGC_TAG_VAL(k) == MGC_TAG_CONT,
           "a continuation held in a held fiber was promoted");
    r[0] = mgc_cont_new(f);
    mgc_full_major();
    heavy_reuse(3000);
    mgc_full_major();
    g = mgc_cont_take(r[0]);
    EXPECT(&t, g == f, "outer take");
    if (g == f) {
      EXPECT(&t, mgc_fiber_depth(f) == n + 1, "outer depth %zu",
             mgc_fiber_depth(f));
      k = mgc_fiber_pop(f);
      check_fiber(&t, "outer fiber", f, ids, n, 1);
      take_and_check(&t, "continuation nested in a suspended fiber", k, f2,
                     ids2, n);
      mgc_fiber_free(f2);
      mgc_fiber_free(f);
    }
    r[0] = MGC_UNIT;
  }
  tally_report(&t, "part 3: values only in suspended fibers stay alive");
  CHECK_VERIFY("part 3");
}

/* ------------------------------------------------------------------------ */
/* Part 4: dead continuations free their stacks                             */
/* ------------------------------------------------------------------------ */

/* An embedder stack with n young values (ids from base). */
static struct estack *filled_estack(long base, size_t n) {
  struct estack *e = es_new(2);
  size_t i;
  for (i = 0; i < n; i++)
    es_push(e, fresh_value(base + (long)i));
  return e;
}

static int estack_ok(struct estack *e, long base, size_t n) {
  size_t i;
  if (e->n != n)
    return 0;
  for (i = 0; i < n; i++)
    if (!value_ok(e->slots[i], base + (long)i))
      return 0;
  return 1;
}

/* Resident memory in bytes (0 when unknown). */
static size_t rss_bytes(void) {
  FILE *fp = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (fp == NULL)
    return 0;
  if (fscanf(fp, "%lu %lu", &size, &res) != 2)
    res = 0;
  fclose(fp);
  return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* Fibers dropped in continuations (young and old) and freed held give
   their slot arrays back: resident memory stays far below what a leak
   would take.  (Under ASan the freed memory sits in its quarantine; its
   leak check at exit covers the case there.) */
static void part4_rss(void) {
  long rounds = scaled(4000, 100), i;
  size_t depth = 2048, j, before, after, leak = 0;
  mgc_fiber *f;
  before = rss_bytes();
  for (i = 0; i < rounds; i++) {
    f = mgc_fiber_new(depth);
    for (j = 0; j < depth; j++)
      mgc_fiber_push(f, MGC_VAL_INT(j));
    mgc_fiber_push(f, idb(i));
    switch (i % 3) {
    case 0:
      (void)mgc_cont_new(f);
      break;
    case 1:
      r[4] = mgc_cont_new(f);
      if (i % 6 == 1)
        mgc_minor_collection(); /* promoted, then dropped */
      r[4] = MGC_UNIT;
      break;
    default:
      mgc_fiber_free(f);
      break;
    }
    if (i % 50 == 49)
      mgc_full_major();
  }
  mgc_full_major();
  after = rss_bytes();
  leak = (size_t)rounds * (depth + 1) * sizeof(mgc_value);
  if (UNDER_ASAN || before == 0 || leak < ((size_t)32 << 20)) {
    printf("  (resident memory check skipped: %s)\n", UNDER_ASAN ? "ASan"
                                                      : before == 0
                                                          ? "no /proc"
                                                          : "too small");
    return;
  }
  CHECK(
      after<before + leak / 4,
            "dropped fibers are freed: resident memory grew by %zu KiB for %ld "
            "fibers of %zu KiB",
            after>
              before
          ? (after - before) >> 10
          : 0,
      rounds, (depth + 1) * sizeof(mgc_value) >> 10);
}

static void part4_freed_when_dead(void) {
  struct estack *e, *e2;
  mgc_stack *s;
  mgc_fiber *f, *f2;
  long id, id2, i, rounds;
  mgc_value k;
  printf("part 4: dead continuations free their stacks\n");
  fflush(stdout);

  /* A young continuation dropped: freed by the minor collection. */
  e = filled_estack(60000, 20);
  id = e->id;
  k = mgc_cont_new_stack(&e->hdr);
  CHECK(MGC_TAG_VAL(k) == MGC_TAG_CONT && MGC_FIELD(k, 0) == (mgc_value)e + 1 &&
            mgc_is_young(k),
        "embedder stack continuation: tag %u, field 0 %#lx (stack %p)",
        MGC_TAG_VAL(k), (unsigned long)MGC_FIELD(k, 0), (void *)e);
  CHECK(es_frees[id] == 0, "not freed while its continuation is alive");
  k = MGC_UNIT;
  mgc_minor_collection();
  CHECK(es_frees[id] == 1,
        "a dead young continuation: free called %d times after the minor "
        "collection (want 1)",
        es_frees[id]);
  mgc_full_major();
  CHECK(es_frees[id] == 1, "and not again after a full major: %d",
        es_frees[id]);

  /* A promoted continuation dropped: freed by mgc_full_major. */
  e = filled_estack(61000, 20);
  id = e->id;
  r[0] = mgc_cont_new_stack(&e->hdr);
  mgc_minor_collection();
  CHECK(!mgc_is_young(r[0]) && es_frees[id] == 0,
        "a promoted live continuation: not freed (%d)", es_frees[id]);
  mgc_full_major();
  CHECK(es_frees[id] == 0, "a live old continuation: not freed (%d)",
        es_frees[id]);
  r[0] = MGC_UNIT;
  mgc_minor_collection();
  CHECK(es_frees[id] == 0,
        "a dead old continuation is not freed by a minor collection (%d)",
        es_frees[id]);
  mgc_full_major();
  CHECK(es_frees[id] == 1,
        "a dead old continuation: free called %d times after mgc_full_major "
        "(want 1)",
        es_frees[id]);
  mgc_full_major();
  CHECK(es_frees[id] == 1, "and not again: %d", es_frees[id]);

  /* Taken, then the continuation dropped: the taker owns the stack. */
  for (i = 0; i < 2; i++) {
    e = filled_estack(62000 + i * 100, 20);
    id = e->id;
    r[0] = mgc_cont_new_stack(&e->hdr);
    if (i == 1)
      mgc_minor_collection(); /* an old continuation */
    s = mgc_cont_take_stack(r[0]);
    CHECK(s == &e->hdr, "take_stack -> %p (want %p)", (void *)s,
          (void *)&e->hdr);
    r[0] = MGC_UNIT;
    mgc_minor_collection();
    mgc_full_major();
    CHECK(es_frees[id] == 0,
          "a %s continuation taken then dropped: the collector did not free "
          "its stack (%d)",
          i ? "old" : "young", es_frees[id]);
    if (es_frees[id] != 0)
      continue;
    CHECK(estack_ok(e, 62000 + i * 100, 20),
          "the taken stack's values are intact");
    mgc_stack_free(&e->hdr);
    CHECK(es_frees[id] == 1,
          "mgc_stack_free of the taken stack: free "
          "called %d times (want 1)",
          es_frees[id]);
    mgc_full_major();
    CHECK(es_frees[id] == 1, "and not again: %d", es_frees[id]);
  }

  /* mgc_stack_free on a held stack that was never suspended. */
  e = filled_estack(63000, 5);
  id = e->id;
  mgc_minor_collection();
  mgc_stack_free(&e->hdr);
  CHECK(es_frees[id] == 1, "mgc_stack_free of a held stack: %d calls",
        es_frees[id]);
  mgc_minor_collection();
  mgc_full_major();
  CHECK(es_frees[id] == 1, "and not again after collections: %d", es_frees[id]);

  /* Nested dead stacks: e2's continuation in a slot of e, e's continuation
     dropped.  Young: both freed by one minor collection. */
  for (i = 0; i < 2; i++) {
    e = filled_estack(64000, 4);
    e2 = filled_estack(64100, 4);
    id = e->id;
    id2 = e2->id;
    k = mgc_cont_new_stack(&e2->hdr);
    es_push(e, k);
    if (i == 0) {
      int inner_young;
      k = mgc_cont_new_stack(&e->hdr);
      /* Under torture the allocation of the outer continuation promoted
         the inner one (e was still held): then it dies old. */
      inner_young = mgc_is_young(e->slots[e->n - 1]);
      k = MGC_UNIT;
      mgc_minor_collection();
      CHECK(es_frees[id] == 1 && es_frees[id2] == (inner_young ? 1 : 0),
            "nested young dead continuations: frees %d and %d after a minor "
            "(want 1 and %d)",
            es_frees[id], es_frees[id2], inner_young);
      if (!inner_young) {
        mgc_full_major();
        CHECK(es_frees[id2] == 1,
              "nested dead continuation promoted before: freed %d times "
              "after a full major (want 1)",
              es_frees[id2]);
      }
    } else {
      r[0] = mgc_cont_new_stack(&e->hdr);
      mgc_minor_collection();
      CHECK(es_frees[id] == 0 && es_frees[id2] == 0,
            "nested live continuations are not freed");
      r[0] = MGC_UNIT;
      mgc_full_major();
      CHECK(es_frees[id] == 1 && es_frees[id2] == 1,
            "nested old dead continuations: frees %d and %d after a full "
            "major (want 1 and 1)",
            es_frees[id], es_frees[id2]);
    }
  }

  /* In an ephemeron's data: alive with the key, freed when the key dies. */
  e = filled_estack(65000, 6);
  id = e->id;
  r[2] = idb(5);
  r[3] = mgc_ephe_create(1);
  mgc_ephe_set_key(r[3], 0, r[2]);
  k = mgc_cont_new_stack(&e->hdr);
  mgc_ephe_set_data(r[3], k);
  k = MGC_UNIT;
  mgc_full_major();
  CHECK(es_frees[id] == 0 && mgc_ephe_check_data(r[3]),
        "a continuation in an ephemeron's data, key alive: kept");
  r[2] = MGC_UNIT;
  mgc_full_major();
  CHECK(!mgc_ephe_check_data(r[3]) && es_frees[id] == 1,
        "key dead: data emptied (%d) and the stack freed %d times (want 1)",
        mgc_ephe_check_data(r[3]), es_frees[id]);
  r[3] = MGC_UNIT;

  /* Fibers: many continuations dropped young and old, and fibers freed
     held; a leak would be large (ASan's leak check at exit). */
  rounds = scaled(20000, 300);
  for (i = 0; i < rounds; i++) {
    size_t j, depth = (size_t)(i % 50);
    f = mgc_fiber_new((size_t)(i % 5));
    for (j = 0; j < depth; j++)
      mgc_fiber_push(f, j % 2 ? idb(i) : MGC_VAL_INT(j));
    switch (i % 4) {
    case 0: /* young continuation, dropped */
      (void)mgc_cont_new(f);
      break;
    case 1: /* old continuation, dropped later */
      r[4 + (i / 4) % 8] = mgc_cont_new(f);
      break;
    case 2: /* freed while held */
      mgc_fiber_free(f);
      break;
    default: /* suspended, taken, dropped, then freed */
      k = mgc_cont_new(f);
      f2 = mgc_cont_take(k);
      if (f2 != f)
        CHECK(0, "take in the leak loop: %p (want %p)", (void *)f2, (void *)f);
      else
        mgc_fiber_free(f);
      break;
    }
    if (i % 97 == 0)
      mgc_minor_collection();
    if (i % 1000 == 999)
      mgc_full_major();
  }
  for (i = 4; i < 12; i++)
    r[i] = MGC_UNIT;
  mgc_full_major();
  CHECK_VERIFY("part 4");
  part4_rss();
}

/* ------------------------------------------------------------------------ */
/* Part 5: embedder stacks are scanned                                      */
/* ------------------------------------------------------------------------ */

static void check_estack(struct tally *t, const char *where, struct estack *e,
                         long base, size_t n, int want_old) {
  size_t i;
  EXPECT(t, es_frees[e->id] == 0 && e->n == n,
         "%s: stack alive with %zu "
         "slots",
         where, n);
  if (e->n != n)
    return;
  for (i = 0; i < n; i++) {
    mgc_value v = e->slots[i];
    EXPECT(t, value_ok(v, base + (long)i), "%s: slot %zu holds %ld (want %ld)",
           where, i, idb_id(v), base + (long)i);
    if (want_old && MGC_IS_BLOCK(v))
      EXPECT(t, !mgc_is_young(v), "%s: slot %zu still young (not updated)",
             where, i);
  }
}

static void part5_embedder_scan(void) {
  struct tally t = {0, 0};
  struct estack *e, *e2;
  mgc_stack *s;
  size_t n = 200;
  long scans0;
  int rep;
  printf("part 5: embedder stacks are scanned\n");
  fflush(stdout);
  for (rep = 0; rep < 3; rep++) {
    long base = 70000 + rep * 1000;
    e = filled_estack(base, n);
    e2 = filled_estack(base + 500, n);
    scans0 = es_scans;
    mgc_minor_collection();
    EXPECT(&t, es_scans > scans0, "a minor collection scanned held stacks");
    check_estack(&t, "held, after a minor", e, base, n, 1);
    /* e2 in a continuation: its young values promoted with it. */
    r[0] = mgc_cont_new_stack(&e2->hdr);
    check_estack(&t, "held, before suspension", e, base, n, 0);
    mgc_minor_collection();
    heavy_reuse(2000);
    mgc_major_collection();
    check_estack(&t, "held, after a major", e, base, n, 1);
    heavy_reuse(2000);
    mgc_full_major();
    heavy_reuse(2000);
    mgc_full_major();
    check_estack(&t, "held, after full majors", e, base, n, 1);
    s = mgc_cont_take_stack(r[0]);
    EXPECT(&t, s == &e2->hdr, "take_stack -> %p", (void *)s);
    if (s == &e2->hdr)
      check_estack(&t, "suspended young, taken after collections", e2,
                   base + 500, n, 1);
    /* Young values written into the held stacks, then suspension into an
       old continuation: the major cycle's scan keeps them. */
    r[0] = mgc_cont_new_stack(&e2->hdr);
    mgc_minor_collection();
    {
      size_t i;
      for (i = 0; i < n; i += 3)
        e->slots[i] = fresh_value(base + (long)i);
    }
    check_estack(&t, "held, young values rewritten", e, base, n, 0);
    mgc_minor_collection();
    check_estack(&t, "held, rewritten values promoted", e, base, n, 1);
    mgc_full_major();
    s = mgc_cont_take_stack(r[0]);
    EXPECT(&t, s == &e2->hdr, "take_stack (old) -> %p", (void *)s);
    if (s == &e2->hdr)
      check_estack(&t, "suspended old, taken after a full major", e2,
                   base + 500, n, 1);
    r[0] = MGC_UNIT;
    mgc_stack_free(&e->hdr);
    mgc_stack_free(&e2->hdr);
  }
  tally_report(&t, "part 5: values in embedder stacks survive and are "
                   "updated");
  CHECK_VERIFY("part 5");
}

/* ------------------------------------------------------------------------ */
/* Part 6: a deep fiber                                                     */
/* ------------------------------------------------------------------------ */

static void check_deep(struct tally *t, const char *where, mgc_fiber *f,
                       size_t n, int want_old) {
  size_t i;
  long bad = 0;
  EXPECT(t, mgc_fiber_depth(f) == n, "%s: depth %zu (want %zu)", where,
         mgc_fiber_depth(f), n);
  if (mgc_fiber_depth(f) != n)
    return;
  for (i = 0; i < n; i++) {
    mgc_value v = MGC_FIBER_SLOT(f, i);
    if (!idb_ok(v, 100000 + (long)i) || (want_old && mgc_is_young(v))) {
      if (bad++ < 3)
        EXPECT(t, 0, "%s: slot %zu holds %ld (want %ld), young %d", where, i,
               idb_id(v), 100000 + (long)i, mgc_is_young(v));
    }
  }
  EXPECT(t, bad == 0, "%s: %ld of %zu slots wrong", where, bad, n);
}

static void part6_deep(void) {
  struct tally t = {0, 0};
  mgc_fiber *f, *g;
  size_t n = (size_t)scaled(100000, 2000), i;
  printf("part 6: a deep fiber (%zu slots)\n", n);
  fflush(stdout);
  f = mgc_fiber_new(1);
  if (!CHECK(f != NULL, "mgc_fiber_new"))
    return;
  for (i = 0; i < n; i++)
    mgc_fiber_push(f, idb(100000 + (long)i));
  check_deep(&t, "deep, built", f, n, 0);
  mgc_minor_collection();
  check_deep(&t, "deep, after a minor", f, n, 1);
  mgc_full_major();
  check_deep(&t, "deep, after a full major", f, n, 1);
  /* Rewrite every slot young, then suspend: promotion by the
     continuation's scan. */
  for (i = 0; i < n; i++)
    MGC_FIBER_SLOT(f, i) = idb(100000 + (long)i);
  r[0] = mgc_cont_new(f);
  mgc_minor_collection();
  heavy_reuse(scaled(20000, 500));
  mgc_full_major();
  mgc_full_major();
  g = mgc_cont_take(r[0]);
  r[0] = MGC_UNIT;
  EXPECT(&t, g == f, "take of the deep fiber");
  if (g == f) {
    check_deep(&t, "deep, suspended through a minor and full majors", f, n, 1);
    /* Old continuation from the start. */
    r[0] = mgc_cont_new(f);
    mgc_minor_collection();
    mgc_major_slice(0);
    heavy_reuse(scaled(20000, 500));
    mgc_full_major();
    g = mgc_cont_take(r[0]);
    r[0] = MGC_UNIT;
    EXPECT(&t, g == f, "second take of the deep fiber");
    if (g == f) {
      check_deep(&t, "deep, old suspended", f, n, 1);
      mgc_full_major();
      check_deep(&t, "deep, held again after a full major", f, n, 1);
      mgc_fiber_free(f);
    }
  }
  tally_report(&t, "part 6: a deep fiber");
  CHECK_VERIFY("part 6");
}

/* ------------------------------------------------------------------------ */
/* Part 7: random model                                                     */
/* ------------------------------------------------------------------------ */

#define M_ENT 64
#define M_ARR 64
#define M_MAXDEPTH 120

enum { E_NONE, E_HELD, E_SUSP };
enum { A_EMPTY, A_LIVE, A_TAKEN };

struct ent {
  int state;
  int kind; /* 0 fiber, 1 embedder stack */
  mgc_fiber *f;
  struct estack *e;
  long es_id;
  long ids[M_MAXDEPTH + 1];
  size_t n;
  int slot; /* array slot while suspended */
};

struct aslot {
  int state;
  int ent;   /* A_LIVE: the entity inside */
  int kind;  /* of the stack it was made of */
  void *ptr; /* the stack it was made of */
};

static struct ent ents[M_ENT];
static struct aslot arr[M_ARR];

/* Dropped embedder stacks waiting to be freed. */
struct dropped {
  long id;
  int young; /* its continuation was young when dropped */
};
static struct dropped *drops;
static size_t ndrops, capdrops;

static long m_next_id;

static mgc_value m_value(long id) {
  if (id % 9 == 0)
    return MGC_VAL_INT(-id);
  return idb(id);
}

static int m_value_ok(mgc_value v, long id) {
  if (id % 9 == 0)
    return v == MGC_VAL_INT(-id);
  return idb_ok(v, id);
}

static size_t ent_depth(struct ent *x) {
  return x->kind == 0 ? mgc_fiber_depth(x->f) : x->e->n;
}

static mgc_value *ent_slot(struct ent *x, size_t i) {
  return x->kind == 0 ? &MGC_FIBER_SLOT(x->f, i) : &x->e->slots[i];
}

static void ent_check(struct tally *t, int ei, const char *where) {
  struct ent *x = &ents[ei];
  size_t i;
  if (x->kind == 1) {
    EXPECT(t, es_frees[x->es_id] == 0, "%s: entity %d's live stack %ld freed",
           where, ei, x->es_id);
    if (es_frees[x->es_id] != 0) {
      x->state = E_NONE; /* gone: never touch it again */
      return;
    }
  }
  EXPECT(t, ent_depth(x) == x->n, "%s: entity %d depth %zu (want %zu)", where,
         ei, ent_depth(x), x->n);
  if (ent_depth(x) != x->n)
    return;
  for (i = 0; i < x->n; i++) {
    mgc_value v = *ent_slot(x, i);
    EXPECT(t, m_value_ok(v, x->ids[i]),
           "%s: entity %d slot %zu holds %ld (want %ld)", where, ei, i,
           idb_id(v), x->ids[i]);
  }
}

static void note_drop(long id, int young) {
  if (ndrops == capdrops) {
    capdrops = capdrops ? capdrops * 2 : 64;
    drops = realloc(drops, capdrops * sizeof *drops);
    if (drops == NULL)
      abort();
  }
  drops[ndrops].id = id;
  drops[ndrops].young = young;
  ndrops++;
}

/* After a minor collection (young drops freed) or a full major (all). */
static void check_drops(struct tally *t, int full, const char *where) {
  size_t i, j = 0;
  for (i = 0; i < ndrops; i++) {
    int c = es_frees[drops[i].id];
    EXPECT(t, c <= 1, "%s: dropped stack %ld freed %d times", where,
           drops[i].id, c);
    if (full || drops[i].young)
      EXPECT(t, c == 1,
             "%s: dropped stack %ld (continuation %s when dropped) freed %d "
             "times (want 1)",
             where, drops[i].id, drops[i].young ? "young" : "old", c);
    if (c == 0)
      drops[j++] = drops[i];
  }
  ndrops = j;
}

static int pick_ent(int state) {
  int tries, i;
  for (tries = 0; tries < 8; tries++) {
    i = (int)test_rand_below(M_ENT);
    if (ents[i].state == state)
      return i;
  }
  for (i = 0; i < M_ENT; i++)
    if (ents[i].state == state)
      return i;
  return -1;
}

static int pick_arr(int state) {
  int tries, i;
  for (tries = 0; tries < 8; tries++) {
    i = (int)test_rand_below(M_ARR);
    if (arr[i].state == state)
      return i;
  }
  for (i = 0; i < M_ARR; i++)
    if (arr[i].state == state)
      return i;
  return -1;
}

static void m_new_ent(int ei) {
  struct ent *x = &ents[ei];
  x->kind = test_rand_below(4) == 0;
  x->n = 0;
  if (x->kind == 0) {
    x->f = mgc_fiber_new((size_t)test_rand_below(6));
    x->e = NULL;
    x->es_id = 0;
  } else {
    x->e = es_new(1 + (size_t)test_rand_below(4));
    x->es_id = x->e->id;
    x->f = NULL;
  }
  x->state = E_HELD;
}

/* The array of continuations: r[R_ARR]. */
#define R_ARR 8

static void part7_model(void) {
  struct tally t = {0, 0};
  long ops = scaled(200000, 2000), op;
  long n_push = 0, n_pop = 0, n_write = 0, n_susp = 0, n_take = 0, n_take2 = 0,
       n_drop = 0, n_free = 0, n_minor = 0, n_slice = 0, n_full = 0;
  long es_created0 = es_next_id, es_frees0 = es_total_frees;
  int i;
  double t0 = now_s();
  printf("part 7: random model (%ld operations)\n", ops);
  fflush(stdout);
  memset(ents, 0, sizeof ents);
  memset(arr, 0, sizeof arr);
  ndrops = 0;
  m_next_id = 200000;
  r[R_ARR] = mgc_alloc(M_ARR, 0);
  for (op = 0; op < ops; op++) {
    unsigned c = (unsigned)test_rand_below(1000);
    int ei, ai;
    struct ent *x;
    if (c < 280) { /* push */
      ei = pick_ent(E_HELD);
      if (ei < 0 || ents[ei].n >= M_MAXDEPTH) {
        ei = pick_ent(E_NONE);
        if (ei < 0)
          continue;
        m_new_ent(ei);
      }
      x = &ents[ei];
      x->ids[x->n] = m_next_id++;
      if (x->kind == 0)
        mgc_fiber_push(x->f, m_value(x->ids[x->n]));
      else
        es_push(x->e, m_value(x->ids[x->n]));
      x->n++;
      n_push++;
    } else if (c < 380) { /* pop */
      mgc_value v;
      ei = pick_ent(E_HELD);
      if (ei < 0 || ents[ei].n == 0)
        continue;
      x = &ents[ei];
      if (x->kind == 0)
        v = mgc_fiber_pop(x->f);
      else
        v = x->e->slots[--x->e->n];
      x->n--;
      EXPECT(&t, m_value_ok(v, x->ids[x->n]),
             "op %ld: pop of entity %d gave %ld (want %ld)", op, ei, idb_id(v),
             x->ids[x->n]);
      n_pop++;
    } else if (c < 480) { /* overwrite a slot */
      size_t i2;
      ei = pick_ent(E_HELD);
      if (ei < 0 || ents[ei].n == 0)
        continue;
      x = &ents[ei];
      i2 = (size_t)test_rand_below(x->n);
      {
        mgc_value v = *ent_slot(x, i2);
        EXPECT(&t, m_value_ok(v, x->ids[i2]),
               "op %ld: slot %zu of entity %d holds %ld (want %ld)", op, i2, ei,
               idb_id(v), x->ids[i2]);
      }
      x->ids[i2] = m_next_id++;
      {
        mgc_value v = m_value(x->ids[i2]);
        *ent_slot(x, i2) = v;
      }
      n_write++;
    } else if (c < 580) { /* suspend */
      mgc_value k;
      ei = pick_ent(E_HELD);
      ai = pick_arr(A_EMPTY);
      if (ai < 0) {
        ai = pick_arr(A_TAKEN); /* reuse a taken slot */
        if (ai >= 0)
          arr[ai].state = A_EMPTY;
      }
      if (ei < 0 || ai < 0)
        continue;
      x = &ents[ei];
      if (x->kind == 0)
        k = mgc_cont_new(x->f);
      else
        k = mgc_cont_new_stack(&x->e->hdr);
      EXPECT(&t,
             MGC_TAG_VAL(k) == MGC_TAG_CONT &&
                 MGC_FIELD(k, 0) ==
                     (x->kind == 0 ? (mgc_value)x->f : (mgc_value)x->e) + 1,
             "op %ld: a new continuation", op);
      mgc_modify(&MGC_FIELD(r[R_ARR], ai), k);
      x->state = E_SUSP;
      x->slot = ai;
      arr[ai].state = A_LIVE;
      arr[ai].ent = ei;
      arr[ai].kind = x->kind;
      arr[ai].ptr = x->kind == 0 ? (void *)x->f : (void *)x->e;
      n_susp++;
    } else if (c < 680) { /* take */
      mgc_value k;
      ai = pick_arr(A_LIVE);
      if (ai < 0)
        continue;
      ei = arr[ai].ent;
      x = &ents[ei];
      k = MGC_FIELD(r[R_ARR], ai);
      if (x->kind == 1)
        EXPECT(&t, es_frees[x->es_id] == 0,
               "op %ld: the stack of a live continuation was freed", op);
      if (x->kind == 0) {
        mgc_fiber *g = test_rand_below(4) == 0
                           ? (mgc_fiber *)(void *)mgc_cont_take_stack(k)
                           : mgc_cont_take(k);
        EXPECT(&t, g == x->f, "op %ld: take gave %p (want %p)", op, (void *)g,
               (void *)x->f);
        if (g != x->f) {
          x->state = E_NONE; /* lost */
          arr[ai].state = A_EMPTY;
          continue;
        }
      } else {
        mgc_stack *s = mgc_cont_take_stack(k);
        EXPECT(&t, s == &x->e->hdr, "op %ld: take_stack gave %p (want %p)", op,
               (void *)s, (void *)&x->e->hdr);
        if (s != &x->e->hdr) {
          x->state = E_NONE;
          arr[ai].state = A_EMPTY;
          continue;
        }
      }
      EXPECT(&t, MGC_FIELD(k, 0) == MGC_VAL_INT(0),
             "op %ld: field 0 of a taken continuation: %#lx", op,
             (unsigned long)MGC_FIELD(k, 0));
      x->state = E_HELD;
      arr[ai].state = A_TAKEN;
      ent_check(&t, ei, "after a take");
      n_take++;
    } else if (c < 710) { /* take again */
      mgc_value k;
      ai = pick_arr(A_TAKEN);
      if (ai < 0)
        continue;
      k = MGC_FIELD(r[R_ARR], ai);
      if (arr[ai].kind == 0 && test_rand_below(2))
        EXPECT(&t, mgc_cont_take(k) == NULL, "op %ld: second take not NULL",
               op);
      else
        EXPECT(&t, mgc_cont_take_stack(k) == NULL,
               "op %ld: second take_stack not NULL", op);
      n_take2++;
    } else if (c < 760) { /* drop a continuation */
      mgc_value k;
      ai = (int)test_rand_below(M_ARR);
      if (arr[ai].state == A_EMPTY)
        continue;
      k = MGC_FIELD(r[R_ARR], ai);
      if (arr[ai].state == A_LIVE) {
        x = &ents[arr[ai].ent];
        if (x->kind == 1)
          note_drop(x->es_id, mgc_is_young(k));
        x->state = E_NONE;
      }
      mgc_modify(&MGC_FIELD(r[R_ARR], ai), MGC_UNIT);
      arr[ai].state = A_EMPTY;
      n_drop++;
    } else if (c < 790) { /* free a held stack */
      ei = pick_ent(E_HELD);
      if (ei < 0)
        continue;
      x = &ents[ei];
      if (x->kind == 0) {
        mgc_fiber_free(x->f);
      } else {
        long id = x->es_id;
        mgc_stack_free(&x->e->hdr);
        EXPECT(&t, es_frees[id] == 1,
               "op %ld: mgc_stack_free: free called %d times", op,
               es_frees[id]);
      }
      x->state = E_NONE;
      n_free++;
    } else if (c < 830) { /* check a held entity */
      ei = pick_ent(E_HELD);
      if (ei >= 0)
        ent_check(&t, ei, "a random check");
    } else if (c < 850) {
      mgc_minor_collection();
      check_drops(&t, 0, "after a minor collection");
      n_minor++;
    } else if (c < 870) {
      mgc_major_slice(0);
      n_slice++;
    } else if (c < 872) {
      mgc_full_major();
      check_drops(&t, 1, "after a full major");
      for (i = 0; i < M_ENT; i++)
        if (ents[i].state == E_HELD)
          ent_check(&t, i, "after a full major");
      n_full++;
    } else { /* garbage */
      garbage(1 + (long)test_rand_below(20));
    }
  }
  printf("  %ld pushes, %ld pops, %ld writes, %ld suspends, %ld takes, %ld "
         "second takes, %ld drops, %ld frees, %ld minors, %ld slices, %ld "
         "full majors (%.1f s)\n",
         n_push, n_pop, n_write, n_susp, n_take, n_take2, n_drop, n_free,
         n_minor, n_slice, n_full, now_s() - t0);
  /* Everything: take every live continuation, check, free. */
  mgc_full_major();
  check_drops(&t, 1, "at the end");
  for (i = 0; i < M_ARR; i++) {
    if (arr[i].state == A_LIVE) {
      struct ent *x = &ents[arr[i].ent];
      mgc_value k = MGC_FIELD(r[R_ARR], i);
      mgc_stack *s = mgc_cont_take_stack(k);
      EXPECT(&t, s == (x->kind == 0 ? &x->f->stack : &x->e->hdr),
             "end: take of slot %d gave %p", i, (void *)s);
      if (s != NULL && s == (x->kind == 0 ? &x->f->stack : &x->e->hdr))
        x->state = E_HELD;
      else
        x->state = E_NONE;
    }
  }
  r[R_ARR] = MGC_UNIT;
  for (i = 0; i < M_ENT; i++) {
    if (ents[i].state == E_HELD) {
      ent_check(&t, i, "end");
      if (ents[i].state != E_HELD)
        continue;
      if (ents[i].kind == 0)
        mgc_fiber_free(ents[i].f);
      else
        mgc_stack_free(&ents[i].e->hdr);
      ents[i].state = E_NONE;
    }
  }
  mgc_full_major();
  CHECK(es_total_frees - es_frees0 == es_next_id - es_created0,
        "part 7: every embedder stack freed once: %ld frees for %ld stacks",
        es_total_frees - es_frees0, es_next_id - es_created0);
  {
    long id, bad = 0;
    for (id = es_created0; id < es_next_id; id++)
      bad += es_frees[id] != 1;
    CHECK(bad == 0, "part 7: %ld stacks not freed exactly once", bad);
  }
  CHECK(n_take > 0 && n_drop > 0 && n_susp > 0, "part 7 did some work");
  tally_report(&t, "part 7: the model");
  CHECK_VERIFY("part 7");
  free(drops);
  drops = NULL;
  ndrops = capdrops = 0;
}

/* ------------------------------------------------------------------------ */
/* Part 8: darken before take                                               */
/* ------------------------------------------------------------------------ */

#define B_FIELDS 8
static long b_pat(int rep, size_t i) {
  return 0x5EED0000L + rep * 1000 + (long)i * 37;
}

static void part8_darken_before_take(void) {
  long n = scaled(200000, 5000), i, fill = scaled(100000, 5000);
  int rep;
  printf("part 8: darken before take (list of %ld)\n", n);
  fflush(stdout);
  for (rep = 0; rep < 4; rep++) {
    mgc_fiber *f = mgc_fiber_new(2), *g;
    mgc_value b, k, l;
    size_t j;
    int ok;
    if (f == NULL)
      return;
    b = mgc_alloc_small(B_FIELDS, 0);
    for (j = 0; j < B_FIELDS; j++)
      MGC_FIELD(b, j) = MGC_VAL_INT(b_pat(rep, j));
    mgc_fiber_push(f, MGC_VAL_INT(1));
    mgc_fiber_push(f, b); /* the only reference */
    b = MGC_UNIT;
    r[3] = mgc_cont_new(f);
    /* The list: r[1] -> cell -> ... -> last cell -> K. */
    l = mgc_alloc_small(2, 0);
    MGC_FIELD(l, 0) = MGC_VAL_INT(-1);
    MGC_FIELD(l, 1) = r[3];
    r[1] = l;
    r[3] = MGC_UNIT;
    for (i = 0; i < n; i++) {
      l = mgc_alloc_small(2, 0);
      MGC_FIELD(l, 0) = MGC_VAL_INT(i);
      MGC_FIELD(l, 1) = r[1];
      r[1] = l;
    }
    mgc_minor_collection(); /* B, K and the list old */
    mgc_full_major();       /* a new cycle marks from the list's head */
    for (l = r[1]; MGC_TAG_VAL(l) != MGC_TAG_CONT; l = MGC_FIELD(l, 1))
      ;
    k = l;
    g = mgc_cont_take(k); /* K unmarked: must be darkened first */
    if (!CHECK(g == f, "part 8: take -> %p (want %p)", (void *)g, (void *)f))
      return;
    CHECK(!mgc_is_young(MGC_FIBER_SLOT(f, 1)), "part 8: B is old");
    mgc_major_collection();
    mgc_major_collection();
    /* Reuse: many blocks of B's size with other patterns, alive. */
    r[2] = mgc_alloc((size_t)(fill / 64 + 1), 0);
    for (i = 0; i < fill; i++) {
      mgc_value v = mgc_alloc_small(B_FIELDS, 0);
      for (j = 0; j < B_FIELDS; j++)
        MGC_FIELD(v, j) = MGC_VAL_INT(-i);
      if (i % 64 == 0)
        mgc_modify(&MGC_FIELD(r[2], i / 64), v);
    }
    mgc_minor_collection();
    mgc_major_slice(0);
    b = MGC_FIBER_SLOT(f, 1);
    ok = MGC_IS_BLOCK(b) && MGC_WOSIZE_VAL(b) == B_FIELDS;
    for (j = 0; ok && j < B_FIELDS; j++)
      ok = MGC_FIELD(b, j) == MGC_VAL_INT(b_pat(rep, j));
    CHECK(ok && MGC_FIBER_SLOT(f, 0) == MGC_VAL_INT(1),
          "part 8 round %d: the block reachable only from the taken fiber "
          "is intact (field 0 %ld, want %ld)",
          rep, MGC_IS_BLOCK(b) ? (long)MGC_INT_VAL(MGC_FIELD(b, 0)) : -1L,
          b_pat(rep, 0));
    CHECK_VERIFY("part 8");
    mgc_fiber_free(f);
    r[1] = r[2] = MGC_UNIT;
  }
}

/* ------------------------------------------------------------------------ */
/* Part 9: misuse, in forked children                                       */
/* ------------------------------------------------------------------------ */

#define EXIT_RETURNED 3 /* the misuse returned: silent */
#define EXIT_FATAL 77   /* the fatal handler was called */
#define EXIT_OOM 42     /* the OOM handler was called */
#define EXIT_SETUP 90   /* the child could not get ready */

static int msg_fd = -1;

static void write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR)
        continue;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

static void fatal_exit(const char *msg) {
  if (msg != NULL)
    write_all(msg_fd, msg, strlen(msg));
  write_all(msg_fd, "\n", 1);
  _exit(EXIT_FATAL);
}

static mgc_fiber *oom_fiber;

static void oom_report(size_t bytes) {
  char buf[128];
  int n = snprintf(buf, sizeof buf, "oom bytes=%zu depth=%zu\n", bytes,
                   oom_fiber != NULL ? oom_fiber->depth : (size_t)0);
  write_all(msg_fd, buf, (size_t)n);
}

static void oom_exit(size_t bytes) {
  oom_report(bytes);
  _exit(EXIT_OOM);
}

static void oom_return(size_t bytes) { oom_report(bytes); }

static mgc_value young_block(void) { return idb(4); }

static mgc_value old_block(void) {
  r[0] = young_block();
  mgc_minor_collection();
  if (mgc_is_young(r[0]))
    _exit(EXIT_SETUP);
  return r[0];
}

static mgc_fiber *fiber3(void) {
  mgc_fiber *f = mgc_fiber_new(2);
  if (f == NULL)
    _exit(EXIT_SETUP);
  mgc_fiber_push(f, MGC_VAL_INT(1));
  mgc_fiber_push(f, young_block());
  mgc_fiber_push(f, MGC_VAL_INT(3));
  return f;
}

/* A fiber inside a continuation (rooted in r[1]). */
static mgc_fiber *suspended(void) {
  mgc_fiber *f = fiber3();
  r[1] = mgc_cont_new(f);
  return f;
}

static void take_int(void) { (void)mgc_cont_take(MGC_VAL_INT(3)); }
static void take_young(void) { (void)mgc_cont_take(young_block()); }
static void take_old(void) { (void)mgc_cont_take(old_block()); }
static void take_string(void) {
  r[0] = mgc_copy_string("not a continuation");
  (void)mgc_cont_take(r[0]);
}
static void take_closure(void) {
  mgc_value c = mgc_alloc_small(2, MGC_TAG_CLOSURE);
  MGC_FIELD(c, 0) = (mgc_value)0x1000;
  MGC_FIELD(c, 1) = MGC_CLOSINFO(1, 2);
  (void)mgc_cont_take(c);
}
static void take_estack(void) {
  struct estack *e = es_new(2);
  es_push(e, young_block());
  r[1] = mgc_cont_new_stack(&e->hdr);
  (void)mgc_cont_take(r[1]);
}
static void take_estack_old(void) {
  struct estack *e = es_new(2);
  es_push(e, young_block());
  r[1] = mgc_cont_new_stack(&e->hdr);
  mgc_minor_collection();
  (void)mgc_cont_take(r[1]);
}
static void new_null(void) { (void)mgc_cont_new(NULL); }
static void new_in_cont(void) {
  mgc_fiber *f = suspended();
  (void)mgc_cont_new(f);
}
static void new_in_old_cont(void) {
  mgc_fiber *f = suspended();
  mgc_full_major();
  (void)mgc_cont_new(f);
}
static void new_freed(void) {
  mgc_fiber *f = fiber3();
  mgc_fiber_free(f);
  (void)mgc_cont_new(f);
}

static _Atomic(mgc_fiber *) other_fiber;
static atomic_int other_stop;

static mgc_value other_body(mgc_value arg) {
  mgc_fiber *f = mgc_fiber_new(2);
  (void)arg;
  mgc_fiber_push(f, MGC_VAL_INT(5));
  atomic_store(&other_fiber, f);
  while (!atomic_load(&other_stop)) {
    mgc_poll();
    sched_yield();
  }
  return MGC_UNIT;
}

static void new_other_domain(void) {
  mgc_fiber *f;
  long spins = 0;
  if (mgc_domain_spawn(other_body, MGC_UNIT) == NULL)
    _exit(EXIT_SETUP);
  while ((f = atomic_load(&other_fiber)) == NULL) {
    mgc_poll();
    if (++spins % 64 == 0)
      sched_yield();
  }
  (void)mgc_cont_new(f);
}

static void pop_empty(void) {
  mgc_fiber *f = mgc_fiber_new(0);
  (void)mgc_fiber_pop(f);
}
static void pop_emptied(void) {
  mgc_fiber *f = fiber3();
  (void)mgc_fiber_pop(f);
  (void)mgc_fiber_pop(f);
  (void)mgc_fiber_pop(f);
  (void)mgc_fiber_pop(f);
}
static void push_in_cont(void) {
  mgc_fiber *f = suspended();
  mgc_fiber_push(f, MGC_VAL_INT(9));
}
static void push_in_cont_young_value(void) {
  mgc_fiber *f = suspended();
  mgc_fiber_push(f, young_block());
}
static void slot_past_depth(void) {
  mgc_fiber *f = fiber3();
  (void)MGC_FIBER_SLOT(f, 3);
}
static void slot_empty(void) {
  mgc_fiber *f = mgc_fiber_new(8);
  MGC_FIBER_SLOT(f, 0) = MGC_VAL_INT(1);
}
static void slot_huge(void) {
  mgc_fiber *f = fiber3();
  (void)MGC_FIBER_SLOT(f, (size_t)-1);
}
static void slot_after_pop(void) {
  mgc_fiber *f = fiber3();
  (void)mgc_fiber_pop(f);
  (void)MGC_FIBER_SLOT(f, 2);
}
static void slot_in_cont(void) {
  mgc_fiber *f = suspended();
  (void)MGC_FIBER_SLOT(f, 0);
}
static void slot_write_in_cont(void) {
  mgc_fiber *f = suspended();
  MGC_FIBER_SLOT(f, 1) = MGC_VAL_INT(2);
}
static void free_in_cont(void) {
  mgc_fiber *f = suspended();
  mgc_fiber_free(f);
}
static void free_twice(void) {
  mgc_fiber *f = fiber3();
  mgc_fiber_free(f);
  mgc_fiber_free(f);
}

#define OOM_L 4096
static void push_forever(void) {
  size_t i;
  oom_fiber = mgc_fiber_new(1);
  if (oom_fiber == NULL)
    _exit(EXIT_SETUP);
  for (i = 0;; i++)
    mgc_fiber_push(oom_fiber, MGC_VAL_INT((long)i));
}
static void oom_exits(void) {
  mgc_set_oom_handler(oom_exit);
  push_forever();
}
static void oom_returns(void) {
  mgc_set_oom_handler(oom_return);
  push_forever();
}

struct misuse {
  const char *name;
  void (*run)(void);
  const char *call; /* the call the message must name */
  int want_exit;    /* EXIT_FATAL or EXIT_OOM */
  int small_l;      /* init with fiber_max_words = OOM_L */
};

static const struct misuse misuses[] = {
    {"mgc_cont_take(integer)", take_int, "mgc_cont_take", EXIT_FATAL, 0},
    {"mgc_cont_take(young block)", take_young, "mgc_cont_take", EXIT_FATAL, 0},
    {"mgc_cont_take(old block)", take_old, "mgc_cont_take", EXIT_FATAL, 0},
    {"mgc_cont_take(string)", take_string, "mgc_cont_take", EXIT_FATAL, 0},
    {"mgc_cont_take(closure)", take_closure, "mgc_cont_take", EXIT_FATAL, 0},
    {"mgc_cont_take(embedder stack continuation)", take_estack, "mgc_cont_take",
     EXIT_FATAL, 0},
    {"mgc_cont_take(old embedder stack continuation)", take_estack_old,
     "mgc_cont_take", EXIT_FATAL, 0},
    {"mgc_cont_new(NULL)", new_null, "mgc_cont_new", EXIT_FATAL, 0},
    {"mgc_cont_new(fiber in a continuation)", new_in_cont, "mgc_cont_new",
     EXIT_FATAL, 0},
    {"mgc_cont_new(fiber in an old continuation)", new_in_old_cont,
     "mgc_cont_new", EXIT_FATAL, 0},
    {"mgc_cont_new(freed fiber)", new_freed, "mgc_cont_new", EXIT_FATAL, 0},
    {"mgc_cont_new(fiber of another domain)", new_other_domain, "mgc_cont_new",
     EXIT_FATAL, 0},
    {"mgc_fiber_pop(new empty fiber)", pop_empty, "mgc_fiber_pop", EXIT_FATAL,
     0},
    {"mgc_fiber_pop(emptied fiber)", pop_emptied, "mgc_fiber_pop", EXIT_FATAL,
     0},
    {"mgc_fiber_push(fiber in a continuation)", push_in_cont, "mgc_fiber_push",
     EXIT_FATAL, 0},
    {"mgc_fiber_push(fiber in a continuation, young value)",
     push_in_cont_young_value, "mgc_fiber_push", EXIT_FATAL, 0},
    {"MGC_FIBER_SLOT(f, depth)", slot_past_depth, "MGC_FIBER_SLOT", EXIT_FATAL,
     0},
    {"MGC_FIBER_SLOT(empty f, 0) = ...", slot_empty, "MGC_FIBER_SLOT",
     EXIT_FATAL, 0},
    {"MGC_FIBER_SLOT(f, SIZE_MAX)", slot_huge, "MGC_FIBER_SLOT", EXIT_FATAL, 0},
    {"MGC_FIBER_SLOT(f, popped slot)", slot_after_pop, "MGC_FIBER_SLOT",
     EXIT_FATAL, 0},
    {"MGC_FIBER_SLOT(fiber in a continuation, 0)", slot_in_cont,
     "MGC_FIBER_SLOT", EXIT_FATAL, 0},
    {"MGC_FIBER_SLOT(fiber in a continuation, 1) = ...", slot_write_in_cont,
     "MGC_FIBER_SLOT", EXIT_FATAL, 0},
    {"mgc_fiber_free(fiber in a continuation)", free_in_cont, "mgc_fiber_free",
     EXIT_FATAL, 0},
    {"mgc_fiber_free twice", free_twice, "mgc_fiber_free", EXIT_FATAL, 0},
    {"push past l: the OOM handler", oom_exits, "", EXIT_OOM, 1},
    {"push past l: a returning OOM handler", oom_returns, "mgc_fiber_push",
     EXIT_FATAL, 1},
};

static char *read_file(int fd) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
    len += (size_t)n;
    if (cap - len < 2) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
  }
  buf[len] = '\0';
  return buf;
}

static int temp_file(void) {
  char path[] = "/tmp/mgc-test-fibers-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0)
    unlink(path);
  return fd;
}

/* The name as a whole identifier. */
static int names_call(const char *text, const char *call) {
  size_t n = strlen(call);
  const char *p = text;
  while ((p = strstr(p, call)) != NULL) {
    int before = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    int after = !(isalnum((unsigned char)p[n]) || p[n] == '_');
    if (before && after)
      return 1;
    p++;
  }
  return 0;
}

struct outcome {
  int status;
  char *msg;
  char *err;
};

static struct outcome run_child(const struct misuse *m) {
  struct outcome out = {0, NULL, NULL};
  int mfd = temp_file(), efd = temp_file();
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    mgc_params p;
    msg_fd = mfd;
    dup2(efd, 2);
    alarm(60); /* a hang is a failure, not a stuck test */
    mgc_params_default(&p);
    if (m->small_l)
      p.fiber_max_words = OOM_L;
    if (mgc_init(&p) != 0)
      _exit(EXIT_SETUP);
    mgc_set_fatal_handler(fatal_exit);
    register_roots();
    m->run();
    _exit(EXIT_RETURNED);
  }
  if (pid < 0) {
    CHECK(0, "fork failed");
    close(mfd);
    close(efd);
    return out;
  }
  while (waitpid(pid, &out.status, 0) < 0 && errno == EINTR)
    ;
  out.msg = read_file(mfd);
  out.err = read_file(efd);
  close(mfd);
  close(efd);
  return out;
}

static const char *describe(int status, char *buf, size_t n) {
  if (WIFSIGNALED(status))
    snprintf(buf, n, "signal %d", WTERMSIG(status));
  else if (WIFEXITED(status))
    snprintf(buf, n, "exit %d", WEXITSTATUS(status));
  else
    snprintf(buf, n, "status %#x", status);
  return buf;
}

static int exited_with(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static void parse_oom(const char *msg, size_t *bytes, size_t *depth) {
  const char *p = strstr(msg, "oom bytes=");
  *bytes = 0;
  *depth = 0;
  if (p != NULL)
    sscanf(p, "oom bytes=%zu depth=%zu", bytes, depth);
}

static void good_uses(void) {
  mgc_fiber *f = fiber3(), *g;
  struct estack *e = es_new(1);
  mgc_value k;
  (void)MGC_FIBER_SLOT(f, 2);
  r[1] = mgc_cont_new(f);
  g = mgc_cont_take(r[1]);
  if (g != f || mgc_cont_take(r[1]) != NULL)
    _exit(10);
  (void)mgc_fiber_pop(f);
  mgc_fiber_push(f, MGC_VAL_INT(3));
  es_push(e, young_block());
  k = mgc_cont_new_stack(&e->hdr);
  if (mgc_cont_take_stack(k) != &e->hdr)
    _exit(11);
  mgc_stack_free(&e->hdr);
  mgc_fiber_free(f);
  f = mgc_fiber_new(1);
  {
    size_t i;
    for (i = 0; i < OOM_L; i++)
      mgc_fiber_push(f, MGC_VAL_INT(1));
  }
  mgc_full_major();
  _exit(0);
}

static void part9_misuse(void) {
  size_t i;
  printf("part 9: misuse (forked children)\n");
  fflush(stdout);
  {
    struct misuse m = {"correct uses", good_uses, "", 0, 1};
    struct outcome o = run_child(&m);
    char d[64];
    if (o.msg != NULL) {
      describe(o.status, d, sizeof d);
      CHECK(exited_with(o.status, 0) && o.msg[0] == '\0',
            "correct uses pass, including %d pushes with l=%d (%s; msg "
            "\"%.200s\"; stderr \"%.200s\")",
            OOM_L, OOM_L, d, o.msg, o.err);
      free(o.msg);
      free(o.err);
    }
  }
  for (i = 0; i < sizeof misuses / sizeof misuses[0]; i++) {
    const struct misuse *m = &misuses[i];
    struct outcome o = run_child(m);
    char d[64];
    if (o.msg == NULL)
      continue;
    describe(o.status, d, sizeof d);
    CHECK(!exited_with(o.status, EXIT_SETUP),
          "%s: the child got ready (stderr \"%.200s\")", m->name, o.err);
    CHECK(!exited_with(o.status, EXIT_RETURNED),
          "%s: not silent (the call returned)", m->name);
    CHECK(exited_with(o.status, m->want_exit),
          "%s: ends in the %s handler (%s; msg \"%.200s\"; stderr \"%.300s\")",
          m->name, m->want_exit == EXIT_OOM ? "OOM" : "fatal", d, o.msg, o.err);
    if (m->want_exit == EXIT_FATAL)
      CHECK(names_call(o.msg, m->call), "%s: message names %s: \"%.200s\"",
            m->name, m->call, o.msg);
    if (m->small_l) {
      size_t bytes, depth;
      parse_oom(o.msg, &bytes, &depth);
      CHECK(bytes > 0,
            "%s: the OOM handler was called with the bytes "
            "requested (msg \"%.200s\")",
            m->name, o.msg);
      CHECK(depth <= OOM_L && depth >= OOM_L * 3 / 4,
            "%s: the fiber grew to about l = %d slots before the OOM "
            "handler: depth %zu",
            m->name, OOM_L, depth);
    }
    if (check_verbose())
      printf("  %s -> %s: %s", m->name, d, o.msg);
    free(o.msg);
    free(o.err);
  }
}

/* ------------------------------------------------------------------------ */
/* Part 10: shutdown frees every stack; init again                          */
/* ------------------------------------------------------------------------ */

static void part10_shutdown(void) {
  long ids[10], first;
  int i, rc;
  struct estack *e;
  mgc_fiber *f;
  mgc_stack *s;
  printf("part 10: mgc_shutdown with stacks held and suspended\n");
  fflush(stdout);
  first = es_next_id;
  /* 0-2 held, 3-4 in young live continuations, 5-6 in old ones, 7 taken
     back from a dropped continuation, 8 in a continuation held by a
     suspended fiber, 9 in a continuation in a block's field. */
  for (i = 0; i < 10; i++) {
    e = filled_estack(90000 + i * 100, 10);
    ids[i] = e->id;
    if (i >= 3 && i <= 6)
      r[i] = mgc_cont_new_stack(&e->hdr);
    if (i == 5)
      mgc_minor_collection();
    if (i == 6)
      mgc_full_major();
    if (i == 7) {
      r[i] = mgc_cont_new_stack(&e->hdr);
      s = mgc_cont_take_stack(r[i]);
      CHECK(s == &e->hdr, "part 10: take_stack");
      r[i] = MGC_UNIT;
    }
    if (i == 8) {
      mgc_value k;
      f = mgc_fiber_new(1);
      k = mgc_cont_new_stack(&e->hdr);
      mgc_fiber_push(f, k);
      r[i] = mgc_cont_new(f);
    }
    if (i == 9) {
      mgc_value k;
      r[i] = mgc_alloc(3, 0);
      k = mgc_cont_new_stack(&e->hdr);
      mgc_modify(&MGC_FIELD(r[i], 1), k);
    }
  }
  /* Fibers held and suspended too (the leak check sees them). */
  {
    long scratch[20];
    f = filled_fiber(95000, 20, scratch); /* held at shutdown */
  }
  f = mgc_fiber_new(3);
  mgc_fiber_push(f, idb(95100));
  r[10] = mgc_cont_new(f);
  f = mgc_fiber_new(3);
  mgc_fiber_push(f, idb(95200));
  r[11] = mgc_cont_new(f);
  mgc_minor_collection();
  for (i = 0; i < 10; i++)
    CHECK(ids[i] == first + i, "part 10: stack ids");
  for (i = 0; i < 10; i++)
    CHECK(es_frees[ids[i]] == 0, "part 10: stack %d alive before shutdown", i);
  mgc_shutdown();
  for (i = 0; i < 10; i++)
    CHECK(es_frees[ids[i]] == 1,
          "part 10: mgc_shutdown freed stack %d exactly once: %d calls", i,
          es_frees[ids[i]]);
  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "part 10: mgc_init again -> %d", rc))
    exit(check_done());
  register_roots();
  for (i = 0; i < 10; i++)
    CHECK(es_frees[ids[i]] == 1, "part 10: still freed once after init: %d",
          es_frees[ids[i]]);
  /* The new runtime works with fibers and stacks. */
  {
    struct tally t = {0, 0};
    long fids[32];
    mgc_fiber *g;
    f = filled_fiber(96000, 32, fids);
    e = filled_estack(97000, 32);
    r[0] = mgc_cont_new(f);
    mgc_minor_collection();
    mgc_full_major();
    g = mgc_cont_take(r[0]);
    EXPECT(&t, g == f, "take after re-init");
    if (g == f)
      check_fiber(&t, "after re-init", f, fids, 32, 1);
    check_estack(&t, "after re-init", e, 97000, 32, 1);
    r[0] = MGC_UNIT;
    tally_report(&t, "part 10: fibers after mgc_init again");
    /* Left held for the final shutdown: checked in main. */
  }
  CHECK_VERIFY("part 10");
}

/* Part 11: the verifier sees broken continuation invariants (a stack in two
   continuations; a young value in the stack of an old continuation) and
   passes again once they are repaired.  Nothing allocates between the
   damage and the repair, so no collection sees it. */
static void part11_verifier(void) {
  printf("part 11: the verifier checks continuations\n");
  MGC_PARAM0;
  MGC_LOCAL3(k1, k2, young);
  mgc_fiber *f = mgc_fiber_new(4);
  mgc_fiber *g = mgc_fiber_new(4);
  mgc_fiber_push(f, MGC_VAL_INT(1));
  mgc_fiber_push(g, MGC_VAL_INT(2));
  k1 = mgc_cont_new(f);
  k2 = mgc_cont_new(g);
  CHECK_VERIFY("two continuations");
  mgc_value saved = MGC_FIELD(k2, 0);
  MGC_FIELD(k2, 0) = MGC_FIELD(k1, 0); /* f in two continuations */
  CHECK(mgc_verify_heap() == -1, "a stack in two continuations is reported");
  MGC_FIELD(k2, 0) = saved;
  CHECK_VERIFY("repaired");
  mgc_minor_collection(); /* k1 and k2 are old now */
  young = mgc_alloc_small(1, 0);
  MGC_FIELD(young, 0) = MGC_VAL_INT(3);
  mgc_fiber *inside = (mgc_fiber *)(MGC_FIELD(k1, 0) - 1);
  CHECK(inside == f, "field 0 is the fiber's address + 1");
  mgc_value old = inside->slots[0];
  inside->slots[0] = young; /* a young value in an old continuation */
  CHECK(mgc_verify_heap() == -1,
        "a young value in the stack of an old continuation is reported");
  inside->slots[0] = old;
  CHECK_VERIFY("repaired again");
  CHECK(mgc_cont_take(k1) == f && mgc_cont_take(k2) == g, "taken back");
  mgc_fiber_free(f);
  mgc_fiber_free(g);
  MGC_RETURN0;
}

int main(int argc, char **argv) {
  int rc;
  long last_es;
  double t0 = now_s();
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* The misuse children fork before this process initialises mgc. */
  part9_misuse();
  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  mgc_set_fatal_handler(check_fatal_handler);
  test_seed(argc, argv, SEED);
  register_roots();
  part1_basics();
  part2_held_root();
  part3_cont_keeps_alive();
  part4_freed_when_dead();
  part5_embedder_scan();
  part6_deep();
  part7_model();
  part8_darken_before_take();
  part11_verifier();
  part10_shutdown();
  clear_roots();
  CHECK_VERIFY("the end");
  last_es = es_next_id - 1; /* held since part 10 */
  mgc_shutdown();
  CHECK(es_frees[last_es] == 1,
        "the final mgc_shutdown freed the held embedder stack: %d calls",
        es_frees[last_es]);
  CHECK(es_total_frees == es_next_id - 1,
        "every embedder stack freed: %ld frees for %ld stacks", es_total_frees,
        es_next_id - 1);
  printf("time: %.1f s\n", now_s() - t0);
  return check_done();
}
