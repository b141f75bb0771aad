/* test_domains_model.c: model-based random test on 4 domains at once.
 *
 * Each domain keeps a shadow model (plain malloc'd C structs) of its own
 * object graph, rooted in its own roots of four kinds: local roots
 * (MGC_LOCALn), classic global roots, generational global roots (changed
 * only through mgc_modify_generational_global_root) and the fields of an
 * old block of its own (mgc_modify).  All domains also share an array of
 * old slots into which they publish young immutable blocks with mgc_modify
 * under a mutex (taken only by trylock + mgc_poll spinning), and from which
 * they take blocks of other domains into their own graphs: the graphs are
 * not disjoint in the heap, only in ownership.  Random allocations, stores,
 * root moves, shared publications and reads, minor collections, major
 * slices and full majors run on every domain; after each collection (and
 * every COMPARE_EVERY operations) the domain walks its whole graph together
 * with its model: same shape, same contents, same sharing, and no young
 * pointer right after a minor collection or a full major.  DESIGN.md
 * invariants 10, 14, 15, 21 are what keep the comparison true.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define SEED 5150u
#define NDOM 4
#define MAXF 5 /* block sizes 1..MAXF; field 0 holds the id */
#define N_LOCAL 5
#define N_CLASSIC 6
#define N_GEN 4
#define N_OLD 8
#define NROOTS (N_LOCAL + N_CLASSIC + N_GEN + N_OLD)
#define NSHARED 16
#define COMPARE_EVERY 2000
#define WALK_STEPS 3
#define TAG_OWN 0
#define TAG_FOREIGN 9

/* ------------------------------------------------------------------------ */
/* The model                                                                */
/* ------------------------------------------------------------------------ */

struct mnode;

/* A model value: a node, or (p == NULL) the integer i. */
struct mval {
  struct mnode *p;
  long i;
};

struct mnode {
  long id;
  int size;
  int foreign; /* another domain's immutable block: never stored into */
  struct mval f[MAXF];
  struct mnode *next; /* all nodes of the domain */
  unsigned long mark;
  mgc_value addr; /* where the last comparison found it */
};

/* The published blocks [id, a, b] (tag TAG_FOREIGN), under shared_lock. */
struct shared_entry {
  int set;
  long id, a, b;
};

static mgc_value g_shared =
    MGC_UNIT; /* classic root: old block of NSHARED slots */
static struct shared_entry shared_model[NSHARED];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seed;
static long nops;
static struct mt_barrier start_bar;

/* Everything a domain owns. */
struct dom {
  int self;
  struct mt_rng rng;
  mgc_value *local[N_LOCAL]; /* its MGC_LOCAL5 variables */
  mgc_value *ob;             /* its MGC_LOCAL1 holding the old block */
  mgc_value *tmp[MAXF];      /* temporaries, rooted */
  mgc_value *classic;        /* malloc'd, registered */
  mgc_value *gen;            /* malloc'd, registered */
  struct mval roots[NROOTS];
  struct mnode *all;
  long nnodes, next_id;
  unsigned long epoch;
  /* The comparison's explicit stack. */
  struct pair {
    struct mnode *m;
    mgc_value v;
  } * stack;
  size_t stack_cap;
  /* Findings. */
  long compares, mismatches, young_after, shared_bad, printed;
  long counts[12];
};

static struct mnode *node_new(struct dom *d, int size, int foreign, long id) {
  struct mnode *m = calloc(1, sizeof *m);
  int i;
  if (m == NULL) {
    perror("calloc");
    exit(2);
  }
  m->id = id;
  m->size = size;
  m->foreign = foreign;
  for (i = 0; i < MAXF; i++)
    m->f[i].i = 0;
  m->next = d->all;
  d->all = m;
  d->nnodes++;
  return m;
}

static mgc_value mval_int(struct mval v) { return MGC_VAL_INT(v.i); }

/* ------------------------------------------------------------------------ */
/* Roots of the four kinds                                                  */
/* ------------------------------------------------------------------------ */

static mgc_value root_get(struct dom *d, int i) {
  if (i < N_LOCAL)
    return *d->local[i];
  i -= N_LOCAL;
  if (i < N_CLASSIC)
    return d->classic[i];
  i -= N_CLASSIC;
  if (i < N_GEN)
    return d->gen[i];
  i -= N_GEN;
  return MGC_FIELD(*d->ob, i);
}

