/* internal_check.h: helpers for the white-box tests, which include
 * src/internal.h to look at a domain's state. */
#ifndef MGC_INTERNAL_CHECK_H
#define MGC_INTERNAL_CHECK_H

#include "../src/internal.h"

static inline struct mgc_dom *self(void) {
  return (struct mgc_dom *)mgc_tls_state;
}

/* Takes the cycle under way to its mark start (DESIGN §6.7) and no
   further, on a single domain: the pools are swept by slices of a word of
   budget each, which never start marking themselves, then a minor
   collection takes the snapshot, the mark trigger (DESIGN §6.10) set to
   the cycle's clock first so that marking is due.  On return the barrier
   darkens and the roots wait, unscanned, on the mark stack. */
static inline void start_marking(void) {
  while (mgc_gc_phase() == PHASE_SWEEP_FIRST) {
    if (self()->sweeping_done) {
      STORE_RELAXED(&mgc_rt.mark_trigger, LOAD_RELAXED(&mgc_rt.cycle_clock));
      mgc_minor_collection();
    } else
      mgc_major_slice(1);
  }
}

#endif
