/* test_domains_fibers.c: continuations, fibers and embedder stacks across
 * domains.
 *
 * The rules (mgc.h "Continuations: fibers and embedder stacks"): a stack is
 * held by one domain (a root of it, scanned by the domain or by its backup
 * thread while it sits in a blocking section) or inside a continuation;
 * mgc_cont_take may be called from any domain, and of concurrent takers
 * exactly one gets the stack; an old continuation is darkened before it is
 * taken while marking runs; a terminating domain frees the stacks it still
 * holds, while its continuations live on and can be taken by others.
 *
 *   part 1: take race: rounds of 64 continuations (fibers and embedder
 *           stacks, young or old, some taken while a major cycle marks) in
 *           a rooted array; four domains race to take every one: exactly
 *           one take per continuation succeeds, the winner finds the
 *           contents intact, the losers get NULL.
 *   part 2: ping-pong: a fiber and an embedder stack passed back and forth
 *           between two domains through continuations in a rooted block,
 *           changed and checked at every step against a shadow, while a
 *           third domain allocates and collects and the waiting side too.
 *   part 3: darken-before-take with two domains: an old continuation at the
 *           end of a long list holds the only reference to an old block;
 *           right after mgc_full_major it is taken (by the domain that made
 *           it or by another one) while a third domain allocates and
 *           collects; after two major collections and heavy reuse the
 *           block is intact.
 *   part 4: a domain holding fibers and an embedder stack (values only
 *           there, young) sleeps in a blocking section while the others
 *           allocate and run minor, major and full major collections; when
 *           it comes back its values are intact and promoted.
 *   part 5: termination: a domain ends holding embedder stacks (their free
 *           called exactly once, by the time mgc_domain_join returns) and
 *           fibers, after handing out continuations (young and old) in a
 *           rooted array; the main domain takes them afterwards with their
 *           contents intact (OCaml's deadcont case); dropped ones are freed
 *           by a full major.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"
#include "tally.h"

#include <stdio.h>
#include <time.h>

#define SEED 20240902u
#define MAXDOM 6
#define G_SLOTS 16
#define K_SLOTS 64

static uint64_t seed;
static mgc_value g_shared = MGC_UNIT; /* classic root: G_SLOTS fields */
static mgc_value g_k = MGC_UNIT;      /* classic root: K_SLOTS fields */

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
static void kset(int i, mgc_value v) { mgc_modify(&MGC_FIELD(g_k, i), v); }
static mgc_value kget(int i) { return MGC_FIELD(g_k, i); }

static void clear_all(void) {
  int i;
  for (i = 0; i < G_SLOTS; i++)
    gset(i, MGC_UNIT);
  for (i = 0; i < K_SLOTS; i++)
    kset(i, MGC_UNIT);
}

/* Blocks carrying ids (ids >= 0): 1 + id % 4 fields, tag id % 3, field 0
   the id, the others a pattern. */
static size_t idb_size(long id) { return 1 + (size_t)(id % 4); }
static long idb_pat(long id, size_t i) {
  return (id * 2654435761L) ^ (long)(i * 40503u);
}

static mgc_value idb(long id) {
  size_t n = idb_size(id), i;
  mgc_value v = mgc_alloc_small(n, (unsigned)(id % 3));
  MGC_FIELD(v, 0) = MGC_VAL_INT(id);
  for (i = 1; i < n; i++)
    MGC_FIELD(v, i) = MGC_VAL_INT(idb_pat(id, i));
  return v;
}

static int idb_ok(mgc_value v, long id) {
  size_t n = idb_size(id), i;
  if (!MGC_IS_BLOCK(v) || v == 0 || MGC_WOSIZE_VAL(v) != n ||
      MGC_TAG_VAL(v) != (unsigned)(id % 3) ||
      MGC_FIELD(v, 0) != MGC_VAL_INT(id))
    return 0;
  for (i = 1; i < n; i++)
    if (MGC_FIELD(v, i) != MGC_VAL_INT(idb_pat(id, i)))
      return 0;
  return 1;
}

static long idb_id(mgc_value v) {
  if (!MGC_IS_BLOCK(v) || v == 0)
    return MGC_IS_INT(v) ? -1000000 - MGC_INT_VAL(v) : -1;
  return MGC_IS_INT(MGC_FIELD(v, 0)) ? MGC_INT_VAL(MGC_FIELD(v, 0)) : -2;
}

static void garbage(struct mt_rng *r, long n) {
  long i;
  for (i = 0; i < n; i++) {
    size_t sz = 1 + (size_t)mt_below(r, 12), j;
    mgc_value v = mgc_alloc_small(sz, 0);
    for (j = 0; j < sz; j++)
      MGC_FIELD(v, j) = MGC_VAL_INT(-7);
  }
  if (mt_below(r, 8) == 0)
    (void)mgc_alloc(300 + (size_t)mt_below(r, 200), 0);
}

/* ------------------------------------------------------------------------ */
/* Embedder stacks (free called on any domain: atomic counters)             */
/* ------------------------------------------------------------------------ */

#define ES_MAX_IDS (1 << 16)
static atomic_int es_frees[ES_MAX_IDS];
static atomic_long es_next_id = 1;
static atomic_long es_scans;

struct estack {
  mgc_stack hdr; /* first */
  long id;
  mgc_value *slots;
  size_t n, cap;
};

static void es_scan(mgc_stack *s, mgc_scanning_action act, void *data) {
  struct estack *e = (struct estack *)s;
  size_t i;
  atomic_fetch_add_explicit(&es_scans, 1, memory_order_relaxed);
  for (i = 0; i < e->n; i++)
    act(data, e->slots[i], &e->slots[i]);
}

