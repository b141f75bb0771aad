/* test_weak: ephemerons and weak arrays on one domain.
 *
 * The rules checked are OCaml 5.2's (mgc.h, "Weak values"):
 *  - representation: an ephemeron is an Abstract block of 2 + nkeys words in
 *    the major heap, the data at MGC_EPHE_DATA_OFFSET, the keys from
 *    MGC_EPHE_FIRST_KEY, MGC_EPHE_NONE in empty slots; set/get/unset/check
 *    of keys and data, blit_keys (overlapping both ways) and blit_data;
 *  - the data is alive only while the ephemeron and every key are alive;
 *    when a key dies its slot and the data are emptied; immediates are
 *    always alive; data that references its own key does not leak;
 *    ephemeron chains and cycles are resolved in one cycle (ports of the
 *    OCaml testsuite's weak-ephe-final/ephetest.ml, ephetest2.ml with
 *    and/or formulas as n-key ephemerons, ephe_infix.ml);
 *  - young keys and data survive minor collections (promoted
 *    unconditionally); mgc_full_major empties every slot whose value was
 *    unreachable at the call;
 *  - get_key/get_data keep what they return alive (invariant 34),
 *    check_key keeps nothing alive; blit_data darkens (ocaml #9391);
 *  - Forward keys are short-circuited (DESIGN 1.3), infix pointers as keys
 *    resolve to their closure;
 *  - weak arrays: ports of weaklifetime.ml and weaktest.ml (zero
 *    "mistakes");
 *  - a weak hash table (buckets of ephemerons) and a memo table of 2-key
 *    ephemerons against a shadow model under random operations and
 *    collections, and memoised Collatz (as ephetest3.ml);
 *  - mgc_verify_heap stays clean throughout.
 * Every value the test holds is in a global root (r[]) or in a field of a
 * rooted block: young blocks move.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal_check.h"

#define NONE MGC_EPHE_NONE

/* Classic global roots: 0..19 for the sections, the rest named. */
enum { R_TMP = 20, R_K0, R_K1, R_D, R_KEYS, R_TBL, R_MEMO, R_GARB, NR = 32 };
static mgc_value r[NR];

static void clear_roots(void) {
  int i;
  for (i = 0; i < NR; i++)
    r[i] = MGC_UNIT;
}

/* A young box (tag 0) [n, ~n]. */
static mgc_value box(long n) {
  mgc_value v = mgc_alloc_small(2, 0);
  MGC_FIELD(v, 0) = MGC_VAL_INT(n);
  MGC_FIELD(v, 1) = MGC_VAL_INT(~n);
  return v;
}

/* The same box, in the major heap. */
static mgc_value old_box(long n) {
  mgc_value v = mgc_alloc_shr(2, 0);
  mgc_initialize(&MGC_FIELD(v, 0), MGC_VAL_INT(n));
  mgc_initialize(&MGC_FIELD(v, 1), MGC_VAL_INT(~n));
  return v;
}

static mgc_value make_box(long n, int old) { return old ? old_box(n) : box(n); }

static int box_ok(mgc_value v, long n) {
  return v != 0 && v != NONE && MGC_IS_BLOCK(v) && MGC_TAG_VAL(v) == 0 &&
         MGC_WOSIZE_VAL(v) == 2 && MGC_FIELD(v, 0) == MGC_VAL_INT(n) &&
         MGC_FIELD(v, 1) == MGC_VAL_INT(~n);
}

/* The key / data, or 0 when the slot is empty (get: keeps it alive). */
static mgc_value key_of(mgc_value e, size_t i) {
  mgc_value v = 0;
  return mgc_ephe_get_key(e, i, &v) ? v : 0;
}

static mgc_value data_of(mgc_value e) {
  mgc_value v = 0;
  return mgc_ephe_get_data(e, &v) ? v : 0;
}

static mgc_value weak_of(mgc_value w, size_t i) {
  mgc_value v = 0;
  return mgc_weak_get(w, i, &v) ? v : 0;
}

/* Garbage of the sizes the tests use, young and old, so that freed memory
   is reused (and overwritten) before the next checks. */
static void pressure(long n) {
  long i;
  for (i = 0; i < n; i++) {
    mgc_value s = mgc_alloc_shr(2, 0);
    mgc_value y = mgc_alloc_small(2, 0);
    MGC_FIELD(y, 0) = MGC_VAL_INT(-1);
    MGC_FIELD(y, 1) = MGC_VAL_INT(-2);
    s = mgc_alloc_shr(1, 0);
    (void)s;
  }
}

static uint64_t major_cycles(void) {
  mgc_stats s;
  mgc_get_stats(&s);
  return s.major_collections;
}

/* ------------------------------------------------------------------------ */
/* 1. API and representation                                                */
/* ------------------------------------------------------------------------ */

static void test_api(void) {
  mgc_value e, w, v;
  size_t i;
  int ok;

  CHECK(MGC_EPHE_DATA_OFFSET == 1 && MGC_EPHE_FIRST_KEY == 2,
        "OCaml 5.2 layout constants");
  CHECK(MGC_IS_BLOCK(NONE) && !mgc_is_young(NONE) &&
            MGC_TAG_VAL(NONE) == MGC_TAG_ABSTRACT,
        "MGC_EPHE_NONE is a static abstract block");

  r[0] = mgc_ephe_create(3);
  e = r[0];
  CHECK(MGC_IS_BLOCK(e) && !mgc_is_young(e), "an ephemeron is a major block");
  CHECK(MGC_TAG_VAL(e) == MGC_TAG_ABSTRACT && MGC_WOSIZE_VAL(e) == 2 + 3,
        "ephemeron of 3 keys: Abstract block of 5 words (tag %u, size %zu)",
        MGC_TAG_VAL(e), (size_t)MGC_WOSIZE_VAL(e));
  CHECK(mgc_ephe_num_keys(e) == 3, "num_keys %zu", mgc_ephe_num_keys(e));
  ok = MGC_FIELD(e, MGC_EPHE_DATA_OFFSET) == NONE;
  for (i = 0; i < 3; i++)
    ok &= MGC_FIELD(e, MGC_EPHE_FIRST_KEY + i) == NONE;
  CHECK(ok, "new ephemeron: data and keys hold MGC_EPHE_NONE");
  ok = 1;
  for (i = 0; i < 3; i++)
    ok &= !mgc_ephe_check_key(e, i) && !mgc_ephe_get_key(e, i, &v) &&
          !mgc_ephe_get_key(e, i, NULL);
  CHECK(ok, "empty keys: check and get return 0");
  CHECK(!mgc_ephe_check_data(e) && !mgc_ephe_get_data(e, &v) &&
            !mgc_ephe_get_data(e, NULL),
        "empty data: check and get return 0");

  r[1] = old_box(1);
  r[2] = box(2);
  r[3] = box(3);
  e = r[0];
  mgc_ephe_set_key(e, 0, r[1]);
  mgc_ephe_set_key(e, 2, MGC_VAL_INT(5));
  mgc_ephe_set_data(e, r[3]);
  CHECK(MGC_FIELD(e, MGC_EPHE_FIRST_KEY) == r[1] &&
            MGC_FIELD(e, MGC_EPHE_FIRST_KEY + 1) == NONE &&
            MGC_FIELD(e, MGC_EPHE_FIRST_KEY + 2) == MGC_VAL_INT(5) &&
            MGC_FIELD(e, MGC_EPHE_DATA_OFFSET) == r[3],
        "layout: keys from MGC_EPHE_FIRST_KEY, data at MGC_EPHE_DATA_OFFSET");
  CHECK(key_of(e, 0) == r[1] && mgc_ephe_check_key(e, 0) &&
            !mgc_ephe_check_key(e, 1) && mgc_ephe_check_key(e, 2) &&
            key_of(e, 2) == MGC_VAL_INT(5),
        "set_key / get_key / check_key");
  CHECK(mgc_ephe_get_key(e, 0, NULL) == 1, "get_key with a NULL out");
  CHECK(data_of(e) == r[3] && mgc_ephe_check_data(e), "set_data / get_data");

  /* Young key and data: promoted by the minor collection, slots updated. */
  mgc_ephe_set_key(e, 1, r[2]);
  CHECK(MGC_FIELD(e, MGC_EPHE_FIRST_KEY + 1) == r[2], "young key stored");
  mgc_minor_collection();
  v = key_of(e, 1);
  CHECK(v == r[2] && !mgc_is_young(v) && box_ok(v, 2),
        "young key follows its promotion");
  v = data_of(e);
  CHECK(v == r[3] && !mgc_is_young(v) && box_ok(v, 3),
        "young data follows its promotion");
  CHECK(MGC_FIELD(e, MGC_EPHE_FIRST_KEY + 1) == r[2] &&
            MGC_FIELD(e, MGC_EPHE_DATA_OFFSET) == r[3],
        "layout after the minor collection");

  /* Overwrite, unset, NONE. */
  mgc_ephe_set_key(e, 0, r[2]);
  CHECK(key_of(e, 0) == r[2], "set_key overwrites");
  mgc_ephe_set_key(e, 0, r[1]);
  mgc_ephe_unset_key(e, 0);
  CHECK(!mgc_ephe_check_key(e, 0) && MGC_FIELD(e, MGC_EPHE_FIRST_KEY) == NONE &&
            key_of(e, 1) == r[2] && data_of(e) == r[3],
        "unset_key empties that slot only (data stays)");
  mgc_ephe_set_key(e, 2, NONE);
  CHECK(!mgc_ephe_check_key(e, 2) &&
            MGC_FIELD(e, MGC_EPHE_FIRST_KEY + 2) == NONE,
        "set_key with MGC_EPHE_NONE empties the slot");
  mgc_ephe_unset_data(e);
  CHECK(!mgc_ephe_check_data(e) && MGC_FIELD(e, MGC_EPHE_DATA_OFFSET) == NONE &&
            key_of(e, 1) == r[2],
        "unset_data empties the data only");
  mgc_ephe_set_data(e, MGC_VAL_INT(9));
  CHECK(data_of(e) == MGC_VAL_INT(9) && mgc_ephe_get_data(e, NULL) == 1,
        "immediate data");

  /* Weak arrays: ephemerons without data. */
  r[4] = mgc_weak_create(4);
  w = r[4];
  CHECK(!mgc_is_young(w) && MGC_TAG_VAL(w) == MGC_TAG_ABSTRACT &&
            MGC_WOSIZE_VAL(w) == 2 + 4 && mgc_weak_length(w) == 4 &&
            mgc_ephe_num_keys(w) == 4,
        "weak array of 4: Abstract block of 6 words, length 4");
  ok = MGC_FIELD(w, MGC_EPHE_DATA_OFFSET) == NONE;
  for (i = 0; i < 4; i++)
    ok &= MGC_FIELD(w, MGC_EPHE_FIRST_KEY + i) == NONE &&
          !mgc_weak_check(w, i) && !mgc_weak_get(w, i, &v);
  CHECK(ok, "new weak array: every slot empty");
  mgc_weak_set(w, 1, r[1]);
  mgc_weak_set(w, 3, MGC_VAL_INT(-7));
  CHECK(weak_of(w, 1) == r[1] && MGC_FIELD(w, MGC_EPHE_FIRST_KEY + 1) == r[1] &&
            !mgc_weak_check(w, 0) && mgc_weak_check(w, 3) &&
            weak_of(w, 3) == MGC_VAL_INT(-7) && !mgc_ephe_check_data(w),
        "weak set / get / check");
  CHECK(key_of(w, 1) == r[1] && mgc_weak_get(w, 1, NULL) == 1,
        "a weak slot is an ephemeron key");
  r[5] = box(55);
  mgc_weak_set(r[4], 0, r[5]);
  mgc_minor_collection();
  w = r[4];
  CHECK(weak_of(w, 0) == r[5] && box_ok(r[5], 55) && !mgc_is_young(r[5]),
        "young weak value follows its promotion");
  mgc_weak_unset(w, 1);
  CHECK(!mgc_weak_check(w, 1) && MGC_FIELD(w, MGC_EPHE_FIRST_KEY + 1) == NONE,
        "weak unset");

  /* Larger ones. */
  r[6] = mgc_ephe_create(300);
  r[7] = mgc_weak_create(1);
  e = r[6];
  ok = MGC_WOSIZE_VAL(e) == 302 && mgc_ephe_num_keys(e) == 300 &&
       !mgc_is_young(e) && mgc_weak_length(r[7]) == 1;
  for (i = 0; i < 300; i++)
    ok &= MGC_FIELD(e, MGC_EPHE_FIRST_KEY + i) == NONE;
  CHECK(ok, "ephemeron of 300 keys, weak array of 1");
  mgc_ephe_set_key(e, 299, r[1]);
  mgc_weak_set(r[7], 0, r[2]);

  mgc_full_major();
  mgc_full_major();
  e = r[0];
  CHECK(key_of(e, 1) == r[2] && data_of(e) == MGC_VAL_INT(9) &&
            !mgc_ephe_check_key(e, 0) && !mgc_ephe_check_key(e, 2),
        "held keys survive full majors");
  CHECK(weak_of(r[4], 0) == r[5] && weak_of(r[4], 3) == MGC_VAL_INT(-7) &&
            key_of(r[6], 299) == r[1] && weak_of(r[7], 0) == r[2],
        "held weak values survive full majors");
  CHECK(box_ok(r[1], 1) && box_ok(r[2], 2) && box_ok(r[3], 3), "boxes intact");
  clear_roots();
  CHECK_VERIFY("after api");
}

