/* alloc-boehm.c: the allocation workload on the Boehm-Demers-Weiser
 * collector: three-word blocks in pairs (the second points to the first),
 * each pair dead once the next block is allocated; M / 4 blocks, as in
 * alloc.c (three fields and a header).
 * Usage: alloc-boehm [M]  (default 1000000000)
 */
#include "bench_util.h"
#include <gc.h>

struct block {
  struct block *prev;
  long i, j;
};

int main(int argc, char **argv) {
  long long words = bench_arg(argc, argv, 1, 1000000000);
  long long blocks = words / 4, n = 0;
  struct block *last = NULL;
  GC_INIT();
  for (long long i = 0; i < blocks; i++) {
    struct block *v = bench_check_alloc(GC_MALLOC(sizeof *v));
    v->prev = last;
    v->i = i;
    v->j = 0;
    n += last != NULL ? 2 : 0;
    last = last != NULL ? NULL : v;
  }
  n += last != NULL;
  printf("blocks: %lld\n", n);
  printf("checksum: %lld\n", n);
  return 0;
}
