/* binarytrees-boehm.c: the binarytrees workload on the Boehm-Demers-Weiser
 * collector (GC_MALLOC nodes; a leaf has two NULL children).
 * Usage: binarytrees-boehm [N]  (default 20)
 */
#include "bench_util.h"
#include <gc.h>

struct node {
  struct node *left, *right;
};

/* Right subtree, left subtree, node: OCaml's order (binarytrees.c). */
static struct node *make(int depth) {
  struct node *left = NULL, *right = NULL;
  if (depth > 0) {
    right = make(depth - 1);
    left = make(depth - 1);
  }
  struct node *n = bench_check_alloc(GC_MALLOC(sizeof *n));
  n->left = left;
  n->right = right;
  return n;
}

static long long check(const struct node *n) {
  if (n->left == NULL)
    return 1;
  long long c = check(n->right);
  return c + 1 + check(n->left);
}

int main(int argc, char **argv) {
  int n = (int)bench_arg(argc, argv, 1, 20);
  int min_depth = 4, max_depth = n < 6 ? 6 : n;
  long long c, sum = 0;
  struct node *long_lived;
  GC_INIT();
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
  printf("checksum: %lld\n", sum);
  return 0;
}
