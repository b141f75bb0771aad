/* test_internals.c: white-box checks of invariants that the public API
 * cannot see (DESIGN §8.1):
 *   13  the remembered set crosses its threshold into the reserve (asking
 *       for a minor collection), then doubles, and never loses an entry;
 *   25  after a minor collection: young_ptr = young_end, trigger at the
 *       midpoint, tables empty, and (debug level 2) the used part of the
 *       minor heap poisoned;
 *   36  the mark stack, capped tiny, is pruned into the compressed set and
 *       marking still reaches every live block;
 *   10, 1  the verifier reports a young pointer stored without the barrier
 *       and a field pointing inside a block;
 *   the grey buffer of the deletion barrier is drained before marking ends;
 *   free pools go back to the OS on mgc_compact;
 *   26  a pool taken fresh during a cycle is not read by the sweep of the
 *       next cycle (it holds no GARBAGE block), but by that of the cycle
 *       after, when its dead blocks are freed;
 *   a pool none of whose blocks was marked or allocated during the last
 *   cycle is given back whole by its sweep, unread, unless it holds Custom
 *   blocks (their finalisers all run) or continuations.
 */
#include "../src/internal.h"
#include "check.h"

#include <stdio.h>
#include <unistd.h>

static struct mgc_dom *self(void) { return (struct mgc_dom *)mgc_tls_state; }

/* Invariant 13. */
static void test_remset_overflow(void) {
  mgc_params p;
  mgc_params_default(&p);
  p.minor_heap_words = 4096; /* tables of 512 entries + 256 reserve */
  CHECK(mgc_init(&p) == 0, "init with s=4096");
  struct mgc_dom *d = self();
  size_t n = 3000;
  static mgc_value arr = MGC_UNIT;
  mgc_register_global_root(&arr);
  arr = mgc_alloc_shr(n, 0);
  mgc_minor_collection();
  MGC_PARAM0;
  MGC_LOCAL1(y);
  y = mgc_alloc_small(1, 7);
  MGC_FIELD(y, 0) = MGC_VAL_INT(42);
  mgc_stats before;
  mgc_get_stats(&before);
  /* No allocation or poll between the stores: nothing may run a GC. */
  for (size_t i = 0; i < n; i++)
    mgc_modify(&MGC_FIELD(arr, i), y);
  CHECK(mgc_table_count(&d->major_ref) == n,
        "all %zu old-to-young stores remembered (got %zu)", n,
        mgc_table_count(&d->major_ref));
  CHECK(d->requested_minor, "crossing the threshold requested a minor GC");
  CHECK(d->major_ref.size > 512, "the table doubled past its reserve (%zu)",
        d->major_ref.size);
  CHECK(d->major_ref.ptr <= d->major_ref.end, "ptr within the table");
  mgc_stats mid;
  mgc_get_stats(&mid);
  CHECK(mid.remset_overflows == before.remset_overflows + 1,
        "one overflow counted (%llu)",
        (unsigned long long)(mid.remset_overflows - before.remset_overflows));
  CHECK(mgc_verify_heap() == 0, "verifier accepts the overgrown table");
  mgc_poll(); /* the requested collection runs here */
  CHECK(!mgc_is_young(y), "y promoted by the requested collection");
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += MGC_FIELD(arr, i) != y;
  CHECK(bad == 0, "every remembered slot updated to the copy (%zu bad)", bad);
  CHECK(mgc_table_count(&d->major_ref) == 0, "table cleared");
  CHECK(d->major_ref.limit == d->major_ref.threshold,
        "the reserve is closed again");
  MGC_DROP;
  mgc_remove_global_root(&arr);
  mgc_shutdown();
}

