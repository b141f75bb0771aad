/* test_internals.c: white-box checks of invariants that the public API
 * cannot see (DESIGN §8.1):
 *   13  the remembered set crosses its threshold into the reserve (asking
 *       for a minor collection), then doubles, and never loses an entry;
 *   the remembered filter: before the mark start a young value stored
 *       into an old field is remembered once per minor cycle, the field
 *       unread (two fields sharing a filter entry are remembered at every
 *       store, and promotion takes the duplicates), and each minor
 *       collection empties the filter with the set;
 *   25  after a minor collection: young_ptr = young_end, trigger at the
 *       first slice point, tables empty, and (debug level 2) the used part
 *       of the minor heap poisoned;
 *   36  the mark stack, capped tiny, is pruned into the compressed set and
 *       marking still reaches every live block; so does marking in slices
 *       of a few words, whatever the position of a block's pointers;
 *   10, 1  the verifier reports a young pointer stored without the barrier
 *       and a field pointing inside a block;
 *   12  the grey buffer of the deletion barrier is drained before marking
 *       ends; before the mark start the barrier darkens nothing and a
 *       getter keeps nothing, but a young value stored is remembered once;
 *   19  blocks are born UNMARKED before the mark start (one held then only
 *       by an older block survives, one dropped is freed) and MARKED
 *       after it; the old blocks held only by the (UNMARKED) copies of the
 *       minor collection that starts marking survive the cycle;
 *   the mark trigger: once swept, a cycle idles (nothing owed, no mark
 *   start at minor collections, nor at slices with the sweeping's debt
 *   unpaid) until its clock, run by allocation and custom resources,
 *   reaches the trigger; a forced cycle starts marking anyway; each
 *   paced cycle end sets the trigger from the last cycle's work; while
 *   marking there are 2 x MGC_MARK_SPEEDUP slice points per minor cycle
 *   and an automatic slice pays its share of the debt;
 *   free pools go back to the OS on mgc_compact, and every pool at
 *   shutdown, neighbouring pools in one system call; at a cycle end only
 *   those unused for the release delay;
 *   26  a pool taken fresh during a cycle's marking is not read by the
 *       sweep of the next cycle (it holds no GARBAGE block), but by that of
 *       the cycle after, when its dead blocks are freed; one taken before
 *       the mark start is read by the next sweep;
 *   a pool none of whose blocks was marked or allocated during the last
 *   cycle is given back whole by its sweep, unread, unless it holds Custom
 *   blocks (their finalisers all run) or continuations;
 *   after a minor collection the pools the next one may promote into are
 *   mapped and faulted in outside its pause (DESIGN §6.1);
 *   a pause histogram's percentiles are upper bounds within 1/16 of the
 *   exact ones, and its maximum is exact;
 *   30  major allocation (mgc_heap_alloc_hd, promotion's) writes the header
 *   it is given with the allocation colour, and moves a pool from avail to
 *   full exactly when it has no room left, from the bump region of fresh
 *   pools and from the free lists of swept ones.
 */
#define _DEFAULT_SOURCE /* mincore */
#include "check.h"
#include "internal_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The mark loop (DESIGN §6.4) follows the fields of a block it marks at
   once when the range under way is finished, pushes them otherwise, skips
   the leading immediates of a short block, and splits long ranges; and a
   slice stops at its budget with the range under way pushed back.  So
   every shape is marked here in slices of a few words: chains of blocks of
   1-10 fields whose one pointer sits at each position (the rest
   integers), a binary tree, and a list of arrays longer than a range chunk
   whose last field alone holds the next cell.  A pointer skipped would
   leave a block unmarked, freed by the sweep: its contents would change
   and the verifier would see a field pointing into a free slot. */
enum { CHAIN = 40, BIG = 3000, BIGS = 5 };

static mgc_value shapes_build_chain(size_t w, size_t k, long tagv) {
  MGC_PARAM0;
  MGC_LOCAL2(head, c);
  head = MGC_VAL_INT(tagv); /* the end of the chain: an immediate */
  for (int i = 0; i < CHAIN; i++) {
    c = mgc_alloc_shr(w, 0);
    for (size_t j = 0; j < w; j++)
      mgc_initialize(&MGC_FIELD(c, j), MGC_VAL_INT((long)(i * 16 + j)));
    mgc_modify(&MGC_FIELD(c, k), head);
    head = c;
  }
  MGC_RETURN(head);
}

static long shapes_check_chain(mgc_value c, size_t w, size_t k, long tagv) {
  long bad = 0;
  for (int i = CHAIN - 1; i >= 0; i--) {
    if (!MGC_IS_BLOCK(c) || MGC_WOSIZE_VAL(c) != w)
      return bad + 1;
    for (size_t j = 0; j < w; j++)
      if (j != k && MGC_FIELD(c, j) != MGC_VAL_INT((long)(i * 16 + j)))
        bad++;
    c = MGC_FIELD(c, k);
  }
  return bad + (c != MGC_VAL_INT(tagv));
}

static mgc_value shapes_tree(int depth) {
  MGC_PARAM0;
  MGC_LOCAL2(l, r);
  mgc_value n = mgc_alloc_shr(3, 0);
  mgc_initialize(&MGC_FIELD(n, 0), MGC_VAL_INT(depth));
  mgc_initialize(&MGC_FIELD(n, 1), MGC_UNIT);
  mgc_initialize(&MGC_FIELD(n, 2), MGC_UNIT);
  if (depth > 0) {
    MGC_LOCAL1(node);
    node = n;
    r = shapes_tree(depth - 1);
    l = shapes_tree(depth - 1);
    mgc_modify(&MGC_FIELD(node, 1), l);
    mgc_modify(&MGC_FIELD(node, 2), r);
    n = node;
  }
  MGC_RETURN(n);
}

static long shapes_tree_nodes(mgc_value n, int depth) {
  if (!MGC_IS_BLOCK(n) || MGC_FIELD(n, 0) != MGC_VAL_INT(depth))
    return -1000000;
  if (depth == 0)
    return 1;
  return 1 + shapes_tree_nodes(MGC_FIELD(n, 1), depth - 1) +
         shapes_tree_nodes(MGC_FIELD(n, 2), depth - 1);
}

static void test_mark_shapes(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  static mgc_value all = MGC_UNIT;
  mgc_register_global_root(&all);
  /* all: one chain per (w, k), then the tree, then the list of arrays */
  size_t nchains = 10 * 11 / 2, slot = 0;
  all = mgc_alloc_shr(nchains + 2, 0);
  for (size_t i = 0; i < nchains + 2; i++)
    mgc_initialize(&MGC_FIELD(all, i), MGC_UNIT);
  for (size_t w = 1; w <= 10; w++)
    for (size_t k = 0; k < w; k++) {
      mgc_value c = shapes_build_chain(w, k, (long)(w * 100 + k));
      mgc_modify(&MGC_FIELD(all, slot), c);
      slot++;
    }
  mgc_value t = shapes_tree(10);
  mgc_modify(&MGC_FIELD(all, nchains), t);
  for (int i = 0; i < BIGS; i++) {
    mgc_value a = mgc_alloc_shr(BIG, 0);
    for (size_t j = 0; j < BIG; j++)
      mgc_initialize(&MGC_FIELD(a, j), MGC_VAL_INT((long)j));
    mgc_modify(&MGC_FIELD(a, BIG - 1), MGC_FIELD(all, nchains + 1));
    mgc_modify(&MGC_FIELD(all, nchains + 1), a);
  }
  /* Finish the cycle under way (the structures were allocated MARKED),
     then mark a whole cycle in slices of 7 words, then sweep with one
     more cycle. */
  mgc_major_collection();
  mgc_stats st;
  mgc_get_stats(&st);
  uint64_t start = st.major_collections;
  long slices = 0;
  do {
    mgc_major_slice(7);
    slices++;
    mgc_get_stats(&st);
  } while (st.major_collections == start && slices < 10000000);
  CHECK(st.major_collections > start && slices > 100,
        "a cycle ran in %ld slices of 7 words", slices);
  mgc_major_collection();
  long bad = 0;
  slot = 0;
  for (size_t w = 1; w <= 10; w++)
    for (size_t k = 0; k < w; k++) {
      bad +=
          shapes_check_chain(MGC_FIELD(all, slot), w, k, (long)(w * 100 + k));
      slot++;
    }
  CHECK(bad == 0, "every chain intact (%ld bad fields)", bad);
  CHECK(shapes_tree_nodes(MGC_FIELD(all, nchains), 10) == 2047,
        "the tree intact");
  long arrays = 0, abad = 0;
  for (mgc_value a = MGC_FIELD(all, nchains + 1); MGC_IS_BLOCK(a);
       a = MGC_FIELD(a, BIG - 1)) {
    arrays++;
    for (size_t j = 0; j + 1 < BIG; j++)
      abad += MGC_FIELD(a, j) != MGC_VAL_INT((long)j);
  }
  CHECK(arrays == BIGS && abad == 0, "the list of %d arrays intact (%ld, %ld)",
        BIGS, arrays, abad);
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  mgc_remove_global_root(&all);
  mgc_shutdown();
}

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
  uint64_t grows = LOAD_RELAXED(&mgc_xgrow_calls);
  /* No allocation or poll between the stores: nothing may run a GC. */
  for (size_t i = 0; i < n; i++)
    mgc_modify(&MGC_FIELD(arr, i), y);
  CHECK(LOAD_RELAXED(&mgc_xgrow_calls) > grows,
        "the table grew through mgc_xgrow (its moved pages touched again)");
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
  word step = d->young_slice_step;
  CHECK(step == (d->young_end - d->young_floor) / mgc_major_slices_per_minor() /
                    WORD * WORD &&
            d->young_trigger == d->young_end - step,
        "trigger at the first of the slice points of the part in use");
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
  /* At least 200 cells, however scaled: the children of the array wait in
     the mark ring (32 entries) before they are marked and pushed, and more
     than the cap of 16 must be pushed. */
  long n = test_scale(20000);
  if (n < 200)
    n = 200;
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
  /* A new cycle, to its mark start: roots darkened (a, b), x still
     UNMARKED. */
  mgc_major_collection();
  start_marking();
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

