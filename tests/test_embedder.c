/* test_embedder: the calls an interpreter embedding mgc needs (OCaml's
 * ocamlrun), on one domain.
 *
 *   scan kinds:   a roots hook told MGC_SCAN_YOUNG by minor collections and
 *                 MGC_SCAN_FULL by cycle ends, compaction and the verifier;
 *                 the young action ignores any word that is not young
 *                 (integers, 0, old and out-of-heap blocks, C data, malloc'd
 *                 memory, code addresses); the older hook still works and
 *                 the two replace each other (one slot);
 *   domain user:  NULL before it is set and on a thread that is not a
 *                 domain; the hook sees it (the verifier included);
 *   mgc_modify's halves: the inline store into a young field and
 *                 mgc_modify_slow: what each remembers and darkens, a
 *                 full grey buffer drained by the barrier;
 *   write barrier without the store: young values CASed and exchanged into
 *                 an old block survive minor and major collections with
 *                 the verifier; the deletion barrier: a value moved by CAS
 *                 from one old block to another while marking runs is still
 *                 marked (it is reachable only from a block already scanned);
 *   interrupts:   mgc_interrupt from a real signal handler makes the next
 *                 poll or small allocation take the slow path, which calls
 *                 the limit-reset hook; a hook that interrupts again while a
 *                 counter is positive; a timer signal storm during
 *                 allocation loses no interrupt;
 *   hand-made custom blocks: young ones (re-headered, registered) are
 *                 finalised exactly once when they die young, once after
 *                 promotion and death, never while reachable; major ones
 *                 from mgc_alloc_shr_noexc; their mem requests a minor GC;
 *   pause-aware part: its rules and memory of survival, and its probe
 *                 on made-up collections fed to the sizing (DESIGN §5.8);
 *   minor heap geometry, mgc_set_params (valid changes visible and in
 *                 force, invalid ones refused with nothing changed),
 *                 mgc_major_collection_compact (the heap shrinks, the
 *                 verifier passes), mgc_alloc_shr_reserved/_noexc (0 without
 *                 the OOM handler for sizes no memory can hold);
 *   out-of-heap blocks: static (read-only) and malloc'd blocks of several
 *                 sizes and tags with the not-markable colour, stored in
 *                 old and young blocks, roots of every kind, the hook,
 *                 fibers, ephemeron keys and data and weak arrays, through
 *                 minor, major, full major, compactions and the verifier:
 *                 nothing crashes, nothing of theirs changes, every place
 *                 still points to them; finalising one is a fatal error.
 */
#define _DEFAULT_SOURCE
#include "check.h"
#include "internal_check.h"
#include "lists.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Under AddressSanitizer a huge malloc must return NULL, as it does without
   it, so that mgc_alloc_shr_noexc's path is what is tested. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}

