/* test_domains_race.c: the two- and four-domain promotion race.
 *
 * DESIGN.md §5.3, invariants 15-18 and 21: every domain may hold a young
 * block of another domain; at a minor collection all domains promote in
 * parallel and a CAS on the young header decides which of them copies a
 * block.  Each round, domain 0 builds a young list and a young tree and
 * publishes them in an old block (mgc_modify: the fields go to the
 * remembered set), in classic global roots and in a generational global
 * root.  The other domains read the same young blocks, keep them in their
 * local roots and in fields of their own old blocks, and build young blocks
 * of their own pointing to them, which every domain then reads and keeps
 * too.  All domains then call mgc_minor_collection at the same moment.
 * Afterwards every place, in every domain, must hold the same single old
 * copy (pointer equality, compared after a barrier), with intact contents.
 * The round is run many times with 2 and with 4 domains; the heap verifier
 * runs from domain 0 now and then.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define MAXD 4
#define LIST_LEN 600
#define TREE_DEPTH 7
#define SEED 20240611u

/* Slots of the shared old block. */
#define SH_LIST 0
#define SH_TREE 1
#define SH_Y 2 /* + domain index: each domain's own young block */
#define SH_SIZE (SH_Y + MAXD)

/* What each domain reports after the collection. */
#define REP_LIST 0
#define REP_TREE 1
#define REP_MID 2
#define REP_Y 3 /* + domain index */
#define REP_SIZE (REP_Y + MAXD)

/* Fields of the block Y that domain w builds: the list, the tree, the
   middle cell it picked, its index. */
#define Y_LIST 0
#define Y_TREE 1
#define Y_MID 2
#define Y_SELF 3
#define Y_SIZE 4

static mgc_value g_shared =
    MGC_UNIT; /* classic root: old block of SH_SIZE slots */
static mgc_value g_list = MGC_UNIT;     /* classic root */
static mgc_value g_tree = MGC_UNIT;     /* classic root */
static mgc_value g_gen_list = MGC_UNIT; /* generational root */
static mgc_value g_ys[MAXD]; /* classic roots: the Y blocks, for domain 0 */

static struct mt_barrier bar;
static int ndomains;
static long nrounds;
static atomic_long cur_round;    /* written by domain 0 before barrier 1 */
static atomic_long mid_index;    /* idem: which cell is "the middle" */
static atomic_int full_major_by; /* idem: -1, or who runs a full major */
static atomic_uintptr_t report[MAXD][REP_SIZE];
static int no_torture; /* the young blocks stay young until the collection */

/* ------------------------------------------------------------------------ */
/* Young structures and their checks                                        */
/* ------------------------------------------------------------------------ */

static long list_value(long round, long i) { return round * 1000003 + i * 7; }

