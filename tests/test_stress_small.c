/* test_stress_small: single-domain churn with checked results.
 *
 * Phases: lists replaced in a table held by a major block (old-to-young
 * stores), binary trees built and checked, large arrays of young cells,
 * minor heap resizing in the middle (values survive, mgc_is_young semantics
 * hold), and mgc_compact after dropping a big structure (heap_words goes
 * down).  Contents are checked after every phase.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "check.h"

#define NSLOTS 300 /* a large (major) table */

static mgc_value table;  /* classic global root: NSLOTS fields */
static mgc_value tmp[4]; /* classic global roots */
static long expect_len[NSLOTS];
static long expect_sum[NSLOTS];

/* A young list of n cells [seed + i] for i = n-1 .. 0. */
static mgc_value make_list(long n, long seed) {
  long i;
  MGC_PARAM0;
  MGC_LOCAL1(l);
  for (i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(seed + i);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

static int list_check(mgc_value l, long n, long sum) {
  long k = 0, s = 0;
  for (; MGC_IS_BLOCK(l); l = MGC_FIELD(l, 1)) {
    if (MGC_TAG_VAL(l) != 0 || MGC_WOSIZE_VAL(l) != 2)
      return 0;
    s += MGC_INT_VAL(MGC_FIELD(l, 0));
    k++;
  }
  return l == MGC_UNIT && k == n && s == sum;
}

static long list_sum(long n, long seed) { return n * seed + n * (n - 1) / 2; }

static int check_table(void) {
  int i, bad = 0;
  for (i = 0; i < NSLOTS; i++)
    if (!list_check(MGC_FIELD(table, i), expect_len[i], expect_sum[i]))
      bad++;
  return bad;
}

static void phase_lists(long rounds) {
  long r;
  int bad = 0;
  for (r = 0; r < rounds; r++) {
    int i = (int)test_rand_below(NSLOTS);
    long n = (long)test_rand_below(40), seed = (long)test_rand_below(1000);
    mgc_value l;
    if (!list_check(MGC_FIELD(table, i), expect_len[i], expect_sum[i]))
      bad++;
    l = make_list(n, seed);
    mgc_modify(&MGC_FIELD(table, i), l);
    expect_len[i] = n;
    expect_sum[i] = list_sum(n, seed);
    if (r % 5000 == 4999)
      mgc_major_slice(0);
  }
  CHECK(bad == 0, "lists: %d replaced lists were wrong", bad);
  mgc_minor_collection();
  CHECK(check_table() == 0, "lists intact after minor");
  mgc_full_major();
  CHECK(check_table() == 0, "lists intact after full major");
  CHECK_VERIFY("after lists");
}

/* Tree node: tag 1 [left, key, right]; leaves are MGC_UNIT. */
static mgc_value make_tree(int depth, long key) {
  MGC_PARAM0;
  MGC_LOCAL2(l, r);
  mgc_value n;
  if (depth == 0)
    MGC_RETURN(MGC_UNIT);
  l = make_tree(depth - 1, 2 * key);
  r = make_tree(depth - 1, 2 * key + 1);
  n = mgc_alloc_small(3, 1);
  MGC_FIELD(n, 0) = l;
  MGC_FIELD(n, 1) = MGC_VAL_INT(key);
  MGC_FIELD(n, 2) = r;
  MGC_RETURN(n);
}

static int tree_check(mgc_value t, int depth, long key, long *nodes) {
  if (depth == 0)
    return t == MGC_UNIT;
  if (!MGC_IS_BLOCK(t) || MGC_TAG_VAL(t) != 1 || MGC_WOSIZE_VAL(t) != 3 ||
      MGC_FIELD(t, 1) != MGC_VAL_INT(key))
    return 0;
  (*nodes)++;
  return tree_check(MGC_FIELD(t, 0), depth - 1, 2 * key, nodes) &&
         tree_check(MGC_FIELD(t, 2), depth - 1, 2 * key + 1, nodes);
}

static void phase_trees(int depth, int count) {
  int k, bad = 0;
  long nodes;
  tmp[0] = make_tree(depth, 1);
  for (k = 0; k < count; k++) {
    tmp[1] = make_tree(depth - 2, 1); /* garbage-ish, replaced */
    nodes = 0;
    if (!tree_check(tmp[1], depth - 2, 1, &nodes) ||
        nodes != (1L << (depth - 2)) - 1)
      bad++;
    /* Mutate the old tree: swap in a young subtree at the leftmost leaf's
       parent position and back. */
    {
      mgc_value sub = make_tree(2, 4);
      mgc_value saved = MGC_FIELD(tmp[0], 0);
      tmp[2] = saved;
      mgc_modify(&MGC_FIELD(tmp[0], 0), sub);
      mgc_minor_collection();
      nodes = 0;
      if (!tree_check(MGC_FIELD(tmp[0], 0), 2, 4, &nodes))
        bad++;
      mgc_modify(&MGC_FIELD(tmp[0], 0), tmp[2]);
      tmp[2] = MGC_UNIT;
    }
  }
  CHECK(bad == 0, "trees: %d bad", bad);
  mgc_full_major();
  nodes = 0;
  CHECK(tree_check(tmp[0], depth, 1, &nodes) && nodes == (1L << depth) - 1,
        "big tree of depth %d intact (%ld nodes)", depth, nodes);
  tmp[0] = tmp[1] = MGC_UNIT;
  CHECK_VERIFY("after trees");
}

static void phase_arrays(long rounds) {
  long r;
  int bad = 0;
  size_t i, n = 1000;
  tmp[0] = mgc_alloc(n, 0);
  for (r = 0; r < rounds; r++) {
    size_t k = (size_t)test_rand_below(n);
    mgc_value c = mgc_alloc_small(2, 3);
    MGC_FIELD(c, 0) = MGC_VAL_INT((long)k);
    MGC_FIELD(c, 1) = MGC_VAL_INT(r);
    mgc_modify(&MGC_FIELD(tmp[0], k), c);
    if (r % 100000 == 99999)
      mgc_full_major();
  }
  mgc_minor_collection();
  for (i = 0; i < n; i++) {
    mgc_value c = MGC_FIELD(tmp[0], i);
    if (c == MGC_UNIT)
      continue;
    if (mgc_is_young(c) || MGC_TAG_VAL(c) != 3 ||
        MGC_FIELD(c, 0) != MGC_VAL_INT((long)i))
      bad++;
  }
  CHECK(bad == 0, "array of young cells: %d bad", bad);
  tmp[0] = MGC_UNIT;
}

static void phase_resize(void) {
  static const size_t sizes[] = {257, 4096, 1 << 20, 300, 262144};
  size_t k;
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    mgc_value fresh;
    long i;
    int bad = 0;
    tmp[1] = make_list(50, (long)k);
    mgc_set_minor_heap_size(sizes[k]);
    CHECK(!mgc_is_young(tmp[1]) &&
              list_check(tmp[1], 50, list_sum(50, (long)k)),
          "resize to %zu: young list promoted and intact", sizes[k]);
    CHECK(check_table() == 0, "resize to %zu: table intact", sizes[k]);
    fresh = make_list(1, 0);
    CHECK(mgc_is_young(fresh), "resize to %zu: new block is young", sizes[k]);
    /* Work in the new heap size: many minor collections. */
    for (i = 0; i < test_scale(50000); i++) {
      int s = (int)test_rand_below(NSLOTS);
      long n = (long)test_rand_below(5), seed = i;
      mgc_value l = make_list(n, seed);
      mgc_modify(&MGC_FIELD(table, s), l);
      expect_len[s] = n;
      expect_sum[s] = list_sum(n, seed);
    }
    bad = check_table();
    CHECK(bad == 0, "resize to %zu: work afterwards ok (%d bad)", sizes[k],
          bad);
    CHECK_VERIFY("after resize");
  }
  tmp[1] = MGC_UNIT;
}

static void phase_compact(void) {
  long n = test_scale(2000000), i;
  mgc_stats s0, s1, s2;
  int ok;
  mgc_full_major();
  mgc_compact();
  mgc_get_stats(&s0);
  tmp[3] = make_list(n, 7);
  mgc_full_major();
  mgc_get_stats(&s1);
  if (n >= 100000)
    CHECK(s1.heap_words >= s0.heap_words + (uint64_t)(2 * n),
          "heap grew for the big list: %llu -> %llu",
          (unsigned long long)s0.heap_words, (unsigned long long)s1.heap_words);
  mgc_compact();
  ok = list_check(tmp[3], n, list_sum(n, 7));
  CHECK(ok, "big list intact after compact");
  CHECK(check_table() == 0, "table intact after compact");
  tmp[3] = MGC_UNIT;
  mgc_compact();
  mgc_get_stats(&s2);
  CHECK(s2.compactions >= s0.compactions + 2, "compactions counted (%llu)",
        (unsigned long long)s2.compactions);
  if (n >= 100000) {
    CHECK(s2.heap_words + (uint64_t)n <= s1.heap_words,
          "heap_words down after drop + compact: %llu -> %llu",
          (unsigned long long)s1.heap_words, (unsigned long long)s2.heap_words);
  } else {
    CHECK(s2.heap_words <= s1.heap_words,
          "heap_words not up after drop + compact: %llu -> %llu",
          (unsigned long long)s1.heap_words, (unsigned long long)s2.heap_words);
  }
  CHECK(s2.top_heap_words >= s1.heap_words, "top_heap_words kept the peak");
  /* The heap still works after giving memory back. */
  for (i = 0; i < 5; i++)
    phase_lists(test_scale(20000));
  CHECK_VERIFY("after compact");
}

int main(int argc, char **argv) {
  int i, rc;
  test_seed(argc, argv, 777);
  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  mgc_set_fatal_handler(check_fatal_handler);
  table = mgc_alloc(NSLOTS, 0);
  mgc_register_global_root(&table);
  for (i = 0; i < 4; i++) {
    tmp[i] = MGC_UNIT;
    mgc_register_global_root(&tmp[i]);
  }
  CHECK(!mgc_is_young(table), "the table is a major block");
  phase_lists(test_scale(300000));
  phase_trees(test_scale(1 << 16) >= (1 << 16) ? 16 : 8, (int)test_scale(40));
  phase_arrays(test_scale(400000));
  phase_lists(test_scale(100000));
  phase_resize();
  phase_compact();
  CHECK(check_table() == 0, "table intact at the end");
  CHECK_VERIFY("end");
  mgc_remove_global_root(&table);
  for (i = 0; i < 4; i++)
    mgc_remove_global_root(&tmp[i]);
  mgc_shutdown();
  return check_done();
}
