/* mt-binarytrees-malloc.c: binarytrees on D pthreads with manual memory
 * (each tree freed once counted; mt-binarytrees.c splits the work the same
 * way).  Built with -DUSE_MIMALLOC it is the mimalloc peer.
 * Usage: mt-binarytrees-malloc [N [D]]  (defaults 20, 2)
 */
#include "malloc_peer.h"
#include "bench_util.h"
#include <pthread.h>
#include <stdint.h>

enum { MIN_DEPTH = 4, MAX_THREADS = 64, MAX_DEPTHS = 32 };

struct node {
  struct node *left, *right;
};

static int max_depth, threads;
/* checks[k][j]: thread k's sum for depth MIN_DEPTH + 2j. */
static long long checks[MAX_THREADS][MAX_DEPTHS];

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

static long long check_release(struct node *n) {
  long long c = check(n);
  release(n);
  return c;
}

static void *run_range(void *arg) {
  int k = (int)(intptr_t)arg;
  for (int d = MIN_DEPTH, j = 0; d <= max_depth; d += 2, j++) {
    long long iters = 1LL << (max_depth - d + MIN_DEPTH);
    long long lo = iters * k / threads, hi = iters * (k + 1) / threads;
    long long c = 0;
    for (long long i = lo; i < hi; i++)
      c += check_release(make(d));
    checks[k][j] = c;
  }
  return NULL;
}

int main(int argc, char **argv) {
  int n = (int)bench_arg(argc, argv, 1, 20);
  pthread_t tid[MAX_THREADS];
  long long c, sum = 0;
  struct node *long_lived;
  threads = (int)bench_arg(argc, argv, 2, 2);
  max_depth = n < 6 ? 6 : n;
  if (threads > MAX_THREADS || max_depth > 2 * MAX_DEPTHS) {
    fprintf(stderr, "%s: at most %d threads, depth %d\n", argv[0],
            MAX_THREADS, 2 * MAX_DEPTHS);
    return 2;
  }
  c = check_release(make(max_depth + 1));
  printf("stretch tree of depth %d\t check: %lld\n", max_depth + 1, c);
  sum += c;
  long_lived = make(max_depth);
  for (int k = 1; k < threads; k++)
    if (pthread_create(&tid[k], NULL, run_range, (void *)(intptr_t)k) != 0) {
      fputs("pthread_create failed\n", stderr);
      return 3;
    }
  run_range((void *)(intptr_t)0);
  for (int k = 1; k < threads; k++)
    pthread_join(tid[k], NULL);
  for (int d = MIN_DEPTH, j = 0; d <= max_depth; d += 2, j++) {
    c = 0;
    for (int k = 0; k < threads; k++)
      c += checks[k][j];
    printf("%lld\t trees of depth %d\t check: %lld\n",
           1LL << (max_depth - d + MIN_DEPTH), d, c);
    sum += c;
  }
  c = check_release(long_lived);
  printf("long lived tree of depth %d\t check: %lld\n", max_depth, c);
  sum += c;
  printf("checksum: %lld\n", sum);
  return 0;
}
