/* ephemerons.c: the weak memo table workload on mgc.
 *
 * A memo table of B = 4096 buckets maps keys to computed values, each key
 * held weakly: an entry is an ephemeron (one key, data = the memo value) in
 * a cell of its bucket's list, bucket = id mod B; the cell also holds the
 * key's hash, its id (as Ephemeron.K1.Make's buckets do).  A key is a block
 * holding an integer id; a memo value is a block holding f(id) = id * id mod
 * 1000003.  A ring of W = 10000 keys holds the live window strongly.
 *   Start: ring slot j holds a fresh key of id j (j < W); the table is
 *   empty; x = 20240601.
 *   Step i = 0 .. N-1:
 *   1. a fresh key of id W + i replaces the oldest one (id i) in ring slot
 *      i mod W; key i becomes garbage.  Live ids are now i+1 .. W+i.
 *   2. x = (x * 0x5DEECE66D + 0xB) mod 2^48, r = x >> 16.
 *   3. r mod 8 = 0: probe.  d = i - (r >> 3) mod W, a key dropped at most
 *      W steps ago; when d >= 0, look d up.  Whether it is found depends on
 *      when the collector ran: the result is not counted, nothing inserted.
 *   4. otherwise: lookup.  k = i + 1 + (r >> 3) mod W, a live key (ring slot
 *      k mod W); look k up.  A hit returns the memo value; a miss computes
 *      f(k), first unlinks every cell of bucket k mod B whose key slot is
 *      empty, then adds a new cell at the head of that bucket.  Either way
 *      f(k) is added to the checksum.
 *   Looking id up walks its bucket: for each cell whose hash is id, read
 *   the key (a weak read: empty once the key is dead; the other cells' keys
 *   are not touched, since a read keeps a key alive through the current
 *   cycle); when it is there and holds id, read the data: found.
 * A live key is never unlinked, so a lookup hits exactly when its key was
 * looked up before: the hit count and the checksum do not depend on when
 * collections happen.  The table is never cleaned otherwise: the entries of
 * dead keys are emptied by the collector and their cells unlinked lazily by
 * inserts into their bucket.
 * Output: "lookups: L hits: H", then "checksum: S", S the sum of f(k) over
 * the lookups of step 4.
 * Usage: ephemerons [N]  (default 1000000)
 */
#include "mgc_bench.h"

enum { B = 4096, W = 10000 };

/* Found probes: timing-dependent, never printed (volatile: kept). */
static volatile long long probes_found;

static long long memo_f(long long id) { return id * id % 1000003; }

static mgc_value make_key(long long id) {
  mgc_value k = mgc_alloc_small(1, 0);
  MGC_FIELD(k, 0) = MGC_VAL_INT(id);
  return k;
}

/* The memo value of id in table, or -1.  Allocates nothing. */
static long long find(mgc_value table, long long id) {
  for (mgc_value c = MGC_FIELD(table, id % B); MGC_IS_BLOCK(c);
       c = MGC_FIELD(c, 2)) {
    mgc_value e = MGC_FIELD(c, 1), k, d;
    if (MGC_INT_VAL(MGC_FIELD(c, 0)) == id && mgc_ephe_get_key(e, 0, &k) &&
        MGC_INT_VAL(MGC_FIELD(k, 0)) == id && mgc_ephe_get_data(e, &d))
      return MGC_INT_VAL(MGC_FIELD(d, 0));
  }
  return -1;
}

/* The first cell from c on whose key is still there. */
static mgc_value skip_dead(mgc_value c) {
  while (MGC_IS_BLOCK(c) && !mgc_ephe_check_key(MGC_FIELD(c, 1), 0))
    c = MGC_FIELD(c, 2);
  return c;
}

/* Unlinks the dead cells of bucket b, then adds key -> f(id) at its head. */
static void insert(mgc_value table, mgc_value key, long long id, long long v) {
  MGC_PARAM2(table, key);
  MGC_LOCAL3(val, e, c);
  long b = (long)(id % B);
  mgc_value first = skip_dead(MGC_FIELD(table, b));
  if (first != MGC_FIELD(table, b))
    mgc_modify(&MGC_FIELD(table, b), first);
  for (mgc_value p = first; MGC_IS_BLOCK(p); p = MGC_FIELD(p, 2)) {
    mgc_value n = skip_dead(MGC_FIELD(p, 2));
    if (n != MGC_FIELD(p, 2))
      mgc_modify(&MGC_FIELD(p, 2), n);
  }
  val = mgc_alloc_small(1, 0);
  MGC_FIELD(val, 0) = MGC_VAL_INT(v);
  e = mgc_ephe_create(1);
  mgc_ephe_set_key(e, 0, key);
  mgc_ephe_set_data(e, val);
  c = mgc_alloc_small(3, 0);
  MGC_FIELD(c, 0) = MGC_VAL_INT(id);
  MGC_FIELD(c, 1) = e;
  MGC_FIELD(c, 2) = MGC_FIELD(table, b);
  mgc_modify(&MGC_FIELD(table, b), c);
  MGC_RETURN0;
}

int main(int argc, char **argv) {
  long long n = bench_arg(argc, argv, 1, 1000000);
  long long lookups = 0, hits = 0, sum = 0;
  uint64_t x = 20240601;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL3(ring, table, key);
    ring = mgc_alloc_shr(W, 0);
    table = mgc_alloc_shr(B, 0);
    for (long j = 0; j < W; j++) {
      key = make_key(j);
      mgc_modify(&MGC_FIELD(ring, j), key);
    }
    for (long long i = 0; i < n; i++) {
      uint64_t r;
      key = make_key(W + i);
      mgc_modify(&MGC_FIELD(ring, i % W), key);
      x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
      r = x >> 16;
      if (r % 8 == 0) {
        long long d = i - (long long)((r >> 3) % W);
        if (d >= 0)
          probes_found += find(table, d) >= 0;
      } else {
        long long k = i + 1 + (long long)((r >> 3) % W);
        long long v = find(table, k);
        lookups++;
        if (v >= 0)
          hits++;
        else {
          v = memo_f(k);
          insert(table, MGC_FIELD(ring, k % W), k, v);
        }
        sum += v;
      }
    }
    MGC_DROP;
  }
  printf("lookups: %lld hits: %lld\n", lookups, hits);
  printf("checksum: %lld\n", sum);
  mgc_bench_finish();
  return 0;
}
