/* binarytrees-malloc.c: the binarytrees workload with manual memory: each
 * tree is freed once counted.  Built with -DUSE_MIMALLOC it is the mimalloc
 * peer.
 * Usage: binarytrees-malloc [N]  (default 20)
 */
#include "bench_util.h"
#include "malloc_peer.h"

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
  struct node *n = bench_check_alloc(peer_malloc(sizeof *n));
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

/* Frees a node before its subtrees, the reverse of make's order, so that
   the next tree reuses the blocks in the order this one had them.  Of the
   three orders measured with mimalloc (this, and children first either
   way), it was the fastest. */
static void release(struct node *n) {
  struct node *left = n->left, *right = n->right;
  peer_free(n);
  if (left != NULL) {
    release(left);
    release(right);
  }
}

/* Counts the tree, then frees it. */
static long long check_release(struct node *n) {
  long long c = check(n);
  release(n);
  return c;
}

int main(int argc, char **argv) {
  int n = (int)bench_arg(argc, argv, 1, 20);
  int min_depth = 4, max_depth = n < 6 ? 6 : n;
  long long c, sum = 0;
  struct node *long_lived;
  c = check_release(make(max_depth + 1));
  printf("stretch tree of depth %d\t check: %lld\n", max_depth + 1, c);
  sum += c;
  long_lived = make(max_depth);
  for (int d = min_depth; d <= max_depth; d += 2) {
    long long iters = 1LL << (max_depth - d + min_depth);
    c = 0;
    for (long long i = 0; i < iters; i++)
      c += check_release(make(d));
    printf("%lld\t trees of depth %d\t check: %lld\n", iters, d, c);
    sum += c;
  }
  c = check_release(long_lived);
  printf("long lived tree of depth %d\t check: %lld\n", max_depth, c);
  sum += c;
  printf("checksum: %lld\n", sum);
  return 0;
}