/* A cycle sweeps before it marks (DESIGN §6.7).  Before the mark start
   the barrier darkens nothing and a weak getter keeps nothing alive, so a
   value dropped then dies in that very cycle instead of floating to the
   next; the barrier still remembers a young value stored into an old
   field, once.  Blocks born then are UNMARKED, for the snapshot to trace:
   one that holds the only pointer to an old block keeps it alive (born
   MARKED, it would never be scanned, and the old block would be freed). */
static void test_sweep_first(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  static mgc_value a = MGC_UNIT, w = MGC_UNIT, holder = MGC_UNIT;
  mgc_register_global_root(&a);
  mgc_register_global_root(&w);
  mgc_register_global_root(&holder);
  a = mgc_alloc_shr(2, 0);
  w = mgc_weak_create(1);
  mgc_value x = mgc_alloc_shr(1, 0);
  mgc_initialize(&MGC_FIELD(x, 0), MGC_VAL_INT(77));
  mgc_initialize(&MGC_FIELD(a, 0), x);
  mgc_value y = mgc_alloc_shr(1, 0);
  mgc_initialize(&MGC_FIELD(y, 0), MGC_VAL_INT(88));
  mgc_initialize(&MGC_FIELD(a, 1), y);
  mgc_weak_set(w, 0, x);
  mgc_major_collection(); /* a new cycle, sweeping first */
  CHECK(mgc_gc_phase() == PHASE_SWEEP_FIRST && !mgc_marking_on(),
        "a cycle starts by sweeping, with the barrier's darkening off");
  x = MGC_FIELD(a, 0); /* moved by a compaction (C=1) */
  mgc_value got = MGC_UNIT;
  CHECK(mgc_weak_get(w, 0, &got) && got == x, "the weak getter sees x");
  mgc_modify(&MGC_FIELD(a, 0), MGC_UNIT); /* x dropped */
  CHECK(d->grey_count == 0 && COLOUR_HD(MGC_HD_VAL(x)) == mgc_colours.unmarked,
        "neither the getter nor the barrier darkened x");
  /* y moves into a block born now, which alone holds it. */
  holder = mgc_alloc_shr(1, 0);
  if (mgc_gc_phase() == PHASE_SWEEP_FIRST)
    CHECK(COLOUR_HD(MGC_HD_VAL(holder)) == mgc_colours.unmarked,
          "a block born before the mark start is UNMARKED");
  mgc_initialize(&MGC_FIELD(holder, 0), MGC_FIELD(a, 1));
  mgc_modify(&MGC_FIELD(a, 1), MGC_UNIT);
  {
    MGC_PARAM0;
    MGC_LOCAL1(yv);
    yv = mgc_alloc_small(1, 0);
    MGC_FIELD(yv, 0) = MGC_VAL_INT(5);
    size_t refs = mgc_table_count(&d->major_ref);
    bool young = mgc_is_young(yv), sweeping = !mgc_marking_on();
    mgc_modify(&MGC_FIELD(a, 0), yv);
    mgc_modify(&MGC_FIELD(a, 0), yv);
    if (young && sweeping)
      CHECK(mgc_table_count(&d->major_ref) == refs + 1,
            "a young value stored twice into an old field: remembered once");
    MGC_DROP;
  }
  mgc_major_collection(); /* this cycle's snapshot no longer sees x */
  CHECK(!mgc_weak_check(w, 0),
        "x, dropped before the mark start, died in that cycle");
  mgc_major_collection(); /* a cycle that sweeps what died */
  y = MGC_FIELD(holder, 0);
  CHECK(MGC_IS_BLOCK(y) && MGC_FIELD(y, 0) == MGC_VAL_INT(88),
        "y, held only by a block born before the mark start, survives");
  mgc_value v = MGC_FIELD(a, 0);
  CHECK(MGC_IS_BLOCK(v) && !mgc_is_young(v) &&
            MGC_FIELD(v, 0) == MGC_VAL_INT(5),
        "the young value stored then was promoted");
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  mgc_remove_global_root(&a);
  mgc_remove_global_root(&w);
  mgc_remove_global_root(&holder);
  a = w = holder = MGC_UNIT;
  mgc_shutdown();
}

/* The minor collection that ends with the mark start promotes into
   UNMARKED copies, which marking traces from the roots.  Here each of x1,
   x2, x3 (old, born before the mark start, so UNMARKED) is reachable only
   from a young block when that collection runs: in the field of a
   one-field block (promotion's loop), in a field of a larger block
   (mop-up), and through a young Forward block that promotion
   short-circuits into such a field.  Copies born MARKED would never be
   scanned, and the x would be freed with the copies pointing at them. */
static mgc_value boxed(long n) {
  mgc_value x = mgc_alloc_shr(1, 0);
  mgc_initialize(&MGC_FIELD(x, 0), MGC_VAL_INT(n));
  return x;
}

/* The mark trigger (DESIGN §6.10).  After its sweeping a cycle idles,
   owing nothing, until it has allocated up to its trigger: a minor
   collection before that does not start marking, one after it does, and
   a slice does not either for the debt its sweeping left.  Custom
   blocks' resources run the clock too; a slice that owes them past the
   trigger starts marking itself.  A forced cycle ignores the trigger.  A paced
   cycle end sets the next trigger from the last cycle's work: its whole work
   less its marking shortened MGC_MARK_SPEEDUP times; a forced one sets it to 0.
 */
