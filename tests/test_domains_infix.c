/* test_domains_infix.c: copies published while promotion is under way.
 *
 * Note [publishing copies] in src/minor.c: during a minor collection a
 * domain that has finished promoting marks (opportunistic major work) while
 * the others still promote.  Its marker reads remembered fields of old
 * blocks that promoters are rewriting with addresses of copies, and reads
 * what such an address needs: the copy's header, and for an infix pointer
 * (a pointer into a closure, invariant 4) the infix header inside the copy,
 * to step back to the closure.  A promoter that published `copy + offset`
 * before writing the copy's infix header let the marker step back over a
 * word that was not there yet (a data race; in a release build a colour
 * stored into a random word).
 *
 * Part 1 is the reduced program of the bug report: writer domains refill
 * an old array with infix pointers into fresh young closures while domain
 * 0 runs full major collections; under ThreadSanitizer the unfixed library
 * reports the race on nearly every run.  Part 2 is the same shape made to
 * check contents: closures with three mutually recursive functions (two
 * infix headers), environments holding young blocks, integers, an old
 * block and infix pointers into other young closures (chains of two); a third
 * domain copies the same young pointers into its own old array (two domains
 * then race to promote the same closures); young Forward blocks pointing to
 * closures (the short-circuit applies) and to Lazy blocks (it does not).
 * After every minor collection, domain 0 (in the minor end hook, which runs
 * while other domains may already be storing again) checks every closure
 * reachable from both arrays: headers, closure info, infix headers, code
 * pointers and environments.  The torture mode adds the verifier after
 * every collection (invariant 4 on every closure of the heap).
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define SEED 20261130u
#define NSLOTS 1000

/* The closure: three functions, code pointers at 0, 3 and 6, environment
   from field 8.
     0 code_a  1 closinfo(1, 8)  2 infix(3)  3 code_b  4 closinfo(2, 5)
     5 infix(6)  6 code_c  7 closinfo(3, 2)
     8 young pair [id, id ^ 0x55]  9 id  10 the old block  11 an infix
     pointer into an earlier closure, or unit */
#define CL_SIZE 12
#define CL_ENV 8
#define CL_B 3
#define CL_C 6

__attribute__((aligned(16))) static long code_a(long x) { return x + 1; }
__attribute__((aligned(16))) static long code_b(long x) { return x + 2; }
__attribute__((aligned(16))) static long code_c(long x) { return x + 3; }

static mgc_value g_old = MGC_UNIT;  /* classic root: the old block */
static mgc_value g_arr = MGC_UNIT;  /* classic root: NSLOTS old slots */
static mgc_value g_copy = MGC_UNIT; /* classic root: the copier's slots */
static atomic_int stop;
static atomic_long checks_done, bad_closures, hook_runs;
static long rounds;

static mgc_value code_ptr(long (*f)(long)) { return (mgc_value)(intptr_t)f; }

/* Steps back from p (a closure or an infix pointer into one) to the
   closure; 0 when p is not a closure pointer. */
static mgc_value closure_of(mgc_value p) {
  mgc_header hd;
  if (!MGC_IS_BLOCK(p) || p == 0)
    return 0;
  hd = MGC_HD_VAL(p);
  if (MGC_TAG_HD(hd) == MGC_TAG_INFIX)
    p -= (mgc_value)(MGC_WOSIZE_HD(hd) * sizeof(mgc_value));
  return MGC_TAG_VAL(p) == MGC_TAG_CLOSURE ? p : 0;
}

/* 1 when c is one of our closures, intact; depth 1 also checks the
   closure its field 11 points into. */