/* Never allocates. */
static void root_set(struct dom *d, int i, mgc_value v) {
  if (i < N_LOCAL) {
    *d->local[i] = v;
    return;
  }
  i -= N_LOCAL;
  if (i < N_CLASSIC) {
    d->classic[i] = v;
    return;
  }
  i -= N_CLASSIC;
  if (i < N_GEN) {
    mgc_modify_generational_global_root(&d->gen[i], v);
    return;
  }
  i -= N_GEN;
  mgc_modify(&MGC_FIELD(*d->ob, i), v);
}

/* ------------------------------------------------------------------------ */
/* Comparing the heap with the model                                        */
/* ------------------------------------------------------------------------ */

static void mismatch(struct dom *d, const char *what, long id, long field) {
  d->mismatches++;
  if (d->printed++ < 5)
    MT_CHECK(0, "domain %d, compare %ld: %s (node %ld, field %ld)", d->self,
             d->compares, what, id, field);
}

static void push(struct dom *d, struct mnode *m, mgc_value v, size_t *sp) {
  if (*sp == d->stack_cap) {
    d->stack_cap = d->stack_cap ? 2 * d->stack_cap : 1024;
    d->stack = realloc(d->stack, d->stack_cap * sizeof *d->stack);
    if (d->stack == NULL) {
      perror("realloc");
      exit(2);
    }
  }
  d->stack[*sp].m = m;
  d->stack[*sp].v = v;
  ++*sp;
}

/* Checks one model value against one heap value; pushes unvisited nodes. */
static void compare_val(struct dom *d, struct mval mv, mgc_value v, size_t *sp,
                        long owner, long field, int no_young) {
  if (mv.p == NULL) {
    if (v != mval_int(mv))
      mismatch(d, "integer differs", owner, field);
    return;
  }
  if (!MGC_IS_BLOCK(v)) {
    mismatch(d, "integer where a block was expected", owner, field);
    return;
  }
  if (no_young && mgc_is_young(v))
    d->young_after++;
  if (mv.p->mark == d->epoch) {
    if (mv.p->addr != v)
      mismatch(d, "sharing lost: a node reached at two addresses", owner,
               field);
    return;
  }
  mv.p->mark = d->epoch;
  mv.p->addr = v;
  push(d, mv.p, v, sp);
}

/* Walks the whole graph of the domain; then frees unreachable model
   nodes.  Does not allocate in the heap, so nothing moves meanwhile. */