static void test_mark_trigger(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  MGC_PARAM0;
  MGC_LOCAL2(keep, y);
  mgc_major_collection();
  CHECK(LOAD_RELAXED(&mgc_rt.mark_trigger) == 0,
        "a forced cycle end sets the trigger to 0");
  while (!d->sweeping_done)
    mgc_major_slice(1);
  int64_t far = LOAD_RELAXED(&mgc_rt.cycle_clock) + ((int64_t)1 << 50);
  STORE_RELAXED(&mgc_rt.mark_trigger, far);
  int64_t owed = LOAD_RELAXED(&mgc_rt.work_owed);
  uint64_t c0 = LOAD_RELAXED(&mgc_rt.major_cycles);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 1000; i++) {
      y = mgc_alloc_small(3, 0);
      MGC_FIELD(y, 0) = keep;
      MGC_FIELD(y, 1) = MGC_VAL_INT(i);
      MGC_FIELD(y, 2) = MGC_UNIT;
      keep = y;
    }
    mgc_minor_collection();
    mgc_major_slice(0);
  }
  CHECK(LOAD_RELAXED(&mgc_rt.major_cycles) == c0 &&
            mgc_gc_phase() == PHASE_SWEEP_FIRST && !mgc_marking_on(),
        "swept, before the trigger: minor collections do not start marking");
  CHECK(LOAD_RELAXED(&mgc_rt.work_owed) == owed,
        "nothing is owed while idle (%lld words)",
        (long long)(LOAD_RELAXED(&mgc_rt.work_owed) - owed));
  CHECK(LOAD_RELAXED(&mgc_rt.cycle_clock) > far - ((int64_t)1 << 50),
        "the idle stretch's allocation is counted on the cycle's clock");
  STORE_RELAXED(&mgc_rt.mark_trigger, LOAD_RELAXED(&mgc_rt.cycle_clock));
  y = mgc_alloc_small(1, 0);
  MGC_FIELD(y, 0) = keep;
  mgc_minor_collection();
  CHECK(mgc_gc_phase() != PHASE_SWEEP_FIRST,
        "the minor collection after the trigger starts marking");
  /* While marking, 8 slice points per minor cycle, and an automatic slice
     pays its share of the debt: an eighth of it right after the minor
     collection (the list kept above is 3000 blocks of marking). */
  CHECK(mgc_major_slices_per_minor() == 2 * MGC_MARK_SPEEDUP &&
            mgc_minor_slices_left(d) == 2 * MGC_MARK_SPEEDUP,
        "marking: %u slice points per minor cycle, %u left",
        mgc_major_slices_per_minor(), mgc_minor_slices_left(d));
  d->allocated_words = 0;
  d->extra_resources = 0;
  int64_t paid0 = LOAD_RELAXED(&mgc_rt.work_paid);
  STORE_RELAXED(&mgc_rt.work_owed, paid0 + 8000);
  mgc_major_slice(0);
  int64_t slice_paid = LOAD_RELAXED(&mgc_rt.work_paid) - paid0;
  CHECK(slice_paid >= 1000 && slice_paid < 2000,
        "an automatic slice paid %lld of a debt of 8000 words",
        (long long)slice_paid);
  /* Idle, an automatic slice does not start marking for a debt the
     sweeping left unpaid, however large: marking pays it once started. */
  mgc_major_collection();
  while (!d->sweeping_done)
    mgc_major_slice(1);
  STORE_RELAXED(&mgc_rt.mark_trigger,
                LOAD_RELAXED(&mgc_rt.cycle_clock) + ((int64_t)1 << 50));
  d->allocated_words = 0;
  uint64_t c_idle = LOAD_RELAXED(&mgc_rt.major_cycles);
  STORE_RELAXED(&mgc_rt.work_owed,
                LOAD_RELAXED(&mgc_rt.work_paid) + ((int64_t)1 << 30));
  mgc_major_slice(0);
  CHECK(mgc_gc_phase() == PHASE_SWEEP_FIRST &&
            LOAD_RELAXED(&mgc_rt.major_cycles) == c_idle,
        "idle: a slice with the sweeping's debt unpaid does not start "
        "marking");
  /* Custom blocks' resources run the cycle's clock: once past the
     trigger, the slice owing them starts marking itself, with a minor
     collection of its own. */
  int64_t clock0 = LOAD_RELAXED(&mgc_rt.cycle_clock);
  uint64_t c1 = LOAD_RELAXED(&mgc_rt.major_cycles);
  STORE_RELAXED(&mgc_rt.work_owed, LOAD_RELAXED(&mgc_rt.work_paid));
  STORE_RELAXED(&mgc_rt.mark_trigger, clock0 + 1000);
  y = mgc_alloc_small(1, 0); /* not empty: the slice's own minor GC */
  MGC_FIELD(y, 0) = keep;
  mgc_adjust_gc_speed(d, 1, 1);
  mgc_major_slice(0);
  /* (The slice may go on to finish the small cycle.) */
  CHECK(mgc_gc_phase() != PHASE_SWEEP_FIRST ||
            LOAD_RELAXED(&mgc_rt.major_cycles) != c1,
        "a slice owing a cycle's worth of resources reaches the trigger "
        "and starts marking");
  /* A forced cycle ignores the trigger (it would never be reached). */
  mgc_major_collection();
  STORE_RELAXED(&mgc_rt.mark_trigger,
                LOAD_RELAXED(&mgc_rt.cycle_clock) + ((int64_t)1 << 50));
  uint64_t cycles = LOAD_RELAXED(&mgc_rt.major_cycles);
  mgc_major_collection();
  CHECK(LOAD_RELAXED(&mgc_rt.major_cycles) >= cycles + 1,
        "a forced cycle completes past the trigger");
  /* Cycles paced by allocation alone: each sets the next trigger. */
  cycles = LOAD_RELAXED(&mgc_rt.major_cycles);
  int paced = 0;
  for (long i = 0; paced < 3 && i < 50000000; i++) {
    y = mgc_alloc_small(3, 0);
    MGC_FIELD(y, 0) = MGC_UNIT;
    MGC_FIELD(y, 1) = MGC_VAL_INT(i);
    MGC_FIELD(y, 2) = MGC_UNIT;
    if (i % 3 == 0) {
      MGC_FIELD(y, 0) = keep; /* a growing list, so that cycles mark */
      keep = y;
    }
    if (i % 300000 == 0)
      keep = MGC_UNIT;
    if (LOAD_RELAXED(&mgc_rt.major_cycles) != cycles) {
      cycles = LOAD_RELAXED(&mgc_rt.major_cycles);
      int64_t work = LOAD_RELAXED(&mgc_rt.last_cycle_work);
      int64_t marking = LOAD_RELAXED(&mgc_rt.last_mark_work);
      int64_t trig = LOAD_RELAXED(&mgc_rt.mark_trigger);
      CHECK(marking > 0 && marking <= work &&
                trig == work - (int64_t)((double)marking / MGC_MARK_SPEEDUP),
            "a paced cycle end sets the trigger from the last cycle "
            "(work %lld, marking %lld, trigger %lld)",
            (long long)work, (long long)marking, (long long)trig);
      paced++;
    }
  }
  CHECK(paced == 3, "three paced cycles ended (%d)", paced);
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  MGC_DROP;
  mgc_shutdown();
}

static void test_mark_start_minor(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  MGC_PARAM0;
  MGC_LOCAL3(y1, y3, fw);
  mgc_major_collection();
  while (!self()->sweeping_done)
    mgc_major_slice(1);
  CHECK(mgc_gc_phase() == PHASE_SWEEP_FIRST, "swept, marking not started");
  y1 = mgc_alloc_small(1, 0);
  MGC_FIELD(y1, 0) = MGC_UNIT;
  y3 = mgc_alloc_small(3, 0);
  for (int i = 0; i < 3; i++)
    MGC_FIELD(y3, i) = MGC_VAL_INT(i);
  fw = mgc_alloc_small(1, MGC_TAG_FORWARD);
  MGC_FIELD(fw, 0) = MGC_UNIT;
  mgc_modify(&MGC_FIELD(y1, 0), boxed(11));
  mgc_modify(&MGC_FIELD(y3, 1), boxed(22));
  mgc_modify(&MGC_FIELD(fw, 0), boxed(33));
  mgc_modify(&MGC_FIELD(y3, 2), fw);
  fw = MGC_UNIT;
  bool young = mgc_is_young(y1) && mgc_is_young(y3);
  uint64_t cycles = LOAD_RELAXED(&mgc_rt.major_cycles);
  mgc_minor_collection();
  /* Its slice may finish the small cycle too (then the colours turned). */
  bool ended = LOAD_RELAXED(&mgc_rt.major_cycles) != cycles;
  if (young) {
    CHECK(mgc_gc_phase() != PHASE_SWEEP_FIRST || ended,
          "the minor collection took the snapshot");
    if (!ended)
      CHECK(COLOUR_HD(MGC_HD_VAL(y1)) != mgc_colours.garbage &&
                COLOUR_HD(MGC_HD_VAL(y3)) != mgc_colours.garbage &&
                mgc_colours.alloc == mgc_colours.marked,
            "its copies are live, and from now on blocks are born MARKED");
    CHECK(MGC_FIELD(y3, 2) == MGC_FIELD(MGC_FIELD(y3, 2), 0) ||
              !mgc_is_young(MGC_FIELD(y3, 2)),
          "the Forward block was promoted or short-circuited");
  }
  mgc_major_collection(); /* ends the cycle */
  mgc_major_collection(); /* and one more sweeps what it left */
  mgc_value x3 = MGC_FIELD(y3, 2);
  if (MGC_IS_BLOCK(x3) && MGC_TAG_VAL(x3) == MGC_TAG_FORWARD)
    x3 = MGC_FIELD(x3, 0);
  CHECK(MGC_FIELD(MGC_FIELD(y1, 0), 0) == MGC_VAL_INT(11) &&
            MGC_FIELD(MGC_FIELD(y3, 1), 0) == MGC_VAL_INT(22) &&
            MGC_IS_BLOCK(x3) && MGC_FIELD(x3, 0) == MGC_VAL_INT(33),
        "the old blocks only copies held survived");
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  MGC_DROP;
  mgc_shutdown();
}

