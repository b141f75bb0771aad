/* mt-binarytrees.c: binarytrees on D mgc domains.  The iterations of each
 * depth are split into D contiguous ranges; the main domain builds the
 * stretch and long-lived trees, spawns D-1 domains for ranges 1..D-1 and
 * runs range 0 itself.  Same output as binarytrees N.
 * Usage: mt-binarytrees [N [D]]  (defaults 20, 2)
 */
#include "mgc_bench.h"

enum { MIN_DEPTH = 4, MAX_DOMAINS = 64, MAX_DEPTHS = 32 };

static int max_depth, domains;
/* checks[k][j]: domain k's sum for depth MIN_DEPTH + 2j, written by domain
   k only, read by the main domain after joining it. */
static long long checks[MAX_DOMAINS][MAX_DEPTHS];

/* Right subtree, left subtree, node: OCaml's order (binarytrees.c). */
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

static long long check(mgc_value node) {
  if (MGC_IS_INT(MGC_FIELD(node, 0)))
    return 1;
  long long c = check(MGC_FIELD(node, 1));
  return c + 1 + check(MGC_FIELD(node, 0));
}

/* check with safepoints, for trees of the given depth: walking a big tree
   allocates nothing, and the other domains' collections must not wait for
   the whole walk (OCaml 5 polls in every function prologue).  A poll may
   move young nodes, so a node above the small subtrees is a root until its
   children are read; then its root slot holds the left child while the
   right one is counted, and the node itself is dead, as in the OCaml peer
   (`1 + check l + check r` counts r first and keeps only l).  Subtrees of
   depth < 8 (under 512 nodes, a few microseconds) are counted without
   polling. */
static long long check_polling(mgc_value node, int depth) {
  if (depth < 8)
    return check(node);
  MGC_PARAM1(node);
  mgc_poll();
  mgc_value right = MGC_FIELD(node, 1);
  node = MGC_FIELD(node, 0);
  long long c = check_polling(right, depth - 1);
  c += 1 + check_polling(node, depth - 1);
  MGC_DROP;
  return c;
}

/* Range k of every depth; arg is k as an integer. */
static mgc_value run_range(mgc_value arg) {
  int k = (int)MGC_INT_VAL(arg);
  for (int d = MIN_DEPTH, j = 0; d <= max_depth; d += 2, j++) {
    long long iters = 1LL << (max_depth - d + MIN_DEPTH);
    long long lo = iters * k / domains, hi = iters * (k + 1) / domains;
    long long c = 0;
    for (long long i = lo; i < hi; i++)
      c += check_polling(make(d), d);
    checks[k][j] = c;
  }
  return MGC_UNIT;
}

int main(int argc, char **argv) {
  int n = (int)bench_arg(argc, argv, 1, 20);
  mgc_domain *spawned[MAX_DOMAINS];
  long long c, sum = 0;
  domains = (int)bench_arg(argc, argv, 2, 2);
  max_depth = n < 6 ? 6 : n;
  if (domains > MAX_DOMAINS || max_depth > 2 * MAX_DEPTHS) {
    fprintf(stderr, "%s: at most %d domains, depth %d\n", argv[0], MAX_DOMAINS,
            2 * MAX_DEPTHS);
    return 2;
  }
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL1(long_lived);
    c = check_polling(make(max_depth + 1), max_depth + 1);
    printf("stretch tree of depth %d\t check: %lld\n", max_depth + 1, c);
    sum += c;
    long_lived = make(max_depth);
    for (int k = 1; k < domains; k++) {
      spawned[k] = mgc_domain_spawn(run_range, MGC_VAL_INT(k));
      if (spawned[k] == NULL) {
        fprintf(stderr, "mgc_domain_spawn: %s\n",
                mgc_strerror(mgc_last_error()));
        return 3;
      }
    }
    run_range(MGC_VAL_INT(0));
    for (int k = 1; k < domains; k++)
      mgc_domain_join(spawned[k]);
    for (int d = MIN_DEPTH, j = 0; d <= max_depth; d += 2, j++) {
      c = 0;
      for (int k = 0; k < domains; k++)
        c += checks[k][j];
      printf("%lld\t trees of depth %d\t check: %lld\n",
             1LL << (max_depth - d + MIN_DEPTH), d, c);
      sum += c;
    }
    c = check_polling(long_lived, max_depth);
    printf("long lived tree of depth %d\t check: %lld\n", max_depth, c);
    sum += c;
    MGC_DROP;
  }
  printf("checksum: %lld\n", sum);
  mgc_bench_finish();
  return 0;
}