/* Invariant 25 and the poison of debug level 2. */
static void test_after_minor(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  MGC_PARAM0;
  MGC_LOCAL1(l);
  for (int i = 0; i < 1000; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  word used_from = d->fast.young_ptr;
  mgc_minor_collection();
  CHECK(d->fast.young_ptr == d->young_end, "young_ptr = young_end");
  CHECK(d->young_trigger ==
            d->young_floor + (d->young_end - d->young_floor) / 2,
        "trigger at the midpoint of the part in use");
  CHECK(mgc_table_count(&d->major_ref) == 0 && mgc_table_count(&d->custom) == 0,
        "tables empty");
#if MGC_DEBUG >= 2
  size_t unpoisoned = 0;
  for (word *p = (word *)used_from; p < (word *)d->young_end; p++)
    unpoisoned += *p != 0xD700D7D7D700D6D7u;
  CHECK(unpoisoned == 0, "freed minor heap poisoned (%zu words not)",
        unpoisoned);
#else
  (void)used_from;
#endif
  MGC_DROP;
  mgc_shutdown();
}

/* Invariant 36: a wide structure marked with a tiny mark stack.  Each cell
   holds a pointer (to the array), so that marking pushes it: a short block
   with nothing to mark in it is not pushed at all. */
static void test_mark_stack_prune(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  long n = test_scale(20000);
  static mgc_value arr = MGC_UNIT;
  mgc_register_global_root(&arr);
  arr = mgc_alloc_shr((size_t)n, 0);
  for (long i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(3, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = MGC_VAL_INT(-i);
    MGC_FIELD(c, 2) = arr;
    mgc_modify(&MGC_FIELD(arr, i), c);
  }
  mgc_minor_collection();
  size_t prunes = atomic_load(&mgc_mark_stack_prunes);
  mgc_mark_stack_cap_for_tests = 16;
  mgc_full_major();
  mgc_full_major();
  mgc_mark_stack_cap_for_tests = 0;
  CHECK(atomic_load(&mgc_mark_stack_prunes) > prunes,
        "the mark stack was pruned into the compressed set");
  long bad = 0;
  for (long i = 0; i < n; i++) {
    mgc_value c = MGC_FIELD(arr, i);
    bad += !MGC_IS_BLOCK(c) || MGC_FIELD(c, 0) != MGC_VAL_INT(i) ||
           MGC_FIELD(c, 1) != MGC_VAL_INT(-i);
  }
  CHECK(bad == 0, "all %ld cells survived pruned marking (%ld bad)", n, bad);
  CHECK(mgc_verify_heap() == 0, "heap verifies after pruned marking");
  mgc_remove_global_root(&arr);
  mgc_shutdown();
}

/* The verifier catches what the barrier would have prevented. */
static void test_verifier_catches(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  static mgc_value old = MGC_UNIT;
  mgc_register_global_root(&old);
  old = mgc_alloc_shr(2, 0);
  MGC_PARAM0;
  MGC_LOCAL1(y);
  y = mgc_alloc_small(2, 0);
  MGC_FIELD(y, 0) = MGC_VAL_INT(1);
  MGC_FIELD(y, 1) = MGC_VAL_INT(2);
  CHECK(mgc_verify_heap() == 0, "clean heap verifies");
  fprintf(stderr, "(the verifier reports below are expected)\n");
  MGC_FIELD(old, 0) = y; /* bypasses the barrier: not remembered */
  CHECK(mgc_verify_heap() == -1, "unremembered young pointer reported");
  MGC_FIELD(old, 0) = MGC_UNIT;
  MGC_FIELD(old, 1) = (mgc_value)((word *)old + 1); /* inside a block */
  CHECK(mgc_verify_heap() == -1, "pointer into the middle of a block");
  MGC_FIELD(old, 1) = MGC_UNIT;
  CHECK(mgc_verify_heap() == 0, "repaired heap verifies");
  MGC_DROP;
  mgc_remove_global_root(&old);
  mgc_shutdown();
}

/* The deletion barrier: an overwritten value is darkened before marking
   can end, so an object moved from one field to another while marking is
   under way survives. */
static void test_deletion_barrier(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  static mgc_value a = MGC_UNIT, b = MGC_UNIT;
  mgc_register_global_root(&a);
  mgc_register_global_root(&b);
  a = mgc_alloc_shr(1, 0);
  b = mgc_alloc_shr(1, 0);
  mgc_value x = mgc_alloc_shr(1, 0);
  mgc_initialize(&MGC_FIELD(x, 0), MGC_VAL_INT(77));
  mgc_modify(&MGC_FIELD(a, 0), x);
  /* A new cycle: roots darkened (a, b), x still UNMARKED. */
  mgc_major_collection();
  CHECK(COLOUR_HD(MGC_HD_VAL(x)) == mgc_colours.unmarked,
        "x unmarked at the start of the cycle");
  /* Move x from a to b: the barrier must keep x. */
  mgc_modify(&MGC_FIELD(b, 0), x);
  mgc_modify(&MGC_FIELD(a, 0), MGC_UNIT);
  CHECK(d->grey_count > 0, "the overwritten value was buffered");
  mgc_major_collection(); /* ends the cycle: x must have been marked */
  mgc_major_collection(); /* and a second one sweeps */
  x = MGC_FIELD(b, 0);
  CHECK(MGC_IS_BLOCK(x) && MGC_FIELD(x, 0) == MGC_VAL_INT(77),
        "x survived being moved during marking");
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  mgc_remove_global_root(&a);
  mgc_remove_global_root(&b);
  mgc_shutdown();
}

/* Free pools are given back on compaction. */
static void test_release(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  static mgc_value arr = MGC_UNIT;
  mgc_register_global_root(&arr);
  long n = test_scale(200000);
  arr = mgc_alloc_shr(4, 0);
  MGC_PARAM0;
  MGC_LOCAL1(l);
  for (long i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  mgc_full_major();
  mgc_stats s1;
  mgc_get_stats(&s1);
  l = MGC_UNIT;
  mgc_compact();
  mgc_stats s2;
  mgc_get_stats(&s2);
  CHECK(s2.heap_words < s1.heap_words || n < 10000,
        "heap shrank after dropping the list (%llu -> %llu)",
        (unsigned long long)s1.heap_words, (unsigned long long)s2.heap_words);
  CHECK(mgc_heap_free_pool_count() == 0, "no free pool kept after compact");
  CHECK(s2.compactions >= s1.compactions + 1, "compaction counted");
  MGC_DROP;
  mgc_remove_global_root(&arr);
  mgc_shutdown();
}

/* Where pool p is among d's lists: 0 nowhere (it may be unmapped: the
   compaction of C=1 gives emptied pools back to the OS), 1 swept (avail
   or full), 2 unswept.  Compares addresses only, never reads p. */
static int pool_place(struct mgc_dom *d, struct pool *p) {
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    struct pool *lists[4] = {d->heap.avail[c], d->heap.full[c],
                             d->heap.unswept_avail[c], d->heap.unswept_full[c]};
    for (int k = 0; k < 4; k++)
      for (struct pool *q = lists[k]; q; q = q->next)
        if (q == p)
          return k < 2 ? 1 : 2;
  }
  return 0;
}

static struct pool *pool_of_block(mgc_value v) { return mgc_pool_of((word)v); }

/* Invariant 26 and the sweep skipped for fresh pools.  In cycle k, 3000
   blocks of 5 words (one size class; about 680 per pool, so several fresh
   pools) are allocated, every third kept in a list.  The sweep of k+1
   skips those pools (counted; nothing freed, the verifier content); that
   of k+2 reads them, and by its end only the kept blocks are live in
   them. */
static void test_fresh_pools(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  mgc_major_collection();
  uint64_t k = LOAD_RELAXED(&mgc_rt.major_cycles);
  MGC_PARAM0;
  MGC_LOCAL1(list);
  enum { N = 3000 };
  static struct pool *pools[N];
  size_t np = 0, kept = 0;
  for (long i = 0; i < N; i++) {
    mgc_value c = mgc_alloc_shr(4, 0);
    mgc_initialize(&MGC_FIELD(c, 0), MGC_VAL_INT(i));
    mgc_initialize(&MGC_FIELD(c, 1), MGC_UNIT);
    mgc_initialize(&MGC_FIELD(c, 2), MGC_UNIT);
    mgc_initialize(&MGC_FIELD(c, 3), MGC_UNIT);
    if (i % 3 == 0) {
      mgc_initialize(&MGC_FIELD(c, 1), list);
      list = c;
      kept++;
    }
    struct pool *p = pool_of_block(c);
    if (np == 0 || pools[np - 1] != p)
      pools[np++] = p;
  }
  CHECK(np >= 3, "the blocks took %zu pools", np);
  bool born_ok = true;
  for (size_t i = 1; i < np; i++)
    born_ok &= pools[i]->born == k + 1;
  CHECK(born_ok, "pools taken in cycle %llu are stamped with it",
        (unsigned long long)k);
  CHECK(LOAD_RELAXED(&mgc_rt.major_cycles) == k, "no cycle ended meanwhile");
  size_t skipped0 = d->heap.sweeps_skipped;
  mgc_major_collection(); /* ends cycle k */
  CHECK(LOAD_RELAXED(&mgc_rt.major_cycles) == k + 1, "cycle k ended");
  CHECK(mgc_verify_heap() == 0, "verifier after cycle k");
  size_t listed0 = 0;
  for (mgc_value c = list; c != MGC_UNIT; c = MGC_FIELD(c, 1))
    listed0++;
  CHECK(listed0 == kept, "the list is whole after cycle k");
  mgc_major_collection(); /* ends cycle k+1, which swept every pool */
  /* The first pool may have been taken before cycle k began. */
  CHECK(d->heap.sweeps_skipped >= skipped0 + np - 1,
        "the sweep of cycle k+1 skipped the %zu fresh pools (%zu -> %zu)",
        np - 1, skipped0, d->heap.sweeps_skipped);
  size_t stamped = 0;
  for (size_t i = 1; i < np; i++)
    stamped += pool_place(d, pools[i]) != 0 && pools[i]->born != 0;
  CHECK(stamped == 0, "no pool keeps its birth stamp after its sweep");
  mgc_major_collection(); /* ends cycle k+2, whose sweep freed them */
  size_t live = 0, in_pools = 0;
  size_t listed = 0;
  for (size_t i = 0; i < np; i++)
    live += pool_place(d, pools[i]) ? pools[i]->live : 0;
  for (mgc_value c = list; c != MGC_UNIT; c = MGC_FIELD(c, 1)) {
    struct pool *p = pool_of_block(c);
    listed++;
    for (size_t i = 0; i < np; i++)
      if (pools[i] == p) {
        in_pools++;
        break;
      }
  }
  CHECK(listed == kept, "every kept block is still listed (%zu of %zu)", listed,
        kept);
  CHECK(live <= in_pools + 8,
        "the dead blocks were freed: %zu live slots for %zu kept blocks", live,
        in_pools);
  CHECK(mgc_verify_heap() == 0, "verifier after cycle k+2");
  MGC_DROP;
  mgc_shutdown();
}

/* Pools whose blocks all died in cycle k (taken fresh in k, so skipped at
   the start of k+1, and nothing marked in them during k+1) are given back
   whole by the sweep of k+2, and the pool of the one kept block is not.
   Custom blocks that die the same way are all finalised: their pools are
   swept slot by slot. */
static int finalised;
static void count_final(mgc_value v) {
  (void)v;
  finalised++;
}
static const mgc_custom_ops counted_ops = {"mgc.test.counted", count_final};

static void test_dead_pools(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  MGC_PARAM0;
  MGC_LOCAL2(keep, arr);
  mgc_major_collection();
  enum { N = 3000, C = 2000 };
  static struct pool *pools[N];
  size_t np = 0;
  for (long i = 0; i < N; i++) {
    mgc_value c = mgc_alloc_shr(4, 0);
    for (int f = 0; f < 4; f++)
      mgc_initialize(&MGC_FIELD(c, f), MGC_VAL_INT(i));
    if (i == N - 1)
      keep = c;
    struct pool *p = pool_of_block(c);
    if (np == 0 || pools[np - 1] != p)
      pools[np++] = p;
  }
  CHECK(np >= 4, "the blocks took %zu pools", np);
  /* Custom blocks, promoted together (they are remembered in arr, a
     large block) into pools of their own class. */
  finalised = 0;
  arr = mgc_alloc(C, 0);
  for (long i = 0; i < C; i++)
    mgc_modify(&MGC_FIELD(arr, i), mgc_alloc_custom(&counted_ops, 8, 0, 1));
  mgc_minor_collection();
  arr = MGC_UNIT;
  size_t dead0 = d->heap.pools_dead;
  for (int i = 0; i < 3; i++)
    mgc_major_collection(); /* ends k, k+1 and k+2 */
  size_t gone = 0;
  for (size_t i = 1; i + 1 < np; i++)
    gone += pool_place(d, pools[i]) == 0;
  CHECK(gone + 1 >= np - 2, "pools of dead blocks given back (%zu of %zu)",
        gone, np - 2);
  CHECK(d->heap.pools_dead >= dead0 + gone,
        "counted as given back whole (%zu -> %zu)", dead0, d->heap.pools_dead);
  CHECK(pool_place(d, pool_of_block(keep)) != 0, "the kept block's pool stays");
  CHECK(MGC_FIELD(keep, 3) == MGC_VAL_INT(N - 1), "the kept block is intact");
  mgc_full_major();
  CHECK(finalised == C, "every dead custom block finalised (%d of %d)",
        finalised, (int)C);
  CHECK(mgc_verify_heap() == 0, "verifier");
  MGC_DROP;
  mgc_shutdown();
}

int main(void) {
  test_remset_overflow();
  test_after_minor();
  test_mark_stack_prune();
  test_verifier_catches();
  test_deletion_barrier();
  test_release();
  test_fresh_pools();
  test_dead_pools();
  return check_done();
}