/* Free pools are given back on compaction. */
/* The distinct pools of a list's cells, in a malloc'd array (the cells
   of a list built in a row lie in a few pools each). */
static size_t list_pools(mgc_value l, word **out) {
  size_t n = 0, cap = 64;
  word *v = malloc(cap * sizeof *v);
  for (; l != MGC_UNIT; l = MGC_FIELD(l, 1)) {
    word p = (word)mgc_pool_of((word)l);
    bool seen = false;
    for (size_t i = n; i > 0 && i + 8 > n && !seen; i--)
      seen = v[i - 1] == p;
    if (seen)
      continue;
    if (n == cap)
      v = realloc(v, (cap *= 2) * sizeof *v);
    v[n++] = p;
  }
  *out = v;
  return n;
}

/* How many of the pools are still mapped (mincore fails with ENOMEM on
   an unmapped range). */
static size_t pools_mapped(const word *v, size_t n) {
  size_t mapped = 0;
  unsigned char vec[POOL_BYTES / 4096 + 1];
  for (size_t i = 0; i < n; i++)
    if (mincore((void *)v[i], POOL_BYTES, vec) == 0 || errno != ENOMEM)
      mapped++;
  return mapped;
}

static mgc_value build_list(long n) {
  MGC_PARAM0;
  MGC_LOCAL1(l);
  for (long i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

/* Builds a list of n cells, promotes it by a full major and drops it;
   returns its pools (list_pools), in use until a sweep frees them. */
static size_t dropped_list_pools(long n, word **pools) {
  MGC_PARAM0;
  MGC_LOCAL1(l);
  l = build_list(n);
  mgc_full_major();
  size_t npools = list_pools(l, pools);
  MGC_DROP;
  return npools;
}

/* Free pools go back to the OS on mgc_compact, and every pool at
   shutdown; neighbouring pools go in one system call. */
static void test_release(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  static mgc_value arr = MGC_UNIT;
  mgc_register_global_root(&arr);
  long n = test_scale(200000);
  arr = mgc_alloc_shr(4, 0);
  word *pools;
  size_t npools = dropped_list_pools(n, &pools);
  mgc_stats s1;
  mgc_get_stats(&s1);
  uint64_t calls = LOAD_RELAXED(&mgc_os_release_calls);
  mgc_compact();
  calls = LOAD_RELAXED(&mgc_os_release_calls) - calls;
  mgc_stats s2;
  mgc_get_stats(&s2);
  CHECK(s2.heap_words < s1.heap_words || n < 10000,
        "heap shrank after dropping the list (%llu -> %llu)",
        (unsigned long long)s1.heap_words, (unsigned long long)s2.heap_words);
  CHECK(mgc_heap_free_pool_count() == 0, "no free pool kept after compact");
  CHECK(s2.compactions >= s1.compactions + 1, "compaction counted");
  CHECK(pools_mapped(pools, npools) == 0,
        "the list's %zu pools unmapped by the compaction (%zu mapped)", npools,
        pools_mapped(pools, npools));
  /* A chunk of 16 pools is one mapping; the list's pools fill whole
     chunks but at its ends, so one call a chunk at most, against one a
     pool before batching. */
  CHECK(npools < 64 || calls <= npools / 8 + 2,
        "%llu munmap calls for %zu pools", (unsigned long long)calls, npools);
  free(pools);

  /* Shutdown: a heap of pools in use, all unmapped, in a few calls. */
  npools = dropped_list_pools(n, &pools);
  CHECK(pools_mapped(pools, npools) == npools, "the new list's pools mapped");
  mgc_remove_global_root(&arr);
  calls = LOAD_RELAXED(&mgc_os_release_calls);
  mgc_shutdown();
  calls = LOAD_RELAXED(&mgc_os_release_calls) - calls;
  CHECK(pools_mapped(pools, npools) == 0,
        "the %zu pools unmapped at shutdown (%zu mapped)", npools,
        pools_mapped(pools, npools));
  CHECK(npools < 64 || calls <= npools / 8 + 16,
        "%llu munmap calls at shutdown for %zu pools",
        (unsigned long long)calls, npools);
  free(pools);
}

/* A pool stays in the cache of free pools until it has been unused for
   the release delay (DESIGN §6.1): a list's pools, swept into the cache,
   are not unmapped by the cycle ends that follow, and are, but for the
   64 the cache keeps, once the delay has passed. */
static void test_release_delay(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  /* Automatic compaction gives every free pool back at its cycle end. */
  bool compacting =
      mgc_rt.params.compact_every != 0 || mgc_rt.params.compact_overhead != 0;
  mgc_heap_set_release_delay(3600 * (uint64_t)1000000000);
  word *pools;
  size_t npools = dropped_list_pools(test_scale(200000), &pools);
  uint64_t calls = LOAD_RELAXED(&mgc_os_release_calls);
  mgc_full_major();
  mgc_full_major();
  calls = LOAD_RELAXED(&mgc_os_release_calls) - calls;
  if (npools >= 64 && !compacting) {
    CHECK(calls == 0, "%llu munmap calls within the delay",
          (unsigned long long)calls);
    CHECK(pools_mapped(pools, npools) == npools,
          "the list's %zu pools mapped within the delay (%zu)", npools,
          pools_mapped(pools, npools));
    /* A few may be in use again: the cache hands out its last pools
       first. */
    CHECK(mgc_heap_free_pool_count() + 16 >= npools,
          "the list's %zu pools cached (%zu in the cache)", npools,
          mgc_heap_free_pool_count());
  }
  mgc_heap_set_release_delay(1000000); /* 1 ms */
  struct timespec ts = {0, 5000000};
  nanosleep(&ts, NULL);
  mgc_full_major();
  CHECK(pools_mapped(pools, npools) <= 64,
        "after the delay, %zu of the list's %zu pools still mapped",
        pools_mapped(pools, npools), npools);
  CHECK(mgc_verify_heap() == 0, "heap verified");
  free(pools);
  mgc_heap_set_release_delay(0);
  mgc_shutdown();
}

/* The cache's two ages (DESIGN §6.1): the pools of a list freed first are
   the cache's tail, those of a list freed later (taking some of the first
   list's pools back from the cache) its head.  A cycle end past the first
   list's delay but within the second's unmaps the first list's pools but
   for the 64 the cache keeps, and none of the second's; one past the
   second's delay unmaps those too.  The cache keeps the idle time of its
   tail, so that a cycle end with nothing to give back reads no pool: this
   checks that the tail's time follows what was taken. */
static bool contains(const word *v, size_t n, word x) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == x)
      return true;
  return false;
}

