/* remset-boehm.c: the remset workload on the Boehm-Demers-Weiser collector.
 * Cells hold no pointers, so they come from GC_MALLOC_ATOMIC, as a C
 * programmer would write it; the slot array is scanned (GC_MALLOC).
 * Usage: remset-boehm [ROUNDS]  (default 10000000)
 */
#include "bench_util.h"
#include <gc.h>
#include <stdint.h>

enum { SLOTS = 1000000 };

struct cell {
  long long a, b;
};

int main(int argc, char **argv) {
  long long rounds = bench_arg(argc, argv, 1, 10000000);
  long long filled = 0, sum_a = 0, sum_b = 0;
  uint64_t x = 20240601;
  struct cell *empty, **array;
  GC_INIT();
  empty = bench_check_alloc(GC_MALLOC(sizeof *empty));
  array = bench_check_alloc(GC_MALLOC(SLOTS * sizeof *array));
  for (long i = 0; i < SLOTS; i++)
    array[i] = empty;
  for (long long r = 1; r <= rounds; r++) {
    long i;
    struct cell *c;
    x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    i = (long)((x >> 16) % SLOTS);
    c = bench_check_alloc(GC_MALLOC_ATOMIC(sizeof *c));
    c->a = r;
    c->b = i;
    array[i] = c;
  }
  for (long i = 0; i < SLOTS; i++) {
    filled += array[i]->a != 0;
    sum_a += array[i]->a;
    sum_b += array[i]->b;
  }
  printf("filled slots: %lld\n", filled);
  printf("sum of a: %lld\n", sum_a);
  printf("sum of b: %lld\n", sum_b);
  printf("checksum: %lld\n", sum_a + 3 * sum_b + filled);
  return 0;
}
