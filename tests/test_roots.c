/* test_roots: every kind of root.
 *
 * Local roots (nested frames, MGC_PARAM1..5, MGC_LOCAL1..5, MGC_RETURN,
 * MGC_RETURN0, MGC_DROP) keeping values alive and updated through many
 * collections; classic global roots (and that a removed one is no longer
 * updated); generational global roots through every transition of
 * invariant 14 (immediate, young, old, static atoms; registered and removed
 * in each state; many at once); the embedder's scan hook.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "check.h"
#include "lists.h"

/* Recursion: each level keeps two lists in locals, the deepest collects. */
static long nested(int depth) {
  long bad = 0;
  MGC_PARAM0;
  MGC_LOCAL2(a, b);
  a = make_list(depth + 1);
  b = make_list(2 * depth + 1);
  if (depth > 0) {
    bad += nested(depth - 1);
  } else {
    mgc_minor_collection();
    mgc_full_major();
    mgc_minor_collection();
  }
  churn(2000);
  if (!list_ok(a, depth + 1) || !list_ok(b, 2 * depth + 1))
    bad++;
  if (mgc_is_young(a) && depth > 0)
    bad++;
  MGC_RETURN(bad);
}

static mgc_value sum5(mgc_value a, mgc_value b, mgc_value c, mgc_value d,
                      mgc_value e) {
  MGC_PARAM5(a, b, c, d, e);
  mgc_minor_collection();
  churn(5000);
  mgc_full_major();
  MGC_RETURN(
      MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(a, 0)) + MGC_INT_VAL(MGC_FIELD(b, 0)) +
                  MGC_INT_VAL(MGC_FIELD(c, 0)) + MGC_INT_VAL(MGC_FIELD(d, 0)) +
                  MGC_INT_VAL(MGC_FIELD(e, 0))));
}

static mgc_value sum4(mgc_value a, mgc_value b, mgc_value c, mgc_value d) {
  MGC_PARAM4(a, b, c, d);
  mgc_minor_collection();
  MGC_RETURN(
      MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(a, 0)) + MGC_INT_VAL(MGC_FIELD(b, 0)) +
                  MGC_INT_VAL(MGC_FIELD(c, 0)) + MGC_INT_VAL(MGC_FIELD(d, 0))));
}

static mgc_value sum3(mgc_value a, mgc_value b, mgc_value c) {
  MGC_PARAM3(a, b, c);
  churn(3000);
  mgc_minor_collection();
  MGC_RETURN(MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(a, 0)) +
                         MGC_INT_VAL(MGC_FIELD(b, 0)) +
                         MGC_INT_VAL(MGC_FIELD(c, 0))));
}

static mgc_value sum2(mgc_value a, mgc_value b) {
  MGC_PARAM2(a, b);
  mgc_minor_collection();
  MGC_RETURN(
      MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(a, 0)) + MGC_INT_VAL(MGC_FIELD(b, 0))));
}

static mgc_value boxed(long n) {
  mgc_value v = mgc_alloc_small(1, 0);
  MGC_FIELD(v, 0) = MGC_VAL_INT(n);
  return v;
}

/* Checks that its argument survives; RETURN0 ends the frame. */
static void check_param1(mgc_value a, long n, long *bad) {
  MGC_PARAM1(a);
  mgc_minor_collection();
  churn(1000);
  if (MGC_FIELD(a, 0) != MGC_VAL_INT(n) || mgc_is_young(a))
    (*bad)++;
  MGC_RETURN0;
}