/* ------------------------------------------------------------------------ */
/* blit_keys and blit_data                                                  */
/* ------------------------------------------------------------------------ */

#define BN 10
#define BN2 6
#define CHN 24

/* w (array 1: r[1], array 2: r[2]) matches the model m: slot i holds the
   box hold[m[i]], or is empty when m[i] < 0. */
static int blit_matches(mgc_value w, const int *m, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    mgc_value v = weak_of(w, i);
    if (m[i] < 0 ? v != 0 : v != MGC_FIELD(r[0], m[i]))
      return 0;
  }
  return 1;
}

static void test_blit(void) {
  static const struct {
    int src, si, dst, di, len;
  } steps[] = {
      {1, 0, 1, 2, 5}, /* overlap, destination after source */
      {1, 3, 1, 1, 5}, /* overlap, destination before source */
      {1, 4, 1, 4, 3}, /* onto itself */
      {1, 0, 2, 1, 5}, /* another array */
      {2, 0, 1, 5, 5}, /* back, with empty slots */
      {1, 9, 1, 0, 1}, /* an empty slot */
      {1, 0, 1, 0, 0}, /* nothing */
      {2, 1, 2, 0, 5}, /* overlap in the small array */
      {2, 0, 2, 1, 5}, /* and the other way */
  };
  int m1[BN], m2[BN2], m3[4];
  int *models[3] = {NULL, m1, m2};
  size_t i, s;
  int ok, j;
  mgc_value v;

  r[0] = mgc_alloc(BN, 0); /* holds the boxes */
  for (i = 0; i < BN; i++) {
    v = box(100 + (long)i);
    mgc_modify(&MGC_FIELD(r[0], i), v);
  }
  r[1] = mgc_weak_create(BN);
  r[2] = mgc_weak_create(BN2);
  for (i = 0; i < BN; i++) {
    m1[i] = i + 1 < BN ? (int)i : -1;
    if (m1[i] >= 0)
      mgc_weak_set(r[1], i, MGC_FIELD(r[0], i));
  }
  for (i = 0; i < BN2; i++)
    m2[i] = -1;
  CHECK(blit_matches(r[1], m1, BN) && blit_matches(r[2], m2, BN2),
        "blit arrays filled");
  for (s = 0; s < sizeof steps / sizeof steps[0]; s++) {
    mgc_ephe_blit_keys(r[steps[s].src], (size_t)steps[s].si, r[steps[s].dst],
                       (size_t)steps[s].di, (size_t)steps[s].len);
    memmove(models[steps[s].dst] + steps[s].di,
            models[steps[s].src] + steps[s].si,
            (size_t)steps[s].len * sizeof(int));
    CHECK(blit_matches(r[1], m1, BN) && blit_matches(r[2], m2, BN2),
          "blit_keys %d[%d] -> %d[%d], %d keys", steps[s].src, steps[s].si,
          steps[s].dst, steps[s].di, steps[s].len);
  }
  mgc_minor_collection();
  mgc_full_major();
  CHECK(blit_matches(r[1], m1, BN) && blit_matches(r[2], m2, BN2),
        "blitted keys held by the test survive a full major");

  /* Weak array -> ephemeron keys: the data is not touched. */
  r[3] = mgc_ephe_create(4);
  mgc_ephe_set_data(r[3], MGC_VAL_INT(77));
  mgc_ephe_blit_keys(r[1], 2, r[3], 0, 4);
  memcpy(m3, m1 + 2, sizeof m3);
  ok = data_of(r[3]) == MGC_VAL_INT(77);
  for (i = 0; i < 4; i++)
    ok &= key_of(r[3], i) == weak_of(r[1], 2 + i);
  CHECK(ok, "blit from a weak array to ephemeron keys");

  /* A young value blitted: both slots follow its promotion. */
  r[4] = box(200);
  mgc_weak_set(r[2], 5, r[4]);
  mgc_ephe_blit_keys(r[2], 5, r[1], 7, 1);
  mgc_minor_collection();
  CHECK(weak_of(r[1], 7) == r[4] && weak_of(r[2], 5) == r[4] &&
            !mgc_is_young(r[4]) && box_ok(r[4], 200),
        "young value blitted: both slots follow the promotion");
  mgc_weak_unset(r[1], 7);
  mgc_weak_unset(r[2], 5);
  m1[7] = m2[5] = -1;

  /* The blitted copies die with their value. */
  j = m1[2];
  mgc_modify(&MGC_FIELD(r[0], j), MGC_UNIT);
  mgc_full_major();
  for (i = 0; i < BN; i++)
    if (m1[i] == j)
      m1[i] = -1;
  for (i = 0; i < BN2; i++)
    if (m2[i] == j)
      m2[i] = -1;
  ok = 0; /* had r[3] the dropped value as a key? */
  for (i = 0; i < 4; i++)
    if (m3[i] == j) {
      m3[i] = -1;
      ok = 1;
    }
  CHECK(blit_matches(r[1], m1, BN) && blit_matches(r[2], m2, BN2) &&
            blit_matches(r[3], m3, 4),
        "every copy of a dropped value (%d) is emptied, the others stay", j);
  CHECK(ok ? !mgc_ephe_check_data(r[3]) : data_of(r[3]) == MGC_VAL_INT(77),
        "ephemeron data emptied iff one of its keys died (%d)", ok);
  clear_roots();

  /* blit_data. */
  r[5] = mgc_ephe_create(1);
  r[6] = mgc_ephe_create(1);
  r[9] = mgc_ephe_create(1);
  r[7] = box(1);
  r[8] = box(2);
  mgc_ephe_set_key(r[5], 0, r[7]);
  mgc_ephe_set_key(r[6], 0, r[8]);
  v = box(300);
  mgc_ephe_set_data(r[5], v);
  mgc_ephe_blit_data(r[5], r[6]);
  CHECK(data_of(r[6]) == data_of(r[5]) && box_ok(data_of(r[6]), 300),
        "blit_data copies the data");
  mgc_ephe_blit_data(r[9], r[6]);
  CHECK(!mgc_ephe_check_data(r[6]) && mgc_ephe_check_data(r[5]),
        "blit_data of an empty data empties the destination");
  mgc_ephe_blit_data(r[5], r[6]);
  r[7] = MGC_UNIT;
  mgc_full_major();
  CHECK(!mgc_ephe_check_key(r[5], 0) && !mgc_ephe_check_data(r[5]),
        "source's key dropped: source emptied");
  v = data_of(r[6]);
  CHECK(box_ok(v, 300) && key_of(r[6], 0) == r[8],
        "the destination keeps the data alive through its own key");
  r[8] = MGC_UNIT;
  mgc_full_major();
  CHECK(!mgc_ephe_check_key(r[6], 0) && !mgc_ephe_check_data(r[6]),
        "destination's key dropped: destination emptied");
  clear_roots();

  /* ocaml #9391: the data blitted into an ephemeron already examined in
     this cycle (e2, whose data was empty), then removed from its source
     (e1, not yet examined: its key is at the end of a chain of CHN
     ephemerons, found alive only after CHN rounds), must be kept alive. */
  ok = 1;
  for (j = 0; j < 80; j++) {
    int k;
    mgc_value e;
    r[0] = mgc_ephe_create(1); /* e1 */
    r[1] = mgc_ephe_create(1); /* e2 */
    r[5] = mgc_alloc(CHN, 0);
    r[2] = old_box(10); /* the chain's first key, held */
    r[6] = r[2];
    for (k = 0; k < CHN; k++) {
      e = mgc_ephe_create(1);
      mgc_modify(&MGC_FIELD(r[5], k), e);
      mgc_ephe_set_key(e, 0, r[6]);
      r[6] = old_box(11 + k);
      mgc_ephe_set_data(MGC_FIELD(r[5], k), r[6]);
    }
    mgc_ephe_set_key(r[0], 0, r[6]);
    r[6] = MGC_UNIT;
    r[3] = old_box(20);
    mgc_ephe_set_key(r[1], 0, r[3]);
    r[4] = mgc_weak_create(1);
    v = old_box(1000 + j);
    mgc_ephe_set_data(r[0], v);
    mgc_weak_set(r[4], 0, v);
    mgc_full_major();
    if (j % 2)
      mgc_major_collection(); /* the other order of the lists */
    for (k = 0; k < j / 2; k++)
      mgc_major_slice(j % 8 == 0 ? 0 : 20);
    mgc_ephe_blit_data(r[0], r[1]);
    mgc_ephe_unset_data(r[0]);
    for (k = 0; k < j % 5; k++)
      mgc_major_slice(20);
    pressure(test_scale(200));
    mgc_full_major();
    pressure(test_scale(200));
    v = data_of(r[1]);
    if (!box_ok(v, 1000 + j) || weak_of(r[4], 0) != v) {
      if (ok)
        printf("blit_data after %d slices: data %s\n", j / 2,
               v ? "corrupt" : "lost");
      ok = 0;
    }
    clear_roots();
  }
  CHECK(ok, "blit_data during marking keeps the data alive (ocaml #9391)");
  CHECK_VERIFY("after blit");
}

