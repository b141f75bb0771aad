/* remset.c: the write-barrier workload on mgc.  A 1,000,000-slot array in
 * the major heap, every slot first holding one shared empty cell; each round
 * stores a fresh young cell {r, i} into a pseudo-random slot, so almost
 * every store is old-to-young and goes to the remembered set.
 * Usage: remset [ROUNDS]  (default 10000000)
 */
#include "mgc_bench.h"

enum { SLOTS = 1000000 };

int main(int argc, char **argv) {
  long long rounds = bench_arg(argc, argv, 1, 10000000);
  long long filled = 0, sum_a = 0, sum_b = 0;
  uint64_t x = 20240601;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL2(array, cell);
    cell = mgc_alloc_shr(2, 0);
    mgc_initialize(&MGC_FIELD(cell, 0), MGC_VAL_INT(0));
    mgc_initialize(&MGC_FIELD(cell, 1), MGC_VAL_INT(0));
    array = mgc_alloc_shr(SLOTS, 0);
    for (long i = 0; i < SLOTS; i++)
      mgc_initialize(&MGC_FIELD(array, i), cell);
    for (long long r = 1; r <= rounds; r++) {
      long i;
      mgc_value c;
      x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
      i = (long)((x >> 16) % SLOTS);
      c = mgc_alloc_small(2, 0);
      MGC_FIELD(c, 0) = MGC_VAL_INT(r);
      MGC_FIELD(c, 1) = MGC_VAL_INT(i);
      mgc_modify(&MGC_FIELD(array, i), c);
    }
    for (long i = 0; i < SLOTS; i++) {
      mgc_value c = MGC_FIELD(array, i);
      long long a = MGC_INT_VAL(MGC_FIELD(c, 0));
      filled += a != 0;
      sum_a += a;
      sum_b += MGC_INT_VAL(MGC_FIELD(c, 1));
    }
    MGC_DROP;
  }
  printf("filled slots: %lld\n", filled);
  printf("sum of a: %lld\n", sum_a);
  printf("sum of b: %lld\n", sum_b);
  printf("checksum: %lld\n", sum_a + 3 * sum_b + filled);
  mgc_bench_finish();
  return 0;
}
