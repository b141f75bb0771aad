/* remset-malloc.c: the remset workload with manual memory.  There is no
 * barrier to measure here; the natural C program frees the cell a store
 * replaces (never the shared empty one) and frees the rest at the end.
 * Built with -DUSE_MIMALLOC it is the mimalloc peer.
 * Usage: remset-malloc [ROUNDS]  (default 10000000)
 */
#include "bench_util.h"
#include "malloc_peer.h"
#include <stdint.h>

enum { SLOTS = 1000000 };

struct cell {
  long long a, b;
};

int main(int argc, char **argv) {
  long long rounds = bench_arg(argc, argv, 1, 10000000);
  long long filled = 0, sum_a = 0, sum_b = 0;
  uint64_t x = 20240601;
  struct cell empty = {0, 0}, **array;
  array = bench_check_alloc(peer_malloc(SLOTS * sizeof *array));
  for (long i = 0; i < SLOTS; i++)
    array[i] = &empty;
  for (long long r = 1; r <= rounds; r++) {
    long i;
    struct cell *c;
    x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    i = (long)((x >> 16) % SLOTS);
    c = bench_check_alloc(peer_malloc(sizeof *c));
    c->a = r;
    c->b = i;
    if (array[i] != &empty)
      peer_free(array[i]);
    array[i] = c;
  }
  for (long i = 0; i < SLOTS; i++) {
    filled += array[i]->a != 0;
    sum_a += array[i]->a;
    sum_b += array[i]->b;
    if (array[i] != &empty)
      peer_free(array[i]);
  }
  peer_free(array);
  printf("filled slots: %lld\n", filled);
  printf("sum of a: %lld\n", sum_a);
  printf("sum of b: %lld\n", sum_b);
  printf("checksum: %lld\n", sum_a + 3 * sum_b + filled);
  return 0;
}
