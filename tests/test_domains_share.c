/* test_domains_share.c: marking shared between domains (DESIGN §6.4).
 *
 * Each domain marks what its own roots reach.  Here domain 0 alone holds a
 * large tree, and domain 1 holds none of it: without sharing, domain 0
 * marks the whole tree in every cycle while domain 1's slices find nothing
 * to do.  With sharing, domain 1 says it is hungry, domain 0 moves the
 * oldest part of its mark stack into the shared pool, and domain 1 takes
 * and marks it.
 *
 * Part 1: both domains run small explicit slices through several cycles.
 * Checks: domain 0 gave entries to the pool and domain 1 took some (the
 * counts kept in each domain's state), so the marking was shared; the
 * tree is intact afterwards (every node's contents); the heap verifies.
 * Invariant 43 (no cycle ends, no phase changes, while marking waits in
 * the pool) is what keeps the tree alive: a node whose range waited in
 * the pool at a cycle end would have been swept, which the contents check
 * (and the verifier, after every collection in torture mode) finds.
 *
 * Part 2: three domains mutate the shared tree, each in its own subtree
 * (write barrier darkening into stacks that are being shared), and
 * allocate garbage, with automatic slices only, while domain 0 keeps
 * forcing major cycles; then every node's contents are checked again.
 *
 * Part 3 is part 1 on a wide structure (an array of blocks of 256
 * leaves): the donor's stack holds over a thousand ranges, and a donation
 * closes the hole it leaves at the bottom with the top entries instead of
 * shifting the whole stack; every leaf is checked afterwards.
 *
 * Part 4: domain 0 holds the tree and only polls, while another domain
 * allocates major garbage with mgc_alloc_shr (no minor cycles): the
 * cycle's sweeping and marking wait for domain 0, which takes a slice only
 * when asked; cycles must keep ending and the heap must stay bounded
 * (major.c, mgc_note_direct_major_alloc).
 *
 * Run under ThreadSanitizer by `make test` (test-tsan): the packets move
 * between domains under a lock.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include "../src/internal.h"

#include <stdio.h>

#define SEED 20261201u

/* A node: [left, right, id, mirror], mirror = ~id (as an integer), so a
   node whose contents were lost or reused shows. */
static mgc_value make_tree(int depth, long *next_id) {
  MGC_PARAM0;
  MGC_LOCAL3(node, left, right);
  if (depth > 0) {
    left = make_tree(depth - 1, next_id);
    right = make_tree(depth - 1, next_id);
  }
  long id = (*next_id)++;
  node = mgc_alloc_small(4, 0);
  MGC_FIELD(node, 0) = left;
  MGC_FIELD(node, 1) = right;
  MGC_FIELD(node, 2) = MGC_VAL_INT(id);
  MGC_FIELD(node, 3) = MGC_VAL_INT(~id);
  MGC_RETURN(node);
}

/* Counts the nodes whose contents are right; *nodes counts all. */
static long check_tree(mgc_value t, long *nodes) {
  if (!MGC_IS_BLOCK(t))
    return 0;
  long good = 0;
  (*nodes)++;
  if (MGC_WOSIZE_VAL(t) == 4 && MGC_TAG_VAL(t) == 0 &&
      MGC_IS_INT(MGC_FIELD(t, 2)) && MGC_IS_INT(MGC_FIELD(t, 3)) &&
      MGC_INT_VAL(MGC_FIELD(t, 3)) == ~MGC_INT_VAL(MGC_FIELD(t, 2)))
    good = 1;
  return good + check_tree(MGC_FIELD(t, 0), nodes) +
         check_tree(MGC_FIELD(t, 1), nodes);
}

static uint64_t cycles(void) {
  mgc_stats s;
  mgc_get_stats(&s);
  return s.major_collections;
}

/* ------------------------------------------------------------------------ */
/* Part 1                                                                   */
/* ------------------------------------------------------------------------ */

static atomic_int stop1;
static atomic_long taken1;

static mgc_value slicer(mgc_value arg) {
  (void)arg;
  struct mgc_dom *self = (struct mgc_dom *)mgc_self();
  long taken0 = (long)self->mark_taken;
  while (!atomic_load(&stop1)) {
    mgc_major_slice(64);
    atomic_store(&taken1, (long)self->mark_taken - taken0);
  }
  return MGC_UNIT;
}