static void test_locals(void) {
  struct mgc_root_frame *before = mgc_tls_state->local_roots;
  long bad = 0;
  mgc_value r;

  bad = nested(30);
  CHECK(bad == 0, "nested frames: %ld bad levels", bad);
  CHECK(mgc_tls_state->local_roots == before, "frames all popped");

  {
    MGC_PARAM0;
    MGC_LOCAL5(a, b, c, d, e);
    MGC_LOCAL4(f, g, h, i);
    MGC_LOCAL3(j, k, l);
    MGC_LOCAL2(m, n);
    MGC_LOCAL1(o);
    a = boxed(1);
    b = boxed(2);
    c = boxed(3);
    d = boxed(4);
    e = boxed(5);
    f = boxed(6);
    g = boxed(7);
    h = boxed(8);
    i = boxed(9);
    j = boxed(10);
    k = boxed(11);
    l = boxed(12);
    m = boxed(13);
    n = boxed(14);
    o = make_list(100);
    r = sum5(a, b, c, d, e);
    CHECK(r == MGC_VAL_INT(15), "MGC_PARAM5 sum %ld", (long)MGC_INT_VAL(r));
    r = sum4(f, g, h, i);
    CHECK(r == MGC_VAL_INT(30), "MGC_PARAM4 sum %ld", (long)MGC_INT_VAL(r));
    r = sum3(j, k, l);
    CHECK(r == MGC_VAL_INT(33), "MGC_PARAM3 sum %ld", (long)MGC_INT_VAL(r));
    r = sum2(m, n);
    CHECK(r == MGC_VAL_INT(27), "MGC_PARAM2 sum %ld", (long)MGC_INT_VAL(r));
    check_param1(o, 99, &bad);
    CHECK(bad == 0, "MGC_PARAM1 value survived");
    CHECK(MGC_FIELD(a, 0) == MGC_VAL_INT(1) &&
              MGC_FIELD(e, 0) == MGC_VAL_INT(5) &&
              MGC_FIELD(i, 0) == MGC_VAL_INT(9) &&
              MGC_FIELD(l, 0) == MGC_VAL_INT(12) &&
              MGC_FIELD(n, 0) == MGC_VAL_INT(14) && list_ok(o, 100),
          "MGC_LOCAL1..5 values updated and intact");
    CHECK(!mgc_is_young(a) && !mgc_is_young(o), "locals promoted");
    MGC_DROP;
  }
  CHECK(mgc_tls_state->local_roots == before, "MGC_DROP restores the chain");

  /* Many collections with the value held only by a local root. */
  {
    int round, ok = 1;
    MGC_PARAM0;
    MGC_LOCAL2(x, y);
    x = make_list(test_scale(5000));
    for (round = 0; round < 20; round++) {
      y = make_list(round + 1);
      if (round % 3 == 0)
        mgc_minor_collection();
      else if (round % 3 == 1)
        mgc_major_slice(0);
      else
        mgc_full_major();
      if (!list_ok(x, test_scale(5000)) || !list_ok(y, round + 1))
        ok = 0;
    }
    CHECK(ok, "local roots through 20 collections");
    MGC_DROP;
  }
  CHECK(mgc_tls_state->local_roots == before, "chain restored again");
  CHECK_VERIFY("after locals");
}

static mgc_value g1, g2, g3;

static void test_classic_globals(void) {
  mgc_value stale;
  mgc_register_global_root(&g1);
  mgc_register_global_root(&g2);
  g1 = make_list(50);
  CHECK(mgc_is_young(g1), "fresh list young");
  mgc_minor_collection();
  CHECK(!mgc_is_young(g1) && list_ok(g1, 50), "global root updated by minor");
  mgc_full_major();
  churn(10000);
  mgc_full_major();
  CHECK(list_ok(g1, 50), "global root kept by full major");

  /* Removed while young: no longer updated. */
  g1 = make_list(10);
  g2 = g1;
  stale = g1;
  mgc_remove_global_root(&g1);
  mgc_minor_collection();
  CHECK(mgc_is_young(stale) && g1 == stale,
        "removed global root not updated (still the young address)");
  CHECK(g2 != stale && list_ok(g2, 10), "the other root was updated");
  g1 = MGC_UNIT;
  mgc_remove_global_root(&g2);
  g2 = MGC_UNIT;

  /* Registering the same slot again works. */
  mgc_register_global_root(&g1);
  g1 = make_list(7);
  mgc_full_major();
  CHECK(list_ok(g1, 7), "re-registered global root");
  mgc_remove_global_root(&g1);
  g1 = MGC_UNIT;
  CHECK_VERIFY("after classic globals");
}

