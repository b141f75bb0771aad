/* test_domains_cross.c: young pointers crossing domains.
 *
 * DESIGN.md §0 ("young objects are not private"), invariants 9, 10, 15 and
 * the constpromote test of §9: domain A allocates a young block and stores
 * it in a shared old block; domain B reads it before any collection and
 * keeps it in a local root.  Then a collection (minor, or sometimes a major
 * slice or a full major) is forced from A, from B or from a third domain C,
 * chosen at random, while the others wait at a polling barrier.  B's copy
 * must stay valid and equal to what A sees, with intact contents.  On some
 * iterations B also writes into A's young block (a cross-domain store into a
 * young block, or, once promoted, an old-to-young store recorded in B's
 * remembered set) and A must see the write.  All three domains draw the
 * same random choices from the same seed, in lockstep.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define SEED 777001u
#define NSLOTS 8
#define W_SLOT NSLOTS /* B's young block w, for the others */
#define MAXSIZE 6

/* Roles, as domain indexes in the lockstep. */
#define DOM_A 0
#define DOM_B 1
#define DOM_C 2
#define NDOM 3

static mgc_value g_shared =
    MGC_UNIT; /* classic root: old block of NSLOTS + 1 slots */
static struct mt_barrier bar;
static uint64_t seed;
static long iterations;
static atomic_uintptr_t seen[NDOM]; /* each domain's view after the GC */

/* Field i >= 1 of the block of iteration it. */
static long cell_value(long it, long i) { return it * 31 + i; }

/* A young block [it, v1, ..., v(size-1)] whose last field, for blocks of at
   least 3 words, points to a small young list [it, -1]. */
static mgc_value make_block(long it, long size) {
  MGC_PARAM0;
  MGC_LOCAL2(b, tail);
  long i;
  if (size >= 3) {
    tail = mgc_alloc_small(2, 3);
    MGC_FIELD(tail, 0) = MGC_VAL_INT(it);
    MGC_FIELD(tail, 1) = MGC_VAL_INT(-1);
  }
  b = mgc_alloc_small((size_t)size, 2);
  MGC_FIELD(b, 0) = MGC_VAL_INT(it);
  for (i = 1; i < size; i++)
    MGC_FIELD(b, i) = MGC_VAL_INT(cell_value(it, i));
  if (size >= 3)
    MGC_FIELD(b, size - 1) = tail;
  MGC_RETURN(b);
}

/* 0 when b is intact; the field b[1] may hold what B stored (written), or
   its original integer. */
static int block_ok(mgc_value b, long it, long size, mgc_value written) {
  long i;
  if (!MGC_IS_BLOCK(b) || (long)MGC_WOSIZE_VAL(b) != size ||
      MGC_TAG_VAL(b) != 2 || MGC_FIELD(b, 0) != MGC_VAL_INT(it))
    return 0;
  for (i = 1; i < size; i++) {
    mgc_value f = MGC_FIELD(b, i);
    if (i == 1 && written != MGC_UNIT) {
      if (f != written)
        return 0;
    } else if (i == size - 1 && size >= 3) {
      if (!MGC_IS_BLOCK(f) || MGC_TAG_VAL(f) != 3 ||
          MGC_FIELD(f, 0) != MGC_VAL_INT(it) ||
          MGC_FIELD(f, 1) != MGC_VAL_INT(-1))
        return 0;
    } else if (f != MGC_VAL_INT(cell_value(it, i))) {
      return 0;
    }
  }
  return 1;
}

/* The choices of one iteration, identical in every domain. */
struct plan {
  long slot;
  long size;
  int collector; /* who forces the collection */
  int kind;      /* 0 minor, 1 major slice, 2 full major, 3 none */
  int write;     /* 0 no, 1 B writes an integer, 2 B writes a young block */
};