static void test_release_two_ages(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  bool compacting =
      mgc_rt.params.compact_every != 0 || mgc_rt.params.compact_overhead != 0;
  mgc_heap_set_release_delay(3600 * (uint64_t)1000000000);
  word *first, *second;
  size_t nfirst = dropped_list_pools(test_scale(200000), &first);
  mgc_full_major();
  mgc_full_major();
  struct timespec gap = {0, 400000000}; /* 400 ms */
  nanosleep(&gap, NULL);
  /* Half as long: it takes back the half of the first list's pools that
     were freed last, and the cache's tail keeps the others. */
  size_t nsecond = dropped_list_pools(test_scale(100000), &second);
  uint64_t t0 = mgc_now_ns(); /* the second list's pools are freed after */
  mgc_full_major();
  mgc_full_major();
  /* The first list's pools that the second did not take back. */
  size_t nold = 0;
  for (size_t i = 0; i < nfirst; i++)
    if (!contains(second, nsecond, first[i]))
      first[nold++] = first[i];
  mgc_heap_set_release_delay(200000000); /* 200 ms */
  mgc_full_major();
  /* Meaningful only if the second list's pools were freed well within
     the delay before that cycle end (a slow run may not manage it). */
  bool timely = mgc_now_ns() - t0 < 100000000;
  if (!compacting && timely) {
    CHECK(pools_mapped(second, nsecond) == nsecond,
          "within its delay, the second list's %zu pools mapped (%zu)", nsecond,
          pools_mapped(second, nsecond));
    CHECK(pools_mapped(first, nold) <= 64,
          "past its delay, %zu of the first list's other %zu pools mapped",
          pools_mapped(first, nold), nold);
  }
  nanosleep(&gap, NULL);
  mgc_full_major();
  /* A few may be in use again, as in test_release_delay. */
  if (!compacting)
    CHECK(pools_mapped(second, nsecond) + pools_mapped(first, nold) <= 64 + 16,
          "past both delays, %zu and %zu pools still mapped",
          pools_mapped(second, nsecond), pools_mapped(first, nold));
  CHECK(mgc_verify_heap() == 0, "heap verified");
  printf("two ages: %zu pools freed first (%zu not taken back), %zu later\n",
         nfirst, nold, nsecond);
  free(first);
  free(second);
  mgc_heap_set_release_delay(0);
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

/* Invariant 26 and the sweep skipped for fresh pools.  In cycle k, after
   its mark start, 3000 blocks of 5 words (one size class; about 680 per
   pool, so several fresh pools) are allocated, every third kept in a
   list.  The sweep of k+1 skips those pools (counted; nothing freed, the
   verifier content); that of k+2 reads them, and by its end only the kept
   blocks are live in them.  Allocated before the mark start instead, the
   blocks are born UNMARKED and the dead ones are GARBAGE for the sweep of
   k+1: it reads every such pool (skipped, they would turn MARKED at the
   next rotation, dead blocks resurrected with dangling fields). */
static void test_fresh_pools(bool before_mark) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  mgc_major_collection();
  if (!before_mark)
    start_marking();
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
    born_ok &= pools[i]->born == (before_mark ? 0 : k + 1);
  CHECK(born_ok, "pools taken in cycle %llu %s", (unsigned long long)k,
        before_mark ? "before its mark start have no birth stamp"
                    : "are stamped with it");
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
  if (before_mark)
    CHECK(d->heap.sweeps_skipped <= skipped0 + 1,
          "the sweep of cycle k+1 read the %zu fresh pools (%zu skipped)",
          np - 1, d->heap.sweeps_skipped - skipped0);
  else
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
  start_marking(); /* blocks born MARKED, pools skipped by the next sweep */
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

/* DESIGN §6.1: after a minor collection, the pools the next one may
   promote into (the pause model's survival peak of the part in use) are
   mapped and their pages faulted in, in mutator time.  A collection that
   promotes into fresh memory then takes almost none of those page faults
   inside its pause (measured from its begin hook to its end hook). */
static long faults_at_begin, faults_in_pause;
static long minor_faults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}
static void fault_begin(void) { faults_at_begin = minor_faults(); }
static void fault_end(void) {
  faults_in_pause = minor_faults() - faults_at_begin;
}
static void count_pause_faults(bool on) {
  mgc_set_minor_gc_begin_hook(on ? fault_begin : NULL);
  mgc_set_minor_gc_end_hook(on ? fault_end : NULL);
}
/* A heap with p (NULL: the defaults) whose pauses count their faults;
   its domain, and whether torture is on. */
static struct mgc_dom *fault_counting_init(const mgc_params *p, bool *torture) {
  CHECK(mgc_init(p) == 0, "init");
  *torture = mgc_rt.params.torture_every != 0;
  count_pause_faults(true);
  return self();
}

static void test_prefault(void) {
  bool torture;
  struct mgc_dom *d = fault_counting_init(NULL, &torture);
  MGC_PARAM0;
  MGC_LOCAL2(keep, list);
  keep = MGC_UNIT;
  for (int round = 0; round < 4; round++) {
    /* A list over half of the part in use, all of it surviving, kept
       alive with the earlier ones: promotion needs pools no sweep can
       free. */
    size_t used = (size_t)(d->young_end - d->young_floor) / WORD;
    size_t cells = used / 2 / 3;
    mgc_minor_collection();
    list = MGC_UNIT;
    for (size_t i = 0; i < cells; i++) {
      mgc_value c = mgc_alloc_small(2, 0);
      MGC_FIELD(c, 0) = MGC_VAL_INT((long)i);
      MGC_FIELD(c, 1) = list;
      list = c;
    }
    mgc_value pair = mgc_alloc_small(2, 0);
    MGC_FIELD(pair, 0) = list;
    MGC_FIELD(pair, 1) = keep;
    keep = pair;
    mgc_minor_collection();
    long pages = (long)(cells * 3 * WORD / mgc_page_size());
    if (round > 0 && !torture)
      CHECK(faults_in_pause < pages / 4 + 4,
            "round %d: %ld page faults inside the pause that promoted %zu "
            "words (%ld pages)",
            round, faults_in_pause, cells * 3, pages);
    double want = d->survival_peak * (double)(d->young_end - d->young_floor) /
                  WORD / (POOL_WORDS - POOL_HEADER_WORDS);
    CHECK((double)mgc_heap_free_pool_count() >= want,
          "round %d: %zu pools cached, the model asks for %.1f", round,
          mgc_heap_free_pool_count(), want);
  }
  long n = 0;
  for (mgc_value p = keep; p != MGC_UNIT; p = MGC_FIELD(p, 1))
    for (mgc_value c = MGC_FIELD(p, 0); c != MGC_UNIT; c = MGC_FIELD(c, 1))
      n++;
  CHECK(n > 0 && mgc_verify_heap() == 0, "the lists survive (%ld cells)", n);
  count_pause_faults(false);
  MGC_DROP;
  mgc_shutdown();
}

/* Of `bytes` from `from` (whole pools), the pages not resident. */
static size_t pages_missing(word from, size_t bytes) {
  size_t page = mgc_page_size(), missing = 0;
  unsigned char vec[POOL_BYTES / 4096 + 1];
  for (size_t off = 0; off < bytes; off += POOL_BYTES) {
    if (mincore((void *)(from + off), POOL_BYTES, vec) != 0)
      return bytes / page; /* unmapped */
    for (size_t k = 0; k < POOL_BYTES / page; k++)
      missing += !(vec[k] & 1);
  }
  return missing;
}

/* mgc_os_populate faults in a committed range in one system call
   (MADV_POPULATE_WRITE), zeroed and writable; where the kernel lacks it,
   it fails, and the byte a page that the prefault writes after it faults
   the pages in. */
static void test_populate(void) {
  size_t bytes = 4 * POOL_BYTES;
  char *p = mgc_os_reserve(bytes, POOL_BYTES);
  CHECK(p && mgc_os_commit(p, bytes) == 0, "a range committed");
  if (!p)
    return;
  CHECK(pages_missing((word)p, bytes) == bytes / mgc_page_size(),
        "no page of a fresh range resident");
  if (mgc_os_populate(p, bytes) == 0) {
    CHECK(pages_missing((word)p, bytes) == 0,
          "every page resident after mgc_os_populate (%zu missing)",
          pages_missing((word)p, bytes));
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i++)
      nonzero += p[i] != 0;
    CHECK(nonzero == 0, "populated pages are zero (%zu bytes not)", nonzero);
    memset(p, 0x5A, bytes);
    CHECK(p[bytes - 1] == 0x5A, "and writable");
  } else {
    fprintf(stderr, "  (MADV_POPULATE_WRITE not supported: not checked)\n");
  }
  mgc_os_release(p, bytes);
}

static long long xgrow_fin_calls, xgrow_fin_sum;

static void xgrow_fin(mgc_value v, void *data) {
  (void)data;
  xgrow_fin_calls++;
  xgrow_fin_sum += MGC_INT_VAL(MGC_FIELD(v, 0));
}