/* ------------------------------------------------------------------------ */
/* 2. Liveness (ephetest.ml)                                                */
/* ------------------------------------------------------------------------ */

static void test_matrix(void) {
  int ko, dold, kh, dh;
  mgc_value v;
  for (ko = 0; ko < 2; ko++)
    for (dold = 0; dold < 2; dold++)
      for (kh = 0; kh < 2; kh++)
        for (dh = 0; dh < 2; dh++) {
          char what[128];
          snprintf(what, sizeof what, "key %s %s, data %s %s",
                   ko ? "old" : "young", kh ? "held" : "dropped",
                   dold ? "old" : "young",
                   dh ? "held elsewhere" : "only in the ephemeron");
          /* Old blocks are born marked once marking has started, so
             none of them can die in the minor collection's slice. */
          start_marking();
          r[0] = mgc_ephe_create(1);
          r[3] = mgc_weak_create(2); /* watches key and data */
          r[1] = make_box(10, ko);
          r[2] = make_box(20, dold);
          mgc_ephe_set_key(r[0], 0, r[1]);
          mgc_ephe_set_data(r[0], r[2]);
          mgc_weak_set(r[3], 0, r[1]);
          mgc_weak_set(r[3], 1, r[2]);
          if (!kh)
            r[1] = MGC_UNIT;
          if (!dh)
            r[2] = MGC_UNIT;
          mgc_minor_collection();
          CHECK(mgc_ephe_check_key(r[0], 0) && mgc_ephe_check_data(r[0]) &&
                    mgc_weak_check(r[3], 0) && mgc_weak_check(r[3], 1),
                "%s: everything survives a minor collection", what);
          mgc_full_major();
          if (kh) {
            v = key_of(r[0], 0);
            CHECK(v == r[1] && box_ok(v, 10) && !mgc_is_young(v),
                  "%s: key kept", what);
            v = data_of(r[0]);
            CHECK(box_ok(v, 20) && (!dh || v == r[2]), "%s: data kept", what);
            pressure(test_scale(3000));
            mgc_full_major();
            v = data_of(r[0]);
            CHECK(box_ok(v, 20) && weak_of(r[3], 1) == v,
                  "%s: data still intact after reuse pressure", what);
            r[1] = MGC_UNIT;
            mgc_full_major();
          }
          CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_ephe_check_data(r[0]) &&
                    MGC_FIELD(r[0], MGC_EPHE_FIRST_KEY) == NONE &&
                    MGC_FIELD(r[0], MGC_EPHE_DATA_OFFSET) == NONE,
                "%s: key died: key and data emptied", what);
          CHECK(!mgc_weak_check(r[3], 0), "%s: the key is gone", what);
          CHECK(mgc_weak_check(r[3], 1) == dh, "%s: the data is %s", what,
                dh ? "alive" : "gone");
          if (dh)
            CHECK(box_ok(r[2], 20) && weak_of(r[3], 1) == r[2],
                  "%s: data held elsewhere intact", what);
          clear_roots();
        }

  /* A dead ephemeron keeps nothing alive, even with its keys alive. */
  {
    r[2] = mgc_ephe_create(1);
    r[0] = mgc_weak_create(2);
    r[1] = box(1);
    mgc_ephe_set_key(r[2], 0, r[1]);
    v = box(2);
    mgc_ephe_set_data(r[2], v);
    mgc_weak_set(r[0], 0, v);
    mgc_weak_set(r[0], 1, r[2]);
    r[2] = MGC_UNIT;
    mgc_full_major();
    CHECK(!mgc_weak_check(r[0], 0) && !mgc_weak_check(r[0], 1) &&
              box_ok(r[1], 1),
          "unreachable ephemeron with a live key: it and its data die");
    clear_roots();
  }
  CHECK_VERIFY("after matrix");
}

static void test_immediates(void) {
  mgc_value v;
  /* Immediate keys are always alive. */
  r[0] = mgc_ephe_create(2);
  r[1] = mgc_weak_create(1);
  mgc_ephe_set_key(r[0], 0, MGC_VAL_INT(7));
  mgc_ephe_set_key(r[0], 1, MGC_UNIT);
  v = box(5);
  mgc_ephe_set_data(r[0], v);
  mgc_weak_set(r[1], 0, v);
  mgc_full_major();
  pressure(test_scale(2000));
  mgc_full_major();
  v = data_of(r[0]);
  CHECK(key_of(r[0], 0) == MGC_VAL_INT(7) && key_of(r[0], 1) == MGC_UNIT &&
            box_ok(v, 5) && weak_of(r[1], 0) == v,
        "immediate keys: keys and data kept");
  /* Immediate data, dead key. */
  r[2] = mgc_ephe_create(1);
  v = box(6);
  mgc_ephe_set_key(r[2], 0, v);
  mgc_ephe_set_data(r[2], MGC_VAL_INT(4));
  mgc_full_major();
  CHECK(!mgc_ephe_check_key(r[2], 0) && !mgc_ephe_check_data(r[2]),
        "immediate data emptied when the key dies");
  /* An immediate key and a dead block key: the immediate stays. */
  r[3] = mgc_ephe_create(2);
  mgc_ephe_set_key(r[3], 0, MGC_VAL_INT(1));
  v = old_box(7);
  mgc_ephe_set_key(r[3], 1, v);
  mgc_ephe_set_data(r[3], MGC_VAL_INT(2));
  mgc_full_major();
  CHECK(key_of(r[3], 0) == MGC_VAL_INT(1) && !mgc_ephe_check_key(r[3], 1) &&
            !mgc_ephe_check_data(r[3]),
        "mixed keys: the dead one and the data emptied, the immediate kept");
  /* An atom (static) key is always alive. */
  r[4] = mgc_ephe_create(1);
  mgc_ephe_set_key(r[4], 0, mgc_alloc(0, 3));
  v = box(8);
  mgc_ephe_set_data(r[4], v);
  mgc_full_major();
  CHECK(key_of(r[4], 0) == mgc_alloc(0, 3) && box_ok(data_of(r[4]), 8),
        "atom key: key and data kept");
  /* Weak array of immediates. */
  r[5] = mgc_weak_create(3);
  mgc_weak_set(r[5], 0, MGC_VAL_INT(-1));
  mgc_weak_set(r[5], 2, MGC_VAL_INT(1L << 40));
  mgc_full_major();
  CHECK(weak_of(r[5], 0) == MGC_VAL_INT(-1) && !mgc_weak_check(r[5], 1) &&
            weak_of(r[5], 2) == MGC_VAL_INT(1L << 40),
        "weak array of immediates kept");
  clear_roots();
  CHECK_VERIFY("after immediates");
}

/* Data referencing its own key (the classic leak), or its own ephemeron. */
static void test_self_reference(void) {
  int old;
  mgc_value v, d;
  for (old = 0; old < 2; old++) {
    r[0] = mgc_ephe_create(1);
    r[1] = mgc_weak_create(2);
    r[2] = make_box(1, old);
    d = mgc_alloc_small(2, 0);
    MGC_FIELD(d, 0) = r[2];
    MGC_FIELD(d, 1) = MGC_VAL_INT(2);
    mgc_ephe_set_key(r[0], 0, r[2]);
    mgc_ephe_set_data(r[0], d);
    mgc_weak_set(r[1], 0, r[2]);
    mgc_weak_set(r[1], 1, d);
    mgc_full_major();
    v = data_of(r[0]);
    CHECK(v != 0 && MGC_FIELD(v, 0) == r[2] && key_of(r[0], 0) == r[2],
          "data referencing its key (%s): kept while the key is held",
          old ? "old" : "young");
    r[2] = MGC_UNIT;
    mgc_full_major();
    CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_ephe_check_data(r[0]),
          "data referencing its key: key and data emptied once dropped");
    CHECK(!mgc_weak_check(r[1], 0) && !mgc_weak_check(r[1], 1),
          "data referencing its key: both freed (no leak)");
    clear_roots();
  }

  /* Two keys, the data the only holder of the second one: the second key
     is unreachable, so everything dies even with the first one held. */
  r[0] = mgc_ephe_create(2);
  r[1] = mgc_weak_create(3);
  r[2] = box(1);
  r[3] = box(2);
  d = mgc_alloc_small(1, 0);
  MGC_FIELD(d, 0) = r[3];
  mgc_ephe_set_key(r[0], 0, r[2]);
  mgc_ephe_set_key(r[0], 1, r[3]);
  mgc_ephe_set_data(r[0], d);
  mgc_weak_set(r[1], 0, r[2]);
  mgc_weak_set(r[1], 1, r[3]);
  mgc_weak_set(r[1], 2, d);
  r[3] = MGC_UNIT;
  mgc_full_major();
  CHECK(key_of(r[0], 0) == r[2] && !mgc_ephe_check_key(r[0], 1) &&
            !mgc_ephe_check_data(r[0]) && !mgc_weak_check(r[1], 1) &&
            !mgc_weak_check(r[1], 2),
        "2 keys, data the only holder of key 1: key 1 and data die, key 0 "
        "(held) kept");
  r[2] = MGC_UNIT;
  mgc_full_major();
  CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_weak_check(r[1], 0),
        "2 keys: key 0 gone once dropped");
  clear_roots();

  /* An ephemeron reachable only from its own data. */
  {
    r[2] = mgc_ephe_create(1);
    r[0] = mgc_weak_create(2);
    r[1] = box(1);
    mgc_ephe_set_key(r[2], 0, r[1]);
    d = mgc_alloc_small(1, 0);
    MGC_FIELD(d, 0) = r[2];
    mgc_ephe_set_data(r[2], d);
    mgc_weak_set(r[0], 0, r[2]);
    mgc_weak_set(r[0], 1, d);
    r[2] = MGC_UNIT;
    mgc_full_major();
    CHECK(!mgc_weak_check(r[0], 0) && !mgc_weak_check(r[0], 1) &&
              box_ok(r[1], 1),
          "ephemeron reachable only from its own data dies with it");
  }
  clear_roots();
  CHECK_VERIFY("after self reference");
}