static void draw(struct mt_rng *r, struct plan *p) {
  uint64_t k;
  p->slot = (long)mt_below(r, NSLOTS);
  p->size = 1 + (long)mt_below(r, MAXSIZE);
  p->collector = (int)mt_below(r, NDOM);
  k = mt_below(r, 20);
  p->kind = k < 14 ? 0 : k < 17 ? 1 : k < 18 ? 2 : 3;
  p->write = p->size >= 2 ? (int)mt_below(r, 3) : 0;
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

/* One body for the three roles. */
static mgc_value cross_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL3(mine, w, junk);
  int self = (int)MGC_INT_VAL(arg);
  struct mt_rng rng;
  struct plan p;
  long it, bad_young = 0, bad_equal = 0, bad_content = 0, shared_young = 0;
  long bad_slot = 0;
  mt_rng_seed(&rng, seed, 1);
  for (it = 0; it < iterations; it++) {
    draw(&rng, &p);
    w = MGC_UNIT;
    /* Step 1: A allocates and publishes. */
    if (self == DOM_A) {
      mine = make_block(it, p.size);
      mgc_modify(&MGC_FIELD(g_shared, p.slot), mine);
    }
    mt_barrier_wait(&bar);
    /* Step 2: B reads it before any collection; C reads it too. */
    if (self != DOM_A) {
      mine = MGC_FIELD(g_shared, p.slot);
      shared_young += mgc_is_young(mine);
    }
    if (self == DOM_B && p.write == 1) {
      w = MGC_VAL_INT(-it - 1);
      mgc_modify(&MGC_FIELD(mine, 1), w);
    } else if (self == DOM_B && p.write == 2) {
      w = mgc_alloc_small(1, 4);
      MGC_FIELD(w, 0) = MGC_VAL_INT(it);
      mgc_modify(&MGC_FIELD(mine, 1), w);
    }
    /* Some garbage of our own, so that the minor heaps are not empty. */
    junk = make_block(-it, 1 + it % MAXSIZE);
    /* Published in the heap, where collections update it: another
       domain's allocation may still start a collection while B polls at
       the barrier, and a copy of w kept outside the heap would then be
       stale. */
    if (self == DOM_B)
      mgc_modify(&MGC_FIELD(g_shared, W_SLOT), w);
    mt_barrier_wait(&bar);
    /* Step 3: one domain forces the collection, the others poll. */
    if (self != DOM_B)
      w = MGC_FIELD(g_shared, W_SLOT);
    if (self == p.collector)
      force(p.kind);
    mt_barrier_wait(&bar);
    /* Step 4: compare. */
    if (p.kind != 3)
      bad_young += mgc_is_young(mine) || (p.write == 2 && mgc_is_young(w));
    bad_content += !block_ok(mine, it, p.size, p.write ? w : MGC_UNIT);
    bad_slot += MGC_FIELD(g_shared, p.slot) != mine;
    atomic_store_explicit(&seen[self], (uintptr_t)mine, memory_order_relaxed);
    mt_barrier_wait(&bar);
    bad_equal += atomic_load_explicit(&seen[DOM_A], memory_order_relaxed) !=
                 (uintptr_t)mine;
    bad_content += p.write == 2 && (MGC_FIELD(w, 0) != MGC_VAL_INT(it) ||
                                    MGC_FIELD(mine, 1) != w);
    mt_barrier_wait(&bar);
  }
  MT_CHECK(bad_young == 0 && bad_equal == 0 && bad_content == 0 &&
               bad_slot == 0,
           "domain %d, %ld iterations: %ld still young after a forced "
           "collection, %ld views differing from A's, %ld broken contents, "
           "%ld shared slots not equal to the root",
           self, iterations, bad_young, bad_equal, bad_content, bad_slot);
  MGC_RETURN(MGC_VAL_INT(shared_young));
}

static void run(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *d[NDOM];
  long young_b = 0;
  int i;
  g_shared = mgc_alloc_shr(NSLOTS + 1, 0);
  for (i = 0; i <= NSLOTS; i++)
    mgc_initialize(&MGC_FIELD(g_shared, i), MGC_UNIT);
  iterations = test_scale(20000);
  mt_barrier_init(&bar, NDOM);
  for (i = 1; i < NDOM; i++) {
    arg = MGC_VAL_INT(i);
    d[i] = mgc_domain_spawn(cross_body, arg);
    if (!CHECK(d[i] != NULL, "spawn %d: error %d", i, mgc_last_error()))
      exit(check_done());
  }
  res = cross_body(MGC_VAL_INT(DOM_A));
  for (i = 1; i < NDOM; i++) {
    res = mgc_domain_join(d[i]);
    if (i == DOM_B)
      young_b = MGC_INT_VAL(res);
  }
  printf("B read A's block while young in %ld of %ld iterations\n", young_b,
         iterations);
  MT_CHECK(young_b > 0, "the cross-domain young reads happened");
  MT_CHECK(mgc_verify_heap() == 0, "verify at the end");
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(600);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 4;
  p.minor_heap_words = 16384;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  mgc_register_global_root(&g_shared);
  run();
  mgc_remove_global_root(&g_shared);
  mgc_shutdown();
  return check_mt_done();
}