static void test_generational(void) {
  mgc_value v, stale, atom;
  long i, n;

  mgc_register_global_root(&g3); /* keeper for removal tests */

  /* immediate -> young -> old -> young -> immediate */
  g1 = MGC_VAL_INT(5);
  mgc_register_generational_global_root(&g1);
  mgc_minor_collection();
  CHECK(g1 == MGC_VAL_INT(5), "immediate generational root unchanged");
  v = make_list(20);
  mgc_modify_generational_global_root(&g1, v);
  CHECK(mgc_is_young(g1), "generational root now young");
  mgc_minor_collection();
  CHECK(!mgc_is_young(g1) && list_ok(g1, 20), "young -> old by minor");
  mgc_full_major();
  churn(20000);
  mgc_full_major();
  CHECK(list_ok(g1, 20), "old generational root kept by full major");
  v = make_list(30);
  mgc_modify_generational_global_root(&g1, v);
  mgc_minor_collection();
  CHECK(!mgc_is_young(g1) && list_ok(g1, 30), "old -> young -> old");
  mgc_modify_generational_global_root(&g1, MGC_VAL_INT(-1));
  mgc_minor_collection();
  mgc_full_major();
  CHECK(g1 == MGC_VAL_INT(-1), "back to immediate");
  /* old value replaced by another old value */
  v = make_list(3);
  mgc_modify_generational_global_root(&g1, v);
  mgc_minor_collection();
  g3 = make_list(4);
  mgc_minor_collection();
  mgc_modify_generational_global_root(&g1, g3);
  g3 = MGC_UNIT;
  mgc_full_major();
  churn(20000);
  mgc_full_major();
  CHECK(list_ok(g1, 4), "old -> other old value kept");
  mgc_remove_generational_global_root(&g1);

  /* Static atom values. */
  atom = mgc_alloc(0, 3);
  g1 = atom;
  mgc_register_generational_global_root(&g1);
  mgc_minor_collection();
  mgc_full_major();
  CHECK(g1 == atom, "atom in generational root unchanged");
  mgc_modify_generational_global_root(&g1, make_list(2));
  mgc_minor_collection();
  CHECK(list_ok(g1, 2), "atom -> young -> old");
  mgc_modify_generational_global_root(&g1, atom);
  mgc_full_major();
  CHECK(g1 == atom, "back to atom");
  mgc_remove_generational_global_root(&g1);

  /* Register while young, remove while young: not updated afterwards. */
  g1 = make_list(6);
  mgc_register_generational_global_root(&g1);
  g3 = g1;
  stale = g1;
  mgc_remove_generational_global_root(&g1);
  mgc_minor_collection();
  CHECK(g1 == stale && g3 != stale && list_ok(g3, 6),
        "removed young generational root not updated");

  /* Register while old, remove while old. */
  g1 = g3;
  mgc_register_generational_global_root(&g1);
  g3 = MGC_UNIT;
  mgc_full_major();
  churn(20000);
  mgc_full_major();
  CHECK(list_ok(g1, 6), "registered-while-old root keeps its value");
  g3 = g1;
  mgc_remove_generational_global_root(&g1);
  mgc_full_major();
  CHECK(list_ok(g3, 6) && g1 == g3, "removed old root left alone");

  /* Old set, then young again (young2old then back), removed while young:
     must not be scanned. */
  g1 = g3;
  mgc_register_generational_global_root(&g1);
  v = make_list(8);
  mgc_modify_generational_global_root(&g1, v);
  mgc_minor_collection(); /* young set -> old set */
  v = make_list(9);
  mgc_modify_generational_global_root(&g1, v);
  g3 = g1;
  stale = g1;
  mgc_remove_generational_global_root(&g1);
  mgc_minor_collection();
  CHECK(g1 == stale && mgc_is_young(stale),
        "removed young2old root not scanned");
  CHECK(list_ok(g3, 9), "its value kept elsewhere");

  /* Registered while immediate, removed while immediate. */
  g1 = MGC_VAL_INT(3);
  mgc_register_generational_global_root(&g1);
  mgc_remove_generational_global_root(&g1);
  g1 = make_list(2); /* plain store: no longer a root */
  stale = g1;
  mgc_minor_collection();
  CHECK(g1 == stale, "root removed while immediate is not scanned");

  /* Old value, then immediate, then removed. */
  g1 = MGC_UNIT;
  mgc_register_generational_global_root(&g1);
  mgc_modify_generational_global_root(&g1, make_list(5));
  mgc_minor_collection();
  mgc_modify_generational_global_root(&g1, MGC_VAL_INT(0));
  mgc_remove_generational_global_root(&g1);
  mgc_full_major();
  g3 = MGC_UNIT;
  mgc_remove_global_root(&g3);
  CHECK_VERIFY("after generational transitions");

  /* Many roots at once, random transitions. */
  n = test_scale(2000);
  {
    mgc_value *roots = malloc((size_t)n * sizeof *roots);
    long *expect = malloc((size_t)n * sizeof *expect);
    long step, steps = test_scale(200000), bad = 0;
    for (i = 0; i < n; i++) {
      roots[i] = i % 3 == 0 ? MGC_VAL_INT(i) : make_list(1 + i % 4);
      expect[i] = i % 3 == 0 ? -1 - i : 1 + i % 4;
      mgc_register_generational_global_root(&roots[i]);
    }
    for (step = 0; step < steps; step++) {
      long k = (long)test_rand_below((uint64_t)n);
      unsigned op = (unsigned)test_rand_below(10);
      if (op < 5) {
        long len = 1 + (long)test_rand_below(5);
        v = make_list(len);
        mgc_modify_generational_global_root(&roots[k], v);
        expect[k] = len;
      } else if (op < 7) {
        mgc_modify_generational_global_root(&roots[k], MGC_VAL_INT(k));
        expect[k] = -1 - k;
      } else if (op < 9) {
        long src = (long)test_rand_below((uint64_t)n);
        mgc_modify_generational_global_root(&roots[k], roots[src]);
        expect[k] = expect[src] < 0 ? -1 - k : expect[src];
        if (expect[src] < 0)
          mgc_modify_generational_global_root(&roots[k], MGC_VAL_INT(k));
      } else {
        mgc_remove_generational_global_root(&roots[k]);
        mgc_register_generational_global_root(&roots[k]);
      }
      if (step % 997 == 0)
        mgc_minor_collection();
      if (step % 20011 == 0)
        mgc_full_major();
    }
    mgc_minor_collection();
    mgc_full_major();
    for (i = 0; i < n; i++) {
      if (expect[i] < 0) {
        if (roots[i] != MGC_VAL_INT(i))
          bad++;
      } else if (!list_ok(roots[i], expect[i]) || mgc_is_young(roots[i])) {
        bad++;
      }
    }
    CHECK(bad == 0, "%ld of %ld generational roots wrong after %ld steps", bad,
          n, steps);
    CHECK_VERIFY("after many generational roots");
    for (i = 0; i < n; i++)
      mgc_remove_generational_global_root(&roots[i]);
    free(roots);
    free(expect);
  }
  g1 = g2 = g3 = MGC_UNIT;
}