/* ephetest2.ml: variables alive or dead by and/or formulas over lower
   variables; And = one n-key ephemeron, Or = n one-key ephemerons, each
   with the variable as data. */
#define FV 160
#define FBASE 40
#define FMAXIN 4

static void test_formulas(void) {
  static int truth[FV], kind[FV], nin[FV], in[FV][FMAXIN], held[FV];
  static int first_e[FV];
  int round, v, j, ne = 0, bad;
  long sample;
  mgc_value e;

  r[0] = mgc_alloc(FV, 0);          /* variables */
  r[1] = mgc_weak_create(FV);       /* watches them */
  r[2] = mgc_alloc(FV * FMAXIN, 0); /* ephemerons */
  for (v = 0; v < FV; v++) {
    mgc_value b = box(v);
    mgc_modify(&MGC_FIELD(r[0], v), b);
    mgc_weak_set(r[1], v, MGC_FIELD(r[0], v));
  }
  for (v = 0; v < FV; v++) {
    if (v < FBASE) {
      held[v] = (int)test_rand_below(4) != 0;
      kind[v] = 0;
      continue;
    }
    kind[v] = 1 + (int)test_rand_below(2); /* 1 And, 2 Or */
    nin[v] = 1 + (int)test_rand_below(FMAXIN);
    first_e[v] = ne;
    for (j = 0; j < nin[v]; j++)
      in[v][j] = (int)test_rand_below((uint64_t)v);
    if (kind[v] == 1) {
      e = mgc_ephe_create((size_t)nin[v]);
      for (j = 0; j < nin[v]; j++)
        mgc_ephe_set_key(e, (size_t)j, MGC_FIELD(r[0], in[v][j]));
      mgc_ephe_set_data(e, MGC_FIELD(r[0], v));
      mgc_modify(&MGC_FIELD(r[2], ne++), e);
    } else {
      for (j = 0; j < nin[v]; j++) {
        e = mgc_ephe_create(1);
        mgc_ephe_set_key(e, 0, MGC_FIELD(r[0], in[v][j]));
        mgc_ephe_set_data(e, MGC_FIELD(r[0], v));
        mgc_modify(&MGC_FIELD(r[2], ne++), e);
      }
    }
  }
  for (v = 0; v < FV; v++)
    if (v >= FBASE || !held[v])
      mgc_modify(&MGC_FIELD(r[0], v), MGC_UNIT);

  for (round = 0;; round++) {
    int nheld = 0;
    for (v = 0; v < FV; v++) {
      if (kind[v] == 0) {
        truth[v] = held[v];
        nheld += held[v];
      } else if (kind[v] == 1) {
        truth[v] = 1;
        for (j = 0; j < nin[v]; j++)
          truth[v] &= truth[in[v][j]];
      } else {
        truth[v] = 0;
        for (j = 0; j < nin[v]; j++)
          truth[v] |= truth[in[v][j]];
      }
    }
    mgc_minor_collection();
    mgc_full_major();
    bad = 0;
    sample = 0;
    for (v = 0; v < FV; v++) {
      if (mgc_weak_check(r[1], (size_t)v) != truth[v]) {
        if (bad++ < 5)
          printf("formula round %d: variable %d (kind %d) %s\n", round, v,
                 kind[v], truth[v] ? "lost" : "kept");
      }
      sample += truth[v];
      if (kind[v] == 1) {
        e = MGC_FIELD(r[2], first_e[v]);
        if (mgc_ephe_check_data(e) != truth[v])
          bad++;
      } else if (kind[v] == 2) {
        for (j = 0; j < nin[v]; j++) {
          e = MGC_FIELD(r[2], first_e[v] + j);
          if (mgc_ephe_check_data(e) != truth[in[v][j]] ||
              mgc_ephe_check_key(e, 0) != truth[in[v][j]])
            bad++;
        }
      }
    }
    CHECK(bad == 0, "formulas, round %d (%d held, %ld alive): %d wrong", round,
          nheld, sample, bad);
    if (nheld == 0)
      break;
    /* Drop about half of the held variables. */
    for (v = 0; v < FBASE; v++)
      if (held[v] && (test_rand_below(2) == 0 || round >= 4)) {
        held[v] = 0;
        mgc_modify(&MGC_FIELD(r[0], v), MGC_UNIT);
      }
  }
  clear_roots();
  CHECK_VERIFY("after formulas");
}

/* Chains: k1 held -> e1.data = k2 -> e2 keyed by k2, data k3 -> ...
   order: 0 ascending creation, 1 descending, 2 random; boxed: the data is a
   block holding the next key rather than the key. */
#define CL 64

static void test_chain(int order, int boxed, int cycle) {
  static int perm[CL];
  int i, ok;
  mgc_value e, d;
  for (i = 0; i < CL; i++)
    perm[i] = order == 1 ? CL - 1 - i : i;
  if (order == 2)
    for (i = CL - 1; i > 0; i--) {
      int j = (int)test_rand_below((uint64_t)i + 1), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
  r[0] = mgc_alloc(CL, 0);        /* the ephemerons */
  r[1] = mgc_weak_create(CL + 1); /* watches the keys */
  r[2] = mgc_weak_create(CL);     /* watches the data */
  for (i = 0; i < CL; i++) {
    e = mgc_ephe_create(1);
    mgc_modify(&MGC_FIELD(r[0], perm[i]), e);
  }
  r[3] = box(0); /* k1, held */
  r[4] = r[3];
  for (i = 0; i < CL; i++) {
    e = MGC_FIELD(r[0], i);
    mgc_ephe_set_key(e, 0, r[4]);
    mgc_weak_set(r[1], (size_t)i, r[4]);
    r[4] = cycle && i == CL - 1 ? r[3] : box(i + 1);
    if (boxed) {
      d = mgc_alloc_small(1, 0);
      MGC_FIELD(d, 0) = r[4];
    } else {
      d = r[4];
    }
    e = MGC_FIELD(r[0], i);
    mgc_ephe_set_data(e, d);
    mgc_weak_set(r[2], (size_t)i, d);
  }
  mgc_weak_set(r[1], CL, r[4]);
  r[4] = MGC_UNIT;
  mgc_minor_collection();
  mgc_full_major();
  ok = 1;
  for (i = 0; i < CL; i++) {
    mgc_value next;
    e = MGC_FIELD(r[0], i);
    d = data_of(e);
    next = i + 1 < CL ? key_of(MGC_FIELD(r[0], i + 1), 0) : weak_of(r[1], CL);
    if (boxed && d != 0)
      d = MGC_FIELD(d, 0);
    if (!box_ok(key_of(e, 0), i) || d == 0 || d != next ||
        !box_ok(d, cycle && i == CL - 1 ? 0 : i + 1) ||
        !mgc_weak_check(r[1], (size_t)i) || !mgc_weak_check(r[2], (size_t)i))
      ok = 0;
  }
  CHECK(ok && key_of(MGC_FIELD(r[0], 0), 0) == r[3],
        "%s (order %d%s): all alive while k1 is held",
        cycle ? "cycle" : "chain", order, boxed ? ", boxed data" : "");
  r[3] = MGC_UNIT;
  mgc_full_major();
  ok = 1;
  for (i = 0; i < CL; i++) {
    e = MGC_FIELD(r[0], i);
    if (mgc_ephe_check_key(e, 0) || mgc_ephe_check_data(e) ||
        mgc_weak_check(r[1], (size_t)i) || mgc_weak_check(r[2], (size_t)i))
      ok = 0;
  }
  ok &= !mgc_weak_check(r[1], CL);
  CHECK(ok, "%s (order %d%s): all gone after ONE full major once k1 died",
        cycle ? "cycle" : "chain", order, boxed ? ", boxed data" : "");
  clear_roots();
}

static void test_chains(void) {
  int order, boxed, cycle;
  for (cycle = 0; cycle < 2; cycle++)
    for (order = 0; order < 3; order++)
      for (boxed = 0; boxed < 2; boxed++)
        test_chain(order, boxed, cycle);

  /* A cycle of ephemerons whose data reach each other's keys, nothing
     held: everything dies. */
  {
    int i, ok = 1;
    mgc_value e;
    r[0] = mgc_alloc(CL, 0);
    r[1] = mgc_weak_create(CL);
    r[2] = mgc_alloc(CL, 0);
    for (i = 0; i < CL; i++) {
      mgc_value k = box(i);
      mgc_modify(&MGC_FIELD(r[2], i), k);
      e = mgc_ephe_create(1);
      mgc_modify(&MGC_FIELD(r[0], i), e);
    }
    for (i = 0; i < CL; i++) {
      e = MGC_FIELD(r[0], i);
      mgc_ephe_set_key(e, 0, MGC_FIELD(r[2], i));
      mgc_ephe_set_data(e, MGC_FIELD(r[2], (i + 1) % CL));
      mgc_weak_set(r[1], (size_t)i, MGC_FIELD(r[2], i));
    }
    r[2] = MGC_UNIT;
    mgc_full_major();
    for (i = 0; i < CL; i++) {
      e = MGC_FIELD(r[0], i);
      if (mgc_ephe_check_key(e, 0) || mgc_ephe_check_data(e) ||
          mgc_weak_check(r[1], (size_t)i))
        ok = 0;
    }
    CHECK(ok, "an unreferenced cycle of ephemerons dies entirely");
    clear_roots();
  }
  CHECK_VERIFY("after chains");
}

/* Ephemerons as keys and as data of other ephemerons. */
static void test_ephe_keys(void) {
  mgc_value v, e;
  r[0] = mgc_ephe_create(1); /* outer */
  r[1] = mgc_ephe_create(1); /* inner */
  r[2] = box(1);             /* inner's key, held */
  r[3] = mgc_weak_create(3);
  mgc_ephe_set_key(r[1], 0, r[2]);
  v = box(5);
  mgc_ephe_set_data(r[1], v);
  mgc_weak_set(r[3], 2, v);
  mgc_ephe_set_key(r[0], 0, r[1]);
  v = box(6);
  mgc_ephe_set_data(r[0], v);
  mgc_weak_set(r[3], 0, r[1]);
  mgc_weak_set(r[3], 1, v);
  mgc_full_major();
  CHECK(key_of(r[0], 0) == r[1] && box_ok(data_of(r[0]), 6) &&
            box_ok(data_of(r[1]), 5),
        "ephemeron as key: kept while held");
  r[1] = MGC_UNIT;
  mgc_full_major();
  CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_ephe_check_data(r[0]),
        "ephemeron key dropped: outer emptied");
  CHECK(!mgc_weak_check(r[3], 0) && !mgc_weak_check(r[3], 1) &&
            !mgc_weak_check(r[3], 2) && box_ok(r[2], 1),
        "the dead inner ephemeron, its data and the outer data are gone");
  clear_roots();

  /* Outer keyed and holding (as data) the inner ephemeron. */
  r[0] = mgc_ephe_create(1);
  r[3] = mgc_weak_create(1);
  e = mgc_ephe_create(1);
  mgc_ephe_set_key(r[0], 0, e);
  mgc_ephe_set_data(r[0], e);
  mgc_weak_set(r[3], 0, e);
  e = 0;
  mgc_full_major();
  CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_ephe_check_data(r[0]) &&
            !mgc_weak_check(r[3], 0),
        "ephemeron as its own outer's key and data: no leak");
  clear_roots();

  /* An ephemeron reachable only through another one's data. */
  r[0] = mgc_ephe_create(1);
  r[1] = box(1); /* e1's key */
  r[2] = box(2); /* e2's key */
  r[3] = mgc_weak_create(2);
  mgc_ephe_set_key(r[0], 0, r[1]);
  r[4] = mgc_ephe_create(1);
  mgc_ephe_set_data(r[0], r[4]);
  mgc_ephe_set_key(r[4], 0, r[2]);
  mgc_weak_set(r[3], 0, r[4]);
  v = box(3);
  mgc_ephe_set_data(r[4], v);
  mgc_weak_set(r[3], 1, v);
  r[4] = MGC_UNIT;
  mgc_full_major();
  e = data_of(r[0]);
  CHECK(e != 0 && key_of(e, 0) == r[2] && box_ok(data_of(e), 3),
        "ephemeron as data: alive with its data");
  r[1] = MGC_UNIT;
  mgc_full_major();
  CHECK(!mgc_ephe_check_data(r[0]) && !mgc_weak_check(r[3], 0) &&
            !mgc_weak_check(r[3], 1) && box_ok(r[2], 2),
        "ephemeron as data dies with its holder's key, and its data too");
  clear_roots();
  CHECK_VERIFY("after ephemeron keys");
}