static int closure_ok(mgc_value c, int depth) {
  mgc_value pair, id, next;
  if (!c || MGC_WOSIZE_VAL(c) != CL_SIZE)
    return 0;
  if (MGC_FIELD(c, 0) != code_ptr(code_a) ||
      MGC_FIELD(c, 1) != MGC_CLOSINFO(1, CL_ENV) ||
      MGC_FIELD(c, 2) != (mgc_value)MGC_MAKE_HEADER(CL_B, MGC_TAG_INFIX, 0) ||
      MGC_FIELD(c, 3) != code_ptr(code_b) ||
      MGC_FIELD(c, 4) != MGC_CLOSINFO(2, CL_ENV - CL_B) ||
      MGC_FIELD(c, 5) != (mgc_value)MGC_MAKE_HEADER(CL_C, MGC_TAG_INFIX, 0) ||
      MGC_FIELD(c, 6) != code_ptr(code_c) ||
      MGC_FIELD(c, 7) != MGC_CLOSINFO(3, CL_ENV - CL_C))
    return 0;
  pair = MGC_FIELD(c, CL_ENV);
  id = MGC_FIELD(c, CL_ENV + 1);
  if (!MGC_IS_INT(id) || !MGC_IS_BLOCK(pair) || MGC_TAG_VAL(pair) != 0 ||
      MGC_WOSIZE_VAL(pair) != 2 || MGC_FIELD(pair, 0) != id ||
      MGC_FIELD(pair, 1) != MGC_VAL_INT(MGC_INT_VAL(id) ^ 0x55))
    return 0;
  if (MGC_FIELD(c, CL_ENV + 2) != g_old)
    return 0;
  next = MGC_FIELD(c, CL_ENV + 3);
  if (next == MGC_UNIT)
    return 1;
  next = closure_of(next);
  return depth == 0 ? next != 0 : closure_ok(next, 0);
}

/* A young closure numbered id whose last field points into prev (an
   infix pointer, or unit). */
static mgc_value make_closure(long id, mgc_value prev) {
  MGC_PARAM1(prev);
  MGC_LOCAL2(pair, c);
  pair = mgc_alloc_small(2, 0);
  MGC_FIELD(pair, 0) = MGC_VAL_INT(id);
  MGC_FIELD(pair, 1) = MGC_VAL_INT(id ^ 0x55);
  c = mgc_alloc_small(CL_SIZE, MGC_TAG_CLOSURE);
  MGC_FIELD(c, 0) = code_ptr(code_a);
  MGC_FIELD(c, 1) = MGC_CLOSINFO(1, CL_ENV);
  MGC_FIELD(c, 2) = (mgc_value)MGC_MAKE_HEADER(CL_B, MGC_TAG_INFIX, 0);
  MGC_FIELD(c, 3) = code_ptr(code_b);
  MGC_FIELD(c, 4) = MGC_CLOSINFO(2, CL_ENV - CL_B);
  MGC_FIELD(c, 5) = (mgc_value)MGC_MAKE_HEADER(CL_C, MGC_TAG_INFIX, 0);
  MGC_FIELD(c, 6) = code_ptr(code_c);
  MGC_FIELD(c, 7) = MGC_CLOSINFO(3, CL_ENV - CL_C);
  MGC_FIELD(c, CL_ENV) = pair;
  MGC_FIELD(c, CL_ENV + 1) = MGC_VAL_INT(id);
  MGC_FIELD(c, CL_ENV + 2) = g_old;
  MGC_FIELD(c, CL_ENV + 3) = prev;
  MGC_RETURN(c);
}

/* One slot's content: a closure pointer, an infix pointer, a Forward to
   either, or a Forward to a Lazy whose field is one; unit when empty. */
static int slot_ok(mgc_value v) {
  if (v == MGC_UNIT)
    return 1;
  if (!MGC_IS_BLOCK(v))
    return 0;
  if (MGC_TAG_VAL(v) == MGC_TAG_FORWARD) {
    v = MGC_FIELD(v, 0);
    if (MGC_IS_BLOCK(v) && MGC_TAG_VAL(v) == MGC_TAG_LAZY)
      v = MGC_FIELD(v, 0);
  }
  return closure_ok(closure_of(v), 1);
}

static long check_array(mgc_value arr) {
  long bad = 0, i;
  if (arr == MGC_UNIT)
    return 0;
  for (i = 0; i < NSLOTS; i++) {
    /* Acquire: pairs with the release store of mgc_modify in the writer,
       which may be storing into this slot right now. */
    mgc_value v =
        (mgc_value)__atomic_load_n(&MGC_FIELD(arr, i), __ATOMIC_ACQUIRE);
    bad += !slot_ok(v);
  }
  return bad;
}

