/* fragment.c: the fragmentation and compaction workload on mgc.
 *
 * A large heap of N blocks of mixed sizes, 90 % of them dropped at random,
 * then compacted: heap words and RSS before and after the compaction, and
 * the time of the compacting call; then more work on the kept graph.
 *   Random numbers: x = (x * 0x5DEECE66D + 0xB) mod 2^48 from x = 20240601,
 *   each draw r = x >> 16.
 *   size(r) = 2 + (r / 4) mod 6 when r mod 4 != 0 (2..7 fields, 3/4 of the
 *   blocks), else 8 + (r / 4) mod 57 (8..64 fields): every block is small
 *   (at most 64 fields, so the compactor may move it).
 *   A block of id d and s fields: field 0 = d, field 1 = a pointer to
 *   another block (its link), field j = d + j for 2 <= j < s (integers).
 *   One array of N slots (a large block, never moved) holds every block.
 *   nearest(j) = the largest slot index <= j whose block is kept (slot 0 is
 *   always kept, so it exists).
 * 1. Build, i = 0 .. N-1: s = size(next draw); kept(i) = (i = 0 or the next
 *    draw mod 10 = 0) (the draw is made for i = 0 too); t = nearest(next
 *    draw mod (i + 1)), which may be i itself; block i = {i, link = the
 *    block of slot t (itself when t = i), i + 2, ..., i + s - 1} goes into
 *    slot i.  Links only ever point to kept blocks: the dropped ones die.
 * 2. Drop: the slot of every block not kept is emptied (the integer 0).
 *    K blocks are kept, W words with their headers (sum of s + 1).
 * 3. mgc_full_major; heap words (mgc_get_stats) and RSS (VmRSS of
 *    /proc/self/status) before; mgc_compact, timed (CLOCK_MONOTONIC); heap
 *    words and RSS after.
 * 4. R = 5 rounds, each over the slots i = 0 .. N-1 holding a block: r =
 *    next draw; when r mod 10 = 0, a fresh block of id N + F (F, the count
 *    of fresh blocks so far, then grows by 1) with s = size(next draw) and
 *    link = the block now in slot nearest(next draw mod N) (a non-empty
 *    slot; when it is slot i, the block being replaced, which stays alive
 *    through the link) replaces the block of slot i.
 * 5. Checksum: the sum over the non-empty slots of the block b there of
 *    id(b) + 2 id(link(b)) + 3 id(link(link(b))) + the sum of b's fields
 *    2 .. s-1 (every word of every kept block is read).
 * Output (stdout): "blocks: N kept: K kept_words: W", "replaced: F", then
 * "checksum: S".  On stderr, before the mgc-stats line: "fragment:
 * heap_words_before=.. rss_kib_before=.. heap_words_after=..
 * rss_kib_after=.. compact_ms=..".
 * Usage: fragment [N]  (default 2000000)
 */
#define _POSIX_C_SOURCE 200809L
#include "mgc_bench.h"
#include <string.h>
#include <time.h>

enum { ROUNDS = 5 };

static uint64_t x = 20240601;

static uint64_t next(void) {
  x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
  return x >> 16;
}

static long size_of(uint64_t r) {
  return r % 4 != 0 ? 2 + (long)((r / 4) % 6) : 8 + (long)((r / 4) % 57);
}

/* VmRSS of /proc/self/status in KiB, -1 when unreadable. */
static long rss_kib(void) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "VmRSS:", 6) == 0) {
      v = strtol(line + 6, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A fresh young block of id d, s fields, linked to the block of slot t
   of arr (read after the allocation, which may move it). */
static mgc_value make_block(mgc_value arr, long long d, long s, long long t) {
  MGC_PARAM1(arr);
  mgc_value b = mgc_alloc_small((size_t)s, 0);
  MGC_FIELD(b, 0) = MGC_VAL_INT(d);
  MGC_FIELD(b, 1) = MGC_FIELD(arr, t);
  for (long j = 2; j < s; j++)
    MGC_FIELD(b, j) = MGC_VAL_INT(d + j);
  MGC_RETURN(b);
}

int main(int argc, char **argv) {
  long long n = bench_arg(argc, argv, 1, 2000000);
  long long kept = 0, kept_words = 0, fresh = 0, sum = 0;
  unsigned char *is_kept = bench_check_alloc(malloc((size_t)n));
  mgc_stats st;
  long rss_before, rss_after;
  uint64_t heap_before, heap_after;
  double t0, t1;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL2(arr, b);
    arr = mgc_alloc_shr((size_t)n, 0);
    /* 1. Build. */
    for (long long i = 0; i < n; i++) {
      long s = size_of(next());
      long long t;
      is_kept[i] = next() % 10 == 0 || i == 0;
      t = (long long)(next() % (uint64_t)(i + 1));
      while (!is_kept[t])
        t--;
      b = make_block(arr, i, s, t);
      if (t == i) /* its own link (slot i still held MGC_UNIT) */
        MGC_FIELD(b, 1) = b;
      mgc_modify(&MGC_FIELD(arr, i), b);
      if (is_kept[i]) {
        kept++;
        kept_words += s + 1;
      }
    }
    b = MGC_UNIT;
    /* 2. Drop. */
    for (long long i = 0; i < n; i++)
      if (!is_kept[i])
        mgc_modify(&MGC_FIELD(arr, i), MGC_VAL_INT(0));
    free(is_kept);
    /* 3. Collect, measure, compact, measure. */
    mgc_full_major();
    mgc_get_stats(&st);
    heap_before = st.heap_words;
    rss_before = rss_kib();
    t0 = now_ms();
    mgc_compact();
    t1 = now_ms();
    mgc_get_stats(&st);
    heap_after = st.heap_words;
    rss_after = rss_kib();
    /* 4. Rounds of replacement over the kept slots. */
    for (int round = 0; round < ROUNDS; round++)
      for (long long i = 0; i < n; i++) {
        long s;
        long long t;
        if (MGC_IS_INT(MGC_FIELD(arr, i)) || next() % 10 != 0)
          continue;
        s = size_of(next());
        t = (long long)(next() % (uint64_t)n);
        while (MGC_IS_INT(MGC_FIELD(arr, t)))
          t--;
        b = make_block(arr, n + fresh, s, t);
        mgc_modify(&MGC_FIELD(arr, i), b);
        fresh++;
      }
    /* 5. Checksum. */
    for (long long i = 0; i < n; i++) {
      mgc_value c = MGC_FIELD(arr, i), l;
      long s;
      if (MGC_IS_INT(c))
        continue;
      l = MGC_FIELD(c, 1);
      sum += MGC_INT_VAL(MGC_FIELD(c, 0)) + 2 * MGC_INT_VAL(MGC_FIELD(l, 0)) +
             3 * MGC_INT_VAL(MGC_FIELD(MGC_FIELD(l, 1), 0));
      s = (long)MGC_WOSIZE_VAL(c);
      for (long j = 2; j < s; j++)
        sum += MGC_INT_VAL(MGC_FIELD(c, j));
    }
    MGC_DROP;
  }
  printf("blocks: %lld kept: %lld kept_words: %lld\n", n, kept, kept_words);
  printf("replaced: %lld\n", fresh);
  printf("checksum: %lld\n", sum);
  fflush(stdout);
  fprintf(stderr,
          "fragment: heap_words_before=%llu rss_kib_before=%ld"
          " heap_words_after=%llu rss_kib_after=%ld compact_ms=%.3f\n",
          (unsigned long long)heap_before, rss_before,
          (unsigned long long)heap_after, rss_after, t1 - t0);
  mgc_bench_finish();
  return 0;
}