#define NHOOK 10
static mgc_value hook_slots[NHOOK];
static long hook_calls;

static void scan_hook(mgc_scanning_action action, void *data) {
  int i;
  hook_calls++;
  for (i = 0; i < NHOOK; i++)
    action(data, hook_slots[i], &hook_slots[i]);
}

static void test_scan_hook(void) {
  int i, ok = 1;
  mgc_value stale;
  for (i = 0; i < NHOOK; i++)
    hook_slots[i] = MGC_UNIT;
  mgc_set_scan_roots_hook(scan_hook);
  for (i = 0; i < NHOOK; i++) {
    mgc_value l = i % 4 == 3 ? MGC_VAL_INT(i) : make_list(i + 1);
    hook_slots[i] = l;
  }
  hook_calls = 0;
  mgc_minor_collection();
  CHECK(hook_calls >= 1, "scan hook called by a minor collection (%ld)",
        hook_calls);
  for (i = 0; i < NHOOK; i++)
    if (i % 4 == 3
            ? hook_slots[i] != MGC_VAL_INT(i)
            : (mgc_is_young(hook_slots[i]) || !list_ok(hook_slots[i], i + 1)))
      ok = 0;
  CHECK(ok, "hook slots updated and intact after minor");
  hook_calls = 0;
  mgc_full_major();
  churn(20000);
  mgc_full_major();
  CHECK(hook_calls >= 1, "scan hook called by full major");
  for (i = 0; i < NHOOK; i++)
    if (i % 4 != 3 && !list_ok(hook_slots[i], i + 1))
      ok = 0;
  CHECK(ok, "hook slots kept by the major GC");
  CHECK_VERIFY("with scan hook");

  mgc_set_scan_roots_hook(NULL);
  hook_slots[0] = make_list(3);
  stale = hook_slots[0];
  hook_calls = 0;
  mgc_minor_collection();
  CHECK(hook_calls == 0, "hook removed: not called");
  CHECK(hook_slots[0] == stale, "hook removed: slot not updated");
  for (i = 0; i < NHOOK; i++)
    hook_slots[i] = MGC_UNIT;
}

int main(int argc, char **argv) {
  int rc;
  test_seed(argc, argv, 1234);
  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  mgc_set_fatal_handler(check_fatal_handler);
  g1 = g2 = g3 = MGC_UNIT;
  test_locals();
  test_classic_globals();
  test_generational();
  test_scan_hook();
  CHECK_VERIFY("end");
  mgc_shutdown();
  return check_done();
}