/* Domain 0, after each minor collection (possibly on its backup thread). */
static void after_minor(void) {
  if (mgc_domain_self() != 0)
    return;
  atomic_fetch_add(&hook_runs, 1);
  atomic_fetch_add(&bad_closures, check_array(g_arr) + check_array(g_copy));
  atomic_fetch_add(&checks_done, 2 * NSLOTS);
}

/* ------------------------------------------------------------------------ */
/* Part 1: the reduced program of the bug report                            */
/* ------------------------------------------------------------------------ */

static mgc_value repro_writer(mgc_value arg) {
  long lo = MGC_INT_VAL(arg) * (NSLOTS / 2), it;
  for (it = 0; !atomic_load_explicit(&stop, memory_order_relaxed); it++) {
    mgc_value c = mgc_alloc_small(9, MGC_TAG_CLOSURE);
    MGC_FIELD(c, 0) = code_ptr(code_a);
    MGC_FIELD(c, 1) = MGC_CLOSINFO(1, 5);
    MGC_FIELD(c, 2) = (mgc_value)MGC_MAKE_HEADER(3, MGC_TAG_INFIX, 0);
    MGC_FIELD(c, 3) = code_ptr(code_b);
    MGC_FIELD(c, 4) = MGC_CLOSINFO(1, 2);
    for (int i = 5; i < 9; i++)
      MGC_FIELD(c, i) = MGC_VAL_INT(i);
    mgc_modify(&MGC_FIELD(g_arr, lo + it % (NSLOTS / 2)),
               c + 3 * (mgc_value)sizeof(mgc_value));
  }
  return MGC_UNIT;
}

static void part1(void) {
  mgc_domain *d[2];
  long i, bad = 0, n = test_scale(300);
  atomic_store(&stop, 0);
  g_arr = mgc_alloc(NSLOTS, 0);
  for (i = 0; i < 2; i++)
    d[i] = mgc_domain_spawn(repro_writer, MGC_VAL_INT(i));
  if (!CHECK(d[0] && d[1], "spawn the writers"))
    exit(check_done());
  for (i = 0; i < n; i++)
    mgc_full_major();
  atomic_store(&stop, 1);
  for (i = 0; i < 2; i++)
    mgc_domain_join(d[i]);
  for (i = 0; i < NSLOTS; i++) {
    mgc_value c = closure_of(MGC_FIELD(g_arr, i));
    bad +=
        MGC_FIELD(g_arr, i) != MGC_UNIT &&
        (!c || MGC_FIELD(c, 1) != MGC_CLOSINFO(1, 5) ||
         MGC_FIELD(c, 2) != (mgc_value)MGC_MAKE_HEADER(3, MGC_TAG_INFIX, 0) ||
         MGC_FIELD(c, 8) != MGC_VAL_INT(8));
  }
  CHECK(bad == 0,
        "part 1: %ld full majors against two writers of infix "
        "pointers; %ld broken closures",
        n, bad);
  CHECK_VERIFY("end of part 1");
  g_arr = MGC_UNIT;
}

/* ------------------------------------------------------------------------ */
/* Part 2: contents checked after every minor collection                    */
/* ------------------------------------------------------------------------ */

/* Writers 1 and 2 fill their halves of g_arr. */
static mgc_value writer(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL3(prev, c, w);
  int self = (int)MGC_INT_VAL(arg);
  long lo = (self - 1) * (NSLOTS / 2), it, bad = 0;
  struct mt_rng rng;
  mt_rng_seed(&rng, SEED, (uint64_t)self);
  for (it = 0; !atomic_load_explicit(&stop, memory_order_relaxed); it++) {
    long id = self * 100000000L + it;
    c = make_closure(id, prev);
    switch (mt_below(&rng, 5)) {
    case 0:
      w = c;
      break;
    case 1:
      w = c + CL_B * (mgc_value)sizeof(mgc_value);
      break;
    case 2:
      w = mgc_alloc_small(1, MGC_TAG_FORWARD);
      MGC_FIELD(w, 0) = c + CL_C * (mgc_value)sizeof(mgc_value);
      break;
    default:
      w = mgc_alloc_small(1, MGC_TAG_LAZY);
      MGC_FIELD(w, 0) = c + CL_B * (mgc_value)sizeof(mgc_value);
      c = w; /* the Forward's target */
      w = mgc_alloc_small(1, MGC_TAG_FORWARD);
      MGC_FIELD(w, 0) = c;
      break;
    }
    mgc_modify(&MGC_FIELD(g_arr, lo + (long)mt_below(&rng, NSLOTS / 2)), w);
    /* Chains of two closures: every other one points into the one before
       it. */
    if (prev != MGC_UNIT)
      prev = MGC_UNIT;
    else if (MGC_TAG_VAL(c) == MGC_TAG_LAZY)
      prev = MGC_FIELD(c, 0);
    else
      prev = c + CL_C * (mgc_value)sizeof(mgc_value);
    if (it % 64 == 0)
      bad += !slot_ok(w);
  }
  MT_CHECK(bad == 0, "writer %d: %ld of its own closures broken", self, bad);
  MGC_RETURN(MGC_UNIT);
}

