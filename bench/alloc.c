/* alloc.c: the allocation workload on mgc.  Three-field blocks (four words
 * with the header) that die at once: block 2k points to nothing, block
 * 2k+1 points to block 2k only, and neither is referenced afterwards, so
 * at most two blocks are live and every minor collection finds the minor
 * heap empty but for them.  M counts words, headers included (as
 * minor_words does): M / 4 blocks.
 * Usage: alloc [M]  (default 1000000000)
 */
#include "mgc_bench.h"

int main(int argc, char **argv) {
  long long words = bench_arg(argc, argv, 1, 1000000000);
  long long blocks = words / 4, n = 0;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL1(last);
    for (long long i = 0; i < blocks; i++) {
      mgc_value v = mgc_alloc_small(3, 0);
      MGC_FIELD(v, 0) = last;
      MGC_FIELD(v, 1) = MGC_VAL_INT(i);
      MGC_FIELD(v, 2) = MGC_VAL_INT(0);
      n += MGC_IS_BLOCK(last) ? 2 : 0;
      last = MGC_IS_BLOCK(last) ? MGC_UNIT : v;
    }
    n += MGC_IS_BLOCK(last);
    MGC_DROP;
  }
  printf("blocks: %lld\n", n);
  printf("checksum: %lld\n", n);
  mgc_bench_finish();
  return 0;
}