/* Closures with an infix header (as tests/test_tags.c):
   0 code_a, 1 closinfo(2, 5), 2 infix header (offset 3), 3 code_b,
   4 closinfo(1, 2), 5 env int. */
static mgc_value code_a(mgc_value x) { return x; }
static mgc_value code_b(mgc_value x) { return x + 2; }
#define CODE(f) ((mgc_value)(uintptr_t)(f))
#define INFIX_OFS (3 * (mgc_value)sizeof(mgc_value))

static mgc_value closure(long n) {
  mgc_value c = mgc_alloc_small(6, MGC_TAG_CLOSURE);
  MGC_FIELD(c, 0) = CODE(code_a);
  MGC_FIELD(c, 1) = MGC_CLOSINFO(2, 5);
  MGC_FIELD(c, 2) = (mgc_value)MGC_MAKE_HEADER(3, MGC_TAG_INFIX, 0);
  MGC_FIELD(c, 3) = CODE(code_b);
  MGC_FIELD(c, 4) = MGC_CLOSINFO(1, 2);
  MGC_FIELD(c, 5) = MGC_VAL_INT(n);
  return c;
}

static int closure_ok(mgc_value c, long n) {
  return MGC_TAG_VAL(c) == MGC_TAG_CLOSURE && MGC_WOSIZE_VAL(c) == 6 &&
         MGC_FIELD(c, 0) == CODE(code_a) && MGC_FIELD(c, 3) == CODE(code_b) &&
         MGC_FIELD(c, 2) == (mgc_value)MGC_MAKE_HEADER(3, MGC_TAG_INFIX, 0) &&
         MGC_FIELD(c, 5) == MGC_VAL_INT(n);
}

/* ephe_infix.ml: infix pointers as keys (ocaml #7810, #9485). */
static void test_infix(void) {
  int old, hold;
  mgc_value v;
  CHECK(code_a(MGC_VAL_INT(1)) != code_b(MGC_VAL_INT(1)), "code is code");
  for (old = 0; old < 2; old++)
    for (hold = 0; hold < 3; hold++) { /* nothing, closure, infix */
      static const char *const what[] = {"nothing", "the closure",
                                         "the infix pointer"};
      r[0] = mgc_ephe_create(1);
      r[1] = mgc_weak_create(2);
      r[2] = closure(40 + hold);
      if (old)
        mgc_minor_collection();
      r[3] = r[2] + INFIX_OFS;
      r[4] = box(7); /* data, held (#7810) */
      mgc_ephe_set_key(r[0], 0, r[3]);
      mgc_ephe_set_data(r[0], r[4]);
      mgc_weak_set(r[1], 0, r[3]);
      mgc_weak_set(r[1], 1, r[2]);
      if (hold != 1)
        r[2] = MGC_UNIT;
      if (hold != 2)
        r[3] = MGC_UNIT;
      mgc_minor_collection();
      mgc_full_major();
      mgc_full_major();
      if (hold == 0) {
        CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_ephe_check_data(r[0]) &&
                  !mgc_weak_check(r[1], 0) && !mgc_weak_check(r[1], 1),
              "%s infix key, nothing held: key, data and weak slot emptied",
              old ? "old" : "young");
        CHECK(box_ok(r[4], 7), "data held elsewhere intact (#7810)");
      } else {
        mgc_value c;
        v = key_of(r[0], 0);
        c = hold == 1 ? r[2] : r[3] - INFIX_OFS;
        CHECK(v == c + INFIX_OFS && MGC_TAG_VAL(v) == MGC_TAG_INFIX &&
                  closure_ok(c, 40 + hold) && data_of(r[0]) == r[4] &&
                  weak_of(r[1], 0) == v && weak_of(r[1], 1) == c,
              "%s infix key, holding %s: key and data kept",
              old ? "old" : "young", what[hold]);
        r[2] = r[3] = MGC_UNIT;
        v = c = 0;
        mgc_full_major();
        CHECK(!mgc_ephe_check_key(r[0], 0) && !mgc_ephe_check_data(r[0]) &&
                  !mgc_weak_check(r[1], 0) && !mgc_weak_check(r[1], 1),
              "%s infix key, %s dropped: emptied", old ? "old" : "young",
              what[hold]);
      }
      clear_roots();
    }
  CHECK_VERIFY("after infix");
}

/* Forward blocks as keys: short-circuited to an ordinary target (the
   Forward block itself may then die), kept for a Double target. */
static void test_forward_keys(void) {
  int old, hold;
  mgc_value f, v;
  for (old = 0; old < 2; old++)
    for (hold = 0; hold < 3; hold++) { /* target, forward, nothing */
      r[0] = mgc_ephe_create(1);
      r[1] = old_box(3); /* the target */
      if (old) {
        f = mgc_alloc_shr(1, MGC_TAG_FORWARD);
        mgc_initialize(&MGC_FIELD(f, 0), r[1]);
      } else {
        f = mgc_alloc_small(1, MGC_TAG_FORWARD);
        MGC_FIELD(f, 0) = r[1];
      }
      r[2] = f;
      mgc_ephe_set_key(r[0], 0, r[2]);
      v = box(4);
      mgc_ephe_set_data(r[0], v);
      if (hold != 0)
        r[1] = MGC_UNIT;
      if (hold != 1)
        r[2] = MGC_UNIT;
      mgc_minor_collection();
      mgc_full_major();
      pressure(test_scale(1000));
      mgc_full_major();
      v = key_of(r[0], 0);
      if (hold == 0)
        CHECK(v == r[1] && box_ok(v, 3) && box_ok(data_of(r[0]), 4),
              "%s Forward key, target held: short-circuited to the target",
              old ? "old" : "young");
      else if (hold == 1) {
        /* A young Forward root is short-circuited by the minor GC. */
        mgc_value t =
            MGC_TAG_VAL(r[2]) == MGC_TAG_FORWARD ? MGC_FIELD(r[2], 0) : r[2];
        CHECK(v != 0 && (v == r[2] || v == t) && box_ok(t, 3) &&
                  box_ok(data_of(r[0]), 4),
              "%s Forward key, Forward held: kept", old ? "old" : "young");
      } else
        CHECK(v == 0 && !mgc_ephe_check_data(r[0]),
              "%s Forward key, nothing held: emptied", old ? "old" : "young");
      clear_roots();
    }

  /* Forward to a Double: not short-circuited. */
  for (old = 0; old < 2; old++)
    for (hold = 0; hold < 2; hold++) { /* the double, the Forward */
      r[0] = mgc_ephe_create(1);
      r[1] = mgc_copy_double(2.5);
      if (old) {
        mgc_minor_collection();
        f = mgc_alloc_shr(1, MGC_TAG_FORWARD);
        mgc_initialize(&MGC_FIELD(f, 0), r[1]);
      } else {
        f = mgc_alloc_small(1, MGC_TAG_FORWARD);
        MGC_FIELD(f, 0) = r[1];
      }
      r[2] = f;
      mgc_ephe_set_key(r[0], 0, r[2]);
      mgc_ephe_set_data(r[0], MGC_VAL_INT(1));
      if (hold == 0)
        r[2] = MGC_UNIT;
      else
        r[1] = MGC_UNIT;
      mgc_minor_collection();
      mgc_full_major();
      v = key_of(r[0], 0);
      if (hold == 0)
        CHECK(v == 0 && !mgc_ephe_check_data(r[0]) &&
                  MGC_DOUBLE_VAL(r[1]) == 2.5,
              "%s Forward to Double, only the Double held: emptied",
              old ? "old" : "young");
      else
        CHECK(v == r[2] && MGC_TAG_VAL(v) == MGC_TAG_FORWARD &&
                  MGC_DOUBLE_VAL(MGC_FIELD(v, 0)) == 2.5 &&
                  mgc_ephe_check_data(r[0]),
              "%s Forward to Double held: kept as is", old ? "old" : "young");
      clear_roots();
    }
  CHECK_VERIFY("after forward keys");
}

