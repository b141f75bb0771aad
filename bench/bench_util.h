/* bench_util.h: small helpers shared by every C benchmark program (mgc and
 * peers alike): reading a size from argv, failing loudly.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>

/* argv[i] as a positive integer, or dflt when absent; exits on bad input. */
static inline long long bench_arg(int argc, char **argv, int i,
                                  long long dflt) {
  char *end;
  long long v;
  if (i >= argc)
    return dflt;
  v = strtoll(argv[i], &end, 0);
  if (*argv[i] == '\0' || *end != '\0' || v <= 0) {
    fprintf(stderr, "%s: bad argument '%s' (a positive integer)\n", argv[0],
            argv[i]);
    exit(2);
  }
  return v;
}

static inline void *bench_check_alloc(void *p) {
  if (p == NULL) {
    fputs("out of memory\n", stderr);
    exit(3);
  }
  return p;
}

#endif /* BENCH_UTIL_H */