/* A list of LIST_LEN cells [value, next], built from the tail. */
static mgc_value build_list(long round) {
  MGC_PARAM0;
  MGC_LOCAL1(l);
  long i;
  for (i = LIST_LEN - 1; i >= 0; i--) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(list_value(round, i));
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

/* 0 when l is the list of the given round. */
static long check_list(mgc_value l, long round) {
  long i, bad = 0;
  for (i = 0; i < LIST_LEN; i++) {
    if (!MGC_IS_BLOCK(l) || MGC_WOSIZE_VAL(l) != 2 || MGC_TAG_VAL(l) != 0)
      return bad + 1;
    if (MGC_FIELD(l, 0) != MGC_VAL_INT(list_value(round, i)))
      bad++;
    l = MGC_FIELD(l, 1);
  }
  return bad + (l != MGC_UNIT);
}

static mgc_value list_nth(mgc_value l, long n) {
  while (n-- > 0 && MGC_IS_BLOCK(l))
    l = MGC_FIELD(l, 1);
  return l;
}

/* A full binary tree of nodes [left, right, id] (tag 1), leaves are the
   integers id; children of id are 2id and 2id+1. */
static mgc_value build_tree(int depth, long id) {
  MGC_PARAM0;
  MGC_LOCAL2(left, right);
  mgc_value n;
  if (depth == 0)
    MGC_RETURN(MGC_VAL_INT(id));
  left = build_tree(depth - 1, 2 * id);
  right = build_tree(depth - 1, 2 * id + 1);
  n = mgc_alloc_small(3, 1);
  MGC_FIELD(n, 0) = left;
  MGC_FIELD(n, 1) = right;
  MGC_FIELD(n, 2) = MGC_VAL_INT(id);
  MGC_RETURN(n);
}

static long check_tree(mgc_value t, int depth, long id) {
  if (depth == 0)
    return t != MGC_VAL_INT(id);
  if (!MGC_IS_BLOCK(t) || MGC_WOSIZE_VAL(t) != 3 || MGC_TAG_VAL(t) != 1 ||
      MGC_FIELD(t, 2) != MGC_VAL_INT(id))
    return 1;
  return check_tree(MGC_FIELD(t, 0), depth - 1, 2 * id) +
         check_tree(MGC_FIELD(t, 1), depth - 1, 2 * id + 1);
}

/* The tree of a round: its root id depends on the round. */
static long tree_id(long round) { return 1 + round % 5; }

/* ------------------------------------------------------------------------ */
/* One round, seen from one domain                                          */
/* ------------------------------------------------------------------------ */

static void report_set(int self, int k, mgc_value v) {
  atomic_store_explicit(&report[self][k], (uintptr_t)v, memory_order_relaxed);
}

static mgc_value report_get(int d, int k) {
  return (mgc_value)atomic_load_explicit(&report[d][k], memory_order_relaxed);
}

/* Phase E for every domain: its own report must equal domain 0's, hold no
   young pointer, and the Y blocks must point to the same single copies. */
static void compare_reports(int self, long round) {
  long diff = 0, young = 0, ybad = 0;
  int k, w;
  for (k = 0; k < REP_Y + ndomains; k++) {
    mgc_value mine = report_get(self, k), ref = report_get(0, k);
    diff += mine != ref;
    young += mgc_is_young(mine);
  }
  for (w = 1; w < ndomains; w++) {
    mgc_value y = report_get(self, REP_Y + w);
    if (!MGC_IS_BLOCK(y) || MGC_WOSIZE_VAL(y) != Y_SIZE) {
      ybad++;
      continue;
    }
    ybad += MGC_FIELD(y, Y_LIST) != report_get(0, REP_LIST);
    ybad += MGC_FIELD(y, Y_TREE) != report_get(0, REP_TREE);
    ybad += MGC_FIELD(y, Y_MID) != report_get(0, REP_MID);
    ybad += MGC_FIELD(y, Y_SELF) != MGC_VAL_INT(w);
  }
  if (diff != 0 || young != 0 || ybad != 0 || round % 50 == 0)
    MT_CHECK(diff == 0 && young == 0 && ybad == 0,
             "%d domains, round %ld, domain %d: %ld places differ from "
             "domain 0, %ld still young, %ld bad fields in Y blocks",
             ndomains, round, self, diff, young, ybad);
}

/* The collection every domain triggers at the same moment. */
static void collect(int self) {
  if (atomic_load_explicit(&full_major_by, memory_order_relaxed) == self)
    mgc_full_major();
  else
    mgc_minor_collection();
}

static mgc_value race_worker(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL5(l, t, m, y, ob);
  int self = (int)MGC_INT_VAL(MGC_FIELD(arg, 0));
  long r, bad_arg = 0, bad_old = 0, young_rounds = 0;
  mgc_value res;
  int w;
  ob = mgc_alloc_shr(SH_SIZE + 3, 0);
  for (w = 0; w < SH_SIZE + 3; w++)
    mgc_initialize(&MGC_FIELD(ob, w), MGC_UNIT);
  for (r = 0; r < nrounds; r++) {
    long k;
    /* Barrier 1: domain 0 has published this round's young structures. */
    mt_barrier_wait(&bar);
    k = atomic_load_explicit(&mid_index, memory_order_relaxed);
    l = MGC_FIELD(g_shared, SH_LIST);
    t = MGC_FIELD(g_shared, SH_TREE);
    m = list_nth(l, k);
    young_rounds += mgc_is_young(l) && mgc_is_young(t) && mgc_is_young(m);
    mgc_modify(&MGC_FIELD(ob, 0), l);
    mgc_modify(&MGC_FIELD(ob, 1), t);
    mgc_modify(&MGC_FIELD(ob, 2), m);
    y = mgc_alloc_small(Y_SIZE, 0);
    MGC_FIELD(y, Y_LIST) = l;
    MGC_FIELD(y, Y_TREE) = t;
    MGC_FIELD(y, Y_MID) = m;
    MGC_FIELD(y, Y_SELF) = MGC_VAL_INT(self);
    mgc_modify(&MGC_FIELD(g_shared, SH_Y + self), y);
    /* Barrier 2: every Y is published; read everybody's. */
    mt_barrier_wait(&bar);
    for (w = 1; w < ndomains; w++)
      mgc_modify(&MGC_FIELD(ob, 3 + w), MGC_FIELD(g_shared, SH_Y + w));
    /* Barrier 3: the start line. */
    mt_barrier_wait(&bar);
    collect(self);
    report_set(self, REP_LIST, l);
    report_set(self, REP_TREE, t);
    report_set(self, REP_MID, m);
    for (w = 1; w < ndomains; w++)
      report_set(self, REP_Y + w, MGC_FIELD(ob, 3 + w));
    bad_old += MGC_FIELD(ob, 0) != l || MGC_FIELD(ob, 1) != t ||
               MGC_FIELD(ob, 2) != m || MGC_FIELD(ob, 3 + self) != y;
    bad_old += list_nth(l, k) != m;
    /* Barrier 4: all reports are in. */
    mt_barrier_wait(&bar);
    compare_reports(self, atomic_load(&cur_round));
    bad_arg += MGC_FIELD(arg, 0) != MGC_VAL_INT(self) || mgc_is_young(arg);
    /* Barrier 5: domain 0 may start the next round. */
    mt_barrier_wait(&bar);
  }
  MT_CHECK(bad_old == 0 && bad_arg == 0,
           "%d domains, worker %d: %ld rounds with an old field or the "
           "middle cell not the root's copy, %ld with a broken argument",
           ndomains, self, bad_old, bad_arg);
  MT_CHECK(young_rounds > nrounds / 2 || !no_torture,
           "%d domains, worker %d: the race was exercised (%ld of %ld "
           "rounds read the structures while young)",
           ndomains, self, young_rounds, nrounds);
  res = mgc_alloc_small(2, 0);
  MGC_FIELD(res, 0) = MGC_VAL_INT(self);
  MGC_FIELD(res, 1) = MGC_VAL_INT(r);
  MGC_RETURN(res);
}

/* Domain 0's side of the rounds. */
static void run(int nd, long rounds, struct mt_rng *rng) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *doms[MAXD];
  long r, bad_content = 0, bad_places = 0, verified = 0;
  int w;
  ndomains = nd;
  nrounds = rounds;
  mt_barrier_init(&bar, (unsigned)nd);
  for (w = 1; w < nd; w++) {
    arg = mgc_alloc_small(1, 0);
    MGC_FIELD(arg, 0) = MGC_VAL_INT(w);
    doms[w] = mgc_domain_spawn(race_worker, arg);
    MT_CHECK(doms[w] != NULL, "spawn of worker %d: error %d", w,
             mgc_last_error());
    if (doms[w] == NULL)
      exit(check_mt_done());
  }
  for (r = 0; r < rounds; r++) {
    long k = (long)mt_below(rng, LIST_LEN);
    int fm = mt_below(rng, 6) == 0 ? (int)mt_below(rng, (uint64_t)nd) : -1;
    g_list = build_list(r);
    g_tree = build_tree(TREE_DEPTH, tree_id(r));
    mgc_modify(&MGC_FIELD(g_shared, SH_LIST), g_list);
    mgc_modify(&MGC_FIELD(g_shared, SH_TREE), g_tree);
    mgc_modify_generational_global_root(&g_gen_list, g_list);
    atomic_store_explicit(&cur_round, r, memory_order_relaxed);
    atomic_store_explicit(&mid_index, k, memory_order_relaxed);
    atomic_store_explicit(&full_major_by, fm, memory_order_relaxed);
    mt_barrier_wait(&bar); /* 1 */
    mt_barrier_wait(&bar); /* 2 */
    for (w = 1; w < nd; w++)
      g_ys[w] = MGC_FIELD(g_shared, SH_Y + w);
    mt_barrier_wait(&bar); /* 3 */
    collect(0);
    report_set(0, REP_LIST, g_list);
    report_set(0, REP_TREE, g_tree);
    report_set(0, REP_MID, list_nth(g_list, k));
    for (w = 1; w < nd; w++)
      report_set(0, REP_Y + w, g_ys[w]);
    bad_places += MGC_FIELD(g_shared, SH_LIST) != g_list ||
                  MGC_FIELD(g_shared, SH_TREE) != g_tree ||
                  g_gen_list != g_list;
    for (w = 1; w < nd; w++)
      bad_places += MGC_FIELD(g_shared, SH_Y + w) != g_ys[w];
    bad_content += check_list(g_list, r) != 0;
    bad_content += check_tree(g_tree, TREE_DEPTH, tree_id(r)) != 0;
    mt_barrier_wait(&bar); /* 4 */
    compare_reports(0, r);
    if (r % 25 == 24) {
      verified++;
      MT_CHECK(mgc_verify_heap() == 0, "%d domains, verify at round %ld", nd,
               r);
    }
    mt_barrier_wait(&bar); /* 5 */
  }
  MT_CHECK(bad_content == 0 && bad_places == 0,
           "%d domains, %ld rounds: %ld rounds with broken contents, %ld "
           "with a global root or shared field not the single copy",
           nd, rounds, bad_content, bad_places);
  for (w = 1; w < nd; w++) {
    res = mgc_domain_join(doms[w]);
    MT_CHECK(MGC_IS_BLOCK(res) && MGC_FIELD(res, 0) == MGC_VAL_INT(w) &&
                 MGC_FIELD(res, 1) == MGC_VAL_INT(rounds),
             "join of worker %d returns its result block", w);
  }
  MT_CHECK(mgc_verify_heap() == 0,
           "%d domains: verify after the joins (%ld verified rounds)", nd,
           verified);
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  struct mt_rng rng;
  uint64_t seed;
  int i;
  mt_watchdog(600);
  seed = test_seed(argc, argv, SEED);
  mt_rng_seed(&rng, seed, 0);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 8;
  p.minor_heap_words = 32768;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  mgc_get_params(&p);
  no_torture = p.torture_every == 0 && p.minor_heap_words >= 32768;
  for (i = 0; i < MAXD; i++)
    g_ys[i] = MGC_UNIT;
  mgc_register_global_root(&g_shared);
  mgc_register_global_root(&g_list);
  mgc_register_global_root(&g_tree);
  mgc_register_generational_global_root(&g_gen_list);
  for (i = 0; i < MAXD; i++)
    mgc_register_global_root(&g_ys[i]);
  g_shared = mgc_alloc_shr(SH_SIZE, 0);
  for (i = 0; i < SH_SIZE; i++)
    mgc_initialize(&MGC_FIELD(g_shared, i), MGC_UNIT);

  run(2, test_scale(400), &rng);
  run(4, test_scale(400), &rng);
  run(3, test_scale(100), &rng);

  for (i = 0; i < MAXD; i++)
    mgc_remove_global_root(&g_ys[i]);
  mgc_remove_generational_global_root(&g_gen_list);
  mgc_remove_global_root(&g_tree);
  mgc_remove_global_root(&g_list);
  mgc_remove_global_root(&g_shared);
  mgc_shutdown();
  return check_mt_done();
}