/* Domain 3 copies young pointers of the writers into its own old array,
   so that two remembered sets hold the same young closures. */
static mgc_value copier(mgc_value arg) {
  MGC_PARAM1(arg);
  struct mt_rng rng;
  long it;
  mt_rng_seed(&rng, SEED, 3);
  for (it = 0; !atomic_load_explicit(&stop, memory_order_relaxed); it++) {
    long i = (long)mt_below(&rng, NSLOTS);
    mgc_value v =
        (mgc_value)__atomic_load_n(&MGC_FIELD(g_arr, i), __ATOMIC_ACQUIRE);
    mgc_modify(&MGC_FIELD(g_copy, i), v);
    if (it % 16 == 0) {
      mgc_value junk = mgc_alloc_small(3, 0);
      MGC_FIELD(junk, 0) = MGC_FIELD(junk, 1) = MGC_FIELD(junk, 2) = MGC_UNIT;
    }
  }
  MGC_RETURN(MGC_UNIT);
}

static void part2(void) {
  mgc_domain *d[3];
  long i;
  atomic_store(&stop, 0);
  g_arr = mgc_alloc(NSLOTS, 0);
  g_copy = mgc_alloc(NSLOTS, 0);
  mgc_set_minor_gc_end_hook(after_minor);
  d[0] = mgc_domain_spawn(writer, MGC_VAL_INT(1));
  d[1] = mgc_domain_spawn(writer, MGC_VAL_INT(2));
  d[2] = mgc_domain_spawn(copier, MGC_UNIT);
  if (!CHECK(d[0] && d[1] && d[2], "spawn writers and copier"))
    exit(check_done());
  for (i = 0; i < rounds; i++) {
    if (i % 8 == 7)
      mgc_full_major();
    else if (i % 2)
      mgc_major_slice(0);
    else
      mgc_minor_collection();
  }
  atomic_store(&stop, 1);
  for (i = 0; i < 3; i++)
    mgc_domain_join(d[i]);
  mgc_set_minor_gc_end_hook(NULL);
  mgc_minor_collection();
  CHECK(check_array(g_arr) + check_array(g_copy) == 0,
        "part 2: every slot intact at the end");
  CHECK(atomic_load(&bad_closures) == 0,
        "part 2: %ld slots checked after %ld minor collections, %ld broken",
        atomic_load(&checks_done), atomic_load(&hook_runs),
        atomic_load(&bad_closures));
  CHECK(atomic_load(&hook_runs) >= rounds / 2,
        "the check ran after the collections (%ld times)",
        atomic_load(&hook_runs));
  CHECK_VERIFY("end of part 2");
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(600);
  test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 4;
  p.minor_heap_words = 8192;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  rounds = test_scale(2000);
  mgc_register_global_root(&g_old);
  mgc_register_global_root(&g_arr);
  mgc_register_global_root(&g_copy);
  g_old = mgc_alloc_shr(2, 7);
  mgc_initialize(&MGC_FIELD(g_old, 0), MGC_VAL_INT(1));
  mgc_initialize(&MGC_FIELD(g_old, 1), MGC_VAL_INT(2));
  part1();
  part2();
  mgc_remove_global_root(&g_old);
  mgc_remove_global_root(&g_arr);
  mgc_remove_global_root(&g_copy);
  mgc_shutdown();
  return check_mt_done();
}
