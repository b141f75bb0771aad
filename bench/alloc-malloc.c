/* alloc-malloc.c: the allocation workload with manual memory: three-word
 * blocks in pairs (the second points to the first), both freed as soon as
 * the pair is complete; M / 4 blocks, as in alloc.c.  A volatile sink keeps
 * the compiler from deleting the malloc/free pairs.  Built with
 * -DUSE_MIMALLOC it is the mimalloc peer.
 * Usage: alloc-malloc [M]  (default 1000000000)
 */
#include "bench_util.h"
#include "malloc_peer.h"

struct block {
  struct block *prev;
  long i, j;
};

static struct block *volatile sink;

int main(int argc, char **argv) {
  long long words = bench_arg(argc, argv, 1, 1000000000);
  long long blocks = words / 4, n = 0;
  struct block *last = NULL;
  for (long long i = 0; i < blocks; i++) {
    struct block *v = bench_check_alloc(peer_malloc(sizeof *v));
    v->prev = last;
    v->i = i;
    v->j = 0;
    sink = v;
    if (last != NULL) {
      n += 2;
      peer_free(v->prev);
      peer_free(v);
      last = NULL;
    } else {
      last = v;
    }
  }
  if (last != NULL) {
    n++;
    peer_free(last);
  }
  printf("blocks: %lld\n", n);
  printf("checksum: %lld\n", n);
  return 0;
}
