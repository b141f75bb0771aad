/* binarytrees.c: the Benchmarks Game binary-trees workload on mgc.  A node
 * is a two-field block; a leaf holds the integer 0 in both fields.
 *
 * Every binarytrees program here (mgc, its peers, mt-binarytrees) walks a
 * tree in the order of OCaml's compiled code for bench/ocaml/binarytrees.ml:
 * ocamlopt evaluates a constructor's arguments and the operands of + right
 * to left, so `Node (make (d - 1), make (d - 1))` builds the right subtree,
 * then the left one, then the node, and `1 + check l + check r` counts the
 * right subtree first.  The order decides where the nodes lie in memory and
 * in which order the counting walk reads them.
 * Usage: binarytrees [N]  (default 20)
 */
#include "mgc_bench.h"

/* A tree of the given depth: right subtree, left subtree, node. */
static mgc_value make(int depth) {
  mgc_value node;
  if (depth == 0) {
    node = mgc_alloc_small(2, 0);
    MGC_FIELD(node, 0) = MGC_VAL_INT(0);
    MGC_FIELD(node, 1) = MGC_VAL_INT(0);
    return node;
  }
  MGC_PARAM0;
  MGC_LOCAL2(left, right);
  right = make(depth - 1);
  left = make(depth - 1);
  node = mgc_alloc_small(2, 0);
  MGC_FIELD(node, 0) = left;
  MGC_FIELD(node, 1) = right;
  MGC_RETURN(node);
}

/* Number of nodes; allocates nothing, so no roots are needed. */
static long long check(mgc_value node) {
  if (MGC_IS_INT(MGC_FIELD(node, 0)))
    return 1;
  long long c = check(MGC_FIELD(node, 1));
  return c + 1 + check(MGC_FIELD(node, 0));
}

int main(int argc, char **argv) {
  int n = (int)bench_arg(argc, argv, 1, 20);
  int min_depth = 4, max_depth = n < 6 ? 6 : n;
  long long c, sum = 0;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL1(long_lived);
    c = check(make(max_depth + 1));
    printf("stretch tree of depth %d\t check: %lld\n", max_depth + 1, c);
    sum += c;
    long_lived = make(max_depth);
    for (int d = min_depth; d <= max_depth; d += 2) {
      long long iters = 1LL << (max_depth - d + min_depth);
      c = 0;
      for (long long i = 0; i < iters; i++)
        c += check(make(d));
      printf("%lld\t trees of depth %d\t check: %lld\n", iters, d, c);
      sum += c;
    }
    c = check(long_lived);
    printf("long lived tree of depth %d\t check: %lld\n", max_depth, c);
    sum += c;
    MGC_DROP;
  }
  printf("checksum: %lld\n", sum);
  mgc_bench_finish();
  return 0;
}