/* ------------------------------------------------------------------------ */
/* 3. get keeps alive, check does not                                       */
/* ------------------------------------------------------------------------ */

static void test_get_keeps_alive(void) {
  int j, got_k = 0, got_d = 0, ok = 1, ok_check = 1, ok_drop = 1;
  mgc_value v;
  for (j = 0; j < 48; j++) {
    char buf[32];
    int k, gk, gd, mode = j % 3; /* get and hold, check, get and drop */
    snprintf(buf, sizeof buf, "get-key-%03d", j);
    r[0] = mgc_ephe_create(1);
    r[3] = mgc_weak_create(2);
    r[1] = mgc_copy_string(buf);
    r[2] = box(j);
    mgc_ephe_set_key(r[0], 0, r[1]);
    mgc_ephe_set_data(r[0], r[2]);
    mgc_weak_set(r[3], 0, r[1]);
    mgc_weak_set(r[3], 1, r[2]);
    mgc_minor_collection();
    /* Finish the cycle under way while they are held, then drop them:
       the next cycle's mark start finds key and data unreachable. */
    mgc_major_collection();
    r[1] = r[2] = MGC_UNIT;
    for (k = 0; k < (j / 3) % 5; k++)
      mgc_major_slice(10);
    if (mode == 1) {
      for (k = 0; k < 8; k++) {
        (void)mgc_ephe_check_key(r[0], 0);
        (void)mgc_ephe_check_data(r[0]);
        (void)mgc_weak_check(r[3], 0);
        mgc_major_slice(5);
      }
      /* The cycle under way started after the drop: finishing it is
         enough, unless a check darkened them. */
      mgc_major_collection();
      if (mgc_ephe_check_key(r[0], 0) || mgc_ephe_check_data(r[0]) ||
          mgc_weak_check(r[3], 0) || mgc_weak_check(r[3], 1)) {
        ok_check = 0;
        printf("check_key kept a value alive (round %d)\n", j);
      }
      clear_roots();
      continue;
    }
    v = 0;
    gk = mgc_ephe_get_key(r[0], 0, &v);
    if (gk && mode == 0)
      r[1] = v;
    v = 0;
    gd = mgc_ephe_get_data(r[0], &v);
    if (gd && mode == 0)
      r[2] = v;
    v = 0;
    got_k += gk;
    got_d += gd;
    for (k = 0; k < j % 4; k++)
      mgc_major_slice(40);
    pressure(test_scale(500));
    mgc_full_major();
    pressure(test_scale(500));
    mgc_full_major();
    if (mode == 2) {
      if (mgc_ephe_check_key(r[0], 0) || mgc_ephe_check_data(r[0]) ||
          mgc_weak_check(r[3], 0) || mgc_weak_check(r[3], 1)) {
        ok_drop = 0;
        printf("a value got then dropped survived (round %d)\n", j);
      }
    } else {
      if (gk && (MGC_TAG_VAL(r[1]) != MGC_TAG_STRING ||
                 strcmp(MGC_STRING_VAL(r[1]), buf) != 0 ||
                 key_of(r[0], 0) != r[1] || weak_of(r[3], 0) != r[1])) {
        ok = 0;
        printf("get_key's result not kept alive (round %d)\n", j);
      }
      if (gd && (!box_ok(r[2], j) || weak_of(r[3], 1) != r[2] ||
                 (gk && data_of(r[0]) != r[2]))) {
        ok = 0;
        printf("get_data's result not kept alive (round %d)\n", j);
      }
      if (gk != gd) {
        ok = 0;
        printf("key got %d but data got %d (round %d)\n", gk, gd, j);
      }
    }
    clear_roots();
  }
  printf("get: %d keys and %d data got before cleaning\n", got_k, got_d);
  CHECK(got_k > 0, "some get_key happened before the key was cleaned");
  CHECK(ok, "get_key / get_data keep their results alive");
  CHECK(ok_check, "check_key / check_data keep nothing alive");
  CHECK(ok_drop, "a value got, then dropped, dies at the next full major");
  CHECK_VERIFY("after get keeps alive");
}

/* ------------------------------------------------------------------------ */
/* 4. Weak arrays: weaklifetime.ml and weaktest.ml                          */
/* ------------------------------------------------------------------------ */

#define PRESENT (-1L)

static void test_weaklifetime(void) {
  long nb = test_scale(300), i, it, maxit = test_scale(300000), total = 0;
  long fm_every = test_scale(1500), mistakes = 0, late = 0, fm_bad = 0;
  long *len, *off, *st, filled = 0, erased = 0;
  uint64_t gc0, gc1;
  int num_gcs = 20;
  if (nb < 4)
    nb = 4;
  if (fm_every < 50)
    fm_every = 50;
  len = malloc((size_t)nb * sizeof *len);
  off = malloc((size_t)nb * sizeof *off);
  for (i = 0; i < nb; i++) {
    len[i] = 1 + (long)test_rand_below(40);
    off[i] = total;
    total += len[i];
  }
  st = malloc((size_t)total * sizeof *st);
  for (i = 0; i < total; i++)
    st[i] = 0;                     /* Absent 0 */
  r[0] = mgc_alloc((size_t)nb, 0); /* strong holders */
  r[1] = mgc_alloc((size_t)nb, 0); /* weak arrays */
  for (i = 0; i < nb; i++) {
    mgc_value h = mgc_alloc((size_t)len[i], 0);
    mgc_modify(&MGC_FIELD(r[0], i), h);
    h = mgc_weak_create((size_t)len[i]);
    mgc_modify(&MGC_FIELD(r[1], i), h);
  }
  gc0 = major_cycles();
  for (it = 0; it < maxit && major_cycles() - gc0 < (uint64_t)num_gcs; it++) {
    long j, n;
    mgc_value w, h;
    int present;
    r[2] = mgc_alloc(1 + test_rand_below(300), 0); /* dummy */
    if (it % 32 == 31)
      mgc_major_slice(0);
    i = (long)test_rand_below((uint64_t)nb);
    j = (long)test_rand_below((uint64_t)len[i]);
    gc1 = major_cycles();
    w = MGC_FIELD(r[1], i);
    present = mgc_weak_check(w, (size_t)j);
    n = st[off[i] + j];
    if (n == PRESENT && !present) {
      if (mistakes++ < 5)
        printf("weaklifetime: held value missing at (%ld, %ld)\n", i, j);
    } else if (n != PRESENT && present) {
      if (gc1 > (uint64_t)n + 1 && late++ < 5)
        printf("weaklifetime: value erased at cycle %ld still there at "
               "cycle %llu\n",
               n, (unsigned long long)gc1);
    } else if (n != PRESENT) {
      long k, sz = 1 + (long)test_rand_below(10);
      mgc_value x = mgc_alloc((size_t)sz, 0);
      for (k = 0; k < sz; k++)
        mgc_modify(&MGC_FIELD(x, k), MGC_VAL_INT(42));
      mgc_modify(&MGC_FIELD(MGC_FIELD(r[0], i), j), x);
      mgc_weak_set(MGC_FIELD(r[1], i), (size_t)j, x);
      st[off[i] + j] = PRESENT;
      filled++;
    } else {
      h = MGC_FIELD(r[0], i);
      if (test_rand_below(8) == 0 && weak_of(w, (size_t)j) != MGC_FIELD(h, j) &&
          mistakes++ < 5)
        printf("weaklifetime: wrong value at (%ld, %ld)\n", i, j);
      if (test_rand_below(2) == 0) {
        mgc_modify(&MGC_FIELD(h, j), MGC_UNIT);
        st[off[i] + j] = (long)gc1;
        erased++;
      }
    }
    if (it % fm_every == fm_every - 1) {
      long a;
      mgc_full_major();
      for (a = 0; a < nb; a++) {
        long b;
        w = MGC_FIELD(r[1], a);
        h = MGC_FIELD(r[0], a);
        for (b = 0; b < len[a]; b++) {
          int p = mgc_weak_check(w, (size_t)b);
          if (p != (st[off[a] + b] == PRESENT) ||
              (p && weak_of(w, (size_t)b) != MGC_FIELD(h, b)))
            fm_bad++;
        }
      }
    }
  }
  printf("weaklifetime: %ld iterations, %llu cycles, %ld slots, %ld filled, "
         "%ld erased\n",
         it, (unsigned long long)(major_cycles() - gc0), total, filled, erased);
  CHECK(mistakes == 0, "weaklifetime: %ld held values missing or wrong",
        mistakes);
  CHECK(late == 0, "weaklifetime: %ld erased values outlived the next cycle",
        late);
  CHECK(fm_bad == 0, "weaklifetime: %ld slots wrong after a full major",
        fm_bad);
  free(len);
  free(off);
  free(st);
  clear_roots();
  CHECK_VERIFY("after weaklifetime");
}

/* weaktest.ml: a weak hash set of strings (Weak.Make's merge); buckets are
   weak arrays, grown by blit_keys; the hashes live on the C side. */
#define WS_NB 509

struct wset {
  size_t cap[WS_NB];
  uint32_t *hash[WS_NB];
};

static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static void wset_init(struct wset *ws, int root) {
  size_t b;
  r[root] = mgc_alloc(WS_NB, 0);
  for (b = 0; b < WS_NB; b++) {
    mgc_value w = mgc_weak_create(2);
    mgc_modify(&MGC_FIELD(r[root], b), w);
    ws->cap[b] = 2;
    ws->hash[b] = calloc(2, sizeof(uint32_t));
  }
}

static void wset_free(struct wset *ws) {
  size_t b;
  for (b = 0; b < WS_NB; b++)
    free(ws->hash[b]);
}

/* The string equal to r[sroot] in the set, or r[sroot] itself, added. */
static mgc_value wset_merge(struct wset *ws, int root, int sroot) {
  const char *s = MGC_STRING_VAL(r[sroot]);
  uint32_t h = str_hash(s);
  size_t b = h % WS_NB, i, n = ws->cap[b];
  mgc_value w = MGC_FIELD(r[root], b), v;
  for (i = 0; i < n; i++)
    if (ws->hash[b][i] == h && mgc_weak_get(w, i, &v) &&
        strcmp(MGC_STRING_VAL(v), s) == 0)
      return v;
  for (i = 0; i < n; i++)
    if (!mgc_weak_check(w, i))
      break;
  if (i == n) {
    mgc_value nw = mgc_weak_create(2 * n);
    mgc_ephe_blit_keys(w, 0, nw, 0, n);
    mgc_modify(&MGC_FIELD(r[root], b), nw);
    w = nw;
    ws->hash[b] = realloc(ws->hash[b], 2 * n * sizeof(uint32_t));
    memset(ws->hash[b] + n, 0, n * sizeof(uint32_t));
    ws->cap[b] = 2 * n;
  }
  mgc_weak_set(w, i, r[sroot]);
  ws->hash[b][i] = h;
  return r[sroot];
}