static int torture_on(void) {
  mgc_params p;
  mgc_get_params(&p);
  return p.torture_every != 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------------ */
/* Out-of-heap blocks (static, read-only: a write by the GC would fault)    */
/* ------------------------------------------------------------------------ */

static const struct {
  mgc_header h;
  mgc_value f[3];
} oh_tuple = {MGC_MAKE_OUT_OF_HEAP_HEADER(3, 0),
              {MGC_VAL_INT(1), MGC_VAL_INT(2), MGC_VAL_INT(3)}};
/* "hello, static": 13 bytes in 2 words, OCaml's padding. */
static const struct {
  mgc_header h;
  char s[16];
} oh_string = {MGC_MAKE_OUT_OF_HEAP_HEADER(2, MGC_TAG_STRING),
               "hello, static\0\0\2"};
static const struct {
  mgc_header h;
  double d;
} oh_double = {MGC_MAKE_OUT_OF_HEAP_HEADER(1, MGC_TAG_DOUBLE), 2.5};
static const struct {
  mgc_header h;
  mgc_value f[1];
} oh_abstract = {MGC_MAKE_OUT_OF_HEAP_HEADER(1, MGC_TAG_ABSTRACT), {0x1234}};
static const struct {
  mgc_header h;
} oh_empty = {MGC_MAKE_OUT_OF_HEAP_HEADER(0, 7)};
/* A closure: a fake code pointer, closure info, one environment word. */
static const struct {
  mgc_header h;
  mgc_value f[3];
} oh_closure = {MGC_MAKE_OUT_OF_HEAP_HEADER(3, MGC_TAG_CLOSURE),
                {0x4000, MGC_CLOSINFO(1, 2), MGC_VAL_INT(9)}};
/* Large, tag 200, reserved bits set, made at run time in malloc'd memory
   (its fields point to the static ones). */
#define OH_BIG 300
static mgc_header *oh_big_mem;

#define OH_N 7
static mgc_value oh_val[OH_N];
static mgc_header *oh_hp[OH_N]; /* their headers */
static size_t oh_words[OH_N];   /* header + fields */
static mgc_header *oh_copy[OH_N];

static void oh_setup(void) {
  size_t i;
  oh_big_mem = malloc((OH_BIG + 1) * sizeof(mgc_header));
  oh_big_mem[0] =
      MGC_MAKE_OUT_OF_HEAP_HEADER(OH_BIG, 200) | ((mgc_header)0xA5 << 56);
  oh_val[0] = (mgc_value)&oh_tuple.f[0];
  oh_val[1] = (mgc_value)&oh_string.s[0];
  oh_val[2] = (mgc_value)&oh_double.d;
  oh_val[3] = (mgc_value)&oh_abstract.f[0];
  oh_val[4] = (mgc_value)(&oh_empty.h + 1);
  oh_val[5] = (mgc_value)&oh_closure.f[0];
  oh_val[6] = (mgc_value)(oh_big_mem + 1);
  for (i = 0; i < OH_BIG; i++)
    oh_big_mem[1 + i] =
        i % 3 ? (mgc_header)MGC_VAL_INT(i) : (mgc_header)oh_val[i % 6];
  for (i = 0; i < OH_N; i++) {
    oh_hp[i] = (mgc_header *)oh_val[i] - 1;
    oh_words[i] = 1 + MGC_WOSIZE_HD(*oh_hp[i]);
    oh_copy[i] = malloc(oh_words[i] * sizeof(mgc_header));
    memcpy(oh_copy[i], oh_hp[i], oh_words[i] * sizeof(mgc_header));
  }
}

static int oh_unchanged(void) {
  int i;
  for (i = 0; i < OH_N; i++)
    if (memcmp(oh_copy[i], oh_hp[i], oh_words[i] * sizeof(mgc_header)) != 0)
      return 0;
  return 1;
}

/* ------------------------------------------------------------------------ */
/* Scan kinds                                                               */
/* ------------------------------------------------------------------------ */

static long kind_young, kind_full, plain_calls;
static void *hook_user_seen;
static long hook_user_wrong;
static mgc_value hook_young = MGC_UNIT; /* a value root of the hook */
static mgc_value hook_old = MGC_UNIT;   /* another */
static mgc_value hook_oh = MGC_UNIT;    /* an out-of-heap block */
static int some_c_int = 5;
static void *some_malloc;
#define NJUNK 8
static mgc_value junk[NJUNK];      /* words that are not young values */
static mgc_value junk_copy[NJUNK]; /* what they must stay */

static void junk_setup(void) {
  some_malloc = malloc(64);
  junk[0] = 0;
  junk[1] = MGC_VAL_INT(-77);
  junk[2] = (mgc_value)&some_c_int;
  junk[3] = (mgc_value)some_malloc;
  junk[4] = (mgc_value)(uintptr_t)&now_ns; /* a code address */
  junk[5] = (mgc_value)0x1002;             /* unmapped, even */
  junk[6] = (mgc_value)&oh_tuple.f[1];     /* inside a static block */
  junk[7] = (mgc_value)((char *)some_malloc + 8);
  memcpy(junk_copy, junk, sizeof junk);
}

static void kind_hook(mgc_scanning_action act, void *data, mgc_scan_kind kind) {
  int i;
  if (mgc_domain_user() != hook_user_seen)
    hook_user_wrong++;
  act(data, hook_young, &hook_young);
  act(data, hook_old, &hook_old);
  act(data, hook_oh, &hook_oh);
  if (kind == MGC_SCAN_YOUNG) {
    kind_young++;
    /* Unfiltered: the young action ignores whatever is not young. */
    for (i = 0; i < NJUNK; i++)
      act(data, junk[i], &junk[i]);
  } else {
    kind_full++;
  }
}

static void plain_hook(mgc_scanning_action act, void *data) {
  plain_calls++;
  act(data, hook_young, &hook_young);
  act(data, hook_old, &hook_old);
  act(data, hook_oh, &hook_oh);
}

static void *thread_user(void *arg) {
  *(void **)arg = mgc_domain_user();
  return NULL;
}

static void test_scan_kinds(void) {
  long y0, f0, p0;
  int i;
  pthread_t th;
  void *other = (void *)1;
  static int user_token;

  CHECK(mgc_domain_user() == NULL, "the domain user is NULL before it is set");
  mgc_domain_set_user(&user_token);
  CHECK(mgc_domain_user() == &user_token, "the domain user reads back");
  pthread_create(&th, NULL, thread_user, &other);
  pthread_join(th, NULL);
  CHECK(other == NULL, "a thread that is not a domain gets NULL (%p)", other);
  hook_user_seen = &user_token;

  junk_setup();
  hook_young = mgc_alloc_small(2, 3);
  MGC_FIELD(hook_young, 0) = MGC_VAL_INT(11);
  MGC_FIELD(hook_young, 1) = MGC_VAL_INT(12);
  hook_old = mgc_alloc_shr(1, 4);
  mgc_initialize(&MGC_FIELD(hook_old, 0), MGC_VAL_INT(13));
  hook_oh = oh_val[0];
  mgc_set_scan_roots_hook_kind(kind_hook);

  y0 = kind_young;
  if (!torture_on())
    CHECK(mgc_is_young(hook_young), "the hook's value is young at first");
  mgc_minor_collection();
  CHECK(kind_young > y0, "a minor collection scans MGC_SCAN_YOUNG (%ld)",
        kind_young - y0);
  CHECK(!mgc_is_young(hook_young) &&
            MGC_FIELD(hook_young, 0) == MGC_VAL_INT(11) &&
            MGC_FIELD(hook_young, 1) == MGC_VAL_INT(12) &&
            MGC_TAG_VAL(hook_young) == 3,
        "the hook's young value was promoted through the young action");
  for (i = 0; i < NJUNK; i++)
    CHECK(junk[i] == junk_copy[i], "junk word %d (%#lx) left alone", i,
          (unsigned long)junk_copy[i]);
  CHECK(hook_oh == oh_val[0], "the out-of-heap root is left alone");

  f0 = kind_full;
  mgc_major_collection();
  start_marking();
  CHECK(kind_full > f0, "the mark start scans MGC_SCAN_FULL (%ld)",
        kind_full - f0);
  f0 = kind_full;
  CHECK_VERIFY("scan kinds");
  CHECK(kind_full > f0, "the verifier scans MGC_SCAN_FULL");
  f0 = kind_full;
  mgc_compact();
  CHECK(kind_full > f0, "compaction scans MGC_SCAN_FULL");
  CHECK(MGC_FIELD(hook_old, 0) == MGC_VAL_INT(13) &&
            MGC_FIELD(hook_young, 0) == MGC_VAL_INT(11),
        "the hook's values survive a compaction");
  for (i = 0; i < NJUNK; i++)
    CHECK(junk[i] == junk_copy[i], "junk word %d still left alone", i);
  CHECK(hook_user_wrong == 0,
        "mgc_domain_user() in the hook was the domain's (%ld wrong)",
        hook_user_wrong);

  /* One slot: the older hook replaces the kind hook and back. */
  mgc_set_scan_roots_hook(plain_hook);
  y0 = kind_young;
  f0 = kind_full;
  p0 = plain_calls;
  mgc_minor_collection();
  mgc_major_collection();
  CHECK(plain_calls > p0 && kind_young == y0 && kind_full == f0,
        "mgc_set_scan_roots_hook replaced the kind hook (%ld calls)",
        plain_calls - p0);
  mgc_set_scan_roots_hook_kind(kind_hook);
  p0 = plain_calls;
  mgc_minor_collection();
  CHECK(plain_calls == p0 && kind_young > y0,
        "mgc_set_scan_roots_hook_kind replaced the older hook");
  CHECK(MGC_FIELD(hook_old, 0) == MGC_VAL_INT(13) &&
            MGC_FIELD(hook_young, 1) == MGC_VAL_INT(12),
        "the hook's values survive every switch");
  mgc_set_scan_roots_hook_kind(NULL);
  y0 = kind_young;
  mgc_minor_collection();
  CHECK(kind_young == y0, "NULL removes the hook");
  hook_young = hook_old = hook_oh = MGC_UNIT;
  free(some_malloc);
}

/* ------------------------------------------------------------------------ */
/* The write barrier without the store                                      */
/* ------------------------------------------------------------------------ */

static mgc_value wb_arr = MGC_UNIT;
static mgc_value wb_a = MGC_UNIT, wb_b = MGC_UNIT;
static mgc_value wb_keep = MGC_UNIT; /* a major block (test_modify_halves) */

/* CAS: release, so that a domain reading the field sees the block's
   fields (what mgc_modify's release store does); the failure order is
   irrelevant (single domain). */
static int cas(mgc_value *field, mgc_value old, mgc_value newv) {
  return __atomic_compare_exchange_n(field, &old, newv, 0, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED);
}

static void test_write_barrier(void) {
  long n = 300, i, bad = 0;
  mgc_value x;

  mgc_register_global_root(&wb_arr);
  wb_arr = mgc_alloc_shr((size_t)n, 0);
  mgc_minor_collection();
  for (i = 0; i < n; i++) {
    /* Young, filled, then CASed in: no safepoint between. */
    mgc_value y = mgc_alloc_small(2, 5);
    mgc_value *f = &MGC_FIELD(wb_arr, i);
    MGC_FIELD(y, 0) = MGC_VAL_INT(i);
    MGC_FIELD(y, 1) = MGC_VAL_INT(-i);
    if (!cas(f, MGC_UNIT, y))
      bad++;
    mgc_write_barrier(wb_arr, f, MGC_UNIT, y);
  }
  CHECK(bad == 0, "every CAS succeeded");
  CHECK_VERIFY("after the CASes (the verifier checks invariant 10)");
  /* Exchange every other one for a new young block (old value young or
     promoted already). */
  for (i = 0; i < n; i += 2) {
    mgc_value y = mgc_alloc_small(2, 6);
    mgc_value *f = &MGC_FIELD(wb_arr, i);
    mgc_value old;
    MGC_FIELD(y, 0) = MGC_VAL_INT(1000 + i);
    MGC_FIELD(y, 1) = MGC_VAL_INT(-i);
    old = __atomic_exchange_n(f, y, __ATOMIC_RELEASE);
    mgc_write_barrier(wb_arr, f, old, y);
  }
  churn(20000);
  mgc_minor_collection();
  mgc_major_collection();
  mgc_full_major();
  CHECK_VERIFY("after minor and major collections");
  bad = 0;
  for (i = 0; i < n; i++) {
    mgc_value y = MGC_FIELD(wb_arr, i);
    long want = i % 2 ? i : 1000 + i;
    if (!MGC_IS_BLOCK(y) || mgc_is_young(y) ||
        MGC_FIELD(y, 0) != MGC_VAL_INT(want) ||
        MGC_FIELD(y, 1) != MGC_VAL_INT(-i) ||
        MGC_TAG_VAL(y) != (i % 2 ? 5u : 6u))
      bad++;
  }
  CHECK(bad == 0,
        "values CASed or exchanged into an old block survive (%ld "
        "bad)",
        bad);
  /* A young obj: nothing to do, nothing done. */
  {
    mgc_value yb = mgc_alloc_small(1, 0);
    size_t before = mgc_table_count(&self()->major_ref);
    MGC_FIELD(yb, 0) = MGC_UNIT;
    cas(&MGC_FIELD(yb, 0), MGC_UNIT, MGC_VAL_INT(3));
    mgc_write_barrier(yb, &MGC_FIELD(yb, 0), MGC_UNIT, MGC_VAL_INT(3));
    CHECK(mgc_table_count(&self()->major_ref) == before,
          "a young block's field is never remembered");
  }
  wb_arr = MGC_UNIT;
  mgc_remove_global_root(&wb_arr);

  /* The deletion barrier (as test_internals does for mgc_modify): x moves
     from a to b while marking runs; b was darkened as a leaf (its fields
     are never scanned in this cycle) and a loses x before it is scanned,
     so only the barrier on a's old value keeps x. */
  mgc_register_global_root(&wb_a);
  mgc_register_global_root(&wb_b);
  wb_a = mgc_alloc_shr(1, 0);
  wb_b = mgc_alloc_shr(1, 0);
  x = mgc_alloc_shr(2, 0);
  mgc_initialize(&MGC_FIELD(x, 0), MGC_VAL_INT(77));
  mgc_initialize(&MGC_FIELD(x, 1), MGC_VAL_INT(78));
  mgc_modify(&MGC_FIELD(wb_a, 0), x);
  mgc_major_collection(); /* a new cycle */
  start_marking();        /* its snapshot: a and b darkened, x unmarked */
  x = MGC_FIELD(wb_a, 0); /* moved by a compaction (C=1) */
  CHECK(COLOUR_HD(MGC_HD_VAL(x)) == mgc_colours.unmarked,
        "x unmarked at the start of the cycle");
  {
    size_t grey = self()->grey_count;
    CHECK(cas(&MGC_FIELD(wb_b, 0), MGC_UNIT, x), "CAS x into b");
    mgc_write_barrier(wb_b, &MGC_FIELD(wb_b, 0), MGC_UNIT, x);
    CHECK(cas(&MGC_FIELD(wb_a, 0), x, MGC_UNIT), "CAS x out of a");
    mgc_write_barrier(wb_a, &MGC_FIELD(wb_a, 0), x, MGC_UNIT);
    CHECK(self()->grey_count == grey + 1,
          "the overwritten value was buffered for darkening");
  }
  mgc_major_collection(); /* ends the cycle: x must have been marked */
  mgc_major_collection(); /* and a second one sweeps */
  x = MGC_FIELD(wb_b, 0);
  CHECK(MGC_IS_BLOCK(x) && MGC_FIELD(x, 0) == MGC_VAL_INT(77) &&
            MGC_FIELD(x, 1) == MGC_VAL_INT(78),
        "x survived being moved by CAS during marking");
  CHECK_VERIFY("after the deletion barrier");
  mgc_remove_global_root(&wb_a);
  mgc_remove_global_root(&wb_b);
  wb_a = wb_b = MGC_UNIT;
}

/* mgc_modify's two halves: the inline store for a field in a minor heap,
   and mgc_modify_slow, which does the whole barrier whoever calls it.  A
   young field is never remembered and never darkens what it held; an old
   field that gets a young value is remembered once (again only when it
   held no young value), and the value it loses is buffered for darkening
   (marking is under way: test_internals checks the barrier before it);
   values stored either way survive the collections, with the verifier. */
static void test_modify_halves(void) {
  MGC_PARAM0;
  MGC_LOCAL3(old, yb, yv);
  struct mgc_dom *d = self();
  start_marking();
  old = mgc_alloc_shr(4, 0);
  for (int i = 0; i < 4; i++)
    mgc_initialize(&MGC_FIELD(old, i), MGC_UNIT);
  mgc_initialize(&MGC_FIELD(old, 3), wb_keep);
  yv = mgc_alloc_small(1, 0);
  MGC_FIELD(yv, 0) = MGC_VAL_INT(41);
  yb = mgc_alloc_small(2, 0);
  MGC_FIELD(yb, 0) = MGC_UNIT;
  MGC_FIELD(yb, 1) = MGC_UNIT;
  /* No safepoint from here to the counts (mgc_modify is none). */
  if (mgc_is_young(yb) && mgc_is_young(yv)) {
    mgc_grey_drain(d); /* so that the buffer does not fill meanwhile */
    size_t refs = mgc_table_count(&d->major_ref), grey = d->grey_count;
    mgc_modify(&MGC_FIELD(yb, 0), yv);
    mgc_modify_slow(&MGC_FIELD(yb, 1), yv);
    mgc_modify(&MGC_FIELD(yb, 0), old);
    mgc_modify_slow(&MGC_FIELD(yb, 1), old);
    CHECK(MGC_FIELD(yb, 0) == old && MGC_FIELD(yb, 1) == old,
          "young fields hold what both halves stored");
    CHECK(mgc_table_count(&d->major_ref) == refs && d->grey_count == grey,
          "young fields: nothing remembered, nothing darkened (%zu, %zu)",
          mgc_table_count(&d->major_ref) - refs, d->grey_count - grey);
    mgc_modify(&MGC_FIELD(old, 0), yv);
    mgc_modify_slow(&MGC_FIELD(old, 1), yv);
    CHECK(mgc_table_count(&d->major_ref) == refs + 2,
          "an old field given a young value is remembered, by either half");
    mgc_modify(&MGC_FIELD(old, 0), yb);
    mgc_modify_slow(&MGC_FIELD(old, 1), yb);
    CHECK(mgc_table_count(&d->major_ref) == refs + 2,
          "and not again while it holds a young value");
    mgc_modify(&MGC_FIELD(old, 3), yv);
    CHECK(d->grey_count == grey + 1 && d->grey[grey] == wb_keep,
          "the major value an old field loses is buffered for darkening");
    mgc_modify_slow(&MGC_FIELD(old, 2), wb_keep);
    CHECK(d->grey_count == grey + 1,
          "an old field that held an integer darkens nothing");
    /* Past a full buffer: drained once, then the value pushed. */
    size_t g0 = d->grey_count, stores = GREY_CAPACITY + 3 - g0;
    for (size_t k = 0; k < stores; k++)
      mgc_modify(&MGC_FIELD(old, 2), k % 2 ? wb_keep : old);
    CHECK(d->grey_count == 3 && d->grey[2] == (stores % 2 ? wb_keep : old),
          "a full grey buffer is drained, then takes the value (%zu)",
          d->grey_count);
    mgc_modify(&MGC_FIELD(old, 2), wb_keep);
  } else {
    /* Torture mode collected between the allocations: the same stores,
       checked by value only. */
    mgc_modify(&MGC_FIELD(old, 0), yb);
    mgc_modify_slow(&MGC_FIELD(old, 1), yb);
    mgc_modify(&MGC_FIELD(yb, 0), old);
    mgc_modify_slow(&MGC_FIELD(yb, 1), old);
    mgc_modify(&MGC_FIELD(old, 3), yv);
    mgc_modify_slow(&MGC_FIELD(old, 2), wb_keep);
  }
  mgc_minor_collection();
  mgc_full_major();
  CHECK_VERIFY("after stores by both halves of mgc_modify");
  yb = MGC_FIELD(old, 0);
  CHECK(MGC_FIELD(old, 1) == yb && MGC_IS_BLOCK(yb) && !mgc_is_young(yb) &&
            MGC_FIELD(yb, 0) == old && MGC_FIELD(yb, 1) == old,
        "the values stored survive, promoted");
  yv = MGC_FIELD(old, 3);
  CHECK(MGC_IS_BLOCK(yv) && MGC_FIELD(yv, 0) == MGC_VAL_INT(41) &&
            MGC_FIELD(old, 2) == wb_keep,
        "the block stored over the old value survives, and the old value");
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Interrupts                                                               */
/* ------------------------------------------------------------------------ */

static atomic_long sig_pending;   /* set by the handler, taken by the hook */
static atomic_long sig_delivered; /* by the handler */
static long sig_served;           /* by the hook */
static long reset_calls;
static long reinterrupt_budget;

static void on_signal(int sig) {
  (void)sig;
  atomic_fetch_add(&sig_delivered, 1);
  atomic_fetch_add(&sig_pending, 1);
  mgc_interrupt();
}

static void reset_hook(void) {
  reset_calls++;
  sig_served += atomic_exchange(&sig_pending, 0);
  if (reinterrupt_budget > 0) {
    reinterrupt_budget--;
    mgc_interrupt();
  }
}

/* Polls until a poll takes the fast path (no reset); false after 20. */
static int settle(void) {
  int i;
  for (i = 0; i < 20; i++) {
    long c = reset_calls;
    mgc_poll();
    if (reset_calls == c)
      return 1;
  }
  return 0;
}

static void test_interrupts(void) {
  struct sigaction sa, old_usr1, old_alrm;
  long c, i;
  int torture = torture_on();

  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, &old_usr1);
  mgc_set_young_limit_reset_hook(reset_hook);

  if (!torture)
    CHECK(settle(), "without an interrupt a poll takes the fast path");
  c = reset_calls;
  raise(SIGUSR1);
  CHECK(atomic_load(&sig_pending) == 1, "the handler ran");
  mgc_poll();
  CHECK(reset_calls > c && sig_served == 1 && atomic_load(&sig_pending) == 0,
        "the poll after the signal took the slow path and called the hook "
        "(%ld calls)",
        reset_calls - c);
  if (!torture)
    CHECK(settle(), "then the fast path again");

  c = reset_calls;
  raise(SIGUSR1);
  {
    mgc_value v = mgc_alloc_small(1, 0);
    MGC_FIELD(v, 0) = MGC_UNIT;
  }
  CHECK(reset_calls > c && sig_served == 2,
        "a small allocation after the signal took the slow path");

  c = reset_calls;
  mgc_minor_collection();
  CHECK(reset_calls > c, "a minor collection resets the limit: hook called");

  /* A hook that interrupts again while its counter is positive. */
  if (!torture)
    settle();
  reinterrupt_budget = 3;
  mgc_interrupt();
  for (i = 0; i < 10 && reinterrupt_budget > 0; i++)
    mgc_poll();
  CHECK(reinterrupt_budget == 0,
        "each re-interrupt from the hook was served by a later poll (%ld "
        "polls)",
        i);
  if (!torture)
    CHECK(settle(), "once the counter is 0, polls are fast again");

  /* A storm of timer signals while allocating: none may be lost. */
  sigaction(SIGALRM, &sa, &old_alrm);
  {
    struct itimerval it = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
    uint64_t t0 = now_ns();
    long iter = 0;
    MGC_PARAM0;
    MGC_LOCAL1(keep);
    setitimer(ITIMER_REAL, &it, NULL);
    while (now_ns() - t0 < 60000000u) {
      for (i = 0; i < 256; i++) {
        mgc_value v = mgc_alloc_small(3, 0);
        MGC_FIELD(v, 0) = MGC_VAL_INT(i);
        MGC_FIELD(v, 1) = keep;
        MGC_FIELD(v, 2) = MGC_UNIT;
        if (i % 16 == 0)
          keep = v;
        if (i % 32 == 0)
          mgc_poll();
      }
      keep = MGC_UNIT;
      iter++;
    }
    setitimer(ITIMER_REAL, &off, NULL);
    mgc_poll();
    CHECK(atomic_load(&sig_delivered) > 2,
          "timer signals arrived (%ld in %ld rounds)",
          (long)atomic_load(&sig_delivered), iter);
    CHECK(atomic_load(&sig_pending) == 0 &&
              sig_served == atomic_load(&sig_delivered),
          "every interrupt was served by the hook (%ld delivered, %ld "
          "served)",
          (long)atomic_load(&sig_delivered), sig_served);
    MGC_DROP;
  }
  sigaction(SIGALRM, &old_alrm, NULL);
  sigaction(SIGUSR1, &old_usr1, NULL);
  mgc_set_young_limit_reset_hook(NULL);
  c = reset_calls;
  mgc_minor_collection();
  CHECK(reset_calls == c, "NULL removes the reset hook");
}

/* ------------------------------------------------------------------------ */
/* Custom blocks made by hand                                               */
/* ------------------------------------------------------------------------ */

#define NCUSTOM 16
static long fin_count[NCUSTOM];

static void count_finalize(mgc_value v) {
  long id = (long)MGC_FIELD(v, 1);
  if (id >= 0 && id < NCUSTOM)
    fin_count[id]++;
}

static const mgc_custom_ops hand_ops = {"mgc.test.hand", count_finalize};

/* As an unmarshaller does: a young block, re-headered and filled before
   any safepoint, then registered. */
static mgc_value hand_custom(long id, unsigned reserved, size_t mem,
                             size_t max) {
  mgc_value v = mgc_alloc_small(3, MGC_TAG_ABSTRACT);
  ((mgc_header *)v)[-1] = MGC_MAKE_HEADER(3, MGC_TAG_CUSTOM, reserved);
  MGC_FIELD(v, 0) = (mgc_value)&hand_ops;
  MGC_FIELD(v, 1) = (mgc_value)id;
  MGC_FIELD(v, 2) = 0;
  mgc_custom_register(v, mem, max);
  return v;
}

static void test_custom_register(void) {
  mgc_stats s0, s1;
  MGC_PARAM0;
  MGC_LOCAL1(r);

  /* Dies young. */
  (void)hand_custom(1, 0, 0, 0);
  mgc_minor_collection();
  CHECK(fin_count[1] == 1,
        "a young hand-made custom block dead at the "
        "minor collection is finalised (%ld)",
        fin_count[1]);
  mgc_full_major();
  CHECK(fin_count[1] == 1, "... exactly once (%ld)", fin_count[1]);

  /* Reachable, promoted, then dead. */
  r = hand_custom(2, 0x3C, 0, 0);
  mgc_minor_collection();
  CHECK(fin_count[2] == 0 && !mgc_is_young(r) &&
            MGC_TAG_VAL(r) == MGC_TAG_CUSTOM &&
            MGC_RESERVED_HD(MGC_HD_VAL(r)) == 0x3C &&
            MGC_CUSTOM_OPS(r) == &hand_ops && MGC_FIELD(r, 1) == 2,
        "a reachable one is promoted intact (reserved bits kept), not "
        "finalised");
  mgc_full_major();
  CHECK(fin_count[2] == 0, "never finalised while reachable");
  r = MGC_UNIT;
  mgc_full_major();
  CHECK(fin_count[2] == 1, "finalised once after promotion and death (%ld)",
        fin_count[2]);
  mgc_full_major();
  CHECK(fin_count[2] == 1, "... exactly once (%ld)", fin_count[2]);

  /* Major, from mgc_alloc_shr_noexc: fields zero, ops stored by hand. */
  r = mgc_alloc_shr_noexc(3, MGC_TAG_CUSTOM, 0);
  if (CHECK(r != 0 && MGC_TAG_VAL(r) == MGC_TAG_CUSTOM && MGC_FIELD(r, 0) == 0,
            "mgc_alloc_shr_noexc makes a zeroed major custom block")) {
    MGC_FIELD(r, 0) = (mgc_value)&hand_ops;
    MGC_FIELD(r, 1) = 3;
    mgc_custom_register(r, 4096, 0);
    mgc_full_major();
    CHECK(fin_count[3] == 0, "a reachable major one is not finalised");
    r = MGC_UNIT;
    mgc_full_major();
    CHECK(fin_count[3] == 1, "a dead major one is finalised once (%ld)",
          fin_count[3]);
  }

  /* Their mem counts: two full shares of the minor heap request a minor
     collection, run at the next poll (in torture mode every allocation
     collects anyway). */
  mgc_minor_collection();
  mgc_get_stats(&s0);
  (void)hand_custom(4, 0, 100, 100);
  (void)hand_custom(5, 0, 100, 100);
  mgc_poll();
  mgc_get_stats(&s1);
  CHECK(s1.minor_collections > s0.minor_collections,
        "the mem of hand-made young custom blocks requested a minor GC");
  if (torture_on())
    mgc_minor_collection();
  CHECK(fin_count[4] == 1 && fin_count[5] == 1,
        "and they were finalised by it (%ld, %ld)", fin_count[4], fin_count[5]);
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Geometry and parameters                                                  */
/* ------------------------------------------------------------------------ */

static size_t range_words(void) {
  void *s, *e;
  mgc_minor_heap_range(&s, &e);
  return (size_t)((char *)e - (char *)s) / sizeof(mgc_value);
}

static void set_pause_goal(unsigned us) {
  mgc_params p;
  mgc_get_params(&p);
  p.minor_pause_goal_us = us;
  int r = mgc_set_params(&p);
  CHECK(r == MGC_OK, "mgc_set_params(P=%u) -> %d", us, r);
}

static void test_geometry(void) {
  mgc_params p;
  void *s, *e;
  mgc_get_params(&p);
  /* The whole heap is in use after a collection only without a pause
     goal (test_pause_sizing): a slow collection (sanitizers, a loaded
     machine) would otherwise shrink it. */
  set_pause_goal(0);
  mgc_minor_heap_range(&s, &e);
  CHECK(range_words() == p.minor_heap_words,
        "the minor heap holds s= words (%zu)", range_words());
  CHECK(mgc_is_young((mgc_value)((uintptr_t)e - 8)) &&
            mgc_is_young((mgc_value)((uintptr_t)s + 8)),
        "the range is in the minor reservation");
  if (!torture_on()) {
    size_t f0, f1;
    mgc_value v;
    mgc_minor_collection();
    f0 = mgc_minor_free_words();
    CHECK(f0 == range_words(), "an empty minor heap is all free (%zu)", f0);
    v = mgc_alloc_small(10, 0);
    for (int i = 0; i < 10; i++)
      MGC_FIELD(v, i) = MGC_UNIT;
    f1 = mgc_minor_free_words();
    CHECK(f1 == f0 - 11, "a block of 10 fields takes 11 words (%zu -> %zu)", f0,
          f1);
  }
  CHECK(mgc_minor_free_words() <= range_words(), "free <= size");
  mgc_set_minor_heap_size(8192);
  CHECK(range_words() == 8192, "re-read after resizing: %zu words",
        range_words());
  CHECK(mgc_minor_free_words() <= 8192, "free words within the new heap");
  mgc_set_minor_heap_size(p.minor_heap_words);
  CHECK(range_words() == p.minor_heap_words, "resized back");
  set_pause_goal(p.minor_pause_goal_us);
}

/* The part of the minor heap in use. */
static size_t part_words(struct mgc_dom *d) {
  return (d->young_end - d->young_floor) / sizeof(mgc_value);
}

/* The pause-aware minor heap: a collection that took longer than the goal
   leaves less of the heap in use (at least 8192 words), one well under it
   gives more back (by half again each time) until all is in use, and a
   goal of 0 always uses it all.  A goal of 1 us is missed by any
   collection that promotes a list of many thousand blocks; one of 10 s is
   met by every collection here.  The list survives all of it, and the
   verifier passes with the smaller part in use. */
static void test_pause_sizing(void) {
  mgc_params orig;
  mgc_get_params(&orig);
  struct mgc_dom *d = (struct mgc_dom *)mgc_tls_state;
  size_t full = range_words();
  MGC_PARAM0;
  MGC_LOCAL1(list);
  long n = test_scale(60000), i, sum = 0, expect = 0;
  set_pause_goal(1);
  for (int round = 0; round < 3; round++) {
    for (i = 0; i < n; i++) {
      mgc_value c = mgc_alloc_small(3, 0);
      MGC_FIELD(c, 0) = MGC_VAL_INT(i);
      MGC_FIELD(c, 1) = list;
      MGC_FIELD(c, 2) = MGC_UNIT;
      list = c;
      expect += i;
    }
    mgc_minor_collection();
    size_t used = part_words(d);
    if (!torture_on()) {
      /* Under torture each collection promotes a block or two. */
      CHECK(used < full,
            "round %d: a 1 us goal missed shrinks the part in "
            "use (%zu of %zu words)",
            round, used, full);
      CHECK(mgc_minor_free_words() == used,
            "round %d: free words are those of the part in use (%zu, %zu)",
            round, mgc_minor_free_words(), used);
    }
    CHECK(used >= (full < 8192 ? full : 8192),
          "round %d: never below 8192 words (%zu)", round, used);
    CHECK((d->young_end - d->young_floor) % sizeof(mgc_value) == 0 &&
              d->young_floor >= d->young_start,
          "round %d: the floor is a word inside the heap", round);
    CHECK_VERIFY("pause sizing");
  }
  for (mgc_value c = list; MGC_IS_BLOCK(c); c = MGC_FIELD(c, 1))
    sum += MGC_INT_VAL(MGC_FIELD(c, 0));
  CHECK(sum == expect, "the list survived (sum %ld, expected %ld)", sum,
        expect);
  /* Well under the goal: half again per collection, up to the whole. */
  set_pause_goal(10000000);
  size_t prev = part_words(d);
  for (i = 0; i < 40; i++) {
    mgc_minor_collection();
    size_t used = part_words(d);
    size_t want = prev + prev / 2 < full ? prev + prev / 2 : full;
    if (used != want) {
      CHECK(used == want, "collection %ld: %zu words in use, expected %zu", i,
            used, want);
      break;
    }
    prev = used;
  }
  CHECK(prev == full, "the whole heap is in use again (%zu of %zu)", prev,
        full);
  /* No goal: all of it at once. */
  set_pause_goal(1);
  list = MGC_UNIT;
  for (i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(3, 0);
    MGC_FIELD(c, 0) = list;
    MGC_FIELD(c, 1) = MGC_UNIT;
    MGC_FIELD(c, 2) = MGC_UNIT;
    list = c;
  }
  mgc_minor_collection();
  set_pause_goal(0);
  mgc_minor_collection();
  CHECK(part_words(d) == full, "a goal of 0 uses the whole heap");
  CHECK(mgc_minor_free_words() == full || torture_on(),
        "and all of it is free after a collection (%zu)",
        mgc_minor_free_words());
  MGC_DROP;
  mgc_set_params(&orig);
}

/* The largest part the model allows under a goal (us), as
   mgc_minor_size_part computes it. */
static size_t model_cap(struct mgc_dom *d, unsigned goal_us) {
  size_t full = range_words();
  double cost = d->pause_ns_sum / d->promoted_sum * d->survival_peak;
  double want = goal_us * 1000.0 * 0.875;
  return cost * (double)full <= want ? full : (size_t)(want / cost);
}

/* The part mgc_minor_size_part picks after a collection with a pause under
   7/8 of the goal (us), from `used` words, on d's state after it. */
static size_t grown_part(struct mgc_dom *d, unsigned goal_us, size_t used) {
  size_t full = range_words(), step = used / 2;
  double room = goal_us * 1000.0 * 0.875 - (double)d->last_pause_ns;
  if (room * d->promoted_sum / d->pause_ns_sum < (double)step)
    step = (size_t)(room * d->promoted_sum / d->pause_ns_sum);
  size_t grown = used + step < full ? used + step : full;
  size_t cap = model_cap(d, goal_us);
  return grown <= cap ? grown : cap > used ? cap : used;
}

/* Puts the part in use at `words` (the heap is empty after a collection). */
static void set_part_words(struct mgc_dom *d, size_t words) {
  d->young_floor = d->young_end - words * sizeof(mgc_value);
  mgc_minor_place_trigger(d);
  mgc_reset_young_limit(d);
}

/* With a goal no collection misses (10 s), collections grow the part by
   half each, to the whole heap within 20 of them. */
static void grow_to_whole_heap(struct mgc_dom *d, size_t full) {
  set_pause_goal(10000000);
  for (int k = 0; k < 20 && part_words(d) < full; k++)
    mgc_minor_collection();
}

/* Allocates short-lived blocks until more than half of the part in use
   has been allocated since the last collection: only such a collection
   counts for the survival peak (DESIGN §5.8). */
static void use_half_part(struct mgc_dom *d) {
  size_t part = part_words(d);
  while ((d->young_end - d->fast.young_ptr) / sizeof(mgc_value) <
         part / 2 + 8) {
    mgc_value c = mgc_alloc_small(3, 0);
    MGC_FIELD(c, 0) = MGC_UNIT;
    MGC_FIELD(c, 1) = MGC_UNIT;
    MGC_FIELD(c, 2) = MGC_UNIT;
  }
}

/* The pause model remembers survival (DESIGN §5.8): after a collection
   where most of the heap survived, collections that promote nothing grow
   the part by half only up to the model's cap, which then rises by 5 % a
   collection as the survival peak decays, not by half or to the whole
   heap, so the next burst of survival does not meet a whole heap.  A part
   already above the cap is kept, and with the cap far, the room left
   under 7/8 of the goal bounds the step.  The rule is checked against the
   pause the domain recorded, so that no check depends on how long
   anything took; the run must take the growing branch (a pause under 7/8
   of the goal, set at ~100-400 us, for empty collections) most of the
   time. */
static void test_pause_memory(void) {
  if (torture_on())
    return; /* the list would be promoted a few blocks at a time */
  mgc_params orig;
  mgc_get_params(&orig);
  struct mgc_dom *d = (struct mgc_dom *)mgc_tls_state;
  size_t full = range_words();
  MGC_PARAM0;
  MGC_LOCAL1(list);
  grow_to_whole_heap(d, full);
  CHECK(part_words(d) == full, "start from the whole heap (%zu)",
        part_words(d));
  long n = (long)(full * 3 / 4) / 3;
  list = make_list(n);
  mgc_minor_collection();
  CHECK(list_ok(list, n), "the list survived");
  double peak = d->survival_peak;
  /* At least 3/8 of the heap in one collection: a slice ending a cycle on
     the way (its section empties the heap) may cut the list in two. */
  CHECK(peak >= 0.37 && peak <= 1.0,
        "survival peak after promoting 3/4 of the heap: %.3f", peak);
  list = MGC_UNIT;
  /* A goal whose cap is about a quarter of the heap, and a part half of
     that. */
  double cost = d->pause_ns_sum / d->promoted_sum * peak;
  unsigned goal = (unsigned)(cost * (double)full / 4 / 0.875 / 1000.0) + 1;
  set_pause_goal(goal);
  size_t cap0 = model_cap(d, goal);
  CHECK(cap0 > 2 * 8192 && cap0 < full / 2,
        "goal %u us: a cap between the floor and half the heap (%zu of %zu)",
        goal, cap0, full);
  set_part_words(d, cap0 / 2);
  size_t used = cap0 / 2;
  double expect = d->survival_peak;
  int grew = 0, kept = 0;
  for (int k = 1; k <= 12; k++) {
    mgc_stats s0, s1;
    if (k == 11) {
      /* Above the cap: kept, not shrunk, by a short pause. */
      used = model_cap(d, goal) * 2;
      set_part_words(d, used);
    }
    mgc_get_stats(&s0);
    use_half_part(d);
    mgc_minor_collection(); /* promotes nothing */
    mgc_get_stats(&s1);
    /* A slice may end a cycle, whose section empties the heaps again,
       with or without half the part used. */
    uint64_t runs = s1.minor_collections - s0.minor_collections;
    if (runs == 1) {
      expect *= 0.95;
      CHECK(d->survival_peak > expect * 0.999 &&
                d->survival_peak < expect * 1.001,
            "collection %d: the peak decays by 5 %% a collection (%.4f, %.4f)",
            k, d->survival_peak, expect);
    }
    expect = d->survival_peak;
    size_t now = part_words(d), cap = model_cap(d, goal);
    if (runs == 1 && d->last_pause_ns < (uint64_t)goal * 875) {
      size_t want = grown_part(d, goal, used);
      CHECK(now == want,
            "collection %d: %zu -> %zu words, expected %zu (cap %zu)", k, used,
            now, want, cap);
      if (k <= 10)
        grew++;
      else
        kept += now == used;
    }
    used = now;
    if (k == 10)
      CHECK(used <= (size_t)((double)cap0 / 0.5987) + 1,
            "10 collections without survival: %zu words, cap %zu at first",
            used, cap0); /* 0.95^10 = 0.5987 */
  }
  CHECK(grew >= 5, "the growing branch ran (%d of 10)", grew);
  CHECK(kept >= 1, "a part above the cap was kept (%d)", kept);
  /* A collection made before half the part was used (another domain's,
     a cycle end's, here an explicit one with nothing allocated) says
     nothing of survival: the peak is kept, not aged.  One that found
     more than half the part allocated, all of it a list, measures the
     list's survival on the words allocated, about 1, where promoted /
     part would give about a half.  Up to 5 tries each: a try counts when
     it ran one collection.  Compaction at every cycle end (C=1) is turned
     off meanwhile: its own minor collection comes with every cycle end,
     and with a small heap (MGC_TEST_SCALE=500) the list's allocation
     ended a cycle in every try. */
  mgc_params saved;
  mgc_get_params(&saved);
  mgc_params no_compact = saved;
  no_compact.compact_every = 0;
  CHECK(mgc_set_params(&no_compact) == MGC_OK, "compaction off");
  bool idle = false, half = false;
  for (int t = 0; t < 5 && !idle; t++) {
    mgc_stats s0, s1;
    mgc_minor_collection();
    double before = d->survival_peak;
    mgc_get_stats(&s0);
    mgc_minor_collection();
    mgc_get_stats(&s1);
    if (s1.minor_collections - s0.minor_collections != 1)
      continue;
    idle = true;
    CHECK(d->survival_peak == before,
          "an idle collection keeps the peak (%.4f, was %.4f)",
          d->survival_peak, before);
  }
  CHECK(idle, "an idle collection ran");
  CHECK(d->survival_peak < 0.8, "the peak has decayed (%.3f)",
        d->survival_peak);
  for (int t = 0; t < 5 && !half; t++) {
    mgc_stats s0, s1;
    mgc_minor_collection();
    long m = (long)(part_words(d) / 2) / 3 + 64;
    mgc_get_stats(&s0);
    list = make_list(m);
    mgc_minor_collection();
    mgc_get_stats(&s1);
    if (s1.minor_collections - s0.minor_collections != 1)
      continue;
    half = true;
    CHECK(list_ok(list, m), "the list of half the part survived");
    CHECK(d->survival_peak > 0.95,
          "a list of half the part: survival about 1 on the words "
          "allocated (%.3f)",
          d->survival_peak);
  }
  CHECK(half, "a collection after the list alone ran");
  CHECK(mgc_set_params(&saved) == MGC_OK, "compaction as it was");
  list = MGC_UNIT;
  /* The room under the goal bounds the growth too: with the survival
     peak decayed (the cap far), a goal whose room under 7/8 of it holds
     about a quarter of the part at the measured rate grows the part by
     that much, not by half.  Up to 5 tries: a try counts when it ran one
     collection with a pause under 7/8 of the goal. */
  for (int k = 0; k < 50; k++) {
    use_half_part(d);
    mgc_minor_collection();
  }
  size_t from = full / 4;
  double rate = d->pause_ns_sum / d->promoted_sum;
  unsigned small = (unsigned)(rate * (double)(from / 4) / 0.875 / 1000.0) + 1;
  set_pause_goal(small);
  bool tried = false;
  for (int t = 0; t < 5 && !tried; t++) {
    mgc_stats s0, s1;
    set_part_words(d, from);
    mgc_get_stats(&s0);
    mgc_minor_collection();
    mgc_get_stats(&s1);
    if (s1.minor_collections - s0.minor_collections != 1 ||
        d->last_pause_ns >= (uint64_t)small * 875)
      continue;
    tried = true;
    size_t now = part_words(d), want = grown_part(d, small, from);
    CHECK(now == want && now > from && now < from + from / 2,
          "goal %u us: %zu -> %zu words, expected %zu (by the room, not by "
          "half; cap %zu)",
          small, from, now, want, model_cap(d, small));
  }
  CHECK(tried, "a collection under 7/8 of a %u us goal", small);
  set_pause_goal(0);
  mgc_minor_collection();
  CHECK(part_words(d) == full, "no goal: the whole heap");
  MGC_DROP;
  mgc_set_params(&orig);
}

/* The model's state, made up: the rate `rate` ns a promoted word, the
   survival peak 1, no probe under way and none to wait for. */
static void fake_model(struct mgc_dom *d, double rate) {
  d->promoted_sum = 4096;
  d->pause_ns_sum = 4096 * rate;
  d->survival_peak = 1.0;
  d->probe_from = 0;
  d->probe_wait = 0;
  d->probe_backoff = 16;
  d->probe_paid = false;
}

/* A made-up collection of the whole part in use: it promotes `surv` of
   it, at most `fixed` words (0: no bound), at `rate` ns a word, and sizes
   the part from that.  Returns its pause (ns). */
static uint64_t fake_collection(struct mgc_dom *d, double surv, double fixed,
                                double rate, size_t *promoted) {
  size_t used = part_words(d);
  double p = surv * (double)used;
  if (fixed > 0 && p > fixed)
    p = fixed;
  uint64_t pause = (uint64_t)(p * rate);
  *promoted = (size_t)p;
  mgc_minor_size_part(d, pause, (size_t)p, used);
  return pause;
}

/* The probe (DESIGN §5.8), on made-up collections fed to the sizing, so
   that nothing depends on the machine's speed.  The goal is set so that
   the whole heap promoting a fixed set of 2/5 of it pauses 0.9 of the
   goal, over the 7/8 that growth stops at, and so that the model caps a
   part promoting 0.85 of itself just short of the size where the set
   stops growing with the part (fibers' threads on a slow machine):
   - a fixed set: the probes grow the part to the whole heap, where it
     promotes 2/5 of what it allocates instead of 0.85, no pause over the
     goal on the way (without the probe it stays at the cap);
   - survival that follows the part (0.85 of any part): the part stays at
     the cap, a probe that does not pay costs one pause of at most 10/9
     of the goal, and they come ever rarer: at most 8 in 2000
     collections;
   - a probe under way when the goal is turned off is dropped, and the
     whole heap used;
   - a burst of full survival, then collections promoting 2 %: a probe
     made at the burst's last collection does not pay (the part goes
     back), and for the next 10 the cap holds (the model's memory, the
     peak decayed to 0.6): no probe starts, each part is the one the
     rules pick, short of the whole heap. */
static void test_pause_probe(void) {
  struct mgc_dom *d = (struct mgc_dom *)mgc_tls_state;
  size_t full = range_words();
  if (full < 65536)
    return; /* parts this small sit at the floor, 8192 words */
  mgc_params orig;
  mgc_get_params(&orig);
  mgc_minor_collection(); /* the heap is empty from here to the end */
  size_t part0 = part_words(d);
  double sums[3] = {d->promoted_sum, d->pause_ns_sum, d->survival_peak};
  const double rate = 3.0, fixed = (double)full * 2 / 5;
  unsigned goal = (unsigned)(rate * fixed / 0.9 / 1000.0);
  set_pause_goal(goal);
  uint64_t goal_ns = (uint64_t)goal * 1000;
  size_t promoted;

  fake_model(d, rate);
  set_part_words(d, (size_t)fixed / 2);
  uint64_t longest = 0;
  double last_promoted = 0, last_allocated = 0;
  for (int k = 0; k < 200; k++) {
    last_allocated = (double)part_words(d);
    uint64_t pause = fake_collection(d, 0.85, fixed, rate, &promoted);
    last_promoted = (double)promoted;
    if (pause > longest)
      longest = pause;
  }
  CHECK(part_words(d) == full,
        "a fixed set: probed up to the whole heap (%zu of %zu words)",
        part_words(d), full);
  CHECK(last_promoted <= last_allocated / 2,
        "a fixed set: the last collection promoted %.0f of %.0f words",
        last_promoted, last_allocated);
  CHECK(longest <= goal_ns, "a fixed set: no pause over the goal (%lu ns)",
        (unsigned long)longest);

  fake_model(d, rate);
  set_part_words(d, (size_t)fixed / 2);
  int over = 0;
  longest = 0;
  for (int k = 0; k < 2000; k++) {
    uint64_t pause = fake_collection(d, 0.85, 0, rate, &promoted);
    over += pause > goal_ns;
    if (pause > longest)
      longest = pause;
  }
  size_t cap = model_cap(d, goal);
  CHECK(part_words(d) <= cap + cap / 100 && part_words(d) + cap / 100 >= cap,
        "survival following the part: the part at the cap (%zu, cap %zu)",
        part_words(d), cap);
  CHECK(over >= 1 && over <= 8,
        "survival following the part: %d pauses over the goal", over);
  CHECK(longest <= goal_ns * 10 / 9,
        "survival following the part: longest %lu ns, goal %lu ns",
        (unsigned long)longest, (unsigned long)goal_ns);
  /* A probe under way when the goal is turned off: the next collection
     uses the whole heap all the same, and drops the probe. */
  d->probe_wait = 0;
  fake_collection(d, 0.85, 0, rate, &promoted);
  CHECK(d->probe_from != 0, "at the cap, a probe starts when due");
  set_pause_goal(0);
  fake_collection(d, 0.85, 0, rate, &promoted);
  CHECK(part_words(d) == full && d->probe_from == 0,
        "no goal: the whole heap, the probe dropped (%zu)", part_words(d));
  set_pause_goal(goal);

  fake_model(d, rate);
  d->probe_wait = 1000;
  set_part_words(d, (size_t)fixed / 2);
  for (int k = 0; k < 20; k++)
    fake_collection(d, 1.0, 0, rate, &promoted);
  size_t at_cap = part_words(d);
  d->probe_wait = 0;
  fake_collection(d, 1.0, 0, rate, &promoted);
  CHECK(d->probe_from == at_cap && part_words(d) == at_cap + at_cap / 4,
        "a burst at the cap: a probe from %zu to %zu words (%zu)", at_cap,
        at_cap + at_cap / 4, part_words(d));
  fake_collection(d, 0.02, 0, rate, &promoted);
  CHECK(d->probe_from == 0 && !d->probe_paid && part_words(d) == at_cap,
        "a probe met by the burst's end does not pay: back to %zu (%zu)",
        at_cap, part_words(d));
  int checked = 0;
  for (int k = 0; k < 10; k++) {
    size_t used = part_words(d);
    fake_collection(d, 0.02, 0, rate, &promoted);
    CHECK(d->probe_from == 0, "quiet collection %d: no probe", k);
    size_t now = part_words(d), want = grown_part(d, goal, used);
    checked++;
    if (!CHECK(now == want,
               "quiet collection %d: %zu -> %zu words, the rules "
               "pick %zu (cap %zu)",
               k, used, now, want, model_cap(d, goal)))
      break;
  }
  CHECK(checked == 10 && part_words(d) < full,
        "the burst's memory held the part under the whole heap (%zu)",
        part_words(d));

  d->promoted_sum = sums[0];
  d->pause_ns_sum = sums[1];
  d->survival_peak = sums[2];
  d->probe_from = 0;
  d->probe_wait = d->probe_backoff = 16;
  d->probe_paid = false;
  mgc_set_params(&orig);
  set_part_words(d, part0);
}

/* A new heap (here a resize to the same size) starts the pause model
   over (DESIGN §5.8): its survival is assumed whole (peak 1), its rate is
   the last one measured (this domain's, just before), counted as one
   collection of 4096 words, and the part in use starts at the model's cap
   for the goal, not at the whole heap; with no goal, at the whole heap. */
static void test_pause_new_heap(void) {
  mgc_params orig;
  mgc_get_params(&orig);
  struct mgc_dom *d = (struct mgc_dom *)mgc_tls_state;
  size_t full = range_words();
  MGC_PARAM0;
  MGC_LOCAL1(list);
  grow_to_whole_heap(d, full);
  long n = (long)(full / 4) / 3;
  list = make_list(n);
  mgc_minor_collection(); /* measures the rate: more than 4096 words */
  CHECK(list_ok(list, n), "the list survived");
  list = MGC_UNIT;
  double rate = d->pause_ns_sum / d->promoted_sum;
  /* A goal whose cap at a survival of 1 is about a quarter of the heap. */
  unsigned goal = (unsigned)(rate * (double)(full / 4) / 0.875 / 1000.0) + 1;
  set_pause_goal(goal);
  mgc_set_minor_heap_size(full);
  CHECK(range_words() == full, "the same size (%zu)", range_words());
  CHECK(d->survival_peak == 1.0, "survival assumed whole (%.3f)",
        d->survival_peak);
  CHECK(d->promoted_sum == 4096.0, "the rate counts as 4096 words (%.0f)",
        d->promoted_sum);
  double seeded = d->pause_ns_sum / d->promoted_sum;
  /* Under torture no collection promotes 4096 words: the rate is older. */
  if (!torture_on())
    CHECK(seeded > rate - 0.0011 && seeded < rate + 0.0011,
          "the last rate measured (%.4f ns a word, measured %.4f)", seeded,
          rate);
  size_t cap = model_cap(d, goal);
  CHECK(cap >= 8192 && cap < full, "a cap under the whole heap (%zu of %zu)",
        cap, full);
  CHECK(part_words(d) == cap, "the new heap starts at the cap (%zu, %zu)",
        part_words(d), cap);
  CHECK(mgc_minor_free_words() == cap, "and its free words are those (%zu)",
        mgc_minor_free_words());
  set_pause_goal(0);
  mgc_set_minor_heap_size(full);
  CHECK(part_words(d) == full, "no goal: a new heap is used whole (%zu)",
        part_words(d));
  CHECK_VERIFY("new heap");
  MGC_DROP;
  mgc_set_params(&orig);
}

static void test_set_params(void) {
  mgc_params orig, p, q, before;
  mgc_stats s0, s1;
  long i, minors;
  int r;

  mgc_get_params(&orig);
  p = orig;
  p.space_overhead = orig.space_overhead + 37;
  p.custom_major_ratio = 55;
  p.custom_minor_ratio = 77;
  p.custom_minor_max_size = 1234;
  p.fiber_max_words = 1 << 16;
  p.minor_heap_words = orig.minor_heap_words == 16384 ? 32768 : 16384;
  r = mgc_set_params(&p);
  CHECK(r == MGC_OK, "a valid change is accepted (%d)", r);
  mgc_get_params(&q);
  CHECK(memcmp(&p, &q, sizeof p) == 0, "and visible in mgc_get_params");
  CHECK(range_words() == p.minor_heap_words,
        "the calling domain's minor heap was resized (%zu words)",
        range_words());
  CHECK(mgc_fiber_new((size_t)1 << 17) == NULL &&
            mgc_last_error() == MGC_EINVAL,
        "fiber_max_words is in force");
  if (!torture_on()) {
    mgc_minor_collection();
    mgc_get_stats(&s0);
    for (i = 0; i < (long)p.minor_heap_words * 10 / 4; i++) {
      mgc_value v = mgc_alloc_small(3, 0);
      MGC_FIELD(v, 0) = MGC_UNIT;
      MGC_FIELD(v, 1) = MGC_UNIT;
      MGC_FIELD(v, 2) = MGC_UNIT;
    }
    mgc_get_stats(&s1);
    minors = (long)(s1.minor_collections - s0.minor_collections);
    /* At least one per heap's worth; cycle ends add their own. */
    CHECK(minors >= 8 && minors <= 40,
          "10 heaps' worth of allocation ran about 10 minor collections "
          "(%ld)",
          minors);
  }

  /* Refused, with nothing changed. */
  mgc_get_params(&before);
  p = before;
  p.max_domains += 1;
  p.space_overhead = 300;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "max_domains cannot change");
  p = before;
  p.torture_every += 5;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "torture_every cannot change");
  p = before;
  p.manual_finalisers = !p.manual_finalisers;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "manual_finalisers cannot change");
  p = before;
  p.event_ring_size = before.event_ring_size ? 0 : 64;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "event_ring_size cannot change");
  p = before;
  strcpy(p.trace_path, "/tmp/mgc-test-embedder.json");
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "trace_path cannot change");
  p = before;
  strcpy(p.log_path, "/tmp/mgc-test-embedder.log");
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "log_path cannot change");
  p = before;
  p.space_overhead = 0;
  p.custom_minor_ratio = 9;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "space_overhead 0 is refused");
  p = before;
  p.minor_heap_words = 100;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "a minor heap of 100 words too");
  p = before;
  p.fiber_max_words = 3;
  CHECK(mgc_set_params(&p) == MGC_EINVAL, "fiber_max_words 3 too");
  CHECK(mgc_set_params(NULL) == MGC_EINVAL, "NULL too");
  mgc_get_params(&q);
  CHECK(memcmp(&before, &q, sizeof q) == 0,
        "nothing was applied by the refused calls");
  CHECK(range_words() == before.minor_heap_words,
        "the minor heap kept its size");

  CHECK(mgc_set_params(&orig) == MGC_OK, "the original parameters again");
  mgc_get_params(&q);
  CHECK(memcmp(&orig, &q, sizeof q) == 0 &&
            range_words() == orig.minor_heap_words,
        "restored");
}

