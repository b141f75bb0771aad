/* finalisers.c: the finaliser workload on mgc.
 *
 * N objects, object i (i = 0 .. N-1) a two-field block {i, i xor 0x5555}
 * given a finaliser (mgc_finalise) that counts the call and adds field 0 of
 * its object, the id.  Objects with i mod 16 = 0 are stored into slot
 * (i / 16) mod R of a ring of R = 16384 slots, replacing the one stored
 * R * 16 objects earlier: one in 16 lives for 262144 allocations (about
 * three minor heaps of mgc and OCaml), the rest die at once.  At the end
 * the ring is dropped and collections are forced until every finaliser has
 * run (mgc_full_major then mgc_run_finalisers, at most 10 times), so the
 * result does not depend on when finalisers ran during the loop.
 * Output: "finalised: C" (C = N when all ran), then "checksum: S", S the
 * sum of the ids seen by the finalisers (N (N - 1) / 2).
 * Usage: finalisers [N]  (default 10000000)
 */
#include "mgc_bench.h"

enum { R = 16384 };

struct counts {
  long long calls, sum;
};

static void count_fin(mgc_value v, void *data) {
  struct counts *c = data;
  c->calls++;
  c->sum += MGC_INT_VAL(MGC_FIELD(v, 0));
}

int main(int argc, char **argv) {
  long long n = bench_arg(argc, argv, 1, 10000000);
  struct counts counts = {0, 0};
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL2(ring, o);
    ring = mgc_alloc_shr(R, 0);
    for (long long i = 0; i < n; i++) {
      o = mgc_alloc_small(2, 0);
      MGC_FIELD(o, 0) = MGC_VAL_INT(i);
      MGC_FIELD(o, 1) = MGC_VAL_INT(i ^ 0x5555);
      mgc_finalise(o, count_fin, &counts);
      if (i % 16 == 0)
        mgc_modify(&MGC_FIELD(ring, (i / 16) % R), o);
    }
    ring = MGC_UNIT;
    o = MGC_UNIT;
    for (int k = 0; k < 10 && counts.calls < n; k++) {
      mgc_full_major();
      mgc_run_finalisers();
    }
    MGC_DROP;
  }
  printf("finalised: %lld\n", counts.calls);
  printf("checksum: %lld\n", counts.sum);
  mgc_bench_finish();
  return 0;
}
