/* lists.h: young lists and garbage for the tests that check that values
 * survive collections (test_roots, test_final, test_embedder,
 * test_domains_pause).  Include after check.h.
 */
#ifndef MGC_TEST_LISTS_H
#define MGC_TEST_LISTS_H

#include "mgc.h"

/* A young list [n-1, ..., 0] of 2-field cells, built under a local root. */
static inline mgc_value make_list(long n) {
  long i;
  MGC_PARAM0;
  MGC_LOCAL1(l);
  for (i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

/* l is exactly what make_list(n) built. */
static inline int list_ok(mgc_value l, long n) {
  long i = n - 1;
  for (; MGC_IS_BLOCK(l); l = MGC_FIELD(l, 1)) {
    if (MGC_WOSIZE_VAL(l) != 2 || MGC_FIELD(l, 0) != MGC_VAL_INT(i))
      return 0;
    i--;
  }
  return i == -1 && l == MGC_UNIT;
}

/* About `words` words of young garbage (3-field blocks). */
static inline void churn(long words) {
  long i;
  for (i = 0; i < words / 4; i++) {
    mgc_value g = mgc_alloc_small(3, 1);
    MGC_FIELD(g, 0) = MGC_VAL_INT(i);
    MGC_FIELD(g, 1) = MGC_UNIT;
    MGC_FIELD(g, 2) = MGC_UNIT;
  }
}

#endif
