/* survive.c: the promotion workload on mgc.  A queue of 100000 lists of 10
 * cells, old from the start; round r replaces the oldest list with a fresh
 * one, which lives for 100000 rounds (a million cells, far more than a
 * minor heap): every young cell survives exactly one minor collection and
 * dies in the major heap.  List g (the initial ones are g = 0..99999, round
 * r builds g = 100000 + r into slot g mod 100000) holds 10g + k, k = 0..9.
 * Checksum: the sum of every cell at the end.
 * Usage: survive [ROUNDS]  (default 4000000: about 1 s for the OCaml 4.13
 * peer on a 2-core AMD EPYC machine)
 */
#include "mgc_bench.h"

enum { QUEUE = 100000, CELLS = 10 };

/* A list of CELLS cells holding 10g + k, k = 0 at the tail. */
static mgc_value make_list(long long g) {
  MGC_PARAM0;
  MGC_LOCAL1(head);
  for (int k = 0; k < CELLS; k++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(10 * g + k);
    MGC_FIELD(c, 1) = head;
    head = c;
  }
  MGC_RETURN(head);
}

int main(int argc, char **argv) {
  long long rounds = bench_arg(argc, argv, 1, 4000000), sum = 0;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL2(queue, list);
    queue = mgc_alloc_shr(QUEUE, 0);
    for (long g = 0; g < QUEUE; g++) {
      list = make_list(g);
      mgc_modify(&MGC_FIELD(queue, g), list);
    }
    mgc_minor_collection();
    for (long long r = 0; r < rounds; r++) {
      long long g = QUEUE + r;
      list = make_list(g);
      mgc_modify(&MGC_FIELD(queue, g % QUEUE), list);
    }
    for (long s = 0; s < QUEUE; s++)
      for (mgc_value c = MGC_FIELD(queue, s); MGC_IS_BLOCK(c);
           c = MGC_FIELD(c, 1))
        sum += MGC_INT_VAL(MGC_FIELD(c, 0));
    MGC_DROP;
  }
  printf("checksum: %lld\n", sum);
  mgc_bench_finish();
  return 0;
}