static long wset_count(struct wset *ws, int root) {
  size_t b, i;
  long n = 0;
  for (b = 0; b < WS_NB; b++)
    for (i = 0; i < ws->cap[b]; i++)
      n += mgc_weak_check(MGC_FIELD(r[root], b), i);
  return n;
}

static void test_weaktest(void) {
  static struct wset ws;
  long n = test_scale(30000), i, mistakes = 0, leaks = 0, nheld = 0, cnt;
  char buf[32];
  if (n < 30)
    n = 30;
  wset_init(&ws, 0);
  r[1] = mgc_alloc((size_t)n, 0); /* the held strings (every third) */
  for (i = 0; i < n; i++) {
    mgc_value v;
    snprintf(buf, sizeof buf, "weaktest-%ld", i);
    r[2] = mgc_copy_string(buf);
    v = wset_merge(&ws, 0, 2);
    if (v != r[2] && mistakes++ < 5)
      printf("weaktest: new string %s merged into another\n", buf);
    if (i % 3 == 0) {
      mgc_modify(&MGC_FIELD(r[1], i), r[2]);
      nheld++;
    }
    if (i > 0 && test_rand_below(4) == 0) {
      long j = (long)test_rand_below((uint64_t)i) / 3 * 3;
      snprintf(buf, sizeof buf, "weaktest-%ld", j);
      r[2] = mgc_copy_string(buf);
      v = wset_merge(&ws, 0, 2);
      if (v != MGC_FIELD(r[1], j) && mistakes++ < 5)
        printf("weaktest: held string %s not found\n", buf);
    }
    switch (test_rand_below(500)) {
    case 0:
      mgc_full_major();
      break;
    case 1:
    case 2:
    case 3:
      mgc_major_slice(0);
      break;
    case 4:
    case 5:
      mgc_minor_collection();
      break;
    default:
      break;
    }
  }
  r[2] = MGC_UNIT;
  mgc_full_major();
  cnt = wset_count(&ws, 0);
  CHECK(cnt == nheld, "weaktest: %ld strings left in the set, %ld held", cnt,
        nheld);
  for (i = 0; i < n; i++) {
    mgc_value v;
    snprintf(buf, sizeof buf, "weaktest-%ld", i);
    r[2] = mgc_copy_string(buf);
    v = wset_merge(&ws, 0, 2);
    if (i % 3 == 0 ? v != MGC_FIELD(r[1], i) : v != r[2]) {
      if (i % 3 == 0)
        mistakes++;
      else
        leaks++;
    }
  }
  CHECK(mistakes == 0, "weaktest: %ld mistakes", mistakes);
  CHECK(leaks == 0, "weaktest: %ld dead strings still in the set", leaks);
  wset_free(&ws);
  clear_roots();
  CHECK_VERIFY("after weaktest");
}

/* ------------------------------------------------------------------------ */
/* 5. Ephemeron hash tables against a model                                 */
/* ------------------------------------------------------------------------ */

/* r[root] holds TNB bucket lists of cells [ephemeron, next]; keys are boxes
   [id, ~id] compared by id. */
#define TNB 257

static long key_id(mgc_value k) { return MGC_INT_VAL(MGC_FIELD(k, 0)); }

static size_t thash(const long *ids, int nk) {
  uint64_t h = 1469598103934665603ULL;
  int i;
  for (i = 0; i < nk; i++)
    h = (h ^ (uint64_t)ids[i]) * 1099511628211ULL;
  return (size_t)(h % TNB);
}

/* The ephemeron whose keys have these ids, or 0; with unlink, its cell is
   removed.  Cells met with a dead key are removed on the way. */
static mgc_value tfind(int root, const long *ids, int nk, int unlink) {
  mgc_value *prev = &MGC_FIELD(r[root], thash(ids, nk));
  mgc_value c = *prev;
  while (c != MGC_UNIT) {
    mgc_value e = MGC_FIELD(c, 0), next = MGC_FIELD(c, 1), k;
    int i, dead = 0, match = 1;
    for (i = 0; i < nk; i++) {
      if (!mgc_ephe_get_key(e, (size_t)i, &k)) {
        dead = 1;
        break;
      }
      if (key_id(k) != ids[i])
        match = 0;
    }
    if (dead || (match && unlink)) {
      mgc_modify(prev, next);
      if (!dead)
        return e;
    } else if (match) {
      return e;
    } else {
      prev = &MGC_FIELD(c, 1);
    }
    c = next;
  }
  return 0;
}

/* Adds an entry keyed by r[R_K0] (and r[R_K1]) with data r[R_D]. */
static void tadd(int root, int nk) {
  long ids[2];
  int i;
  mgc_value e = mgc_ephe_create((size_t)nk), c;
  for (i = 0; i < nk; i++) {
    mgc_ephe_set_key(e, (size_t)i, r[R_K0 + i]);
    ids[i] = key_id(r[R_K0 + i]);
  }
  mgc_ephe_set_data(e, r[R_D]);
  r[R_TMP] = e;
  c = mgc_alloc_small(2, 0);
  MGC_FIELD(c, 0) = r[R_TMP];
  MGC_FIELD(c, 1) = MGC_FIELD(r[root], thash(ids, nk));
  mgc_modify(&MGC_FIELD(r[root], thash(ids, nk)), c);
  r[R_TMP] = MGC_UNIT;
}

/* The value stored in a data: an immediate, or a block [value, key or
   unit]. */
static long data_value(mgc_value d) {
  return MGC_IS_INT(d) ? (long)MGC_INT_VAL(d)
                       : (long)MGC_INT_VAL(MGC_FIELD(d, 0));
}

struct kinfo {
  long val;     /* value in the weak table */
  int pos;      /* index in held_ids / r[R_KEYS] while held */
  char held;    /* the test holds the key */
  char in_tbl;  /* an entry is in the weak table */
  long drop_fm; /* full majors done when the key was dropped */
};

#define KCAP 1024
#define PAIRS_BITS 18

static struct kinfo *km;
static long held_ids[KCAP];
static int nheld;
static uint64_t *pairs; /* open addressing set of memoised (a, b) + 1 */

static int pairs_has(long a, long b, int add) {
  uint64_t key = ((uint64_t)a << 32 | (uint64_t)b) + 1;
  size_t mask = ((size_t)1 << PAIRS_BITS) - 1;
  size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - PAIRS_BITS));
  for (;; i = (i + 1) & mask) {
    if (pairs[i] == key)
      return 1;
    if (pairs[i] == 0) {
      if (add)
        pairs[i] = key;
      return 0;
    }
  }
}

static long memo_f(long a, long b) { return (a * 31 + b * 7) % 1000003; }

/* After a full major: every entry whose keys are all present must have
   held keys (and, in the weak table, the model's value); counts them. */
static long table_scan(int root, int nk, long *bad) {
  size_t b;
  long present = 0;
  for (b = 0; b < TNB; b++) {
    mgc_value *prev = &MGC_FIELD(r[root], b), c = *prev;
    while (c != MGC_UNIT) {
      mgc_value e = MGC_FIELD(c, 0), next = MGC_FIELD(c, 1), k, d;
      long ids[2];
      int i, dead = 0;
      for (i = 0; i < nk; i++) {
        if (!mgc_ephe_get_key(e, (size_t)i, &k))
          dead = 1;
        else
          ids[i] = key_id(k);
      }
      if (dead) {
        if (mgc_ephe_check_data(e) && (*bad)++ < 5)
          printf("table: data left with a dead key\n");
        mgc_modify(prev, next);
        c = next;
        continue;
      }
      present++;
      for (i = 0; i < nk; i++)
        if (!km[ids[i]].held && (*bad)++ < 5)
          printf("table: key %ld dropped before full major %ld still there\n",
                 ids[i], km[ids[i]].drop_fm);
      if (!mgc_ephe_get_data(e, &d)) {
        if ((*bad)++ < 5)
          printf("table: entry without data\n");
      } else if (nk == 1 &&
                 (!km[ids[0]].in_tbl || data_value(d) != km[ids[0]].val)) {
        if ((*bad)++ < 5)
          printf("table: key %ld: entry %s, value %ld, model %ld\n", ids[0],
                 km[ids[0]].in_tbl ? "in" : "not in", data_value(d),
                 km[ids[0]].val);
      } else if (nk == 2 && data_value(d) != memo_f(ids[0], ids[1])) {
        if ((*bad)++ < 5)
          printf("memo: wrong value for (%ld, %ld)\n", ids[0], ids[1]);
      }
      prev = &MGC_FIELD(c, 1);
      c = next;
    }
  }
  return present;
}

static void hold_new_key(long id) {
  mgc_value k = box(id);
  mgc_modify(&MGC_FIELD(r[R_KEYS], nheld), k);
  held_ids[nheld] = id;
  km[id].pos = nheld;
  km[id].held = 1;
  nheld++;
}

static void drop_key(long id, long fm) {
  int p = km[id].pos, last = nheld - 1;
  mgc_modify(&MGC_FIELD(r[R_KEYS], p), MGC_FIELD(r[R_KEYS], last));
  mgc_modify(&MGC_FIELD(r[R_KEYS], last), MGC_UNIT);
  held_ids[p] = held_ids[last];
  km[held_ids[p]].pos = p;
  km[id].held = 0;
  km[id].drop_fm = fm;
  nheld--;
}

