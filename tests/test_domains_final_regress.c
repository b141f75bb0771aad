/* test_domains_final_regress.c: two finaliser bugs found by the fuzz
 * targets (fuzz/fuzz_ops.c, fuzz/fuzz_ops2.c), kept as tests.
 *
 * 1. A last-kind finaliser registered by domain B on a young block of
 *    domain A: after a minor collection B reads the block's header in A's
 *    minor heap to learn whether it was promoted.  Without a barrier after
 *    that read, A could already poison or reuse its heap, and B took the
 *    live block for dead (its finaliser ran while a global root held it)
 *    or kept a poisoned address.  Variants: what A does in between
 *    (nothing, resize its minor heap twice, a minor collection).
 * 2. A chain of finalisable values, B -> D, both unreachable: one
 *    mgc_full_major must run both finalisers (due finalisers run between
 *    its cycles, as OCaml's Gc.full_major does; before, B's pending
 *    finaliser kept D alive through every cycle of the call).
 */
#include "check_mt.h"

static mgc_value gx = MGC_UNIT;
static atomic_int step, calls;

static void fin_last(void *d) {
  (void)d;
  atomic_fetch_add(&calls, 1);
}

static void wait_step(int s) {
  while (atomic_load(&step) < s)
    mgc_poll();
}

static mgc_value body(mgc_value arg) {
  (void)arg;
  wait_step(1);
  mgc_finalise_last(gx, fin_last, NULL); /* gx: young, in A's heap */
  atomic_store(&step, 2);
  wait_step(3);
  mgc_minor_collection();
  mgc_minor_collection();
  atomic_store(&step, 4);
  return MGC_UNIT;
}

static void foreign_young_last(int variant) {
  atomic_store(&step, 0);
  atomic_store(&calls, 0);
  mgc_domain *d = mgc_domain_spawn(body, MGC_UNIT);
  MT_CHECK(d != NULL, "spawn");
  if (!d)
    return;
  mgc_value v = mgc_alloc_small(3, 9);
  MGC_FIELD(v, 0) = MGC_VAL_INT(78);
  MGC_FIELD(v, 1) = MGC_VAL_INT(1);
  MGC_FIELD(v, 2) = MGC_VAL_INT(2);
  gx = v;
  atomic_store(&step, 1);
  wait_step(2);
  if (variant == 1)
    mgc_set_minor_heap_size(936);
  else if (variant == 2)
    mgc_minor_collection();
  else if (variant == 3)
    mgc_set_minor_heap_size(4096);
  atomic_store(&step, 3);
  wait_step(4);
  int c = atomic_load(&calls);
  MT_CHECK(c == 0 && MGC_FIELD(gx, 0) == MGC_VAL_INT(78),
           "variant %d: the block is alive (field 0 = %ld) and its "
           "last-kind finaliser has not run (%d calls)",
           variant, (long)MGC_INT_VAL(MGC_FIELD(gx, 0)), c);
  mgc_domain_join(d);
  gx = MGC_UNIT;
  mgc_full_major();
  MT_CHECK(atomic_load(&calls) == 1,
           "variant %d: after it died, its finaliser ran once (%d)", variant,
           atomic_load(&calls));
  MT_CHECK(mgc_verify_heap() == 0, "verify");
}

static int calls_b, calls_d;
static void fin_b(mgc_value v, void *d) {
  (void)v;
  (void)d;
  calls_b++;
}
static void fin_d(mgc_value v, void *d) {
  (void)v;
  (void)d;
  calls_d++;
}
static mgc_value r_d = MGC_UNIT, r_b = MGC_UNIT;

static void full_major_chain(void) {
  calls_b = calls_d = 0;
  r_d = mgc_copy_double(2.25); /* D */
  mgc_value b = mgc_alloc_small(7, 3);
  for (int i = 0; i < 7; i++)
    MGC_FIELD(b, i) = MGC_VAL_INT(i);
  MGC_FIELD(b, 3) = r_d; /* B -> D */
  r_b = b;
  mgc_finalise(r_d, fin_d, NULL);
  mgc_finalise(r_b, fin_b, NULL);
  b = mgc_alloc_small(3, 3);
  for (int i = 0; i < 3; i++)
    MGC_FIELD(b, i) = MGC_VAL_INT(i);
  r_b = b; /* B is unreachable */
  mgc_major_collection();
  r_d = MGC_UNIT; /* D is reachable from B only */
  r_b = MGC_UNIT;
  mgc_full_major();
  MT_CHECK(calls_b == 1 && calls_d == 1,
           "one mgc_full_major ran both finalisers of the chain (B %d, D %d)",
           calls_b, calls_d);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  mt_watchdog(120);
  mgc_params p;
  mgc_params_default(&p);
  p.minor_heap_words = 4096;
  MT_CHECK(mgc_init(&p) == 0, "init");
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_register_global_root(&gx);
  mgc_register_global_root(&r_d);
  mgc_register_global_root(&r_b);
  long rounds = test_scale(20);
  if (rounds < 2)
    rounds = 2;
  for (long r = 0; r < rounds; r++)
    foreign_young_last((int)(r % 4));
  full_major_chain();
  full_major_chain();
  mgc_shutdown();
  return check_done();
}