/* Runs small explicit slices on this domain and on a second one until
   four cycles have ended, and on until the second one has taken an entry
   (up to 64 cycles: on a loaded machine it may not run while the pool
   holds some); returns the entries this domain gave to the pool and
   those the second one took. */
static bool slices_on_two_domains(size_t *given, long *taken) {
  atomic_store(&stop1, 0);
  atomic_store(&taken1, 0);
  mgc_domain *h = mgc_domain_spawn(slicer, MGC_UNIT);
  CHECK(h != NULL, "spawn: %s", mgc_strerror(mgc_last_error()));
  if (!h)
    return false;
  struct mgc_dom *self = (struct mgc_dom *)mgc_self();
  size_t given0 = self->mark_given;
  /* Small slices: the structure's marking spans many of them, and the
     other domain's slices come in between. */
  uint64_t c0 = cycles();
  while (cycles() < c0 + 4 || (atomic_load(&taken1) == 0 && cycles() < c0 + 64))
    mgc_major_slice(64);
  *given = self->mark_given - given0;
  atomic_store(&stop1, 1);
  mgc_domain_join(h);
  *taken = atomic_load(&taken1);
  return true;
}

static void part1(int depth) {
  MGC_PARAM0;
  MGC_LOCAL1(tree);
  long ids = 0;
  tree = make_tree(depth, &ids);
  mgc_full_major(); /* the tree is old; the next cycle has begun */
  size_t given;
  long taken;
  if (slices_on_two_domains(&given, &taken)) {
    CHECK(given > 0, "domain 0 gave mark entries to the pool (%zu)", given);
    CHECK(taken > 0, "the other domain took mark entries (%ld)", taken);
    long nodes = 0, good = check_tree(tree, &nodes);
    CHECK(nodes == ids && good == ids,
          "tree intact: %ld of %ld nodes, %ld good", nodes, ids, good);
    CHECK(mgc_verify_heap() == 0, "heap verifies");
    printf("part 1: %ld nodes, %zu entries given, %ld taken\n", ids, given,
           taken);
  }
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 3                                                                   */
/* ------------------------------------------------------------------------ */

/* A wide structure: an array of W <= 1024 blocks of 256 fields, each a
   leaf [id, ~id, box] whose box [id] only that leaf holds (so that the
   leaf is pushed, and a leaf's range lost would leave its box unmarked).
   Marking the array pushes W ranges, then the first of them pushes 256 more:
   with W = 1024 the donor's stack holds over 1152 entries, and a donation
   closes its hole with the top entries instead of shifting the whole stack. */
#define WIDE_FAN 256

static void part3(long w) {
  MGC_PARAM0;
  MGC_LOCAL4(arr, mid, leaf, box);
  arr = mgc_alloc((size_t)w, 0);
  for (long i = 0; i < w; i++) {
    mid = mgc_alloc_small(WIDE_FAN, 0);
    for (int j = 0; j < WIDE_FAN; j++)
      MGC_FIELD(mid, j) = MGC_UNIT;
    for (int j = 0; j < WIDE_FAN; j++) {
      long id = i * WIDE_FAN + j;
      box = mgc_alloc_small(1, 0);
      MGC_FIELD(box, 0) = MGC_VAL_INT(id);
      leaf = mgc_alloc_small(3, 0);
      MGC_FIELD(leaf, 0) = MGC_VAL_INT(id);
      MGC_FIELD(leaf, 1) = MGC_VAL_INT(~id);
      MGC_FIELD(leaf, 2) = box;
      mgc_modify(&MGC_FIELD(mid, j), leaf);
    }
    mgc_modify(&MGC_FIELD(arr, i), mid);
  }
  mgc_full_major();
  size_t given;
  long taken;
  if (slices_on_two_domains(&given, &taken)) {
    long good = 0;
    for (long i = 0; i < w; i++)
      for (int j = 0; j < WIDE_FAN; j++) {
        mgc_value l = MGC_FIELD(MGC_FIELD(arr, i), j);
        long id = i * WIDE_FAN + j;
        good += MGC_INT_VAL(MGC_FIELD(l, 0)) == id &&
                MGC_INT_VAL(MGC_FIELD(l, 1)) == ~id &&
                MGC_INT_VAL(MGC_FIELD(MGC_FIELD(l, 2), 0)) == id;
      }
    CHECK(given > 0, "domain 0 gave entries of the wide structure (%zu)",
          given);
    CHECK(good == w * WIDE_FAN, "wide structure intact: %ld of %ld leaves",
          good, w * WIDE_FAN);
    CHECK(mgc_verify_heap() == 0, "heap verifies");
    printf("part 3: %ld leaves, %zu entries given, %ld taken\n", w * WIDE_FAN,
           given, taken);
  }
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 2                                                                   */
/* ------------------------------------------------------------------------ */

#define MUTATORS 3
static mgc_value g_tree = MGC_UNIT; /* generational global root */
static atomic_int stop2;
static atomic_long mutator_taken;

/* Walks a random path down the subtree of mutator k (the root's
   grandchild k: only k writes into it, so swaps never race) and swaps the
   two children of the node reached (old blocks written: the barrier
   darkens both). */
static void swap_somewhere(struct mt_rng *rng, int k, int depth) {
  mgc_value n = MGC_FIELD(MGC_FIELD(g_tree, k >> 1), k & 1);
  int steps = (int)mt_below(rng, (uint64_t)depth - 2);
  for (int i = 0; i < steps && MGC_IS_BLOCK(MGC_FIELD(n, 0)); i++)
    n = MGC_FIELD(n, mt_below(rng, 2));
  MGC_PARAM1(n);
  MGC_LOCAL1(l);
  l = MGC_FIELD(n, 0);
  mgc_modify(&MGC_FIELD(n, 0), MGC_FIELD(n, 1));
  mgc_modify(&MGC_FIELD(n, 1), l);
  MGC_DROP;
}

static mgc_value mutator(mgc_value arg) {
  struct mt_rng rng;
  mt_rng_seed(&rng, SEED, (uint64_t)MGC_INT_VAL(arg));
  int depth = (int)MGC_INT_VAL(arg) >> 8, k = (int)(MGC_INT_VAL(arg) & 3);
  MGC_PARAM0;
  MGC_LOCAL1(junk);
  while (!atomic_load(&stop2)) {
    swap_somewhere(&rng, k, depth);
    for (int i = 0; i < 64; i++) {
      mgc_value b = mgc_alloc_small(3, 0);
      MGC_FIELD(b, 0) = junk;
      MGC_FIELD(b, 1) = MGC_VAL_INT(i);
      MGC_FIELD(b, 2) = MGC_VAL_INT(0);
      junk = (i & 15) ? b : MGC_UNIT;
    }
  }
  atomic_fetch_add(&mutator_taken,
                   (long)((struct mgc_dom *)mgc_self())->mark_taken);
  MGC_DROP;
  return MGC_UNIT;
}

static void part2(int depth, int rounds) {
  long ids = 0;
  mgc_register_generational_global_root(&g_tree);
  mgc_modify_generational_global_root(&g_tree, make_tree(depth, &ids));
  atomic_store(&stop2, 0);
  mgc_domain *h[MUTATORS];
  int spawned = 0;
  for (int i = 0; i < MUTATORS; i++) {
    h[i] = mgc_domain_spawn(mutator, MGC_VAL_INT(depth << 8 | i));
    CHECK(h[i] != NULL, "spawn: %s", mgc_strerror(mgc_last_error()));
    spawned += h[i] != NULL;
  }
  for (int r = 0; r < rounds; r++) {
    mgc_major_collection();
    for (int i = 0; i < 200; i++)
      mgc_poll();
  }
  atomic_store(&stop2, 1);
  for (int i = 0; i < MUTATORS; i++)
    if (h[i])
      mgc_domain_join(h[i]);
  long nodes = 0, good = check_tree(g_tree, &nodes);
  CHECK(nodes == ids && good == ids, "tree intact: %ld of %ld nodes, %ld good",
        nodes, ids, good);
  mgc_full_major();
  nodes = 0;
  good = check_tree(g_tree, &nodes);
  CHECK(nodes == ids && good == ids,
        "tree intact after a full major: %ld of %ld, %ld good", nodes, ids,
        good);
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  printf("part 2: %d mutators, %d forced cycles, %ld entries taken by them\n",
         spawned, rounds, atomic_load(&mutator_taken));
  mgc_remove_generational_global_root(&g_tree);
}

/* ------------------------------------------------------------------------ */
/* Part 4                                                                   */
/* ------------------------------------------------------------------------ */

/* Domain 0 holds the tree and only polls; the allocator allocates major
   blocks of garbage.  Its marking is done at each mark start (its roots
   reach nothing), so its slices cannot pay what its allocation owes: the
   marking is domain 0's, and domain 0 takes a slice only when asked. */
static atomic_int stop4;
static _Atomic uint64_t cycles4;

#define GARBAGE_WOSIZE 8

static mgc_value allocator(mgc_value arg) {
  long total = MGC_INT_VAL(arg);
  uint64_t c0 = cycles();
  for (long w = 0; w < total; w += GARBAGE_WOSIZE + 1) {
    mgc_value b = mgc_alloc_shr(GARBAGE_WOSIZE, 0);
    for (int i = 0; i < GARBAGE_WOSIZE; i++)
      mgc_initialize(&MGC_FIELD(b, i), MGC_VAL_INT(i));
    mgc_poll(); /* mgc_alloc_shr is not a safepoint */
  }
  atomic_store(&cycles4, cycles() - c0);
  atomic_store(&stop4, 1);
  return MGC_UNIT;
}

/* The heap's words now (pools, whatever they hold). */
static uint64_t heap_words(void) {
  mgc_stats st;
  mgc_get_stats(&st);
  return st.heap_words;
}

/* The allocator allocates 40 times the heap it starts from (H0, after a full
   major: the tree and what the earlier parts left), or 40 minor heaps if
   that is more, counting a minor heap smaller than the default as the
   default (with MGC_PARAMS=s=16384 the 1.8M words took 14 ms, and domain 0,
   runnable but off both processors for a few milliseconds, kept the cycle
   from ending in about 1 run of 3 beside another build, and at once beside a
   busy loop).  Checks: cycles keep ending meanwhile, at least 5; the heap
   stays under H0 plus three quarters of what was allocated (1.1M words here
   on a quiet machine, 10M in one run beside the rest of `make test`: domain
   0 pays its share only when it gets the CPU; without the epoch, more than
   H0 plus all of it).  When only minor cycles brought the global slice epoch,
   domain 0 was asked for a slice once per state of the cycle, paid one share
   of the debt, and the cycle's sweeping or marking never ended: no cycle
   end, and the heap grew with all the garbage (30.1M words when the
   allocator allocated 26.4M).  Then the tree is checked intact. */
static void part4(int depth) {
  MGC_PARAM0;
  MGC_LOCAL1(tree);
  long ids = 0;
  tree = make_tree(depth, &ids);
  mgc_full_major();
  uint64_t h0 = heap_words();
  size_t minor = ((struct mgc_dom *)mgc_self())->minor_heap_words;
  mgc_params dflt;
  mgc_params_default(&dflt);
  if (minor < dflt.minor_heap_words)
    minor = dflt.minor_heap_words;
  long total = 40 * (long)(h0 > minor ? h0 : minor);
  atomic_store(&stop4, 0);
  mgc_domain *h = mgc_domain_spawn(allocator, MGC_VAL_INT(total));
  CHECK(h != NULL, "spawn: %s", mgc_strerror(mgc_last_error()));
  if (!h) {
    MGC_DROP;
    return;
  }
  while (!atomic_load(&stop4))
    mgc_poll();
  mgc_domain_join(h);
  uint64_t c = atomic_load(&cycles4), heap = heap_words();
  CHECK(c >= 5, "%llu cycles ended while %ld words were allocated (heap %llu)",
        (unsigned long long)c, total, (unsigned long long)h0);
  CHECK(heap < h0 + (uint64_t)total / 4 * 3,
        "heap %llu words after %ld allocated (%llu before)",
        (unsigned long long)heap, total, (unsigned long long)h0);
  long nodes = 0, good = check_tree(tree, &nodes);
  CHECK(nodes == ids && good == ids, "tree intact: %ld of %ld nodes, %ld good",
        nodes, ids, good);
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  printf("part 4: %llu cycles over %ld words allocated, heap %llu -> %llu "
         "words, tree %ld words\n",
         (unsigned long long)c, total, (unsigned long long)h0,
         (unsigned long long)heap, ids * 5);
  MGC_DROP;
}

int main(void) {
  mt_watchdog(300);
  CHECK(mgc_init(NULL) == MGC_OK, "init");
  int depth = test_scale(1 << 16) >= (1 << 16) ? 16 : 12;
  part1(depth);
  part2(depth - 2, (int)test_scale(40) + 2);
  part3(test_scale(8192) < 1024 ? test_scale(8192) : 1024);
  part4(depth);
  mgc_shutdown();
  return check_done();
}