/* A table that a pause reads, grown by realloc, may move by having its
   page-table entries moved; where a host shadows them, the first access
   to each moved page costs a host fault (2.3 ms in one minor collection
   for a finaliser table of 2 MB).  mgc_xgrow touches again one word of
   each page of the used part of a moved block, keeping its contents, and
   the finaliser table and the remembered set (test_remset_overflow) grow
   through it. */
static void test_xgrow(void) {
  size_t page = mgc_page_size(), used = 64 * page + 100;
  word *p = mgc_xmalloc(used, "test block");
  for (size_t i = 0; i < used / sizeof(word); i++)
    p[i] = i * 2654435761u;
  uint64_t calls = LOAD_RELAXED(&mgc_xgrow_calls);
  uint64_t touched = LOAD_RELAXED(&mgc_xgrow_touched);
  uintptr_t was = (uintptr_t)p; /* p is dead after the call */
  word *q = mgc_xgrow(p, 64 * used, used, "test block");
  bool moved = (uintptr_t)q != was;
  size_t bad = 0;
  for (size_t i = 0; i < used / sizeof(word); i++)
    bad += q[i] != i * 2654435761u;
  CHECK(bad == 0, "the used part kept (%zu words differ)", bad);
  CHECK(LOAD_RELAXED(&mgc_xgrow_calls) == calls + 1, "one call counted");
  /* One word of every page the used part starts: 65 pages, when moved. */
  uint64_t want = moved ? 65 : 0;
  CHECK(LOAD_RELAXED(&mgc_xgrow_touched) - touched == want,
        "%llu pages touched, %llu expected (block %s)",
        (unsigned long long)(LOAD_RELAXED(&mgc_xgrow_touched) - touched),
        (unsigned long long)want, moved ? "moved" : "grown in place");
  free(q);

  /* The finaliser table: 3000 values registered, all alive until the loop
     ends, so the table grows from 32 entries at least six times. */
  CHECK(mgc_init(NULL) == 0, "init");
  MGC_PARAM0;
  MGC_LOCAL2(list, o);
  enum { N = 3000 };
  xgrow_fin_calls = xgrow_fin_sum = 0;
  calls = LOAD_RELAXED(&mgc_xgrow_calls);
  for (long i = 0; i < N; i++) {
    o = mgc_alloc_small(2, 0);
    MGC_FIELD(o, 0) = MGC_VAL_INT(i);
    MGC_FIELD(o, 1) = list;
    list = o;
    mgc_finalise(o, xgrow_fin, NULL);
  }
  CHECK(LOAD_RELAXED(&mgc_xgrow_calls) - calls >= 6,
        "the finaliser table grew through mgc_xgrow (%llu times)",
        (unsigned long long)(LOAD_RELAXED(&mgc_xgrow_calls) - calls));
  list = o = MGC_UNIT;
  for (int k = 0; k < 10 && xgrow_fin_calls < N; k++) {
    mgc_full_major();
    mgc_run_finalisers();
  }
  CHECK(xgrow_fin_calls == N && xgrow_fin_sum == (long long)N * (N - 1) / 2,
        "every entry kept across the moves: %lld finalisers, sum %lld",
        xgrow_fin_calls, xgrow_fin_sum);
  /* A fiber's slots, which a minor collection scans: grown from 1 to
     4096 slots, 12 times through mgc_retouch_moved. */
  mgc_fiber *f = mgc_fiber_new(1);
  CHECK(f != NULL, "a fiber");
  if (f) {
    calls = LOAD_RELAXED(&mgc_xgrow_calls);
    for (long i = 0; i < 4096; i++)
      mgc_fiber_push(f, MGC_VAL_INT(i));
    CHECK(LOAD_RELAXED(&mgc_xgrow_calls) - calls == 12,
          "the fiber grew through mgc_retouch_moved (%llu times)",
          (unsigned long long)(LOAD_RELAXED(&mgc_xgrow_calls) - calls));
    mgc_minor_collection();
    long fbad = 0;
    for (long i = 0; i < 4096; i++)
      fbad += MGC_FIBER_SLOT(f, i) != MGC_VAL_INT(i);
    CHECK(fbad == 0, "its slots kept (%ld differ)", fbad);
    mgc_fiber_free(f);
  }
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  MGC_DROP;
  mgc_shutdown();
}

/* A chunk mapped because the cache is empty (inside a pause, as a rule)
   gives one pool; the prefault then faults in every page of the pools it
   wants from the other fifteen before it maps more (DESIGN §6.1).  Linked
   into the cache as they were mapped, a page of each touched, they
   counted as faulted in: the prefault skipped them, and the next pause
   faulted in the rest. */
static void test_raw_pools(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  bool torture = mgc_rt.params.torture_every != 0;
  MGC_PARAM0;
  MGC_LOCAL1(b);
  mgc_heap_release_free_pools(true);
  size_t before = mgc_heap_free_pool_count();
  /* A size class no pool of the new heap has: a pool from the cache,
     empty, so from a new chunk, its first pool. */
  b = mgc_alloc_shr(50, 0);
  word first = (word)b & ~(word)(POOL_BYTES - 1);
  size_t after = mgc_heap_free_pool_count();
  bool fresh = before == 0 && after == 15;
  CHECK(fresh || torture, "a chunk mapped, one pool taken (%zu -> %zu)", before,
        after);
  if (fresh) {
    /* A section waiting for this domain stops the prefault before its
       first run of pools: nothing faulted in, nothing mapped. */
    struct mgc_dom *d = self();
    atomic_store(&d->interrupt_pending, 1);
    mgc_heap_prefault_pools(d, 8);
    atomic_store(&d->interrupt_pending, 0);
    size_t untouched = pages_missing(first + POOL_BYTES, 8 * POOL_BYTES);
    CHECK(untouched == 8 * POOL_BYTES / mgc_page_size(),
          "a pending section stopped the prefault (%zu of %zu pages not "
          "resident)",
          untouched, 8 * POOL_BYTES / mgc_page_size());
    CHECK(mgc_heap_free_pool_count() == 15, "nothing cached meanwhile (%zu)",
          mgc_heap_free_pool_count());
    mgc_heap_prefault_pools(d, 8);
    size_t missing = pages_missing(first + POOL_BYTES, 8 * POOL_BYTES);
    CHECK(missing == 0,
          "the prefault faulted in the chunk's next 8 pools (%zu of their "
          "%zu pages not resident)",
          missing, 8 * POOL_BYTES / mgc_page_size());
    CHECK(mgc_heap_free_pool_count() == 15, "no chunk mapped meanwhile (%zu)",
          mgc_heap_free_pool_count());
    /* The 7 raw pools left, then a new chunk's first 9. */
    mgc_heap_prefault_pools(NULL, 24);
    missing = pages_missing(first + POOL_BYTES, 15 * POOL_BYTES);
    CHECK(missing == 0, "and then the other 7 (%zu pages not resident)",
          missing);
    CHECK(mgc_heap_free_pool_count() == 31, "a chunk mapped for 9 (%zu)",
          mgc_heap_free_pool_count());
  }
  CHECK(mgc_verify_heap() == 0, "verifier");
  MGC_DROP;
  mgc_shutdown();
}

/* The prefault counts pools for what promotion leaves in them, not for
   the words alone: a slot rounds its block up to its size class.  Blocks
   rounded up by about a tenth fill the whole minor heap and survive, 12
   times; no pause but the first takes more than a few page faults.
   Counted at the words alone, the pools ran out inside the pause, which
   mapped a chunk and faulted in what it used of it: 31 faults in one
   pause, 9, 13 and 6 in others. */
