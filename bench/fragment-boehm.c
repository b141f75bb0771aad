/* fragment-boehm.c: the fragmentation workload on the Boehm-Demers-Weiser
 * collector, the algorithm of fragment.c.  A block is a GC_MALLOC'ed
 * array of s + 1 words: its size s first (in place of mgc's header, so
 * that the blocks take as many words as mgc's), then its s fields: the id,
 * the link (a pointer), the integers id + j for 2 <= j < s.  The array of
 * N slots is one GC_MALLOC'ed block, an emptied slot NULL.  Boehm does not
 * move blocks: in place of a compaction, GC_gcollect_and_unmap (a full
 * collection that returns free pages to the OS), timed like mgc_compact.
 * Heap words are GC_get_heap_size() / 8 (which excludes unmapped memory);
 * the stderr line adds unmapped_kib_after (GC_get_unmapped_bytes).  Boehm
 * unmaps only heap blocks (4 KiB pages) left without any live object.
 * Usage: fragment-boehm [N]  (default 2000000)
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_util.h"
#include <gc.h>
#include <stdint.h>
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

typedef struct block {
  intptr_t size; /* s, the number of fields after it */
  intptr_t id;
  struct block *link;
  intptr_t pad[]; /* pad[j - 2] = id + j */
} block;

static block *make_block(long long d, long s, block *link) {
  block *b = bench_check_alloc(GC_MALLOC((size_t)(s + 1) * sizeof(intptr_t)));
  b->size = s;
  b->id = (intptr_t)d;
  b->link = link;
  for (long j = 2; j < s; j++)
    b->pad[j - 2] = (intptr_t)(d + j);
  return b;
}

int main(int argc, char **argv) {
  long long n = bench_arg(argc, argv, 1, 2000000);
  long long kept = 0, kept_words = 0, fresh = 0, sum = 0;
  unsigned char *is_kept = bench_check_alloc(malloc((size_t)n));
  long rss_before, rss_after;
  size_t heap_before, heap_after, unmapped_after;
  double t0, t1;
  block **arr;
  GC_INIT();
  arr = bench_check_alloc(GC_MALLOC((size_t)n * sizeof *arr));
  /* 1. Build. */
  for (long long i = 0; i < n; i++) {
    long s = size_of(next());
    long long t;
    block *b;
    is_kept[i] = next() % 10 == 0 || i == 0;
    t = (long long)(next() % (uint64_t)(i + 1));
    while (!is_kept[t])
      t--;
    b = make_block(i, s, t == i ? NULL : arr[t]);
    if (t == i)
      b->link = b;
    arr[i] = b;
    if (is_kept[i]) {
      kept++;
      kept_words += s + 1;
    }
  }
  /* 2. Drop. */
  for (long long i = 0; i < n; i++)
    if (!is_kept[i])
      arr[i] = NULL;
  free(is_kept);
  /* 3. Collect, measure, "compact" (unmap), measure. */
  GC_gcollect();
  heap_before = GC_get_heap_size();
  rss_before = rss_kib();
  t0 = now_ms();
  GC_gcollect_and_unmap();
  t1 = now_ms();
  heap_after = GC_get_heap_size();
  unmapped_after = GC_get_unmapped_bytes();
  rss_after = rss_kib();
  /* 4. Rounds of replacement over the kept slots. */
  for (int round = 0; round < ROUNDS; round++)
    for (long long i = 0; i < n; i++) {
      long s;
      long long t;
      if (arr[i] == NULL || next() % 10 != 0)
        continue;
      s = size_of(next());
      t = (long long)(next() % (uint64_t)n);
      while (arr[t] == NULL)
        t--;
      arr[i] = make_block(n + fresh, s, arr[t]);
      fresh++;
    }
  /* 5. Checksum. */
  for (long long i = 0; i < n; i++) {
    block *c = arr[i];
    if (c == NULL)
      continue;
    sum += c->id + 2 * c->link->id + 3 * c->link->link->id;
    for (long j = 2; j < c->size; j++)
      sum += c->pad[j - 2];
  }
  printf("blocks: %lld kept: %lld kept_words: %lld\n", n, kept, kept_words);
  printf("replaced: %lld\n", fresh);
  printf("checksum: %lld\n", sum);
  fprintf(stderr,
          "fragment: heap_words_before=%zu rss_kib_before=%ld"
          " heap_words_after=%zu rss_kib_after=%ld compact_ms=%.3f"
          " unmapped_kib_after=%zu\n",
          heap_before / 8, rss_before, heap_after / 8, rss_after, t1 - t0,
          unmapped_after / 1024);
  return 0;
}
