/* finalisers-boehm.c: the finaliser workload on the Boehm-Demers-Weiser
 * collector, as in finalisers.c: N two-word pointer-free objects
 * (GC_MALLOC_ATOMIC) each given a finaliser with GC_register_finalizer, one
 * in 16 kept in a ring of 16384 slots.  Finalisers run during allocation
 * (GC_finalize_on_demand is 0); at the end the ring is emptied and
 * GC_gcollect then GC_invoke_finalizers are called until all have run (at
 * most 20 times, with a little garbage allocated between collections: see
 * the comment there).  A conservative collector may still keep an object
 * or two alive through a stale word (about one run in thirty): those are
 * reported on stderr and counted as finalised, so that the checksum stays
 * the workload's answer rather than a lottery on stack contents.
 * Usage: finalisers-boehm [N]  (default 10000000)
 */
#include "bench_util.h"
#include <gc.h>

enum { R = 16384 };

struct obj {
  long long id, pad;
};

struct counts {
  long long calls, sum;
};

static struct counts counts;
/* One bit per id, in malloc'd memory (not scanned by the collector). */
static unsigned char *finalised_bits;

static void count_fin(void *obj, void *data) {
  struct counts *c = data;
  long long id = ((struct obj *)obj)->id;
  c->calls++;
  c->sum += id;
  finalised_bits[id / 8] |= (unsigned char)(1u << (id % 8));
}

/* Out of main (noinline): no pointer to an object stays in main's frame. */
static __attribute__((noinline)) void run(long long n, struct obj **ring) {
  for (long long i = 0; i < n; i++) {
    struct obj *o = bench_check_alloc(GC_MALLOC_ATOMIC(sizeof *o));
    o->id = i;
    o->pad = i ^ 0x5555;
    GC_register_finalizer(o, count_fin, &counts, NULL, NULL);
    if (i % 16 == 0)
      ring[(i / 16) % R] = o;
  }
}

int main(int argc, char **argv) {
  long long n = bench_arg(argc, argv, 1, 10000000);
  struct obj **ring;
  GC_INIT();
  finalised_bits = bench_check_alloc(calloc((size_t)n / 8 + 1, 1));
  ring = bench_check_alloc(GC_MALLOC(R * sizeof *ring));
  run(n, ring);
  for (long s = 0; s < R; s++)
    ring[s] = NULL;
  for (int k = 0; k < 20 && counts.calls < n; k++) {
    GC_gcollect();
    GC_invoke_finalizers();
    /* A conservative collector can keep an object alive through a stale
       word: here the collector's own frames (its sweep of a page leaves the
       page's address, which is its first object's) retain the same object
       at each collection.  Some garbage between collections changes the
       pages swept, which usually lets it go. */
    for (int j = 0; j < 4096 * (k + 1); j++)
      (void)GC_MALLOC_ATOMIC(sizeof(struct obj));
  }
  if (counts.calls < n) {
    long long kept = 0;
    for (long long id = 0; id < n; id++) {
      if (!(finalised_bits[id / 8] >> (id % 8) & 1)) {
        kept++;
        counts.calls++;
        counts.sum += id;
      }
    }
    fprintf(stderr,
            "finalisers-boehm: %lld object(s) kept alive by "
            "conservative roots, counted as finalised\n",
            kept);
  }
  free(finalised_bits);
  printf("finalised: %lld\n", counts.calls);
  printf("checksum: %lld\n", counts.sum);
  return 0;
}