static void test_prefault_rounding(void) {
  /* The whole minor heap in use at every collection (no pause goal): a
     part that grew from small would meet the classes' first pools. */
  mgc_params p;
  mgc_params_default(&p);
  p.minor_pause_goal_us = 0;
  bool torture;
  struct mgc_dom *d = fault_counting_init(&p, &torture);
  MGC_PARAM0;
  MGC_LOCAL2(keep, list);
  keep = MGC_UNIT;
  /* Rounded up by about a tenth: 9 -> 10, 11 -> 12, 20 -> 22, 29 -> 32
     words (mgc_class_whsize). */
  static const size_t sizes[4] = {8, 10, 19, 28};
  long worst = 0, worst_pages = 0;
  /* Under torture (a collection at every allocation) the pauses promote
     a block each: nothing to check, and 12 heaps' worth of collections,
     each verified. */
  for (int round = 0; round < (torture ? 0 : 12); round++) {
    mgc_minor_collection();
    size_t used = (size_t)(d->young_end - d->young_floor) / WORD;
    list = MGC_UNIT;
    size_t words = 0;
    for (unsigned i = 0; words + 64 < used; i++) {
      size_t n = sizes[i % 4];
      mgc_value c = mgc_alloc_small(n, 0);
      MGC_FIELD(c, 0) = list;
      for (size_t k = 1; k < n; k++)
        MGC_FIELD(c, k) = MGC_VAL_INT((long)k);
      list = c;
      words += n + 1;
    }
    mgc_value pair = mgc_alloc_small(2, 0);
    MGC_FIELD(pair, 0) = list;
    MGC_FIELD(pair, 1) = keep;
    keep = pair;
    mgc_minor_collection();
    /* The first round's pause left out: a new heap, no model yet. */
    if (round > 0 && faults_in_pause > worst) {
      worst = faults_in_pause;
      worst_pages = (long)(words * WORD / mgc_page_size());
    }
  }
  CHECK(torture || worst < 8,
        "%ld page faults inside a pause that promoted %ld pages' worth", worst,
        worst_pages);
  CHECK(mgc_verify_heap() == 0, "verifier");
  count_pause_faults(false);
  MGC_DROP;
  mgc_shutdown();
}

/* The mutator takes pools from the prefault's cache for the blocks it
   allocates in the major heap.  The prefault counts as many more as the
   last minor cycle took that way (at most 64) and tops the cache up at
   every slice point, so that promotion still finds its pools faulted in:
   counted for promotion alone, once per minor collection, the cache ran
   dry inside the pause (ephemerons, whose blocks are born in the major
   heap: 50-110 faults in 3 of its 70 pauses).  Part 1: 16 pools' worth
   allocated directly after the young blocks, with no slice point between
   (the margin); part 2: 80 pools' worth spread over the young allocation
   (the top-ups at its slice points, with the margin). */
static void test_prefault_direct(void) {
  mgc_params p;
  mgc_params_default(&p);
  p.minor_pause_goal_us = 0;
  p.minor_heap_words = 65536; /* 8 pools promoted a collection */
  bool torture;
  struct mgc_dom *d = fault_counting_init(&p, &torture);
  MGC_PARAM0;
  MGC_LOCAL2(keep, list);
  keep = MGC_UNIT;
  /* Part 0 only brings the survival peak, 1 for a new heap, down to the
     one half of these rounds (it loses 5 % a collection). */
  for (int part = 0; part <= 2; part++) {
    size_t direct_pools = part == 0 ? 0 : part == 1 ? 16 : 80;
    long worst = 0;
    for (int round = 0; round < (torture ? 0 : part == 0 ? 14 : 6); round++) {
      mgc_minor_collection();
      /* The whole part filled with cells of 3 words, every other one kept:
         a survival of one half, which the prefault counts. */
      size_t used = (size_t)(d->young_end - d->young_floor) / WORD;
      size_t cells = used / 3 - 64;
      /* Blocks of 7 fields: 8 words a slot. */
      size_t direct = direct_pools * (POOL_WORDS - POOL_HEADER_WORDS) / 8;
      size_t every = part == 2 ? cells / direct + 1 : 0;
      list = MGC_UNIT;
      size_t made = 0;
      for (size_t i = 0; i < cells || made < direct; i++) {
        if (i < cells) {
          mgc_value c = mgc_alloc_small(2, 0);
          MGC_FIELD(c, 0) = MGC_VAL_INT((long)i);
          MGC_FIELD(c, 1) = list;
          if (i % 2 == 0)
            list = c;
        }
        if (made < direct && (i >= cells || (every && i % every == 0))) {
          mgc_value b = mgc_alloc_shr(7, 0);
          mgc_initialize(&MGC_FIELD(b, 0), list);
          list = b;
          made++;
        }
      }
      mgc_value pair = mgc_alloc_small(2, 0);
      MGC_FIELD(pair, 0) = list;
      MGC_FIELD(pair, 1) = keep;
      keep = pair;
      mgc_minor_collection();
      /* The first two rounds left out: the count of the minor cycle
         before is not there yet. */
      if (round > 1 && faults_in_pause > worst)
        worst = faults_in_pause;
    }
    CHECK(torture || part == 0 || worst < 8,
          "part %d (%zu pools allocated directly a minor cycle): %ld page "
          "faults inside a pause",
          part, direct_pools, worst);
  }
  CHECK(mgc_verify_heap() == 0, "verifier");
  count_pause_faults(false);
  MGC_DROP;
  mgc_shutdown();
}

/* Pause histograms (src/stats.c): for durations spread over six orders of
   magnitude, and for a cluster just under a millisecond, every percentile
   read back lies between the exact nearest-rank percentile and 1/16 above
   it, and the maximum is exact. */
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void check_histogram(const uint64_t *ns, size_t n, const char *what) {
  static struct mgc_histogram h;
  static uint64_t sorted[4096];
  memset(&h, 0, sizeof h);
  for (size_t i = 0; i < n; i++) {
    mgc_histogram_add(&h, ns[i], false);
    sorted[i] = ns[i];
  }
  qsort(sorted, n, sizeof *sorted, cmp_u64);
  const struct mgc_histogram *hp = &h;
  static const double pcts[] = {1, 10, 50, 90, 99, 99.9, 100};
  long bad = 0;
  for (size_t k = 0; k < sizeof pcts / sizeof *pcts; k++) {
    size_t rank = (size_t)(pcts[k] / 100.0 * (double)n + 0.999999);
    uint64_t exact = sorted[(rank < 1 ? 1 : rank) - 1];
    uint64_t got = mgc_histogram_percentile(&hp, 1, pcts[k]);
    if (got < exact || (double)got > (double)exact * (1.0 + 1.0 / 16) + 1) {
      if (bad++ < 3)
        fprintf(stderr, "  %s p%g: %llu against exact %llu\n", what, pcts[k],
                (unsigned long long)got, (unsigned long long)exact);
    }
  }
  CHECK(bad == 0, "%s: percentiles within 1/16 above the exact ones", what);
  CHECK(mgc_histogram_percentile(&hp, 1, 100) == sorted[n - 1],
        "%s: the maximum is exact", what);
}

static void test_histogram(void) {
  static uint64_t ns[4096];
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < 4096; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    ns[i] = 1 + x % 1000000000ull / (1 + x % 100000ull); /* 1 ns .. 1 s */
  }
  check_histogram(ns, 4096, "spread");
  for (size_t i = 0; i < 1000; i++)
    ns[i] = 900000 + i * 97; /* 0.900 .. 0.997 ms */
  check_histogram(ns, 1000, "under 1 ms");
  for (size_t i = 0; i < 40; i++)
    ns[i] = i;
  check_histogram(ns, 40, "a few ns");
}

/* Allocates blocks of 6 fields in the major heap as promotion does, keeping
   every third in the list at *list; checks after each that the block came
   from the pool first on avail, and that this pool is still there exactly
   when it has room.  Returns how many came from a free list. */
static size_t take_blocks(struct mgc_dom *d, long n, mgc_value *list,
                          bool *ok) {
  unsigned cls = mgc_class_of[WHSIZE(6)];
  size_t from_list = 0;
  for (long i = 0; i < n; i++) {
    struct pool *p = d->heap.avail[cls];
    bool listed = p && p->free;
    word *hp = mgc_heap_alloc_hd(d, MGC_MAKE_HEADER(6, 0, 0));
    if (!hp) {
      *ok = false;
      return from_list;
    }
    mgc_value b = (mgc_value)(hp + 1);
    for (int f = 0; f < 6; f++)
      mgc_initialize(&MGC_FIELD(b, f), MGC_VAL_INT(i));
    if (i % 3 == 0) {
      mgc_modify(&MGC_FIELD(b, 0), *list);
      *list = b;
    }
    struct pool *q = mgc_pool_of((word)hp);
    if (p)
      *ok &= q == p;
    *ok &= (d->heap.avail[cls] == q) == mgc_pool_has_room(q);
    from_list += listed;
  }
  return from_list;
}