/* ------------------------------------------------------------------------ */
/* mgc_major_collection_compact, mgc_alloc_shr_reserved / _noexc            */
/* ------------------------------------------------------------------------ */

static mgc_value mc_keep = MGC_UNIT;

static int mc_keep_ok(long n) {
  long i;
  mgc_value l = mc_keep;
  for (i = ((n - 1) / 10) * 10; i >= 0; i -= 10) {
    if (!MGC_IS_BLOCK(l) || MGC_FIELD(l, 0) != MGC_VAL_INT(i) ||
        MGC_FIELD(l, 2) != MGC_VAL_INT(~i))
      return 0;
    l = MGC_FIELD(l, 1);
  }
  return l == MGC_UNIT;
}

static void test_major_collection_compact(void) {
  long n = test_scale(40000), i;
  mgc_stats s0, s1;
  mgc_register_global_root(&mc_keep);
  mgc_full_major();
  for (i = 0; i < n; i++) {
    mgc_value b = mgc_alloc_shr(3, 0);
    mgc_initialize(&MGC_FIELD(b, 0), MGC_VAL_INT(i));
    mgc_initialize(&MGC_FIELD(b, 1), mc_keep);
    mgc_initialize(&MGC_FIELD(b, 2), MGC_VAL_INT(~i));
    mc_keep = b;
  }
  /* Every block is held to the end of the cycle under way; then nine
     tenths are dropped, before the next cycle's mark start (no safepoint
     between): they die in that cycle, which mgc_major_collection_compact
     finishes. */
  mgc_major_collection();
  {
    mgc_value l = mc_keep, k;
    while (MGC_INT_VAL(MGC_FIELD(l, 0)) % 10 != 0)
      l = MGC_FIELD(l, 1);
    mc_keep = k = l;
    while (k != MGC_UNIT) {
      l = MGC_FIELD(k, 1);
      while (l != MGC_UNIT && MGC_INT_VAL(MGC_FIELD(l, 0)) % 10 != 0)
        l = MGC_FIELD(l, 1);
      mgc_modify(&MGC_FIELD(k, 1), l);
      k = l;
    }
  }
  mgc_get_stats(&s0);
  mgc_major_collection_compact();
  mgc_get_stats(&s1);
  CHECK(s1.compactions > s0.compactions,
        "mgc_major_collection_compact compacted (%llu -> %llu)",
        (unsigned long long)s0.compactions, (unsigned long long)s1.compactions);
  CHECK(s1.major_collections == s0.major_collections + 1,
        "in one cycle end (%llu -> %llu)",
        (unsigned long long)s0.major_collections,
        (unsigned long long)s1.major_collections);
  CHECK(s1.heap_words * 2 < s0.heap_words || n < 10000,
        "the sparse heap shrank (%llu -> %llu words)",
        (unsigned long long)s0.heap_words, (unsigned long long)s1.heap_words);
  CHECK(mc_keep_ok(n), "the kept list is intact");
  CHECK_VERIFY("after mgc_major_collection_compact");
  mc_keep = MGC_UNIT;
  mgc_remove_global_root(&mc_keep);
}