static void test_tables(void) {
  long nops = test_scale(100000), op, nextid = 0, fm = 0, in_held = 0;
  long fails = 0, bad = 0, hits = 0, misses = 0, lookups_dropped = 0;
  long found_dropped = 0, ndropped = 0, dropped[256];
  long maxid = nops + KCAP + 1;
  km = calloc((size_t)maxid, sizeof *km);
  pairs = calloc((size_t)1 << PAIRS_BITS, sizeof *pairs);
  nheld = 0;
  r[R_KEYS] = mgc_alloc(KCAP, 0);
  r[R_TBL] = mgc_alloc(TNB, 0);
  r[R_MEMO] = mgc_alloc(TNB, 0);
  for (op = 0; op < nops; op++) {
    long x = (long)test_rand_below(1000), id, ids[2];
    mgc_value e, d;
    if (nheld < 16 && nextid < maxid - 1)
      x = 0;
    if (x < 250) { /* insert or replace */
      long val = (long)test_rand_below(1000000);
      if (nheld < KCAP && nextid < maxid - 1 &&
          (nheld < 16 || test_rand_below(2) == 0)) {
        id = nextid++;
        hold_new_key(id);
      } else {
        id = held_ids[test_rand_below((uint64_t)nheld)];
      }
      r[R_K0] = MGC_FIELD(r[R_KEYS], km[id].pos);
      switch (test_rand_below(3)) {
      case 0:
        r[R_D] = MGC_VAL_INT(val);
        break;
      case 1: /* the data references its key */
        d = mgc_alloc_small(2, 0);
        MGC_FIELD(d, 0) = MGC_VAL_INT(val);
        MGC_FIELD(d, 1) = r[R_K0];
        r[R_D] = d;
        break;
      default:
        d = mgc_alloc_small(2, 0);
        MGC_FIELD(d, 0) = MGC_VAL_INT(val);
        MGC_FIELD(d, 1) = MGC_UNIT;
        r[R_D] = d;
        break;
      }
      ids[0] = id;
      e = tfind(R_TBL, ids, 1, 0);
      if ((e != 0) != km[id].in_tbl && fails++ < 5)
        printf("op %ld: insert: key %ld %s\n", op, id,
               e ? "found, not in model" : "in model, not found");
      if (e)
        mgc_ephe_set_data(e, r[R_D]);
      else
        tadd(R_TBL, 1);
      if (!km[id].in_tbl)
        in_held++;
      km[id].in_tbl = 1;
      km[id].val = val;
      r[R_K0] = r[R_D] = MGC_UNIT;
    } else if (x < 450) { /* lookup of a held key */
      id = held_ids[test_rand_below((uint64_t)nheld)];
      ids[0] = id;
      e = tfind(R_TBL, ids, 1, 0);
      if (km[id].in_tbl) {
        if (!e || !mgc_ephe_get_data(e, &d) || data_value(d) != km[id].val ||
            key_of(e, 0) != MGC_FIELD(r[R_KEYS], km[id].pos)) {
          if (fails++ < 5)
            printf("op %ld: held key %ld: entry %s\n", op, id,
                   e ? "with a wrong value" : "lost");
        }
      } else if (e && fails++ < 5) {
        printf("op %ld: key %ld found, never inserted or removed\n", op, id);
      }
    } else if (x < 520) { /* lookup of a dropped key */
      if (ndropped == 0)
        continue;
      id =
          dropped[test_rand_below((uint64_t)(ndropped < 256 ? ndropped : 256))];
      ids[0] = id;
      lookups_dropped++;
      e = tfind(R_TBL, ids, 1, 0);
      if (e) {
        found_dropped++;
        if (!km[id].in_tbl || km[id].drop_fm != fm ||
            !mgc_ephe_get_data(e, &d) || data_value(d) != km[id].val) {
          if (fails++ < 5)
            printf("op %ld: dropped key %ld (at full major %ld, now %ld) "
                   "found\n",
                   op, id, km[id].drop_fm, fm);
        }
      }
    } else if (x < 600) { /* remove */
      id = held_ids[test_rand_below((uint64_t)nheld)];
      ids[0] = id;
      e = tfind(R_TBL, ids, 1, 1);
      if ((e != 0) != km[id].in_tbl && fails++ < 5)
        printf("op %ld: remove: key %ld %s\n", op, id,
               e ? "found, not in model" : "in model, not found");
      if (tfind(R_TBL, ids, 1, 0) && fails++ < 5)
        printf("op %ld: key %ld found after its removal\n", op, id);
      if (km[id].in_tbl)
        in_held--;
      km[id].in_tbl = 0;
    } else if (x < 700) { /* drop the strong reference */
      id = held_ids[test_rand_below((uint64_t)nheld)];
      if (km[id].in_tbl)
        in_held--;
      drop_key(id, fm);
      dropped[ndropped++ % 256] = id;
    } else if (x < 850) { /* memo on a pair of held keys */
      /* From a few positions, so that pairs come back. */
      uint64_t few = (uint64_t)(nheld < 24 ? nheld : 24);
      long a = held_ids[test_rand_below(few)];
      long b = held_ids[test_rand_below(few)];
      ids[0] = a;
      ids[1] = b;
      e = tfind(R_MEMO, ids, 2, 0);
      if (e) {
        hits++;
        if ((!mgc_ephe_get_data(e, &d) || data_value(d) != memo_f(a, b)) &&
            fails++ < 5)
          printf("op %ld: memo (%ld, %ld): wrong value\n", op, a, b);
      } else {
        misses++;
        if (pairs_has(a, b, 1) && fails++ < 5)
          printf("op %ld: memo (%ld, %ld) lost with both keys held\n", op, a,
                 b);
        r[R_K0] = MGC_FIELD(r[R_KEYS], km[a].pos);
        r[R_K1] = MGC_FIELD(r[R_KEYS], km[b].pos);
        d = mgc_alloc_small(2, 0);
        MGC_FIELD(d, 0) = MGC_VAL_INT(memo_f(a, b));
        MGC_FIELD(d, 1) = r[R_K0];
        r[R_D] = d;
        tadd(R_MEMO, 2);
        r[R_K0] = r[R_K1] = r[R_D] = MGC_UNIT;
      }
    } else if (x < 920) {
      mgc_minor_collection();
    } else if (x < 975) {
      mgc_major_slice(0);
    } else if (x < 997) {
      r[R_GARB] = mgc_alloc(1 + test_rand_below(400), 0);
    } else { /* full major, then the whole model */
      long n1, n2;
      mgc_full_major();
      fm++;
      n1 = table_scan(R_TBL, 1, &bad);
      n2 = table_scan(R_MEMO, 2, &bad);
      if (n1 != in_held && bad++ < 5)
        printf("op %ld: %ld entries alive, %ld held in the model\n", op, n1,
               in_held);
      (void)n2;
      if (fm % 16 == 1)
        CHECK_VERIFY("tables");
    }
  }
  mgc_full_major();
  fm++;
  {
    long n1 = table_scan(R_TBL, 1, &bad), n2 = table_scan(R_MEMO, 2, &bad);
    CHECK(n1 == in_held, "weak table: %ld entries alive, %ld in the model", n1,
          in_held);
    printf("tables: %ld ops, %ld keys, %ld full majors, %ld memo hits, "
           "%ld misses, %ld memo entries, %ld/%ld dropped keys found\n",
           nops, nextid, fm, hits, misses, n2, found_dropped, lookups_dropped);
  }
  CHECK(fails == 0,
        "weak/memo tables: %ld operations disagreed with the "
        "model",
        fails);
  CHECK(bad == 0, "weak/memo tables: %ld wrong entries after full majors", bad);
  free(km);
  free(pairs);
  km = NULL;
  pairs = NULL;
  clear_roots();
  CHECK_VERIFY("after tables");
}

/* Memoised Collatz (ephetest3.ml): the memo table's keys are boxes of n,
   held for n <= M, fresh (unheld) beyond. */
static long collatz_direct(long n) {
  long s = 0;
  while (n != 1) {
    n = n % 2 ? 3 * n + 1 : n / 2;
    s++;
  }
  return s;
}

static long collatz_memo(long n, long m, long *path, long *hits) {
  long len = 0, x = n, base, ids[1];
  mgc_value e, d;
  for (;;) {
    if (x == 1) {
      base = 0;
      break;
    }
    ids[0] = x;
    e = tfind(R_MEMO, ids, 1, 0);
    if (e && mgc_ephe_get_data(e, &d)) {
      base = MGC_INT_VAL(d);
      (*hits)++;
      break;
    }
    path[len++] = x;
    x = x % 2 ? 3 * x + 1 : x / 2;
  }
  while (len > 0) {
    x = path[--len];
    base++;
    r[R_K0] = x <= m ? MGC_FIELD(r[R_KEYS], x) : box(x);
    r[R_D] = MGC_VAL_INT(base);
    tadd(R_MEMO, 1);
  }
  r[R_K0] = r[R_D] = MGC_UNIT;
  return base;
}

static void test_collatz(void) {
  long m = test_scale(2000), n, hits = 0, wrong = 0, misses = 0, beyond = 0;
  long *path = malloc(1000 * sizeof *path);
  size_t b;
  if (m < 50)
    m = 50;
  r[R_KEYS] = mgc_alloc((size_t)m + 1, 0);
  r[R_MEMO] = mgc_alloc(TNB, 0);
  for (n = 1; n <= m; n++) {
    mgc_value k = box(n);
    mgc_modify(&MGC_FIELD(r[R_KEYS], n), k);
  }
  for (n = 1; n <= m; n++)
    if (collatz_memo(n, m, path, &hits) != collatz_direct(n))
      wrong++;
  CHECK(wrong == 0, "collatz: %ld wrong step counts (%ld memo hits)", wrong,
        hits);
  mgc_full_major();
  for (n = 2; n <= m; n++) {
    long ids[1];
    mgc_value d;
    mgc_value e;
    ids[0] = n;
    e = tfind(R_MEMO, ids, 1, 0);
    if (!e || !mgc_ephe_get_data(e, &d) || MGC_INT_VAL(d) != collatz_direct(n))
      misses++;
  }
  CHECK(misses == 0, "collatz: %ld held entries lost or wrong", misses);
  for (b = 0; b < TNB; b++) {
    mgc_value c;
    for (c = MGC_FIELD(r[R_MEMO], b); c != MGC_UNIT; c = MGC_FIELD(c, 1)) {
      mgc_value k;
      if (mgc_ephe_get_key(MGC_FIELD(c, 0), 0, &k) && key_id(k) > m)
        beyond++;
    }
  }
  CHECK(beyond == 0, "collatz: %ld entries with unheld keys after full major",
        beyond);
  free(path);
  clear_roots();
  CHECK_VERIFY("after collatz");
}

int main(int argc, char **argv) {
  int i, rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  mgc_set_fatal_handler(check_fatal_handler);
  test_seed(argc, argv, 20240607);
  for (i = 0; i < NR; i++) {
    r[i] = MGC_UNIT;
    mgc_register_global_root(&r[i]);
  }
  test_api();
  test_blit();
  test_matrix();
  test_immediates();
  test_self_reference();
  test_formulas();
  test_chains();
  test_ephe_keys();
  test_infix();
  test_forward_keys();
  test_get_keeps_alive();
  test_weaklifetime();
  test_weaktest();
  test_tables();
  test_collatz();
  CHECK_VERIFY("end");
  for (i = 0; i < NR; i++)
    mgc_remove_global_root(&r[i]);
  mgc_shutdown();
  return check_done();
}