static void compare_all(struct dom *d, int no_young) {
  size_t sp = 0;
  int i;
  struct mnode **link;
  d->epoch++;
  d->compares++;
  for (i = 0; i < NROOTS; i++)
    compare_val(d, d->roots[i], root_get(d, i), &sp, -1, i, no_young);
  while (sp > 0) {
    struct mnode *m;
    mgc_value v;
    int j;
    sp--;
    m = d->stack[sp].m;
    v = d->stack[sp].v;
    if ((int)MGC_WOSIZE_VAL(v) != m->size) {
      mismatch(d, "size differs", m->id, -1);
      continue;
    }
    if (MGC_TAG_VAL(v) != (m->foreign ? TAG_FOREIGN : TAG_OWN)) {
      mismatch(d, "tag differs", m->id, -1);
      continue;
    }
    if (MGC_FIELD(v, 0) != MGC_VAL_INT(m->id)) {
      mismatch(d, "id differs", m->id, 0);
      continue;
    }
    for (j = 1; j < m->size; j++)
      compare_val(d, m->f[j], MGC_FIELD(v, j), &sp, m->id, j, no_young);
  }
  /* Sweep the model (not after a mismatch: the children of a node that
     did not match were not visited). */
  if (d->mismatches != 0)
    return;
  link = &d->all;
  while (*link != NULL) {
    struct mnode *m = *link;
    if (m->mark != d->epoch) {
      *link = m->next;
      free(m);
      d->nnodes--;
    } else {
      link = &m->next;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Operations                                                               */
/* ------------------------------------------------------------------------ */

/* A random reachable value: a root, then up to WALK_STEPS random pointer
   fields, in the model and in the heap together.  own_only stops before
   foreign nodes (targets of stores). */
static struct mval pick(struct dom *d, mgc_value *out, int own_only) {
  int r = (int)mt_below(&d->rng, NROOTS), steps;
  struct mval mv = d->roots[r];
  mgc_value v = root_get(d, r);
  steps = (int)mt_below(&d->rng, WALK_STEPS + 1);
  while (steps-- > 0 && mv.p != NULL && mv.p->size > 1) {
    int j = 1 + (int)mt_below(&d->rng, (uint64_t)mv.p->size - 1);
    struct mval nx = mv.p->f[j];
    if (nx.p == NULL || (own_only && nx.p->foreign))
      break;
    v = MGC_FIELD(v, j);
    mv = nx;
  }
  if (own_only && mv.p != NULL && mv.p->foreign) {
    mv.p = NULL;
    mv.i = 0;
  }
  *out = v;
  return mv;
}

/* A value to store: an integer (30%) or a reachable value. */
static struct mval pick_value(struct dom *d, mgc_value *out) {
  struct mval mv;
  if (mt_below(&d->rng, 10) < 3) {
    mv.p = NULL;
    mv.i = (long)mt_below(&d->rng, 1000000) - 500000;
    *out = mval_int(mv);
    return mv;
  }
  return pick(d, out, 0);
}

static void op_alloc(struct dom *d) {
  int size = 1 + (int)mt_below(&d->rng, MAXF), j;
  int r = (int)mt_below(&d->rng, NROOTS);
  struct mval plan[MAXF];
  struct mnode *m;
  mgc_value b, v;
  for (j = 1; j < size; j++) {
    plan[j] = pick_value(d, &v);
    *d->tmp[j] = v;
  }
  b = size > 1 && mt_below(&d->rng, 8) == 0
          ? mgc_alloc((size_t)size, TAG_OWN)
          : mgc_alloc_small((size_t)size, TAG_OWN);
  m = node_new(d, size, 0, d->next_id);
  d->next_id += NDOM;
  MGC_FIELD(b, 0) = MGC_VAL_INT(m->id);
  for (j = 1; j < size; j++) {
    MGC_FIELD(b, j) = *d->tmp[j];
    m->f[j] = plan[j];
    *d->tmp[j] = MGC_UNIT;
  }
  /* Half of the time, hang the new block below a reachable block (often an
     old one: an old-to-young pointer) rather than in a root. */
  if (mt_below(&d->rng, 2) == 0) {
    mgc_value target;
    struct mval t = pick(d, &target, 1);
    if (t.p != NULL && t.p->size >= 2) {
      j = 1 + (int)mt_below(&d->rng, (uint64_t)t.p->size - 1);
      mgc_modify(&MGC_FIELD(target, j), b);
      t.p->f[j].p = m;
      return;
    }
  }
  root_set(d, r, b);
  d->roots[r].p = m;
  d->roots[r].i = 0;
}

static void op_store(struct dom *d) {
  mgc_value target, v;
  struct mval t = pick(d, &target, 1), mv;
  int j;
  if (t.p == NULL || t.p->size < 2)
    return;
  j = 1 + (int)mt_below(&d->rng, (uint64_t)t.p->size - 1);
  mv = pick_value(d, &v);
  mgc_modify(&MGC_FIELD(target, j), v);
  t.p->f[j] = mv;
}

static void op_root_move(struct dom *d) {
  int r = (int)mt_below(&d->rng, NROOTS);
  mgc_value v;
  struct mval mv;
  if (mt_below(&d->rng, 4) == 0) {
    mv.p = NULL;
    mv.i = d->self;
    v = mval_int(mv);
  } else {
    mv = pick(d, &v, 0);
  }
  root_set(d, r, v);
  d->roots[r] = mv;
}

static void lock_shared(void) {
  unsigned long spins = 0;
  while (pthread_mutex_trylock(&shared_lock) != 0)
    mt_relax(&spins);
}

/* Publishes a fresh young block in a shared slot; keeps it half of the
   time. */
static void op_share(struct dom *d) {
  int k = (int)mt_below(&d->rng, NSHARED);
  long id = d->next_id, a = (long)mt_rand(&d->rng) % 100000;
  long b = -(long)mt_below(&d->rng, 100000);
  mgc_value blk;
  d->next_id += NDOM;
  blk = mgc_alloc_small(3, TAG_FOREIGN);
  MGC_FIELD(blk, 0) = MGC_VAL_INT(id);
  MGC_FIELD(blk, 1) = MGC_VAL_INT(a);
  MGC_FIELD(blk, 2) = MGC_VAL_INT(b);
  *d->tmp[0] = blk;
  lock_shared();
  mgc_modify(&MGC_FIELD(g_shared, k), *d->tmp[0]);
  shared_model[k].set = 1;
  shared_model[k].id = id;
  shared_model[k].a = a;
  shared_model[k].b = b;
  pthread_mutex_unlock(&shared_lock);
  if (mt_below(&d->rng, 2) == 0) {
    int r = (int)mt_below(&d->rng, NROOTS);
    struct mnode *m = node_new(d, 3, 1, id);
    m->f[1].i = a;
    m->f[2].i = b;
    root_set(d, r, *d->tmp[0]);
    d->roots[r].p = m;
  }
  *d->tmp[0] = MGC_UNIT;
}

/* Takes the block of a shared slot (any domain's) into the graph. */
static void op_take(struct dom *d) {
  int k = (int)mt_below(&d->rng, NSHARED);
  int r = (int)mt_below(&d->rng, NROOTS);
  struct shared_entry e;
  mgc_value v;
  lock_shared();
  e = shared_model[k];
  v = MGC_FIELD(g_shared, k);
  if (!e.set) {
    d->shared_bad += v != MGC_UNIT;
  } else if (!MGC_IS_BLOCK(v) || MGC_WOSIZE_VAL(v) != 3 ||
             MGC_TAG_VAL(v) != TAG_FOREIGN ||
             MGC_FIELD(v, 0) != MGC_VAL_INT(e.id) ||
             MGC_FIELD(v, 1) != MGC_VAL_INT(e.a) ||
             MGC_FIELD(v, 2) != MGC_VAL_INT(e.b)) {
    d->shared_bad++;
  } else {
    struct mnode *m = node_new(d, 3, 1, e.id);
    m->f[1].i = e.a;
    m->f[2].i = e.b;
    root_set(d, r, v);
    d->roots[r].p = m;
    d->roots[r].i = 0;
  }
  pthread_mutex_unlock(&shared_lock);
}

static void op_garbage(struct dom *d) {
  int n = 1 + (int)mt_below(&d->rng, 4);
  while (n-- > 0) {
    mgc_value g = mgc_alloc_small(1 + mt_below(&d->rng, 8), 3);
    size_t j;
    for (j = 0; j < MGC_WOSIZE_VAL(g); j++)
      MGC_FIELD(g, j) = MGC_VAL_INT(j);
  }
}

enum {
  OP_ALLOC,
  OP_STORE,
  OP_ROOT,
  OP_SHARE,
  OP_TAKE,
  OP_GARBAGE,
  OP_MINOR,
  OP_SLICE,
  OP_FULL,
  OP_VERIFY,
  OP_PERIODIC
};

static void step(struct dom *d, long i) {
  uint64_t k = mt_below(&d->rng, 10000);
  if (k < 3000) {
    op_alloc(d);
    d->counts[OP_ALLOC]++;
  } else if (k < 5500) {
    op_store(d);
    d->counts[OP_STORE]++;
  } else if (k < 7000) {
    op_root_move(d);
    d->counts[OP_ROOT]++;
  } else if (k < 7500) {
    op_share(d);
    d->counts[OP_SHARE]++;
  } else if (k < 8000) {
    op_take(d);
    d->counts[OP_TAKE]++;
  } else if (k < 9830) {
    op_garbage(d);
    d->counts[OP_GARBAGE]++;
  } else if (k < 9930) {
    mgc_minor_collection();
    d->counts[OP_MINOR]++;
    compare_all(d, 1);
  } else if (k < 9998) {
    mgc_major_slice(0);
    d->counts[OP_SLICE]++;
    compare_all(d, 0);
  } else {
    mgc_full_major();
    d->counts[OP_FULL]++;
    compare_all(d, 1);
  }
  if (i % COMPARE_EVERY == COMPARE_EVERY - 1) {
    compare_all(d, 0);
    d->counts[OP_PERIODIC]++;
  }
  if (d->self == 0 && i % 25000 == 24999) {
    d->counts[OP_VERIFY]++;
    MT_CHECK(mgc_verify_heap() == 0, "verify at operation %ld", i);
  }
}

/* ------------------------------------------------------------------------ */
/* One domain                                                               */
/* ------------------------------------------------------------------------ */

static mgc_value model_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL5(r0, r1, r2, r3, r4);
  MGC_LOCAL5(t0, t1, t2, t3, t4);
  MGC_LOCAL1(ob);
  struct dom *d = calloc(1, sizeof *d);
  long i;
  int j;
  struct mnode *m;
  if (d == NULL) {
    perror("calloc");
    exit(2);
  }
  d->self = (int)MGC_INT_VAL(arg);
  mt_rng_seed(&d->rng, seed, (uint64_t)d->self);
  d->next_id = d->self;
  d->local[0] = &r0;
  d->local[1] = &r1;
  d->local[2] = &r2;
  d->local[3] = &r3;
  d->local[4] = &r4;
  d->tmp[0] = &t0;
  d->tmp[1] = &t1;
  d->tmp[2] = &t2;
  d->tmp[3] = &t3;
  d->tmp[4] = &t4;
  d->ob = &ob;
  d->classic = malloc(N_CLASSIC * sizeof(mgc_value));
  d->gen = malloc(N_GEN * sizeof(mgc_value));
  if (d->classic == NULL || d->gen == NULL) {
    perror("malloc");
    exit(2);
  }
  for (j = 0; j < N_CLASSIC; j++) {
    d->classic[j] = MGC_VAL_INT(0);
    mgc_register_global_root(&d->classic[j]);
  }
  for (j = 0; j < N_GEN; j++) {
    d->gen[j] = MGC_VAL_INT(0);
    mgc_register_generational_global_root(&d->gen[j]);
  }
  ob = mgc_alloc_shr(N_OLD, TAG_OWN);
  for (j = 0; j < N_OLD; j++)
    mgc_initialize(&MGC_FIELD(ob, j), MGC_VAL_INT(0));
  for (j = 0; j < NROOTS; j++) {
    d->roots[j].p = NULL;
    d->roots[j].i = 0;
  }

  mt_barrier_wait(&start_bar);
  for (i = 0; i < nops; i++)
    step(d, i);
  mgc_minor_collection();
  compare_all(d, 1);

  MT_CHECK(d->mismatches == 0 && d->young_after == 0 && d->shared_bad == 0,
           "domain %d, %ld operations, %ld comparisons: %ld mismatches, %ld "
           "young pointers after a collection, %ld bad shared slots",
           d->self, nops, d->compares, d->mismatches, d->young_after,
           d->shared_bad);
  pthread_mutex_lock(&check_mt_lock);
  printf("domain %d: alloc %ld store %ld root %ld share %ld take %ld "
         "garbage %ld minor %ld slice %ld full %ld verify %ld; %ld model "
         "nodes live\n",
         d->self, d->counts[OP_ALLOC], d->counts[OP_STORE], d->counts[OP_ROOT],
         d->counts[OP_SHARE], d->counts[OP_TAKE], d->counts[OP_GARBAGE],
         d->counts[OP_MINOR], d->counts[OP_SLICE], d->counts[OP_FULL],
         d->counts[OP_VERIFY], d->nnodes);
  fflush(stdout);
  pthread_mutex_unlock(&check_mt_lock);

  for (j = 0; j < N_CLASSIC; j++)
    mgc_remove_global_root(&d->classic[j]);
  for (j = 0; j < N_GEN; j++)
    mgc_remove_generational_global_root(&d->gen[j]);
  free(d->classic);
  free(d->gen);
  while ((m = d->all) != NULL) {
    d->all = m->next;
    free(m);
  }
  free(d->stack);
  i = d->mismatches + d->young_after + d->shared_bad;
  free(d);
  MGC_RETURN(MGC_VAL_INT(i));
}

static void run(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *doms[NDOM];
  long bad = 0;
  int i;
  g_shared = mgc_alloc_shr(NSHARED, 0);
  for (i = 0; i < NSHARED; i++)
    mgc_initialize(&MGC_FIELD(g_shared, i), MGC_UNIT);
  nops = test_scale(100000);
  mt_barrier_init(&start_bar, NDOM);
  for (i = 1; i < NDOM; i++) {
    arg = MGC_VAL_INT(i);
    doms[i] = mgc_domain_spawn(model_body, arg);
    if (!CHECK(doms[i] != NULL, "spawn %d", i))
      exit(check_mt_done());
  }
  res = model_body(MGC_VAL_INT(0));
  bad += MGC_INT_VAL(res);
  for (i = 1; i < NDOM; i++) {
    res = mgc_domain_join(doms[i]);
    bad += MGC_INT_VAL(res);
  }
  MT_CHECK(bad == 0, "%d domains agree with their models (%ld findings)", NDOM,
           bad);
  MT_CHECK(mgc_verify_heap() == 0, "verify at the end");
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(900);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 8;
  p.minor_heap_words = 8192;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  mgc_register_global_root(&g_shared);
  run();
  mgc_remove_global_root(&g_shared);
  mgc_shutdown();
  return check_mt_done();
}
