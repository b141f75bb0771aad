/* gcbench.c: the Ellis/Kovac/Boehm GCBench shape on mgc.  A node is a
 * four-field block: left, right (empty: the integer 0) and two integers.
 * Top-down trees store children into a node that may have been promoted
 * meanwhile, so those stores go through mgc_modify.
 * Usage: gcbench [REPS]  (default 10)
 */
#include "mgc_bench.h"

enum {
  STRETCH_DEPTH = 18,
  LONG_LIVED_DEPTH = 16,
  ARRAY_SIZE = 500000,
  MIN_DEPTH = 4,
  MAX_DEPTH = 16
};

static long long tree_size(int depth) { return (1LL << (depth + 1)) - 1; }

/* A node without children.  Children are never passed to an allocating
   function: the allocation may move them (make_tree reads its rooted
   children after allocating the parent). */
static mgc_value new_leaf(void) {
  mgc_value n = mgc_alloc_small(4, 0);
  MGC_FIELD(n, 0) = MGC_UNIT;
  MGC_FIELD(n, 1) = MGC_UNIT;
  MGC_FIELD(n, 2) = MGC_VAL_INT(0);
  MGC_FIELD(n, 3) = MGC_VAL_INT(0);
  return n;
}

/* Gives node two children, then their subtrees, depth levels deep. */
static void populate(int depth, mgc_value node) {
  mgc_value child;
  if (depth <= 0)
    return;
  MGC_PARAM1(node);
  depth--;
  child = new_leaf();
  mgc_modify(&MGC_FIELD(node, 0), child);
  child = new_leaf();
  mgc_modify(&MGC_FIELD(node, 1), child);
  populate(depth, MGC_FIELD(node, 0));
  populate(depth, MGC_FIELD(node, 1));
  MGC_RETURN0;
}

/* A tree built bottom-up, children first. */
static mgc_value make_tree(int depth) {
  mgc_value n;
  if (depth <= 0)
    return new_leaf();
  MGC_PARAM0;
  MGC_LOCAL2(left, right);
  left = make_tree(depth - 1);
  right = make_tree(depth - 1);
  n = mgc_alloc_small(4, 0);
  MGC_FIELD(n, 0) = left;
  MGC_FIELD(n, 1) = right;
  MGC_FIELD(n, 2) = MGC_VAL_INT(0);
  MGC_FIELD(n, 3) = MGC_VAL_INT(0);
  MGC_RETURN(n);
}

static long long count(mgc_value node) {
  long long c = 1;
  while (MGC_IS_BLOCK(MGC_FIELD(node, 0))) {
    c += count(MGC_FIELD(node, 0));
    node = MGC_FIELD(node, 1);
    c++;
  }
  return c;
}

/* n top-down and n bottom-up trees of the given depth. */
static long long time_construction(int depth) {
  long long n = 2 * tree_size(STRETCH_DEPTH) / tree_size(depth), sum = 0;
  MGC_PARAM0;
  MGC_LOCAL1(tree);
  for (long long i = 0; i < n; i++) {
    tree = new_leaf();
    populate(depth, tree);
  }
  sum += n * count(tree);
  for (long long i = 0; i < n; i++) {
    /* The previous tree is dead while the next one is built (as in the
       OCaml peer, where the compiler knows the old value is not used). */
    tree = MGC_UNIT;
    tree = make_tree(depth);
  }
  sum += n * count(tree);
  MGC_DROP;
  return sum;
}

int main(int argc, char **argv) {
  long long reps = bench_arg(argc, argv, 1, 10), c, sum = 0;
  double asum = 0;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL2(long_lived, array);
    c = count(make_tree(STRETCH_DEPTH));
    printf("stretch tree of depth %d\t check: %lld\n", STRETCH_DEPTH, c);
    sum += c;
    long_lived = new_leaf();
    populate(LONG_LIVED_DEPTH, long_lived);
    array = mgc_alloc_double_array(ARRAY_SIZE);
    for (int i = 0; i < ARRAY_SIZE; i++)
      mgc_store_double_field(array, i,
                             i >= 1 && i < ARRAY_SIZE / 2 ? 1.0 / i : 0.0);
    for (long long r = 0; r < reps; r++)
      for (int d = MIN_DEPTH; d <= MAX_DEPTH; d += 2)
        sum += time_construction(d);
    c = count(long_lived);
    printf("long lived tree of depth %d\t check: %lld\n", LONG_LIVED_DEPTH,
           c);
    sum += c;
    for (int i = 0; i < ARRAY_SIZE; i++)
      asum += MGC_DOUBLE_FIELD(array, i);
    MGC_DROP;
  }
  printf("array sum: %.6f\n", asum);
  printf("checksum: %lld\n", sum);
  mgc_bench_finish();
  return 0;
}