static void es_release(mgc_stack *s) {
  struct estack *e = (struct estack *)s;
  if (e->id > 0 && e->id < ES_MAX_IDS)
    atomic_fetch_add(&es_frees[e->id], 1);
  e->id = -999;
  free(e->slots);
  free(e);
}

static const mgc_stack_ops es_ops = {es_scan, es_release};

static struct estack *es_new(size_t cap) {
  struct estack *e = calloc(1, sizeof *e);
  if (e == NULL)
    abort();
  e->id = atomic_fetch_add(&es_next_id, 1);
  if (e->id >= ES_MAX_IDS)
    abort();
  e->cap = cap < 1 ? 1 : cap;
  e->slots = malloc(e->cap * sizeof(mgc_value));
  if (e->slots == NULL)
    abort();
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

static int es_freed(long id) { return atomic_load(&es_frees[id]); }

/* ------------------------------------------------------------------------ */
/* Part 1: take race                                                        */
/* ------------------------------------------------------------------------ */

#define P1_ND 4 /* racing domains, main included */

static long p1_rounds;
static struct mt_barrier p1_bar;
static atomic_int p1_wins[K_SLOTS];
static atomic_long p1_nulls;
static atomic_long p1_es_id[K_SLOTS];

static long p1_id(long round, int j, size_t i) {
  return round * 10000 + (long)j * 100 + (long)i + 1;
}
static size_t p1_depth(int j) { return 1 + (size_t)(j % 8); }
static int p1_is_es(long round, int j) { return (j + round) % 4 == 3; }

/* Main: the round's continuations, in g_k. */
static void p1_make(long round, struct mt_rng *rng) {
  int j;
  size_t i;
  for (j = 0; j < K_SLOTS; j++) {
    mgc_value k;
    if (p1_is_es(round, j)) {
      struct estack *e = es_new(2);
      for (i = 0; i < p1_depth(j); i++)
        es_push(e, idb(p1_id(round, j, i)));
      atomic_store(&p1_es_id[j], e->id);
      k = mgc_cont_new_stack(&e->hdr);
    } else {
      mgc_fiber *f = mgc_fiber_new((size_t)(j % 3));
      for (i = 0; i < p1_depth(j); i++)
        mgc_fiber_push(f, idb(p1_id(round, j, i)));
      k = mgc_cont_new(f);
    }
    kset(j, k);
    if (mt_below(rng, 16) == 0)
      garbage(rng, 20);
  }
  switch (round % 4) {
  case 0: /* young continuations */
    break;
  case 1: /* old */
    mgc_minor_collection();
    break;
  case 2: /* old, a cycle marking */
    mgc_minor_collection();
    mgc_major_slice(0);
    break;
  default: /* old, right after a full major: a fresh cycle */
    mgc_full_major();
    break;
  }
}

/* What a domain won in a round, kept until after two major collections
   (values reachable only from an old continuation taken while marking
   must have been darkened by the take). */
struct p1_won {
  int n;
  int j[K_SLOTS];
  void *stack[K_SLOTS];
};

static void p1_check_won(int dom, long round, struct p1_won *w,
                         struct tally *t) {
  int x;
  size_t i;
  for (x = 0; x < w->n; x++) {
    int j = w->j[x];
    if (p1_is_es(round, j)) {
      struct estack *e = w->stack[x];
      long id = atomic_load(&p1_es_id[j]);
      EXPECT(t, es_freed(id) == 0 && e->n == p1_depth(j),
             "round %ld slot %d: the won stack after major collections", round,
             j);
      if (es_freed(id) != 0)
        continue; /* gone: do not touch it */
      for (i = 0; i < e->n && i < p1_depth(j); i++)
        EXPECT(t, idb_ok(e->slots[i], p1_id(round, j, i)),
               "round %ld slot %d (domain %d): stack slot %zu holds %ld after "
               "major collections (want %ld)",
               round, j, dom, i, idb_id(e->slots[i]), p1_id(round, j, i));
      mgc_stack_free(&e->hdr);
      EXPECT(t, es_freed(id) == 1, "mgc_stack_free: %d calls", es_freed(id));
    } else {
      mgc_fiber *f = w->stack[x];
      EXPECT(t, mgc_fiber_depth(f) == p1_depth(j),
             "round %ld slot %d: depth %zu after major collections", round, j,
             mgc_fiber_depth(f));
      for (i = 0; i < mgc_fiber_depth(f) && i < p1_depth(j); i++)
        EXPECT(t, idb_ok(MGC_FIBER_SLOT(f, i), p1_id(round, j, i)),
               "round %ld slot %d (domain %d): fiber slot %zu holds %ld after "
               "major collections (want %ld)",
               round, j, dom, i, idb_id(MGC_FIBER_SLOT(f, i)),
               p1_id(round, j, i));
      mgc_fiber_free(f);
    }
  }
  w->n = 0;
}

static void p1_race(int dom, long round, struct mt_rng *rng, struct tally *t,
                    struct p1_won *w) {
  int x, off = (int)mt_below(rng, K_SLOTS), step = dom % 2 ? 1 : K_SLOTS - 1;
  for (x = 0; x < K_SLOTS; x++) {
    int j = (off + x * step) % K_SLOTS;
    mgc_value k = kget(j);
    size_t i;
    EXPECT(t, MGC_IS_BLOCK(k) && MGC_TAG_VAL(k) == MGC_TAG_CONT,
           "round %ld slot %d holds a continuation", round, j);
    if (p1_is_es(round, j)) {
      mgc_stack *s = mgc_cont_take_stack(k);
      if (s == NULL) {
        atomic_fetch_add(&p1_nulls, 1);
      } else {
        struct estack *e = (struct estack *)s;
        long id = atomic_load(&p1_es_id[j]);
        atomic_fetch_add(&p1_wins[j], 1);
        EXPECT(t, e->id == id && es_freed(id) == 0,
               "round %ld slot %d: won stack %ld (want %ld, not freed)", round,
               j, e->id, id);
        EXPECT(t, e->n == p1_depth(j), "round %ld slot %d: %zu slots", round, j,
               e->n);
        for (i = 0; i < e->n && i < p1_depth(j); i++)
          EXPECT(t, idb_ok(e->slots[i], p1_id(round, j, i)),
                 "round %ld slot %d: stack slot %zu holds %ld (want %ld)",
                 round, j, i, idb_id(e->slots[i]), p1_id(round, j, i));
        if (mt_below(rng, 4) == 0)
          garbage(rng, 30); /* the won stack is a root of this domain */
        for (i = 0; i < e->n && i < p1_depth(j); i++)
          EXPECT(t, idb_ok(e->slots[i], p1_id(round, j, i)),
                 "round %ld slot %d: stack slot %zu after garbage", round, j,
                 i);
        w->j[w->n] = j;
        w->stack[w->n++] = e;
      }
    } else {
      mgc_fiber *f = j % 5 == 0 ? (mgc_fiber *)(void *)mgc_cont_take_stack(k)
                                : mgc_cont_take(k);
      if (f == NULL) {
        atomic_fetch_add(&p1_nulls, 1);
      } else {
        atomic_fetch_add(&p1_wins[j], 1);
        EXPECT(t, mgc_fiber_depth(f) == p1_depth(j),
               "round %ld slot %d: depth %zu", round, j, mgc_fiber_depth(f));
        if (mt_below(rng, 4) == 0)
          garbage(rng, 30);
        for (i = 0; i < mgc_fiber_depth(f) && i < p1_depth(j); i++)
          EXPECT(t, idb_ok(MGC_FIBER_SLOT(f, i), p1_id(round, j, i)),
                 "round %ld slot %d: fiber slot %zu holds %ld (want %ld)",
                 round, j, i, idb_id(MGC_FIBER_SLOT(f, i)), p1_id(round, j, i));
        /* Taken once: a second take is NULL. */
        EXPECT(t, mgc_cont_take(kget(j)) == NULL, "second take by the winner");
        w->j[w->n] = j;
        w->stack[w->n++] = f;
      }
    }
    if (mt_below(rng, 8) == 0) {
      unsigned c = (unsigned)mt_below(rng, 16);
      if (c == 0)
        mgc_minor_collection();
      else if (c == 1)
        mgc_major_slice(0);
      else
        garbage(rng, 10);
    }
  }
}

/* Main, between the race and the rechecks. */
static void p1_collect(struct mt_rng *rng) {
  long i;
  mgc_major_collection();
  mgc_major_collection();
  for (i = 0; i < 200; i++)
    garbage(rng, 20);
  mgc_minor_collection();
}

static void p1_check_round(long round, struct tally *t) {
  int j;
  long nulls = atomic_load(&p1_nulls);
  for (j = 0; j < K_SLOTS; j++) {
    int w = atomic_load(&p1_wins[j]);
    EXPECT(t, w == 1, "round %ld: continuation %d taken %d times (want 1)",
           round, j, w);
    atomic_store(&p1_wins[j], 0);
    if (p1_is_es(round, j)) {
      long id = atomic_load(&p1_es_id[j]);
      EXPECT(t, es_freed(id) == 1, "round %ld: stack of %d freed %d times",
             round, j, es_freed(id));
    }
  }
  EXPECT(t, nulls == (long)(P1_ND - 1) * K_SLOTS,
         "round %ld: %ld takes returned NULL (want %d)", round, nulls,
         (P1_ND - 1) * K_SLOTS);
  atomic_store(&p1_nulls, 0);
}

static mgc_value p1_worker(mgc_value arg) {
  int dom = (int)MGC_INT_VAL(arg);
  struct tally t = {0, 0};
  struct mt_rng rng;
  long round;
  mt_rng_seed(&rng, seed, 100 + (uint64_t)dom);
  struct p1_won w = {0, {0}, {0}};
  for (round = 0; round < p1_rounds; round++) {
    mt_barrier_wait(&p1_bar); /* made */
    p1_race(dom, round, &rng, &t, &w);
    mt_barrier_wait(&p1_bar); /* all tried */
    mt_barrier_wait(&p1_bar); /* collected */
    p1_check_won(dom, round, &w, &t);
    mt_barrier_wait(&p1_bar); /* freed */
  }
  tally_report(&t, "part 1: racing takers", dom);
  return MGC_UNIT;
}

static void part1(void) {
  struct tally t = {0, 0}, tm = {0, 0};
  mgc_domain *d[P1_ND];
  struct mt_rng rng;
  long round;
  int i;
  p1_rounds = scaled(300, 8);
  mt_rng_seed(&rng, seed, 1);
  mt_barrier_init(&p1_bar, P1_ND);
  for (i = 1; i < P1_ND; i++) {
    d[i] = mgc_domain_spawn(p1_worker, MGC_VAL_INT(i));
    if (!CHECK(d[i] != NULL, "part 1: spawn: error %d", mgc_last_error()))
      exit(check_mt_done());
  }
  struct p1_won w = {0, {0}, {0}};
  for (round = 0; round < p1_rounds; round++) {
    p1_make(round, &rng);
    mt_barrier_wait(&p1_bar);
    p1_race(0, round, &rng, &tm, &w);
    mt_barrier_wait(&p1_bar);
    p1_collect(&rng);
    mt_barrier_wait(&p1_bar);
    p1_check_won(0, round, &w, &tm);
    mt_barrier_wait(&p1_bar);
    p1_check_round(round, &t);
  }
  for (i = 1; i < P1_ND; i++)
    mgc_domain_join(d[i]);
  tally_report(&tm, "part 1: racing takers", 0);
  tally_report(&t, "part 1: exactly one take per continuation won", 0);
  clear_all();
}

/* ------------------------------------------------------------------------ */
/* Part 2: ping-pong                                                        */
/* ------------------------------------------------------------------------ */

#define S2_F 0 /* the fiber's continuation */
#define S2_E 1 /* the embedder stack's continuation */
#define P2_MAX 48

static long p2_steps;
static atomic_long p2_turn;
static atomic_int p2_stop;
/* Shadows, written by the side whose turn it is, read by the other after
   it acquired the turn. */
static long p2_ids[2][P2_MAX];
static size_t p2_n[2];
static long p2_es_id;
static mgc_fiber *p2_fiber;

static void p2_mutate(struct mt_rng *rng, long turn, int ch, mgc_fiber *f,
                      struct estack *e) {
  long *ids = p2_ids[ch];
  size_t *n = &p2_n[ch];
  int ops = 1 + (int)mt_below(rng, 6), o;
  for (o = 0; o < ops; o++) {
    unsigned c = (unsigned)mt_below(rng, 10);
    long id = turn * 1000 + ch * 100 + o + 1;
    if ((c < 5 && *n < P2_MAX) || *n == 0) {
      ids[*n] = id;
      if (ch == 0)
        mgc_fiber_push(f, idb(id));
      else
        es_push(e, idb(id));
      (*n)++;
    } else if (c < 7) {
      (*n)--;
      if (ch == 0)
        (void)mgc_fiber_pop(f);
      else
        e->n--;
    } else {
      size_t i = (size_t)mt_below(rng, *n);
      ids[i] = id;
      if (ch == 0)
        MGC_FIBER_SLOT(f, i) = idb(id);
      else
        e->slots[i] = idb(id);
    }
  }
}

static void p2_check(struct tally *t, long turn, int ch, mgc_fiber *f,
                     struct estack *e) {
  size_t i, n = ch == 0 ? mgc_fiber_depth(f) : e->n;
  EXPECT(t, n == p2_n[ch], "turn %ld channel %d: depth %zu (want %zu)", turn,
         ch, n, p2_n[ch]);
  for (i = 0; i < n && i < p2_n[ch]; i++) {
    mgc_value v = ch == 0 ? MGC_FIBER_SLOT(f, i) : e->slots[i];
    EXPECT(t, idb_ok(v, p2_ids[ch][i]),
           "turn %ld channel %d: slot %zu holds %ld (want %ld)", turn, ch, i,
           idb_id(v), p2_ids[ch][i]);
  }
}

/* Waits for the turn, allocating and collecting meanwhile. */
static void p2_wait(long want, struct mt_rng *rng) {
  unsigned long spins = 0;
  while (atomic_load_explicit(&p2_turn, memory_order_acquire) < want) {
    unsigned c = (unsigned)mt_below(rng, 64);
    if (c == 0)
      mgc_minor_collection();
    else if (c == 1)
      mgc_major_slice(0);
    else if (c < 8)
      garbage(rng, 5);
    mt_relax(&spins);
  }
}

/* One side: acts on turns turn % 2 == side. */
static void p2_side(int side, struct tally *t) {
  struct mt_rng rng;
  long turn;
  mt_rng_seed(&rng, seed, 200 + (uint64_t)side);
  for (turn = side; turn < p2_steps; turn += 2) {
    mgc_fiber *f;
    mgc_stack *s;
    struct estack *e;
    mgc_value k;
    p2_wait(turn, &rng);
    f = mgc_cont_take(gget(S2_F));
    s = mgc_cont_take_stack(gget(S2_E));
    EXPECT(t, f == p2_fiber, "turn %ld: take of the fiber %p (want %p)", turn,
           (void *)f, (void *)p2_fiber);
    EXPECT(t,
           s != NULL && ((struct estack *)s)->id == p2_es_id &&
               es_freed(p2_es_id) == 0,
           "turn %ld: take of the stack", turn);
    if (f != p2_fiber || s == NULL) {
      atomic_store(&p2_stop, 1);
      atomic_store_explicit(&p2_turn, p2_steps, memory_order_release);
      return;
    }
    e = (struct estack *)s;
    EXPECT(t,
           mgc_cont_take(gget(S2_F)) == NULL &&
               mgc_cont_take_stack(gget(S2_E)) == NULL,
           "turn %ld: second takes NULL", turn);
    p2_check(t, turn, 0, f, NULL);
    p2_check(t, turn, 1, NULL, e);
    p2_mutate(&rng, turn, 0, f, NULL);
    p2_mutate(&rng, turn, 1, NULL, e);
    switch (mt_below(&rng, 16)) {
    case 0:
      mgc_minor_collection();
      break;
    case 1:
      mgc_major_slice(0);
      break;
    case 2:
      if (mt_below(&rng, 8) == 0)
        mgc_full_major();
      break;
    default:
      garbage(&rng, (long)mt_below(&rng, 40));
      break;
    }
    p2_check(t, turn, 0, f, NULL);
    p2_check(t, turn, 1, NULL, e);
    k = mgc_cont_new(f);
    gset(S2_F, k);
    k = mgc_cont_new_stack(&e->hdr);
    gset(S2_E, k);
    if (mt_below(&rng, 4) == 0)
      garbage(&rng, 20); /* the continuations young or promoted */
    atomic_store_explicit(&p2_turn, turn + 1, memory_order_release);
  }
}

static mgc_value p2_b(mgc_value arg) {
  struct tally t = {0, 0};
  (void)arg;
  p2_side(1, &t);
  tally_report(&t, "part 2: ping-pong side B", 1);
  return MGC_UNIT;
}

static mgc_value p2_noise(mgc_value arg) {
  struct mt_rng rng;
  long n = 0;
  (void)arg;
  mt_rng_seed(&rng, seed, 250);
  while (!atomic_load_explicit(&p2_stop, memory_order_acquire)) {
    unsigned c = (unsigned)mt_below(&rng, 256);
    garbage(&rng, 10);
    if (c == 0)
      mgc_minor_collection();
    else if (c == 1)
      mgc_major_slice(0);
    else if (c == 2 && mt_below(&rng, 16) == 0)
      mgc_full_major();
    n++;
  }
  return MGC_VAL_INT(n);
}

static void part2(void) {
  struct tally t = {0, 0};
  mgc_domain *b, *c;
  mgc_fiber *f;
  struct estack *e;
  mgc_stack *s;
  mgc_value k;
  p2_steps = scaled(4000, 40);
  atomic_store(&p2_turn, 0);
  atomic_store(&p2_stop, 0);
  f = mgc_fiber_new(1);
  e = es_new(1);
  p2_fiber = f;
  p2_es_id = e->id;
  p2_n[0] = p2_n[1] = 0;
  k = mgc_cont_new(f);
  gset(S2_F, k);
  k = mgc_cont_new_stack(&e->hdr);
  gset(S2_E, k);
  b = mgc_domain_spawn(p2_b, MGC_UNIT);
  c = mgc_domain_spawn(p2_noise, MGC_UNIT);
  if (!CHECK(b != NULL && c != NULL, "part 2: spawn"))
    exit(check_mt_done());
  p2_side(0, &t);
  /* The last turn's continuations: take them back here. */
  {
    struct mt_rng rng;
    mt_rng_seed(&rng, seed, 260);
    p2_wait(p2_steps, &rng);
  }
  atomic_store(&p2_stop, 1);
  mgc_domain_join(b);
  mgc_domain_join(c);
  f = mgc_cont_take(gget(S2_F));
  s = mgc_cont_take_stack(gget(S2_E));
  EXPECT(&t, f == p2_fiber && s != NULL, "part 2: the final takes");
  if (f == p2_fiber && s != NULL) {
    e = (struct estack *)s;
    mgc_full_major();
    p2_check(&t, p2_steps, 0, f, NULL);
    p2_check(&t, p2_steps, 1, NULL, e);
    mgc_fiber_free(f);
    mgc_stack_free(s);
    EXPECT(&t, es_freed(p2_es_id) == 1, "part 2: the stack freed once: %d",
           es_freed(p2_es_id));
  }
  tally_report(&t, "part 2: ping-pong side A", 0);
  clear_all();
}

/* ------------------------------------------------------------------------ */
/* Part 3: darken before take, with other domains                           */
/* ------------------------------------------------------------------------ */

#define S3_LIST 2
#define S3_FILL 3
#define B_FIELDS 8

static atomic_int p3_stop;
static atomic_long p3_go, p3_done;
static _Atomic(mgc_fiber *) p3_fiber;
static long p3_fill;

static long b_pat(long rep, size_t i) {
  return 0x5EED0000L + rep * 1000 + (long)i * 37;
}

/* Takes K at the end of the list, holds the fiber through two major
   collections and reuse, then checks B. */
static void p3_take_and_check(long rep, struct tally *t) {
  mgc_value l, b;
  mgc_fiber *g, *f = atomic_load(&p3_fiber);
  long i;
  size_t j;
  int ok;
  for (l = gget(S3_LIST); MGC_TAG_VAL(l) != MGC_TAG_CONT; l = MGC_FIELD(l, 1))
    ;
  g = mgc_cont_take(l);
  EXPECT(t, g == f, "rep %ld: take -> %p (want %p)", rep, (void *)g, (void *)f);
  if (g != f)
    return;
  mgc_major_collection();
  mgc_major_collection();
  gset(S3_FILL, mgc_alloc((size_t)(p3_fill / 64 + 1), 0));
  for (i = 0; i < p3_fill; i++) {
    mgc_value v = mgc_alloc_small(B_FIELDS, 0);
    for (j = 0; j < B_FIELDS; j++)
      MGC_FIELD(v, j) = MGC_VAL_INT(-i);
    if (i % 64 == 0)
      mgc_modify(&MGC_FIELD(gget(S3_FILL), i / 64), v);
  }
  mgc_minor_collection();
  mgc_major_slice(0);
  b = MGC_FIBER_SLOT(f, 1);
  ok = MGC_IS_BLOCK(b) && MGC_WOSIZE_VAL(b) == B_FIELDS;
  for (j = 0; ok && j < B_FIELDS; j++)
    ok = MGC_FIELD(b, j) == MGC_VAL_INT(b_pat(rep, j));
  EXPECT(t, ok && MGC_FIBER_SLOT(f, 0) == MGC_VAL_INT(1),
         "rep %ld: the block reachable only from the taken fiber is intact "
         "(field 0 %ld, want %ld)",
         rep, MGC_IS_BLOCK(b) ? (long)MGC_INT_VAL(MGC_FIELD(b, 0)) : -1L,
         b_pat(rep, 0));
  mgc_fiber_free(f);
  gset(S3_FILL, MGC_UNIT);
}

static mgc_value p3_other(mgc_value arg) {
  struct tally t = {0, 0};
  long rep;
  (void)arg;
  for (rep = 1;; rep += 2) {
    mt_wait_at_least(&p3_go, rep + 1);
    if (atomic_load(&p3_stop))
      break;
    p3_take_and_check(rep, &t);
    atomic_store_explicit(&p3_done, rep + 1, memory_order_release);
  }
  if (t.checks > 0)
    tally_report(&t, "part 3: darken before take, taken by another domain", 1);
  return MGC_UNIT;
}

static mgc_value p3_noise(mgc_value arg) {
  struct mt_rng rng;
  (void)arg;
  mt_rng_seed(&rng, seed, 300);
  while (!atomic_load_explicit(&p3_stop, memory_order_acquire)) {
    unsigned c = (unsigned)mt_below(&rng, 128);
    garbage(&rng, 10);
    if (c == 0)
      mgc_minor_collection();
    else if (c == 1)
      mgc_major_slice(0);
  }
  return MGC_UNIT;
}

static void part3(void) {
  struct tally t = {0, 0};
  mgc_domain *o, *nz;
  long n = scaled(200000, 2000), rep, reps = 6, i;
  p3_fill = scaled(100000, 2000);
  atomic_store(&p3_stop, 0);
  atomic_store(&p3_go, 0);
  atomic_store(&p3_done, 0);
  o = mgc_domain_spawn(p3_other, MGC_UNIT);
  nz = mgc_domain_spawn(p3_noise, MGC_UNIT);
  if (!CHECK(o != NULL && nz != NULL, "part 3: spawn"))
    exit(check_mt_done());
  for (rep = 0; rep < reps; rep++) {
    mgc_fiber *f = mgc_fiber_new(2);
    mgc_value b, l;
    size_t j;
    b = mgc_alloc_small(B_FIELDS, 0);
    for (j = 0; j < B_FIELDS; j++)
      MGC_FIELD(b, j) = MGC_VAL_INT(b_pat(rep, j));
    mgc_fiber_push(f, MGC_VAL_INT(1));
    mgc_fiber_push(f, b); /* the only reference */
    atomic_store(&p3_fiber, f);
    gset(S3_FILL, mgc_cont_new(f));
    l = mgc_alloc_small(2, 0);
    MGC_FIELD(l, 0) = MGC_VAL_INT(-1);
    MGC_FIELD(l, 1) = gget(S3_FILL);
    gset(S3_LIST, l);
    gset(S3_FILL, MGC_UNIT);
    for (i = 0; i < n; i++) {
      l = mgc_alloc_small(2, 0);
      MGC_FIELD(l, 0) = MGC_VAL_INT(i);
      MGC_FIELD(l, 1) = gget(S3_LIST);
      gset(S3_LIST, l);
    }
    mgc_minor_collection();
    mgc_full_major();
    if (rep % 2 == 0) {
      p3_take_and_check(rep, &t);
    } else {
      atomic_store_explicit(&p3_go, rep + 1, memory_order_release);
      mt_wait_at_least(&p3_done, rep + 1);
    }
    gset(S3_LIST, MGC_UNIT);
  }
  atomic_store(&p3_stop, 1);
  atomic_store_explicit(&p3_go, reps + 10, memory_order_release);
  mgc_domain_join(o);
  mgc_domain_join(nz);
  tally_report(&t, "part 3: darken before take, taken by its maker", 0);
  clear_all();
}

/* ------------------------------------------------------------------------ */
/* Part 4: a domain in a blocking section holding fibers                    */
/* ------------------------------------------------------------------------ */

#define P4_N 200
static atomic_int p4_state, p4_wake;
static atomic_long p4_scans_before;

static long p4_id(int which, int i) { return 400000 + which * 1000 + i; }

static mgc_value p4_sleeper(mgc_value arg) {
  struct tally t = {0, 0};
  struct timespec ts = {0, 1000000};
  mgc_fiber *f1, *f2, *g;
  struct estack *e;
  long eid;
  int i;
  (void)arg;
  f1 = mgc_fiber_new(4);
  f2 = mgc_fiber_new(4);
  e = es_new(4);
  eid = e->id;
  for (i = 0; i < P4_N; i++) {
    mgc_fiber_push(f1, idb(p4_id(1, i)));
    mgc_fiber_push(f2, idb(p4_id(2, i)));
    es_push(e, idb(p4_id(3, i)));
  }
  /* f2 suspended into a continuation held only by f1. */
  {
    mgc_value k = mgc_cont_new(f2);
    mgc_fiber_push(f1, k);
  }
  atomic_store(&p4_scans_before, atomic_load(&es_scans));
  atomic_store_explicit(&p4_state, 1, memory_order_release);
  mgc_enter_blocking_section();
  while (!atomic_load_explicit(&p4_wake, memory_order_acquire))
    nanosleep(&ts, NULL);
  mgc_leave_blocking_section();
  atomic_store_explicit(&p4_state, 2, memory_order_release);
  EXPECT(&t,
         mgc_fiber_depth(f1) == P4_N + 1 && e->n == P4_N && es_freed(eid) == 0,
         "the sleeper's stacks are whole");
  for (i = 0; i < P4_N; i++) {
    mgc_value v1 = MGC_FIBER_SLOT(f1, i), v3 = e->slots[i];
    EXPECT(&t, idb_ok(v1, p4_id(1, i)) && !mgc_is_young(v1),
           "fiber slot %d holds %ld (want %ld), young %d", i, idb_id(v1),
           p4_id(1, i), mgc_is_young(v1));
    EXPECT(&t, idb_ok(v3, p4_id(3, i)) && !mgc_is_young(v3),
           "embedder stack slot %d holds %ld (want %ld), young %d", i,
           idb_id(v3), p4_id(3, i), mgc_is_young(v3));
  }
  g = mgc_cont_take(MGC_FIBER_SLOT(f1, P4_N));
  EXPECT(&t, g == f2, "the nested continuation's fiber: %p (want %p)",
         (void *)g, (void *)f2);
  if (g == f2) {
    EXPECT(&t, mgc_fiber_depth(f2) == P4_N, "nested depth");
    for (i = 0; i < P4_N && i < (int)mgc_fiber_depth(f2); i++)
      EXPECT(&t, idb_ok(MGC_FIBER_SLOT(f2, i), p4_id(2, i)),
             "nested fiber slot %d holds %ld (want %ld)", i,
             idb_id(MGC_FIBER_SLOT(f2, i)), p4_id(2, i));
    mgc_fiber_free(f2);
  }
  mgc_fiber_free(f1);
  mgc_stack_free(&e->hdr);
  EXPECT(&t, es_freed(eid) == 1, "stack freed once");
  tally_report(&t, "part 4: the sleeper's fibers", 1);
  return MGC_UNIT;
}

static mgc_value p4_heavy(mgc_value arg) {
  struct mt_rng rng;
  long n = 0;
  (void)arg;
  mt_rng_seed(&rng, seed, 400);
  while (atomic_load_explicit(&p4_wake, memory_order_acquire) == 0) {
    garbage(&rng, 50);
    if (++n % 64 == 0)
      mgc_minor_collection();
  }
  return MGC_UNIT;
}

static void part4(void) {
  struct mt_rng rng;
  mgc_domain *s, *h;
  mgc_stats st;
  uint64_t minor0, major0;
  unsigned long spins = 0;
  long n;
  double t0;
  atomic_store(&p4_state, 0);
  atomic_store(&p4_wake, 0);
  mt_rng_seed(&rng, seed, 410);
  s = mgc_domain_spawn(p4_sleeper, MGC_UNIT);
  h = mgc_domain_spawn(p4_heavy, MGC_UNIT);
  if (!CHECK(s != NULL && h != NULL, "part 4: spawn"))
    exit(check_mt_done());
  while (atomic_load_explicit(&p4_state, memory_order_acquire) != 1)
    mt_relax(&spins);
  mgc_get_stats(&st);
  minor0 = st.minor_collections;
  major0 = st.major_collections;
  t0 = now_s();
  for (n = 0;; n++) {
    garbage(&rng, 20);
    if (n % 8 == 0)
      mgc_minor_collection();
    if (n % 32 == 16)
      mgc_major_slice(0);
    if (n % 50 == 49)
      mgc_major_collection();
    if (n % 100 == 99)
      mgc_full_major();
    if (n % 100 == 99) {
      mgc_get_stats(&st);
      if (st.major_collections >= major0 + 6 &&
          st.minor_collections >= minor0 + 20 && n >= scaled(4000, 200))
        break;
      if (now_s() - t0 > 20)
        break;
    }
  }
  mgc_full_major();
  mgc_get_stats(&st);
  CHECK(atomic_load(&p4_state) == 1 && st.major_collections >= major0 + 6,
        "part 4: %lu major cycles and %lu minor collections completed while "
        "a domain holding fibers slept (state %d)",
        (unsigned long)(st.major_collections - major0),
        (unsigned long)(st.minor_collections - minor0), atomic_load(&p4_state));
  CHECK(atomic_load(&es_scans) > atomic_load(&p4_scans_before),
        "part 4: the sleeper's embedder stack was scanned meanwhile");
  atomic_store_explicit(&p4_wake, 1, memory_order_release);
  mgc_domain_join(s);
  mgc_domain_join(h);
}

/* ------------------------------------------------------------------------ */
/* Part 5: termination                                                      */
/* ------------------------------------------------------------------------ */

#define P5_HELD 4  /* embedder stacks still held at the end */
#define P5_CONTS 8 /* continuations handed out: fibers and stacks */
static atomic_long p5_held_ids[P5_HELD];
static atomic_long p5_cont_es_ids[P5_CONTS];

static long p5_id(long round, int j, int i) {
  return 500000 + round * 10000 + j * 100 + i;
}
static int p5_depth(int j) { return 3 + j % 5; }
static int p5_is_es(int j) { return j % 2 == 1; }

static mgc_value p5_worker(mgc_value arg) {
  long round = MGC_INT_VAL(arg);
  struct mt_rng rng;
  int j, i;
  mt_rng_seed(&rng, seed, 500 + (uint64_t)round);
  for (j = 0; j < P5_HELD; j++) {
    struct estack *e = es_new(2);
    for (i = 0; i < 5; i++)
      es_push(e, idb(p5_id(round, 90 + j, i)));
    atomic_store(&p5_held_ids[j], e->id);
  }
  {
    /* A fiber held at the end: freed by the termination. */
    mgc_fiber *f = mgc_fiber_new(2);
    for (i = 0; i < 20; i++)
      mgc_fiber_push(f, idb(p5_id(round, 99, i)));
  }
  for (j = 0; j < P5_CONTS; j++) {
    mgc_value k;
    if (p5_is_es(j)) {
      struct estack *e = es_new(2);
      for (i = 0; i < p5_depth(j); i++)
        es_push(e, idb(p5_id(round, j, i)));
      atomic_store(&p5_cont_es_ids[j], e->id);
      k = mgc_cont_new_stack(&e->hdr);
    } else {
      mgc_fiber *f = mgc_fiber_new(1);
      for (i = 0; i < p5_depth(j); i++)
        mgc_fiber_push(f, idb(p5_id(round, j, i)));
      k = mgc_cont_new(f);
    }
    kset(j, k);
    if (j == P5_CONTS / 2)
      mgc_minor_collection(); /* the first half old, the rest young */
    garbage(&rng, 10);
  }
  return MGC_UNIT;
}

static void part5(void) {
  struct tally t = {0, 0};
  long rounds = scaled(40, 4), round;
  for (round = 0; round < rounds; round++) {
    mgc_domain *d = mgc_domain_spawn(p5_worker, MGC_VAL_INT(round));
    int j, i;
    if (!CHECK(d != NULL, "part 5: spawn"))
      exit(check_mt_done());
    mgc_domain_join(d);
    for (j = 0; j < P5_HELD; j++) {
      long id = atomic_load(&p5_held_ids[j]);
      EXPECT(&t, es_freed(id) == 1,
             "round %ld: a stack held by the terminated domain: free called "
             "%d times (want 1)",
             round, es_freed(id));
    }
    for (j = 0; j < P5_CONTS; j++)
      if (p5_is_es(j))
        EXPECT(&t, es_freed(atomic_load(&p5_cont_es_ids[j])) == 0,
               "round %ld: a stack in a live continuation of the terminated "
               "domain was freed",
               round);
    if (round % 2)
      mgc_full_major();
    else
      mgc_minor_collection();
    /* Take most of them; drop the last two. */
    for (j = 0; j < P5_CONTS - 2; j++) {
      mgc_value k = kget(j);
      if (p5_is_es(j)) {
        long id = atomic_load(&p5_cont_es_ids[j]);
        struct estack *e;
        if (es_freed(id) != 0)
          continue;
        e = (struct estack *)mgc_cont_take_stack(k);
        EXPECT(&t, e != NULL && e->id == id, "round %ld: take_stack %d", round,
               j);
        if (e == NULL || e->id != id)
          continue;
        EXPECT(&t, e->n == (size_t)p5_depth(j), "round %ld: depth", round);
        for (i = 0; i < p5_depth(j) && i < (int)e->n; i++)
          EXPECT(&t, idb_ok(e->slots[i], p5_id(round, j, i)),
                 "round %ld cont %d: stack slot %d holds %ld (want %ld)", round,
                 j, i, idb_id(e->slots[i]), p5_id(round, j, i));
        mgc_stack_free(&e->hdr);
        EXPECT(&t, es_freed(id) == 1, "round %ld: stack freed once", round);
      } else {
        mgc_fiber *f = mgc_cont_take(k);
        EXPECT(&t, f != NULL, "round %ld: take of the dead domain's fiber %d",
               round, j);
        if (f == NULL)
          continue;
        EXPECT(&t, mgc_fiber_depth(f) == (size_t)p5_depth(j),
               "round %ld: fiber depth %zu", round, mgc_fiber_depth(f));
        for (i = 0; i < p5_depth(j) && i < (int)mgc_fiber_depth(f); i++)
          EXPECT(&t, idb_ok(MGC_FIBER_SLOT(f, i), p5_id(round, j, i)),
                 "round %ld cont %d: fiber slot %d holds %ld (want %ld)", round,
                 j, i, idb_id(MGC_FIBER_SLOT(f, i)), p5_id(round, j, i));
        mgc_fiber_free(f);
      }
    }
    for (j = 0; j < K_SLOTS; j++)
      kset(j, MGC_UNIT);
    mgc_full_major();
    for (j = P5_CONTS - 2; j < P5_CONTS; j++)
      if (p5_is_es(j))
        EXPECT(&t, es_freed(atomic_load(&p5_cont_es_ids[j])) == 1,
               "round %ld: a dropped continuation of the terminated domain: "
               "its stack freed %d times after a full major (want 1)",
               round, es_freed(atomic_load(&p5_cont_es_ids[j])));
  }
  tally_report(&t, "part 5: termination", 0);
}

/* ------------------------------------------------------------------------ */

static void timed(const char *name, void (*f)(void)) {
  double t0 = now_s();
  printf("%s\n", name);
  fflush(stdout);
  f();
  CHECK_VERIFY(name);
  printf("  %s: %.2f s\n", name, now_s() - t0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  mgc_params p;
  int i;
  long id, bad = 0, n;
  mt_watchdog(300);
  setvbuf(stdout, NULL, _IOLBF, 0);
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
  g_k = mgc_alloc_shr(K_SLOTS, 0);
  for (i = 0; i < K_SLOTS; i++)
    mgc_initialize(&MGC_FIELD(g_k, i), MGC_UNIT);
  mgc_register_global_root(&g_k);
  timed("part 1: take race", part1);
  timed("part 2: ping-pong", part2);
  timed("part 3: darken before take, two domains", part3);
  timed("part 4: a blocked domain holding fibers", part4);
  timed("part 5: termination", part5);
  mgc_full_major();
  n = atomic_load(&es_next_id);
  for (id = 1; id < n; id++)
    bad += es_freed(id) != 1;
  CHECK(bad == 0, "every embedder stack freed exactly once: %ld of %ld not",
        bad, n - 1);
  mgc_remove_global_root(&g_shared);
  mgc_remove_global_root(&g_k);
  mgc_shutdown();
  return check_mt_done();
}
