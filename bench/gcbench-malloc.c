/* gcbench-malloc.c: the GCBench shape with manual memory: each tree is
 * freed when the next one replaces it.  Built with -DUSE_MIMALLOC it is the
 * mimalloc peer.
 * Usage: gcbench-malloc [REPS]  (default 10)
 */
#include "bench_util.h"
#include "malloc_peer.h"

enum {
  STRETCH_DEPTH = 18,
  LONG_LIVED_DEPTH = 16,
  ARRAY_SIZE = 500000,
  MIN_DEPTH = 4,
  MAX_DEPTH = 16
};

struct node {
  struct node *left, *right;
  long i, j;
};

static long long tree_size(int depth) { return (1LL << (depth + 1)) - 1; }

static struct node *new_node(struct node *left, struct node *right) {
  struct node *n = bench_check_alloc(peer_malloc(sizeof *n));
  n->left = left;
  n->right = right;
  n->i = n->j = 0;
  return n;
}

static void populate(int depth, struct node *node) {
  if (depth <= 0)
    return;
  depth--;
  node->left = new_node(NULL, NULL);
  node->right = new_node(NULL, NULL);
  populate(depth, node->left);
  populate(depth, node->right);
}

static struct node *make_tree(int depth) {
  struct node *left;
  if (depth <= 0)
    return new_node(NULL, NULL);
  left = make_tree(depth - 1);
  return new_node(left, make_tree(depth - 1));
}

static long long count(const struct node *node) {
  long long c = 1;
  while (node->left != NULL) {
    c += count(node->left);
    node = node->right;
    c++;
  }
  return c;
}

static void release(struct node *node) {
  if (node == NULL)
    return;
  release(node->left);
  release(node->right);
  peer_free(node);
}

static long long time_construction(int depth) {
  long long n = 2 * tree_size(STRETCH_DEPTH) / tree_size(depth), sum = 0;
  struct node *tree = NULL;
  for (long long i = 0; i < n; i++) {
    release(tree);
    tree = new_node(NULL, NULL);
    populate(depth, tree);
  }
  sum += n * count(tree);
  for (long long i = 0; i < n; i++) {
    release(tree);
    tree = make_tree(depth);
  }
  sum += n * count(tree);
  release(tree);
  return sum;
}

int main(int argc, char **argv) {
  long long reps = bench_arg(argc, argv, 1, 10), c, sum = 0;
  double asum = 0, *array;
  struct node *long_lived, *stretch;
  stretch = make_tree(STRETCH_DEPTH);
  c = count(stretch);
  release(stretch);
  printf("stretch tree of depth %d\t check: %lld\n", STRETCH_DEPTH, c);
  sum += c;
  long_lived = new_node(NULL, NULL);
  populate(LONG_LIVED_DEPTH, long_lived);
  array = bench_check_alloc(peer_malloc(ARRAY_SIZE * sizeof *array));
  for (int i = 0; i < ARRAY_SIZE; i++)
    array[i] = i >= 1 && i < ARRAY_SIZE / 2 ? 1.0 / i : 0.0;
  for (long long r = 0; r < reps; r++)
    for (int d = MIN_DEPTH; d <= MAX_DEPTH; d += 2)
      sum += time_construction(d);
  c = count(long_lived);
  release(long_lived);
  printf("long lived tree of depth %d\t check: %lld\n", LONG_LIVED_DEPTH, c);
  sum += c;
  for (int i = 0; i < ARRAY_SIZE; i++)
    asum += array[i];
  peer_free(array);
  printf("array sum: %.6f\n", asum);
  printf("checksum: %lld\n", sum);
  return 0;
}