static void test_pool_take(void) {
  CHECK(mgc_init(NULL) == 0, "init");
  struct mgc_dom *d = self();
  /* The colour bits given (here those of an out-of-heap block) are
     replaced; size, tag and reserved byte are kept. */
  word *hp = mgc_heap_alloc_hd(d, MGC_MAKE_HEADER(6, MGC_TAG_ABSTRACT, 0x5A) |
                                      MGC_COLOUR_NOT_MARKABLE);
  CHECK(hp && *hp == (MGC_MAKE_HEADER(6, MGC_TAG_ABSTRACT, 0x5A) |
                      mgc_colours.marked),
        "the header given, coloured MARKED (%#lx)",
        hp ? (unsigned long)*hp : 0ul);
  MGC_PARAM0;
  MGC_LOCAL1(list);
  list = MGC_UNIT;
  long per_pool = (long)((POOL_WORDS - POOL_HEADER_WORDS) /
                         mgc_class_whsize[mgc_class_of[WHSIZE(6)]]);
  bool ok = true;
  /* The last pool half used: after the sweeps it has a free list below
     its bump region, and allocation takes both. */
  long n1 = 4 * per_pool + per_pool / 2, n2 = 4 * per_pool;
  take_blocks(d, n1, &list, &ok);
  CHECK(ok, "bump regions: a pool leaves avail exactly when it is full");
  /* Two thirds of those blocks die: three cycle ends free them (the pools
     were born in the first, whose sweep skips them). */
  for (int i = 0; i < 3; i++)
    mgc_major_collection();
  ok = true;
  size_t from_list = take_blocks(d, n2, &list, &ok);
  CHECK(ok, "free lists: a pool leaves avail exactly when it is full");
  /* Fewer in compact mode (C=1), where compaction empties the pools with
     most free slots at each cycle end. */
  CHECK(from_list > 0, "blocks came from free lists (%zu of %ld)", from_list,
        n2);
  size_t listed = 0;
  for (mgc_value c = list; c != MGC_UNIT; c = MGC_FIELD(c, 0))
    listed++;
  CHECK(listed == (size_t)((n1 + 2) / 3 + (n2 + 2) / 3),
        "the kept blocks are all listed (%zu)", listed);
  CHECK(mgc_verify_heap() == 0, "verifier");
  MGC_DROP;
  mgc_shutdown();
}

/* The remembered filter (DESIGN §3.2): before the mark start the barrier
   does not read the field it overwrites, and a young value stored into an
   old field is remembered unless the domain's filter has the field, as it
   does after the first such store of the minor cycle.  Two fields with
   the same filter entry, stored into by turns, are remembered once per
   store (the barrier did not read them to learn that they were young
   already): promotion takes the duplicates.  A minor collection empties
   the filter with the set: a field remembered in the last minor cycle is
   remembered again in this one (with the filter left full, the store
   would be skipped and the young value lost at the next collection). */
static void test_remember_filter(void) {
  mgc_params p;
  mgc_params_default(&p);
  CHECK(mgc_init(&p) == 0, "init");
  struct mgc_dom *d = self();
  static mgc_value arr = MGC_UNIT;
  mgc_register_global_root(&arr);
  enum { N = 4096 };
  arr = mgc_alloc_shr(N, 0);
  mgc_major_collection(); /* a new cycle, sweeping first */
  CHECK(mgc_gc_phase() == PHASE_SWEEP_FIRST && !mgc_marking_on(),
        "a cycle starts by sweeping, with the barrier's darkening off");
  /* Two fields with the same filter entry. */
  size_t i = 0, j = 1;
  while (j < N && mgc_remember_filter_index(&MGC_FIELD(arr, j)) !=
                      mgc_remember_filter_index(&MGC_FIELD(arr, i)))
    j++;
  CHECK(j < N, "two fields of a %d-field block share a filter entry", N);
  if (j == N) {
    mgc_remove_global_root(&arr);
    mgc_shutdown();
    return;
  }
  {
    MGC_PARAM0;
    MGC_LOCAL2(a, b);
    a = mgc_alloc_small(1, 0);
    MGC_FIELD(a, 0) = MGC_VAL_INT(1);
    b = mgc_alloc_small(1, 0);
    MGC_FIELD(b, 0) = MGC_VAL_INT(2);
    /* No allocation or poll between here and the checks: no GC.  Under
       torture (a collection at every allocation) a is old already: the
       counts are checked only with both values young. */
    bool young = mgc_is_young(a) && mgc_is_young(b);
    size_t base = mgc_table_count(&d->major_ref);
    for (int k = 0; k < 10; k++)
      mgc_modify(&MGC_FIELD(arr, i), k % 2 ? a : b);
    CHECK(!young || mgc_table_count(&d->major_ref) == base + 1,
          "ten young stores into one old field: remembered once (%zu)",
          mgc_table_count(&d->major_ref) - base);
    CHECK(d->remember_filter[mgc_remember_filter_index(&MGC_FIELD(arr, i))] ==
              &MGC_FIELD(arr, i),
          "the filter has the field");
    base = mgc_table_count(&d->major_ref);
    for (int k = 0; k < 10; k++)
      mgc_modify(&MGC_FIELD(arr, k % 2 ? j : i), k % 2 ? a : b);
    /* The first store, into field i, finds it in the filter. */
    CHECK(!young || mgc_table_count(&d->major_ref) == base + 9,
          "two fields sharing an entry, by turns: remembered at every store "
          "but the first (%zu of 9), the fields not read",
          mgc_table_count(&d->major_ref) - base);
    CHECK(mgc_verify_heap() == 0, "the verifier accepts the duplicates");
    mgc_minor_collection();
    CHECK(!mgc_is_young(MGC_FIELD(arr, i)) &&
              MGC_FIELD(MGC_FIELD(arr, i), 0) == MGC_VAL_INT(2) &&
              !mgc_is_young(MGC_FIELD(arr, j)) &&
              MGC_FIELD(MGC_FIELD(arr, j), 0) == MGC_VAL_INT(1),
          "both fields hold the promoted copies");
    CHECK(MGC_FIELD(arr, i) == b && MGC_FIELD(arr, j) == a,
          "the roots and the fields agree on the copies");
    size_t left = 0;
    for (size_t k = 0; k < REMEMBER_FILTER; k++)
      left += d->remember_filter[k] != NULL;
    CHECK(mgc_table_count(&d->major_ref) == 0 && left == 0,
          "the minor collection emptied the set and the filter (%zu left)",
          left);
    MGC_DROP;
  }
  /* The filter gets field i again, then a new cycle (its collections
     empty the filter) returns to sweeping with the barrier off. */
  {
    MGC_PARAM0;
    MGC_LOCAL1(c);
    c = mgc_alloc_small(1, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(3);
    mgc_modify(&MGC_FIELD(arr, i), c);
    MGC_DROP;
  }
  mgc_major_collection();
  CHECK(mgc_gc_phase() == PHASE_SWEEP_FIRST && !mgc_marking_on(),
        "sweeping again, the barrier's darkening off");
  {
    mgc_value c = mgc_alloc_small(1, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(4);
    mgc_modify(&MGC_FIELD(arr, i), c); /* held by arr alone */
  }
  CHECK(mgc_table_count(&d->major_ref) == 1,
        "a field remembered in an earlier minor cycle is remembered again "
        "(%zu entries)",
        mgc_table_count(&d->major_ref));
  mgc_minor_collection();
  mgc_value c = MGC_FIELD(arr, i);
  CHECK(MGC_IS_BLOCK(c) && !mgc_is_young(c) &&
            MGC_FIELD(c, 0) == MGC_VAL_INT(4),
        "the young value held by that field alone was promoted");
  CHECK(mgc_verify_heap() == 0, "heap verifies");
  mgc_remove_global_root(&arr);
  arr = MGC_UNIT;
  mgc_shutdown();
}

int main(void) {
  test_pool_take();
  test_remset_overflow();
  test_remember_filter();
  test_after_minor();
  test_mark_stack_prune();
  test_mark_shapes();
  test_verifier_catches();
  test_deletion_barrier();
  test_sweep_first();
  test_mark_start_minor();
  test_mark_trigger();
  test_release();
  test_release_delay();
  test_release_two_ages();
  test_fresh_pools(false);
  test_fresh_pools(true);
  test_dead_pools();
  test_prefault();
  test_populate();
  test_raw_pools();
  test_prefault_rounding();
  test_prefault_direct();
  test_xgrow();
  test_histogram();
  return check_done();
}
