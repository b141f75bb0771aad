/* mem-bounds: the machine's physical bounds that docs/PERFORMANCE.md sets
 * the collector's phases against.
 *
 *   memcpy of 2 MiB (a minor heap: what promotion copies at best) and of
 *   256 MiB (out of cache), in GB/s;
 *   a sequential read of 256 MiB, one word per 24 bytes (a sweep reading
 *   the header of every 3-word slot), in GB/s of heap scanned;
 *   a dependent random pointer chase over 256 MiB (one cache miss after
 *   another: a mark that cannot prefetch), in ns per access, and 16 chases
 *   interleaved (what a mark ring that keeps 16 misses in flight can get).
 *
 * Build and run: cc -O2 -o /tmp/mem-bounds tools/mem-bounds.c &&
 * /tmp/mem-bounds Each figure is the best of 5 runs. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double best_memcpy(size_t bytes, int reps) {
  char *a = malloc(bytes), *b = malloc(bytes);
  if (!a || !b)
    exit(1);
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  double best = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < reps; i++) {
      memcpy(i & 1 ? a : b, i & 1 ? b : a, bytes);
      __asm__ volatile("" ::: "memory");
    }
    double t = (now() - t0) / reps;
    if (t < best)
      best = t;
  }
  free(a);
  free(b);
  return (double)bytes / best / 1e9;
}

int main(void) {
  printf("memcpy 2 MiB:   %.1f GB/s\n", best_memcpy((size_t)2 << 20, 200));
  printf("memcpy 256 MiB: %.1f GB/s\n", best_memcpy((size_t)256 << 20, 2));

  size_t words = ((size_t)256 << 20) / sizeof(uint64_t);
  uint64_t *h = malloc(words * sizeof *h);
  if (!h)
    return 1;
  for (size_t i = 0; i < words; i++)
    h[i] = i;
  double best = 1e9;
  uint64_t sink = 0;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (size_t i = 0; i < words; i += 3)
      sink += h[i] & 0x300;
    double t = now() - t0;
    if (t < best)
      best = t;
  }
  printf("sweep-like scan (1 word per 3): %.1f GB/s of heap\n",
         (double)words * 8 / best / 1e9);

  /* A random cyclic permutation (Sattolo), one index per 64-byte line. */
  size_t lines = words / 8;
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < lines; i++)
    h[i * 8] = i;
  for (size_t i = lines - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = x % i;
    uint64_t t = h[i * 8];
    h[i * 8] = h[j * 8];
    h[j * 8] = t;
  }
  size_t steps = 4000000;
  best = 1e9;
  for (int r = 0; r < 5; r++) {
    uint64_t p = 0;
    double t0 = now();
    for (size_t s = 0; s < steps; s++)
      p = h[p * 8];
    double t = now() - t0;
    sink += p;
    if (t < best)
      best = t;
  }
  printf("dependent miss (pointer chase): %.1f ns\n", best / steps * 1e9);
  best = 1e9;
  for (int r = 0; r < 5; r++) {
    uint64_t p[16];
    for (int k = 0; k < 16; k++)
      p[k] = (size_t)k * (lines / 16);
    double t0 = now();
    for (size_t s = 0; s < steps / 16; s++)
      for (int k = 0; k < 16; k++)
        p[k] = h[p[k] * 8];
    double t = now() - t0;
    for (int k = 0; k < 16; k++)
      sink += p[k];
    if (t < best)
      best = t;
  }
  printf("16 misses in flight: %.1f ns per access\n", best / steps * 1e9);
  return sink == 42 ? 1 : 0;
}