static int oom_called;
static void oom_handler(size_t bytes) {
  (void)bytes;
  oom_called++;
  printf("FAIL: the OOM handler was called for %zu bytes\n", bytes);
  check_failed_count++;
  check_done();
  _exit(1);
}

static void test_alloc_shr(void) {
  size_t i;
  int ok = 1;
  MGC_PARAM0;
  MGC_LOCAL2(a, s);
  a = mgc_alloc_shr_reserved(5, 3, 0x5A);
  CHECK(!mgc_is_young(a) && MGC_TAG_VAL(a) == 3 && MGC_WOSIZE_VAL(a) == 5 &&
            MGC_RESERVED_HD(MGC_HD_VAL(a)) == 0x5A,
        "mgc_alloc_shr_reserved: tag, size, reserved bits");
  for (i = 0; i < 5; i++)
    ok &= MGC_FIELD(a, i) == MGC_UNIT;
  CHECK(ok, "its fields start as MGC_UNIT");
  mgc_initialize(&MGC_FIELD(a, 4), MGC_VAL_INT(44));
  s = mgc_alloc_shr_noexc(3, MGC_TAG_STRING, 0x11);
  ok = s != 0 && MGC_TAG_VAL(s) == MGC_TAG_STRING &&
       MGC_RESERVED_HD(MGC_HD_VAL(s)) == 0x11;
  for (i = 0; ok && i < 3; i++)
    ok &= MGC_FIELD(s, i) == 0;
  CHECK(ok, "mgc_alloc_shr_noexc: an unscanned block of zero bytes");
  mgc_compact();
  CHECK(MGC_RESERVED_HD(MGC_HD_VAL(a)) == 0x5A &&
            MGC_FIELD(a, 4) == MGC_VAL_INT(44) &&
            MGC_RESERVED_HD(MGC_HD_VAL(s)) == 0x11,
        "reserved bits kept through a compaction");
  CHECK(mgc_alloc_shr_noexc(0, 9, 0) == mgc_alloc(0, 9), "size 0 is the atom");

  mgc_set_oom_handler(oom_handler);
  mgc_set_last_error(MGC_OK);
  {
    /* AddressSanitizer warns on stderr about the failed malloc, which the
       test runner would take for a report: keep stderr quiet meanwhile. */
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    mgc_value v;
    fflush(stderr);
    if (devnull >= 0)
      dup2(devnull, 2);
    v = mgc_alloc_shr_noexc(MGC_MAX_WOSIZE, 0, 0);
    if (saved >= 0) {
      dup2(saved, 2);
      close(saved);
    }
    if (devnull >= 0)
      close(devnull);
    CHECK(v == 0 && mgc_last_error() == MGC_ENOMEM,
          "a block no memory can hold: 0 and MGC_ENOMEM, no OOM handler");
  }
  CHECK(mgc_alloc_shr_noexc((size_t)MGC_MAX_WOSIZE + 1, 0, 0) == 0,
        "a size beyond MGC_MAX_WOSIZE: 0");
  CHECK(mgc_alloc_shr_noexc(SIZE_MAX, MGC_TAG_STRING, 0) == 0, "SIZE_MAX: 0");
  CHECK(oom_called == 0, "the OOM handler was never called");
  mgc_set_oom_handler(NULL);
  CHECK_VERIFY("after mgc_alloc_shr_noexc failures");
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Out-of-heap blocks                                                       */
/* ------------------------------------------------------------------------ */

static mgc_value oh_roots[OH_N];
static mgc_value oh_gen = MGC_UNIT;
static mgc_value oh_old = MGC_UNIT;   /* an old block holding them */
static mgc_value oh_ephe = MGC_UNIT;  /* key out-of-heap, data young */
static mgc_value oh_ephe2 = MGC_UNIT; /* key and data out-of-heap */
static mgc_value oh_weak = MGC_UNIT;
static mgc_value oh_hook_slot[OH_N];

static void oh_hook(mgc_scanning_action act, void *data, mgc_scan_kind kind) {
  int i;
  (void)kind;
  for (i = 0; i < OH_N; i++)
    act(data, oh_hook_slot[i], &oh_hook_slot[i]);
}

static int oh_block_ok(mgc_value b, int young_ok) {
  int i;
  if (!MGC_IS_BLOCK(b) || (!young_ok && mgc_is_young(b)))
    return 0;
  for (i = 0; i < OH_N; i++)
    if (MGC_FIELD(b, i) != oh_val[i])
      return 0;
  return MGC_FIELD(b, OH_N) == MGC_VAL_INT(4242);
}

static void oh_finaliser(mgc_value v, void *data) {
  (void)v;
  (void)data;
}

static int fatal_fd = -1;
static void fatal_to_pipe(const char *msg) {
  ssize_t w = write(fatal_fd, msg, strlen(msg));
  (void)w;
  _exit(7);
}

static void test_out_of_heap(void) {
  int i, ok;
  long j;
  mgc_fiber *f;
  MGC_PARAM0;
  MGC_LOCAL2(young, data);

  CHECK(MGC_COLOUR_NOT_MARKABLE == ((mgc_header)3 << 8),
        "the not-markable colour is 3");
  CHECK(MGC_MAKE_OUT_OF_HEAP_HEADER(2, 5) ==
            (MGC_MAKE_HEADER(2, 5, 0) | MGC_COLOUR_NOT_MARKABLE),
        "MGC_MAKE_OUT_OF_HEAP_HEADER");
  CHECK(mgc_string_length(oh_val[1]) == 13 &&
            strcmp(MGC_STRING_VAL(oh_val[1]), "hello, static") == 0,
        "a static string is a string");

  for (i = 0; i < OH_N; i++) {
    oh_roots[i] = oh_val[i];
    mgc_register_global_root(&oh_roots[i]);
    oh_hook_slot[i] = oh_val[i];
  }
  oh_gen = oh_val[6];
  mgc_register_generational_global_root(&oh_gen);
  mgc_register_global_root(&oh_old);
  mgc_register_global_root(&oh_ephe);
  mgc_register_global_root(&oh_ephe2);
  mgc_register_global_root(&oh_weak);
  mgc_set_scan_roots_hook_kind(oh_hook);

  oh_old = mgc_alloc_shr(OH_N + 1, 0);
  for (i = 0; i < OH_N; i++)
    mgc_initialize(&MGC_FIELD(oh_old, i), oh_val[i]);
  mgc_initialize(&MGC_FIELD(oh_old, OH_N), MGC_VAL_INT(4242));
  young = mgc_alloc_small(OH_N + 1, 0);
  for (i = 0; i < OH_N; i++)
    MGC_FIELD(young, i) = oh_val[i];
  MGC_FIELD(young, OH_N) = MGC_VAL_INT(4242);
  data = mgc_alloc_small(2, 0);
  MGC_FIELD(data, 0) = MGC_VAL_INT(31);
  MGC_FIELD(data, 1) = oh_val[0];
  oh_ephe = mgc_ephe_create(2);
  mgc_ephe_set_key(oh_ephe, 0, oh_val[0]);
  mgc_ephe_set_key(oh_ephe, 1, oh_val[6]);
  mgc_ephe_set_data(oh_ephe, data);
  oh_ephe2 = mgc_ephe_create(1);
  mgc_ephe_set_key(oh_ephe2, 0, oh_val[3]);
  mgc_ephe_set_data(oh_ephe2, oh_val[5]);
  oh_weak = mgc_weak_create(OH_N);
  for (i = 0; i < OH_N; i++)
    mgc_weak_set(oh_weak, (size_t)i, oh_val[i]);
  f = mgc_fiber_new(0);
  for (i = 0; i < OH_N; i++)
    mgc_fiber_push(f, oh_val[i]);
  data = MGC_UNIT;

  for (j = 0; j < 6; j++) {
    /* The barrier darkens an overwritten out-of-heap value, at every
       phase: write each field over itself, through mgc_modify and through
       mgc_write_barrier. */
    for (i = 0; i < OH_N; i++) {
      mgc_modify(&MGC_FIELD(oh_old, i), oh_val[(i + 1) % OH_N]);
      __atomic_store_n(&MGC_FIELD(oh_old, i), oh_val[i], __ATOMIC_RELEASE);
      mgc_write_barrier(oh_old, &MGC_FIELD(oh_old, i), oh_val[(i + 1) % OH_N],
                        oh_val[i]);
    }
    churn(5000);
    switch (j) {
    case 0:
      mgc_minor_collection();
      break;
    case 1:
      mgc_major_slice(100000);
      mgc_major_collection();
      break;
    case 2:
      mgc_full_major();
      break;
    case 3:
      mgc_compact();
      break;
    case 4:
      mgc_major_collection_compact();
      break;
    default:
      mgc_full_major();
      mgc_compact();
      break;
    }
    CHECK_VERIFY("out-of-heap blocks");
  }

  CHECK(oh_unchanged(), "no out-of-heap block changed (headers included)");
  ok = 1;
  for (i = 0; i < OH_N; i++)
    ok &= oh_roots[i] == oh_val[i] && oh_hook_slot[i] == oh_val[i] &&
          MGC_FIBER_SLOT(f, (size_t)i) == oh_val[i];
  CHECK(ok, "global roots, hook slots and fiber slots still point to them");
  CHECK(oh_gen == oh_val[6], "the generational root too");
  CHECK(oh_block_ok(oh_old, 0) && oh_block_ok(young, 1),
        "the old and the (once) young block still point to them");
  {
    mgc_value k0, k1, d, k2, d2, w;
    int got = mgc_ephe_get_key(oh_ephe, 0, &k0) &&
              mgc_ephe_get_key(oh_ephe, 1, &k1) &&
              mgc_ephe_get_data(oh_ephe, &d);
    CHECK(got && k0 == oh_val[0] && k1 == oh_val[6] && MGC_IS_BLOCK(d) &&
              MGC_FIELD(d, 0) == MGC_VAL_INT(31) &&
              MGC_FIELD(d, 1) == oh_val[0],
          "an ephemeron keyed by out-of-heap blocks keeps its data (always "
          "alive)");
    got =
        mgc_ephe_get_key(oh_ephe2, 0, &k2) && mgc_ephe_get_data(oh_ephe2, &d2);
    CHECK(got && k2 == oh_val[3] && d2 == oh_val[5],
          "out-of-heap key and data");
    ok = 1;
    for (i = 0; i < OH_N; i++)
      ok &= mgc_weak_get(oh_weak, (size_t)i, &w) && w == oh_val[i];
    CHECK(ok, "weak array slots keep their out-of-heap values");
  }
  CHECK(oh_unchanged(), "still unchanged after the reads");

  /* Finalising one: a fatal error naming the problem (in a child). */
  {
    int fds[2];
    pid_t pid;
    char buf[512];
    ssize_t got = 0, n;
    int status = 0;
    if (pipe(fds) == 0) {
      fflush(stdout);
      pid = fork();
      if (pid == 0) {
        close(fds[0]);
        fatal_fd = fds[1];
        mgc_set_fatal_handler(fatal_to_pipe);
        mgc_finalise(oh_val[0], oh_finaliser, NULL);
        _exit(3); /* returned: silent */
      }
      close(fds[1]);
      while ((n = read(fds[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
        got += n;
      buf[got] = 0;
      close(fds[0]);
      waitpid(pid, &status, 0);
      CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7 &&
                strstr(buf, "outside the heap") != NULL,
            "mgc_finalise on an out-of-heap block is fatal (status %d, "
            "\"%s\")",
            status, buf);
    }
  }

  mgc_fiber_free(f);
  mgc_set_scan_roots_hook_kind(NULL);
  for (i = 0; i < OH_N; i++)
    mgc_remove_global_root(&oh_roots[i]);
  mgc_remove_generational_global_root(&oh_gen);
  mgc_remove_global_root(&oh_old);
  mgc_remove_global_root(&oh_ephe);
  mgc_remove_global_root(&oh_ephe2);
  mgc_remove_global_root(&oh_weak);
  oh_old = oh_ephe = oh_ephe2 = oh_weak = MGC_UNIT;
  MGC_DROP;
  mgc_full_major();
  CHECK(oh_unchanged(), "unchanged to the end");
}

int main(void) {
  int rc;
  setvbuf(stdout, NULL, _IOLBF, 0);
  oh_setup();
  mgc_set_fatal_handler(check_fatal_handler);
  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  test_scan_kinds();
  test_write_barrier();
  mgc_register_global_root(&wb_keep);
  wb_keep = mgc_alloc_shr(1, 0);
  mgc_initialize(&MGC_FIELD(wb_keep, 0), MGC_VAL_INT(5));
  test_modify_halves();
  wb_keep = MGC_UNIT;
  mgc_remove_global_root(&wb_keep);
  test_interrupts();
  test_custom_register();
  test_geometry();
  test_pause_sizing();
  test_pause_memory();
  test_pause_probe();
  test_pause_new_heap();
  test_set_params();
  test_major_collection_compact();
  test_alloc_shr();
  test_out_of_heap();
  {
    /* A sanity check of the helpers used above. */
    mgc_value l = make_list(50);
    CHECK(list_ok(l, 50), "make_list");
  }
  mgc_shutdown();
  for (rc = 0; rc < OH_N; rc++)
    free(oh_copy[rc]);
  free(oh_big_mem);
  return check_done();
}
