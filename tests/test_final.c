/* test_final: finalisers on one domain (OCaml's Gc.finalise and
 * Gc.finalise_last, as the header's "Finalisers" section describes them).
 *
 * Checked, each with the values the finalisers receive:
 *  - mgc_finalise: called exactly once, with the value (contents intact, a
 *    major block, the same address the program last held: the major heap
 *    does not move), after the value becomes unreachable, never before: a
 *    value held by a global root, a local root or another block through
 *    many minor and full major collections is never finalised.  Young and
 *    old values, and an infix pointer into a closure, which is given back
 *    as the same infix pointer.  ocaml's pr12001.ml: a young value held
 *    only by a local root across mgc_minor_collection is not finalised
 *    early.
 *  - mgc_finalise_last: called once with its data after the death; a young
 *    value dead at a minor collection is finalised by the time
 *    mgc_minor_collection returns (finaliser2.ml, test1).
 *  - Old values registered after the last minor collection and dropped
 *    before a mark start taken without one (explicit slices, nothing
 *    allocated): found dead by that cycle.
 *  - Order: values found dead together run in reverse registration order;
 *    a value's first-kind finalisers run before its last-kind ones; several
 *    finalisers on one value all run (finaliser2.ml, test2).
 *  - Resurrection: a first-kind finaliser that stores its value keeps it
 *    (contents intact through more full majors), it is not finalised
 *    again, and its last-kind finaliser runs only once it is really dead.
 *  - Finalisers that allocate, collect (test_finaliser_gc.ml: a full major
 *    inside the finaliser), register finalisers and call
 *    mgc_run_finalisers: never two at once (nesting depth stays 1).
 *  - Safepoints: finalisers run by the end of mgc_full_major, and an
 *    allocating loop with no explicit call runs them on its own.
 *  - finaliser.ml: first/last finalisers on major and minor values in a
 *    loop with churn, the number of calls as expected.
 *  - Custom blocks (OCaml's alloc_custom_mem rules): mem/max speeds up the
 *    major GC for major ones; young ones (mem <= n) request minor
 *    collections, with max = 0 relative to the minor heap; dead ones are
 *    finalised without any explicit collection.
 *  - mgc_domain_self() and mgc_domain_index() are 0 on the initial thread.
 *  - Manual mode (F=1, after mgc_shutdown and a second mgc_init):
 *    finalisers never run on their own, mgc_finalisers_pending says so,
 *    the pending hook is called once per batch on the domain's thread at a
 *    safepoint, mgc_run_finalisers runs them, mgc_shutdown runs none.
 *  - The heap verifier at several points.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "internal_check.h"
#include "lists.h"

#define NROOTS 48
static mgc_value r[NROOTS]; /* classic global roots */
#define R_RES 40            /* where resurrecting finalisers store */
#define R_ARR 41            /* finaliser.ml's array */
#define R_TUP 42            /* test_finaliser_gc.ml's tuple */
#define R_RING 16           /* 16 slots: the automatic test's ring */
#define RING 16

static void roots_register(void) {
  int i;
  for (i = 0; i < NROOTS; i++) {
    r[i] = MGC_UNIT;
    mgc_register_global_root(&r[i]);
  }
}

static void roots_remove(void) {
  int i;
  for (i = 0; i < NROOTS; i++)
    mgc_remove_global_root(&r[i]);
}

static void roots_clear(void) {
  int i;
  for (i = 0; i < NROOTS; i++)
    r[i] = MGC_UNIT;
}

/* ------------------------------------------------------------------------ */
/* Finaliser records                                                        */
/* ------------------------------------------------------------------------ */

/* Each finaliser's data is a record; the value it watches was built by
   make_val(cid, size) (size 0: the string "Hello world!"). */
#define MAXID 512
struct rec {
  long first;    /* first-kind calls */
  long last;     /* last-kind calls */
  long bad;      /* first-kind calls with a wrong value */
  mgc_value got; /* the value of the latest first-kind call */
  int cid;       /* the contents the value was built with */
  size_t size;
};
static struct rec recs[MAXID];
#define REC(id) ((void *)&recs[(id)])

static int rec_id(void *data) { return (int)((struct rec *)data - recs); }

/* Every call, in order. */
#define MAXEV 4096
static struct {
  char kind; /* 'F' first-kind, 'L' last-kind */
  int id;
} evs[MAXEV];
static int nev;

/* Nesting of finalisers: must never exceed 1. */
static int depth, max_depth;
static pthread_t main_thread;
static long wrong_thread;

static void enter(void) {
  depth++;
  if (depth > max_depth)
    max_depth = depth;
  if (!pthread_equal(pthread_self(), main_thread))
    wrong_thread++;
}

static void leave(void) { depth--; }

static void log_ev(char kind, int id) {
  if (nev < MAXEV) {
    evs[nev].kind = kind;
    evs[nev].id = id;
  }
  nev++;
}

static void reset_recs(void) {
  memset(recs, 0, sizeof recs);
  nev = 0;
}

/* A block (tag 0) of n fields: field i = id * 1000 + i. */
static mgc_value make_val(int id, size_t n) {
  mgc_value v;
  size_t i;
  recs[id].cid = id;
  recs[id].size = n;
  if (n <= MGC_MAX_YOUNG_WOSIZE) {
    v = mgc_alloc_small(n, 0);
    for (i = 0; i < n; i++)
      MGC_FIELD(v, i) = MGC_VAL_INT(id * 1000 + (long)i);
  } else {
    v = mgc_alloc(n, 0);
    for (i = 0; i < n; i++)
      mgc_modify(&MGC_FIELD(v, i), MGC_VAL_INT(id * 1000 + (long)i));
  }
  return v;
}

/* Record id watches the value built for record cid. */
static void alias(int id, int cid) {
  recs[id].cid = recs[cid].cid;
  recs[id].size = recs[cid].size;
}

#define HELLO "Hello world!"

static int val_ok(mgc_value v, const struct rec *rc) {
  size_t i;
  if (!MGC_IS_BLOCK(v))
    return 0;
  if (rc->size == 0)
    return MGC_TAG_VAL(v) == MGC_TAG_STRING &&
           mgc_string_length(v) == strlen(HELLO) &&
           strcmp(MGC_STRING_VAL(v), HELLO) == 0;
  if (MGC_TAG_VAL(v) != 0 || MGC_WOSIZE_VAL(v) != rc->size)
    return 0;
  for (i = 0; i < rc->size; i++)
    if (MGC_FIELD(v, i) != MGC_VAL_INT(rc->cid * 1000 + (long)i))
      return 0;
  return 1;
}

static void fin_first(mgc_value v, void *data) {
  struct rec *rc = data;
  enter();
  rc->first++;
  rc->got = v;
  if (!val_ok(v, rc) || mgc_is_young(v))
    rc->bad++;
  log_ev('F', rec_id(data));
  leave();
}

static void fin_last(void *data) {
  struct rec *rc = data;
  enter();
  rc->last++;
  log_ev('L', rec_id(data));
  leave();
}

/* Garbage: about `words` words of short-lived blocks. */

/* Many minor and full major collections, with allocation in between. */
static void cycle_a_lot(void) {
  int k;
  for (k = 0; k < 3; k++) {
    churn(test_scale(300000));
    mgc_minor_collection();
    mgc_major_slice(0);
    mgc_full_major();
  }
  mgc_major_collection();
  mgc_compact();
}

/* ------------------------------------------------------------------------ */
/* 1. mgc_finalise: once, with the value, after it becomes unreachable      */
/* ------------------------------------------------------------------------ */

/* A value held only by a local root of this frame through many
   collections. */
static void held_by_local(int id) {
  mgc_value got;
  MGC_PARAM0;
  MGC_LOCAL1(v);
  v = make_val(id, 4);
  mgc_finalise(v, fin_first, REC(id));
  cycle_a_lot();
  CHECK(recs[id].first == 0 && val_ok(v, &recs[id]),
        "value held by a local root not finalised (%ld calls)", recs[id].first);
  got = v;
  v = MGC_UNIT;
  mgc_full_major();
  CHECK(recs[id].first == 1 && recs[id].bad == 0 && recs[id].got == got,
        "value dropped from a local root finalised once with itself (%ld)",
        recs[id].first);
  MGC_DROP;
}

static void test_first_kind(void) {
  static const size_t sizes[] = {3, 200, 256, 300, 1000};
  size_t k;
  mgc_value got, c;
  int id;
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    id = 1 + (int)k;
    r[0] = make_val(id, sizes[k]);
    mgc_finalise(r[0], fin_first, REC(id));
    cycle_a_lot();
    CHECK(recs[id].first == 0 && val_ok(r[0], &recs[id]),
          "size %zu: held value never finalised (%ld calls)", sizes[k],
          recs[id].first);
    got = r[0];
    CHECK(!mgc_is_young(got), "size %zu: promoted", sizes[k]);
    r[0] = MGC_UNIT;
    mgc_full_major();
    CHECK(recs[id].first == 1,
          "size %zu: finalised once by the end of mgc_full_major (%ld)",
          sizes[k], recs[id].first);
    CHECK(recs[id].bad == 0 && recs[id].got == got,
          "size %zu: finaliser got the value, contents intact", sizes[k]);
    mgc_full_major();
    churn(test_scale(100000));
    mgc_full_major();
    CHECK(recs[id].first == 1, "size %zu: never called again (%ld)", sizes[k],
          recs[id].first);
  }

  /* Young, dropped at once: it survives its first minor collection and is
     finalised when the major GC finds it dead.  Marking is under way, so
     its copy is born MARKED and the minor collection's slice cannot find
     it dead in the cycle under way (before the mark start the copy is
     UNMARKED, and that slice may run the whole small cycle). */
  id = 10;
  start_marking();
  r[0] = make_val(id, 5);
  mgc_finalise(r[0], fin_first, REC(id));
  CHECK(mgc_is_young(r[0]), "registered while young");
  r[0] = MGC_UNIT;
  mgc_minor_collection();
  CHECK(recs[id].first == 0, "young first-kind value survives its minor");
  mgc_full_major();
  CHECK(recs[id].first == 1 && recs[id].bad == 0,
        "young value dropped at once: finalised once, contents intact "
        "(%ld, bad %ld)",
        recs[id].first, recs[id].bad);

  /* Held through another block's field. */
  id = 11;
  r[0] = make_val(id, 3);
  mgc_finalise(r[0], fin_first, REC(id));
  c = mgc_alloc_small(2, 0);
  MGC_FIELD(c, 0) = r[0];
  MGC_FIELD(c, 1) = MGC_UNIT;
  r[1] = c;
  r[0] = MGC_UNIT;
  cycle_a_lot();
  CHECK(recs[id].first == 0 && val_ok(MGC_FIELD(r[1], 0), &recs[id]),
        "value held through a field never finalised (%ld)", recs[id].first);
  got = MGC_FIELD(r[1], 0);
  mgc_modify(&MGC_FIELD(r[1], 0), MGC_UNIT);
  mgc_full_major();
  CHECK(recs[id].first == 1 && recs[id].got == got && recs[id].bad == 0,
        "value dropped from its holder finalised once (%ld)", recs[id].first);
  r[1] = MGC_UNIT;

  held_by_local(12);
  CHECK_VERIFY("after first-kind basics");
}

/* ocaml testsuite pr12001.ml: the string is held by a local root only,
   across the minor collection that promotes it; it must not be finalised
   then (nor its first-kind finaliser run), only after it is dropped. */
static mgc_value pr12001_foo(int id_last, int id_first) {
  MGC_PARAM0;
  MGC_LOCAL1(s);
  s = mgc_copy_string(HELLO);
  mgc_finalise_last(s, fin_last, REC(id_last));
  if (id_first >= 0)
    mgc_finalise(s, fin_first, REC(id_first));
  mgc_minor_collection();
  CHECK(recs[id_last].last == 0 && (id_first < 0 || recs[id_first].first == 0),
        "pr12001: not finalised by the minor collection (%ld, %ld)",
        recs[id_last].last, id_first < 0 ? 0L : recs[id_first].first);
  MGC_RETURN(s);
}

static void pr12001_bar(int id_last, int id_first) {
  MGC_PARAM0;
  MGC_LOCAL1(s);
  recs[id_last].size = 0;
  if (id_first >= 0)
    recs[id_first].size = 0;
  s = pr12001_foo(id_last, id_first);
  CHECK(val_ok(s, &recs[id_last]) && !mgc_is_young(s),
        "pr12001: the string is intact after the minor collection");
  churn(test_scale(50000));
  mgc_minor_collection();
  CHECK(val_ok(s, &recs[id_last]) && recs[id_last].last == 0,
        "pr12001: still alive and not finalised (%ld)", recs[id_last].last);
  s = MGC_UNIT;
  mgc_full_major();
  mgc_full_major();
  CHECK(recs[id_last].last == 1, "pr12001: finalised once when dropped (%ld)",
        recs[id_last].last);
  if (id_first >= 0)
    CHECK(recs[id_first].first == 1 && recs[id_first].bad == 0,
          "pr12001: first-kind finaliser once, string intact (%ld)",
          recs[id_first].first);
  MGC_DROP;
}

static void test_pr12001(void) {
  pr12001_bar(20, -1);
  pr12001_bar(21, 22);
}

/* Closures with an infix header (as tests/test_tags.c): 0 code_a,
   1 closinfo(2, 5), 2 infix header (offset 3), 3 code_b, 4 closinfo(1, 2),
   5.. ints. */
static mgc_value code_a(mgc_value x) { return x; }
static mgc_value code_b(mgc_value x) { return x + 2; }
#define CODE(f) ((mgc_value)(uintptr_t)(f))
#define CLOS_INFIX 3
#define CLOS_ENV 5

static mgc_value make_closure(int id, size_t n) {
  mgc_value c;
  size_t i;
  recs[id].cid = id;
  recs[id].size = n;
  if (n <= MGC_MAX_YOUNG_WOSIZE) {
    c = mgc_alloc_small(n, MGC_TAG_CLOSURE);
    MGC_FIELD(c, 0) = CODE(code_a);
    MGC_FIELD(c, 1) = MGC_CLOSINFO(2, CLOS_ENV);
    MGC_FIELD(c, 2) = (mgc_value)MGC_MAKE_HEADER(CLOS_INFIX, MGC_TAG_INFIX, 0);
    MGC_FIELD(c, 3) = CODE(code_b);
    MGC_FIELD(c, 4) = MGC_CLOSINFO(1, CLOS_ENV - CLOS_INFIX);
    for (i = CLOS_ENV; i < n; i++)
      MGC_FIELD(c, i) = MGC_VAL_INT(id * 1000 + (long)i);
  } else {
    c = mgc_alloc(n, MGC_TAG_CLOSURE);
    /* closinfo first: fields before startenv are never scanned. */
    mgc_modify(&MGC_FIELD(c, 1), MGC_CLOSINFO(2, CLOS_ENV));
    mgc_modify(&MGC_FIELD(c, 0), CODE(code_a));
    mgc_modify(&MGC_FIELD(c, 2),
               (mgc_value)MGC_MAKE_HEADER(CLOS_INFIX, MGC_TAG_INFIX, 0));
    mgc_modify(&MGC_FIELD(c, 3), CODE(code_b));
    mgc_modify(&MGC_FIELD(c, 4), MGC_CLOSINFO(1, CLOS_ENV - CLOS_INFIX));
    for (i = CLOS_ENV; i < n; i++)
      mgc_modify(&MGC_FIELD(c, i), MGC_VAL_INT(id * 1000 + (long)i));
  }
  return c;
}

static int infix_ok(mgc_value ip, const struct rec *rc) {
  mgc_value c;
  size_t i;
  if (!MGC_IS_BLOCK(ip) || MGC_TAG_VAL(ip) != MGC_TAG_INFIX ||
      MGC_WOSIZE_VAL(ip) != CLOS_INFIX)
    return 0;
  c = ip - CLOS_INFIX * (mgc_value)sizeof(mgc_value);
  if (MGC_TAG_VAL(c) != MGC_TAG_CLOSURE || MGC_WOSIZE_VAL(c) != rc->size ||
      MGC_FIELD(c, 0) != CODE(code_a) || MGC_FIELD(c, 3) != CODE(code_b) ||
      MGC_FIELD(c, 1) != MGC_CLOSINFO(2, CLOS_ENV) ||
      MGC_FIELD(c, 4) != MGC_CLOSINFO(1, CLOS_ENV - CLOS_INFIX))
    return 0;
  for (i = CLOS_ENV; i < rc->size; i++)
    if (MGC_FIELD(c, i) != MGC_VAL_INT(rc->cid * 1000 + (long)i))
      return 0;
  return 1;
}

static void fin_infix(mgc_value v, void *data) {
  struct rec *rc = data;
  enter();
  rc->first++;
  rc->got = v;
  if (!infix_ok(v, rc) || mgc_is_young(v))
    rc->bad++;
  log_ev('F', rec_id(data));
  leave();
}

static void test_infix(void) {
  static const size_t sizes[] = {8, 300};
  size_t k;
  for (k = 0; k < 2; k++) {
    int id = 30 + 2 * (int)k, idl = id + 1;
    mgc_value got;
    r[0] = make_closure(id, sizes[k]);
    r[1] = r[0] + CLOS_INFIX * (mgc_value)sizeof(mgc_value);
    r[0] = MGC_UNIT;
    mgc_finalise(r[1], fin_infix, REC(id));
    mgc_finalise_last(r[1], fin_last, REC(idl));
    cycle_a_lot();
    CHECK(recs[id].first == 0 && recs[idl].last == 0 &&
              infix_ok(r[1], &recs[id]),
          "closure %zu held by its infix pointer: not finalised", sizes[k]);
    got = r[1];
    r[1] = MGC_UNIT;
    mgc_full_major();
    CHECK(recs[id].first == 1 && recs[id].bad == 0,
          "closure %zu: finalised once through the infix pointer (%ld, "
          "bad %ld)",
          sizes[k], recs[id].first, recs[id].bad);
    CHECK(recs[id].got == got,
          "closure %zu: the same infix pointer given back (%#lx, want %#lx)",
          sizes[k], (unsigned long)recs[id].got, (unsigned long)got);
    mgc_full_major();
    mgc_full_major();
    CHECK(recs[idl].last == 1 && recs[id].first == 1,
          "closure %zu: last-kind finaliser once after (%ld)", sizes[k],
          recs[idl].last);
  }
  CHECK_VERIFY("after infix");
}

/* ------------------------------------------------------------------------ */
/* 2. mgc_finalise_last                                                     */
/* ------------------------------------------------------------------------ */

static void test_last_kind(void) {
  int id;
  mgc_stats s0, s1;

  /* finaliser2.ml test1: young, dead at a minor collection, finalised when
     mgc_minor_collection returns. */
  id = 50;
  r[0] = make_val(id, 2);
  mgc_finalise_last(r[0], fin_last, REC(id));
  CHECK(mgc_is_young(r[0]), "registered while young");
  r[0] = MGC_UNIT;
  CHECK(recs[id].last == 0, "not called before the minor collection");
  mgc_get_stats(&s0);
  mgc_minor_collection();
  mgc_get_stats(&s1);
  CHECK(recs[id].last == 1,
        "young dead value finalised by the end of mgc_minor_collection (%ld)",
        recs[id].last);
  CHECK(s1.major_collections == s0.major_collections,
        "without a major cycle ending (%llu -> %llu)",
        (unsigned long long)s0.major_collections,
        (unsigned long long)s1.major_collections);
  mgc_full_major();
  CHECK(recs[id].last == 1, "young last-kind: once (%ld)", recs[id].last);

  /* Promoted, then held; major from the start, then held. */
  {
    static const size_t sizes[] = {6, 400};
    size_t k;
    for (k = 0; k < 2; k++) {
      id = 51 + (int)k;
      r[0] = make_val(id, sizes[k]);
      mgc_finalise_last(r[0], fin_last, REC(id));
      cycle_a_lot();
      CHECK(recs[id].last == 0 && val_ok(r[0], &recs[id]),
            "size %zu: held last-kind value not finalised (%ld)", sizes[k],
            recs[id].last);
      r[0] = MGC_UNIT;
      mgc_full_major();
      CHECK(recs[id].last == 1, "size %zu: finalised once after death (%ld)",
            sizes[k], recs[id].last);
      mgc_full_major();
      CHECK(recs[id].last == 1, "size %zu: never again (%ld)", sizes[k],
            recs[id].last);
    }
  }
  CHECK_VERIFY("after last-kind basics");
}

/* ------------------------------------------------------------------------ */
/* 2b. Registered after the last minor collection, marked without one      */
/* ------------------------------------------------------------------------ */

/* Old values (small and large) registered after the last minor collection
   and dropped before a mark start that comes without a minor collection:
   explicit slices, nothing allocated since the last one, so the slice
   starts marking with the minor heaps empty as they are.  That cycle must
   find both dead (found by fuzz_ops: the entries were left as "registered
   since the last minor collection", skipped by the cycle's updates, their
   blocks swept, and read after being freed by the next cycle). */
static void test_mark_start_without_minor(void) {
  static const size_t sizes[] = {6, 400};
  size_t k;
  for (k = 0; k < 2; k++) {
    int idf = 70 + 2 * (int)k, idl = idf + 1;
    mgc_stats s0, s1;
    mgc_value got;
    r[0] = make_val(idf, sizes[k]);
    r[1] = make_val(idl, sizes[k]);
    /* Its finalisers (this file's) allocate nothing: the minor heap stays
       empty after it, and the cycle has not started marking. */
    mgc_full_major();
    CHECK(!mgc_is_young(r[0]) && !mgc_is_young(r[1]), "size %zu: old values",
          sizes[k]);
    CHECK(mgc_gc_phase() == PHASE_SWEEP_FIRST,
          "size %zu: before the mark start (phase %d)", sizes[k],
          (int)mgc_gc_phase());
    CHECK(self()->fast.young_ptr == self()->young_end,
          "size %zu: minor heap empty", sizes[k]);
    mgc_finalise(r[0], fin_first, REC(idf));
    mgc_finalise_last(r[1], fin_last, REC(idl));
    got = r[0];
    r[0] = r[1] = MGC_UNIT;
    mgc_get_stats(&s0);
    /* The smallest budget: the slice that starts marking stops there. */
    while (mgc_gc_phase() == PHASE_SWEEP_FIRST)
      mgc_major_slice(1);
    mgc_get_stats(&s1);
    CHECK(s1.minor_collections == s0.minor_collections &&
              mgc_gc_phase() != PHASE_SWEEP_FIRST,
          "size %zu: marking started without a minor collection (%llu -> "
          "%llu, phase %d)",
          sizes[k], (unsigned long long)s0.minor_collections,
          (unsigned long long)s1.minor_collections, (int)mgc_gc_phase());
    /* The cycle ends with a minor collection, after both updates. */
    while (s1.major_collections == s0.major_collections) {
      mgc_major_slice(1 << 20);
      mgc_get_stats(&s1);
    }
    mgc_run_finalisers();
    CHECK(recs[idf].first == 1 && recs[idf].bad == 0 && recs[idf].got == got,
          "size %zu: first-kind value found dead by that cycle (%ld calls)",
          sizes[k], recs[idf].first);
    CHECK(recs[idl].last == 1,
          "size %zu: last-kind value found dead by that cycle (%ld calls)",
          sizes[k], recs[idl].last);
    mgc_full_major();
    mgc_full_major();
    CHECK(recs[idf].first == 1 && recs[idl].last == 1,
          "size %zu: and never again (%ld, %ld)", sizes[k], recs[idf].first,
          recs[idl].last);
  }
  CHECK_VERIFY("after the mark start without a minor collection");
}

/* ------------------------------------------------------------------------ */
/* 3. Order                                                                 */
/* ------------------------------------------------------------------------ */

static int order_is(const char *what, const char *kinds, const int *ids,
                    int n) {
  int i, ok = nev == n;
  for (i = 0; ok && i < n; i++)
    ok = evs[i].kind == kinds[i] && evs[i].id == ids[i];
  if (!ok) {
    printf("  %s: got", what);
    for (i = 0; i < nev && i < MAXEV && i < 40; i++)
      printf(" %c%d", evs[i].kind, evs[i].id);
    printf("\n");
  }
  return ok;
}

#define NORD 10

static void test_order(void) {
  char kinds[NORD];
  int ids[NORD], i, all_young;

  /* First-kind, old values dying together. */
  for (i = 0; i < NORD; i++)
    r[i] = make_val(100 + i, 2);
  mgc_full_major();
  for (i = 0; i < NORD; i++)
    mgc_finalise(r[i], fin_first, REC(100 + i));
  for (i = 0; i < NORD; i++) {
    r[i] = MGC_UNIT;
    kinds[i] = 'F';
    ids[i] = 100 + NORD - 1 - i;
  }
  nev = 0;
  mgc_full_major();
  CHECK(order_is("first", kinds, ids, NORD),
        "first-kind: dying together, reverse registration order");

  /* Last-kind, old values. */
  for (i = 0; i < NORD; i++)
    r[i] = make_val(110 + i, 2);
  mgc_full_major();
  for (i = 0; i < NORD; i++)
    mgc_finalise_last(r[i], fin_last, REC(110 + i));
  for (i = 0; i < NORD; i++) {
    r[i] = MGC_UNIT;
    kinds[i] = 'L';
    ids[i] = 110 + NORD - 1 - i;
  }
  nev = 0;
  mgc_full_major();
  CHECK(order_is("last", kinds, ids, NORD),
        "last-kind: dying together, reverse registration order");

  /* Last-kind, young values dead at one minor collection (in torture mode
     all but the newest have been promoted already: they are found by the
     major GC, later, which keeps the order). */
  for (i = 0; i < NORD; i++)
    r[i] = make_val(120 + i, 2);
  all_young = 1;
  for (i = 0; i < NORD; i++) {
    all_young &= mgc_is_young(r[i]);
    mgc_finalise_last(r[i], fin_last, REC(120 + i));
  }
  for (i = 0; i < NORD; i++) {
    r[i] = MGC_UNIT;
    kinds[i] = 'L';
    ids[i] = 120 + NORD - 1 - i;
  }
  nev = 0;
  mgc_minor_collection();
  if (all_young)
    CHECK(order_is("young last", kinds, ids, NORD),
          "young last-kind: all run by the minor, reverse order");
  mgc_full_major();
  CHECK(order_is("young last", kinds, ids, NORD),
        "young last-kind: reverse registration order");

  /* Both kinds on one value, young and old: first-kind first. */
  for (i = 0; i < 2; i++) {
    int id = 130 + 2 * i;
    int want[2];
    r[0] = make_val(id, 3);
    if (i == 1)
      mgc_full_major();
    alias(id + 1, id);
    mgc_finalise_last(r[0], fin_last, REC(id + 1));
    mgc_finalise(r[0], fin_first, REC(id));
    r[0] = MGC_UNIT;
    nev = 0;
    mgc_full_major();
    mgc_full_major();
    kinds[0] = 'F';
    kinds[1] = 'L';
    want[0] = id;
    want[1] = id + 1;
    CHECK(order_is("both", kinds, want, 2) && recs[id].bad == 0,
          "%s value with both kinds: first-kind, then last-kind",
          i ? "old" : "young");
  }

  /* Several finalisers on one value: all run, each kind in reverse
     registration order, first-kind ones first. */
  {
    static const char want_k[5] = {'F', 'F', 'F', 'L', 'L'};
    static const int want_id[5] = {143, 141, 140, 144, 142};
    nev = 0;
    r[0] = make_val(140, 7);
    for (i = 141; i <= 144; i++)
      alias(i, 140);
    mgc_finalise(r[0], fin_first, REC(140));
    mgc_finalise(r[0], fin_first, REC(141));
    mgc_finalise_last(r[0], fin_last, REC(142));
    mgc_finalise(r[0], fin_first, REC(143));
    mgc_finalise_last(r[0], fin_last, REC(144));
    cycle_a_lot();
    CHECK(nev == 0, "held value with five finalisers: none ran (%d)", nev);
    r[0] = MGC_UNIT;
    mgc_full_major();
    mgc_full_major();
    CHECK(order_is("several", want_k, want_id, 5),
          "five finalisers on one value: all run, in order");
    CHECK(recs[140].bad + recs[141].bad + recs[143].bad == 0,
          "each first-kind finaliser got the value intact");
  }
  CHECK_VERIFY("after order");
}

/* ------------------------------------------------------------------------ */
/* 4. Resurrection                                                          */
/* ------------------------------------------------------------------------ */

static void fin_resurrect(mgc_value v, void *data) {
  struct rec *rc = data;
  enter();
  rc->first++;
  rc->got = v;
  if (!val_ok(v, rc))
    rc->bad++;
  r[R_RES] = v;
  log_ev('F', rec_id(data));
  leave();
}

static void test_resurrection(void) {
  int k;
  mgc_value got;
  for (k = 0; k < 2; k++) {
    int id = 150 + 2 * k, idl = id + 1;
    r[0] = make_val(id, k ? 300 : 5);
    alias(idl, id);
    mgc_finalise_last(r[0], fin_last, REC(idl));
    mgc_finalise(r[0], fin_resurrect, REC(id));
    mgc_full_major();
    got = r[0];
    r[0] = MGC_UNIT;
    mgc_full_major();
    CHECK(recs[id].first == 1 && r[R_RES] == got && recs[id].bad == 0,
          "resurrecting finaliser called once with the value (%ld)",
          recs[id].first);
    CHECK(recs[idl].last == 0, "resurrected: last-kind not run (%ld)",
          recs[idl].last);
    CHECK_VERIFY("resurrected");
    cycle_a_lot();
    CHECK(val_ok(r[R_RES], &recs[id]) && r[R_RES] == got,
          "resurrected value intact through full majors");
    CHECK(recs[id].first == 1 && recs[idl].last == 0,
          "resurrected value not finalised again (%ld, %ld)", recs[id].first,
          recs[idl].last);
    r[R_RES] = MGC_UNIT;
    mgc_full_major();
    mgc_full_major();
    mgc_full_major();
    CHECK(recs[id].first == 1, "dropped again: first-kind not again (%ld)",
          recs[id].first);
    CHECK(recs[idl].last == 1, "really dead: last-kind once (%ld)",
          recs[idl].last);
  }
  CHECK_VERIFY("after resurrection");
}

/* ------------------------------------------------------------------------ */
/* 5. Finalisers that allocate, collect, register, run finalisers           */
/* ------------------------------------------------------------------------ */

static long alloc_lists_ok, alloc_lists_bad;

static void fin_alloc(mgc_value v, void *data) {
  struct rec *rc = data;
  long n = test_scale(5000) < 200 ? 200 : test_scale(5000);
  int k;
  enter();
  {
    MGC_PARAM1(v);
    MGC_LOCAL1(l);
    for (k = 0; k < 3; k++) {
      l = make_list(n);
      if (list_ok(l, n))
        alloc_lists_ok++;
      else
        alloc_lists_bad++;
    }
    rc->first++;
    rc->got = v;
    if (!val_ok(v, rc))
      rc->bad++;
    log_ev('F', rec_id(data));
    MGC_DROP;
  }
  leave();
}

static void fin_collect(mgc_value v, void *data) {
  struct rec *rc = data;
  enter();
  {
    MGC_PARAM1(v);
    mgc_full_major();
    mgc_minor_collection();
    churn(test_scale(20000));
    mgc_major_slice(0);
    rc->first++;
    rc->got = v;
    if (!val_ok(v, rc))
      rc->bad++;
    log_ev('F', rec_id(data));
    MGC_DROP;
  }
  leave();
}

#define ID_REG_NEW 170
#define ID_REG_NEW_L 171
#define ID_REG_AGAIN 172

static void fin_register(mgc_value v, void *data) {
  struct rec *rc = data;
  enter();
  {
    MGC_PARAM1(v);
    MGC_LOCAL1(n);
    n = make_val(ID_REG_NEW, 3);
    alias(ID_REG_NEW_L, ID_REG_NEW);
    mgc_finalise(n, fin_first, REC(ID_REG_NEW));
    mgc_finalise_last(n, fin_last, REC(ID_REG_NEW_L));
    alias(ID_REG_AGAIN, rec_id(data));
    mgc_finalise(v, fin_first, REC(ID_REG_AGAIN));
    rc->first++;
    rc->got = v;
    if (!val_ok(v, rc))
      rc->bad++;
    log_ev('F', rec_id(data));
    MGC_DROP;
  }
  leave();
}

static void fin_nested(mgc_value v, void *data) {
  struct rec *rc = data;
  enter();
  {
    MGC_PARAM1(v);
    mgc_run_finalisers();
    churn(test_scale(10000));
    mgc_poll();
    mgc_run_finalisers();
    rc->first++;
    rc->got = v;
    if (!val_ok(v, rc))
      rc->bad++;
    log_ev('F', rec_id(data));
    MGC_DROP;
  }
  leave();
}

/* test_finaliser_gc.ml: a finaliser forcing a full major, run by an
   allocating loop, with a young string held meanwhile. */
static int gc_fin_pending;

static void fin_force_gc(mgc_value v, void *data) {
  (void)v;
  (void)data;
  enter();
  gc_fin_pending = 0;
  mgc_full_major();
  leave();
}

static void test_finaliser_gc(void) {
  long x, cap = 200000000L;
  mgc_value t;
  MGC_PARAM0;
  MGC_LOCAL1(s);
  gc_fin_pending = 1;
  t = mgc_alloc_small(1, 0);
  MGC_FIELD(t, 0) = MGC_VAL_INT(0);
  mgc_finalise(t, fin_force_gc, NULL);
  s = mgc_alloc_string(5);
  memset(MGC_STRING_VAL(s), 'b', 5);
  for (x = 0; x < cap && gc_fin_pending; x++) {
    int i;
    t = mgc_alloc_small(8, 0);
    for (i = 0; i < 8; i++)
      MGC_FIELD(t, i) = MGC_VAL_INT(x);
    r[R_TUP] = t;
  }
  CHECK(!gc_fin_pending,
        "test_finaliser_gc: the finaliser ran within the allocating loop "
        "(%ld iterations)",
        x);
  CHECK(mgc_string_length(s) == 5 && strcmp(MGC_STRING_VAL(s), "bbbbb") == 0,
        "test_finaliser_gc: the young string is intact");
  CHECK(MGC_FIELD(r[R_TUP], 7) == MGC_VAL_INT(x - 1),
        "test_finaliser_gc: the last tuple is intact");
  r[R_TUP] = MGC_UNIT;
  MGC_DROP;
}

static void test_busy_finalisers(void) {
  int i;
  max_depth = 0;
  /* Values 160..163: one finaliser of each busy kind, and two nested ones,
     all dying together. */
  r[0] = make_val(160, 4);
  mgc_finalise(r[0], fin_alloc, REC(160));
  r[1] = make_val(161, 4);
  mgc_finalise(r[1], fin_collect, REC(161));
  r[2] = make_val(162, 4);
  mgc_finalise(r[2], fin_register, REC(162));
  r[3] = make_val(163, 4);
  mgc_finalise(r[3], fin_nested, REC(163));
  r[4] = make_val(164, 4);
  mgc_finalise(r[4], fin_nested, REC(164));
  r[5] = make_val(165, 4);
  mgc_finalise(r[5], fin_alloc, REC(165));
  r[6] = make_val(166, 300);
  mgc_finalise(r[6], fin_collect, REC(166));
  for (i = 0; i < 7; i++)
    r[i] = MGC_UNIT;
  mgc_full_major();
  for (i = 160; i <= 166; i++)
    CHECK(recs[i].first == 1 && recs[i].bad == 0,
          "busy finaliser %d: once, value intact (%ld, bad %ld)", i,
          recs[i].first, recs[i].bad);
  CHECK(alloc_lists_ok == 6 && alloc_lists_bad == 0,
        "lists built inside finalisers intact (%ld ok, %ld bad)",
        alloc_lists_ok, alloc_lists_bad);
  CHECK(max_depth == 1, "finalisers never nested (depth %d)", max_depth);
  CHECK_VERIFY("after busy finalisers");
  mgc_full_major();
  mgc_full_major();
  CHECK(recs[ID_REG_NEW].first == 1 && recs[ID_REG_NEW].bad == 0,
        "finaliser registered inside a finaliser ran (%ld)",
        recs[ID_REG_NEW].first);
  CHECK(recs[ID_REG_NEW_L].last == 1,
        "last-kind registered inside a finaliser ran (%ld)",
        recs[ID_REG_NEW_L].last);
  CHECK(recs[ID_REG_AGAIN].first == 1 && recs[ID_REG_AGAIN].bad == 0,
        "finaliser registered again on its own value ran again (%ld)",
        recs[ID_REG_AGAIN].first);
  CHECK(recs[162].first == 1, "the original not again (%ld)", recs[162].first);
  test_finaliser_gc();
  CHECK(max_depth == 1, "finalisers never nested (depth %d)", max_depth);
  CHECK_VERIFY("after finaliser_gc");
}

/* ------------------------------------------------------------------------ */
/* 6. Running at safepoints without explicit calls                          */
/* ------------------------------------------------------------------------ */

#define NAUTO_MAX 3000
static int auto_calls[NAUTO_MAX];
static char auto_alive[NAUTO_MAX];
static long auto_total, auto_premature, auto_bad;

static void fin_auto_first(mgc_value v, void *data) {
  int i = (int)((int *)data - auto_calls);
  enter();
  auto_calls[i]++;
  auto_total++;
  if (auto_alive[i])
    auto_premature++;
  if (MGC_FIELD(v, 0) != MGC_VAL_INT(i) || MGC_FIELD(v, 1) != MGC_VAL_INT(-i))
    auto_bad++;
  leave();
}

static void fin_auto_last(void *data) {
  int i = (int)((int *)data - auto_calls);
  enter();
  auto_calls[i]++;
  auto_total++;
  if (auto_alive[i])
    auto_premature++;
  leave();
}

static void test_automatic(void) {
  long n = test_scale(NAUTO_MAX), i, spins, cap, dropped;
  mgc_stats s0, s1;
  if (n < 200)
    n = 200;
  memset(auto_calls, 0, sizeof auto_calls);
  memset(auto_alive, 0, sizeof auto_alive);
  auto_total = auto_premature = auto_bad = 0;
  mgc_get_stats(&s0);
  for (i = 0; i < n; i++) {
    mgc_value v = mgc_alloc_small(2, 0);
    int slot = (int)(i % RING);
    MGC_FIELD(v, 0) = MGC_VAL_INT(i);
    MGC_FIELD(v, 1) = MGC_VAL_INT(-i);
    if (i % 2 == 0)
      mgc_finalise(v, fin_auto_first, &auto_calls[i]);
    else
      mgc_finalise_last(v, fin_auto_last, &auto_calls[i]);
    if (i >= RING)
      auto_alive[i - RING] = 0;
    auto_alive[i] = 1;
    r[R_RING + slot] = v;
    churn(test_scale(2000));
  }
  dropped = n - RING;
  /* Allocate until every dropped value is finalised (no explicit call).
     Some of it in the major heap: the major GC's work is paced by
     promotion and major allocation, as OCaml's (and in torture mode the
     minor heap is almost empty at each collection). */
  cap = 100000000L / 4000;
  for (spins = 0; spins < cap && auto_total < dropped; spins++) {
    churn(test_scale(4000));
    r[R_TUP] = mgc_alloc(300, 0);
  }
  r[R_TUP] = MGC_UNIT;
  mgc_get_stats(&s1);
  CHECK(auto_total == dropped,
        "allocating loop ran the finalisers of every dropped value (%ld of "
        "%ld, after %ld more spins)",
        auto_total, dropped, spins);
  CHECK(s1.major_collections >= s0.major_collections + 2,
        "values died over several major cycles (%llu)",
        (unsigned long long)(s1.major_collections - s0.major_collections));
  CHECK(auto_premature == 0 && auto_bad == 0,
        "no finaliser of a held value ran, values intact (%ld, %ld)",
        auto_premature, auto_bad);
  for (i = 0; i < RING; i++)
    r[R_RING + i] = MGC_UNIT;
  for (i = n - RING; i < n; i++)
    auto_alive[i] = 0;
  mgc_full_major();
  mgc_full_major();
  {
    long once = 0;
    for (i = 0; i < n; i++)
      once += auto_calls[i] == 1;
    CHECK(auto_total == n && once == n,
          "after full majors every value finalised exactly once (%ld, %ld of "
          "%ld)",
          auto_total, once, n);
  }
  CHECK(max_depth == 1, "never nested (%d)", max_depth);
  CHECK_VERIFY("after automatic");
}

/* ------------------------------------------------------------------------ */
/* 8. ocaml's finaliser.ml and finaliser2.ml                                */
/* ------------------------------------------------------------------------ */

/* Counters per case of finaliser.ml: 0 first major, 1 last major, 2 first
   minor, 3 last minor, 4 first of first+last, 5 last of first+last. */
static long fm_calls[6], fm_bad;
static long fm_m;

static void fm_first(mgc_value v, void *data) {
  int kind = (int)((long *)data - fm_calls);
  size_t i, n = MGC_WOSIZE_VAL(v);
  intptr_t x = MGC_INT_VAL(MGC_FIELD(v, 0));
  enter();
  fm_calls[kind]++;
  /* The value is the block of iteration x: every field x; its case is
     x mod m. */
  for (i = 0; i < n; i++)
    if (MGC_FIELD(v, i) != MGC_VAL_INT(x))
      fm_bad++;
  if (kind == 2 ? n != 1 : (x % fm_m != (kind == 4 ? 4 : 0)))
    fm_bad++;
  leave();
}

static void fm_last(void *data) {
  int kind = (int)((long *)data - fm_calls);
  enter();
  fm_calls[kind]++;
  leave();
}

static void test_finaliser_ml(void) {
  long m = test_scale(1000), mp = 100, k, n, round;
  int i;
  if (m < 10)
    m = 10;
  fm_m = m;
  k = m * 10;
  memset(fm_calls, 0, sizeof fm_calls);
  fm_bad = 0;
  /* let r = Array.init m (fun _ -> Array.make m 1) */
  r[R_ARR] = mgc_alloc((size_t)m, 0);
  for (n = 0; n < m; n++) {
    mgc_value a = mgc_alloc((size_t)m, 0);
    for (i = 0; i < m; i++)
      mgc_modify(&MGC_FIELD(a, i), MGC_VAL_INT(1));
    mgc_modify(&MGC_FIELD(r[R_ARR], n), a);
  }
  for (round = 1; round <= 2; round++) {
    long expect_major, expect_minor;
    for (n = 0; n < k; n++) {
      mgc_value a = mgc_alloc((size_t)mp, 0), c;
      for (i = 0; i < mp; i++)
        MGC_FIELD(a, i) = MGC_VAL_INT(n);
      mgc_modify(&MGC_FIELD(r[R_ARR], n % m), a);
      switch (n % m) {
      case 0:
        mgc_finalise(MGC_FIELD(r[R_ARR], 0), fm_first, &fm_calls[0]);
        break;
      case 1:
        mgc_finalise_last(MGC_FIELD(r[R_ARR], 1), fm_last, &fm_calls[1]);
        break;
      case 2:
        c = mgc_alloc_small(1, 0);
        MGC_FIELD(c, 0) = MGC_VAL_INT(n);
        mgc_finalise(c, fm_first, &fm_calls[2]);
        break;
      case 3:
        c = mgc_alloc_small(1, 0);
        MGC_FIELD(c, 0) = MGC_VAL_INT(n);
        mgc_finalise_last(c, fm_last, &fm_calls[3]);
        break;
      case 4:
        mgc_finalise(MGC_FIELD(r[R_ARR], 4), fm_first, &fm_calls[4]);
        mgc_finalise_last(MGC_FIELD(r[R_ARR], 4), fm_last, &fm_calls[5]);
        break;
      default:
        break;
      }
      /* Churn: short-lived lists. */
      if (n % 7 == 0)
        churn(200);
    }
    mgc_full_major();
    mgc_full_major();
    mgc_full_major();
    /* Each case registered 10 times per round; the newest value of the
       major cases is still in r. */
    expect_major = round * 10 - 1;
    expect_minor = round * 10;
    CHECK(fm_calls[0] == expect_major && fm_calls[1] == expect_major &&
              fm_calls[2] == expect_minor && fm_calls[3] == expect_minor &&
              fm_calls[4] == expect_major && fm_calls[5] == expect_major,
          "finaliser.ml round %ld: calls %ld %ld %ld %ld %ld %ld (want %ld "
          "major, %ld minor)",
          round, fm_calls[0], fm_calls[1], fm_calls[2], fm_calls[3],
          fm_calls[4], fm_calls[5], expect_major, expect_minor);
    CHECK(fm_bad == 0, "finaliser.ml: values intact (%ld bad)", fm_bad);
    CHECK_VERIFY("finaliser.ml round");
  }
  r[R_ARR] = MGC_UNIT;
  mgc_full_major();
  mgc_full_major();
  CHECK(fm_calls[0] == 20 && fm_calls[1] == 20 && fm_calls[4] == 20 &&
            fm_calls[5] == 20,
        "finaliser.ml: the last values finalised once r is dropped (%ld %ld "
        "%ld %ld)",
        fm_calls[0], fm_calls[1], fm_calls[4], fm_calls[5]);
}

/* finaliser2.ml test2: r := 0; the second finaliser (registered last) runs
   first, sees 0 and sets 1; the first sees 1. */
static long f2_seen[2], f2_calls;

static void f2_first(mgc_value v, void *data) {
  enter();
  f2_seen[0] = MGC_INT_VAL(MGC_FIELD(v, 0));
  f2_calls = f2_calls * 10 + 1;
  (void)data;
  leave();
}

static void f2_second(mgc_value v, void *data) {
  enter();
  f2_seen[1] = MGC_INT_VAL(MGC_FIELD(v, 0));
  mgc_modify(&MGC_FIELD(v, 0), MGC_VAL_INT(1));
  f2_calls = f2_calls * 10 + 2;
  (void)data;
  leave();
}

static int f2_test1_flag;
static void f2_test1_fin(void *data) {
  (void)data;
  enter();
  f2_test1_flag = 1;
  leave();
}

static void test_finaliser2(void) {
  mgc_value v;
  /* test1 */
  {
    MGC_PARAM0;
    MGC_LOCAL1(x);
    x = mgc_alloc_small(1, 0);
    MGC_FIELD(x, 0) = MGC_VAL_INT(0);
    mgc_finalise_last(x, f2_test1_fin, NULL);
    x = MGC_UNIT;
    MGC_DROP;
  }
  mgc_minor_collection();
  CHECK(f2_test1_flag == 1, "finaliser2.ml test1: run after Gc.minor");
  /* test2 */
  v = mgc_alloc_small(1, 0);
  MGC_FIELD(v, 0) = MGC_VAL_INT(0);
  mgc_finalise(v, f2_first, NULL);
  mgc_finalise(v, f2_second, NULL);
  v = MGC_UNIT;
  (void)v;
  mgc_full_major();
  CHECK(f2_calls == 21 && f2_seen[1] == 0 && f2_seen[0] == 1,
        "finaliser2.ml test2: reverse order, each saw the other's effect "
        "(%ld, saw %ld %ld)",
        f2_calls, f2_seen[1], f2_seen[0]);
}

/* ------------------------------------------------------------------------ */
/* 9. Custom blocks                                                         */
/* ------------------------------------------------------------------------ */

/* A block's data: the magic number plus its run's number (0..7). */
#define CUSTOM_MAGIC 0x5eed5eed00ULL
static long custom_finalised[8], custom_bad;
static int custom_run_no;
static void custom_finalize(mgc_value v);
static const mgc_custom_ops custom_ops = {"test_final.custom", custom_finalize};

static void custom_finalize(mgc_value v) {
  uint64_t m;
  memcpy(&m, MGC_CUSTOM_DATA(v), sizeof m);
  if (MGC_CUSTOM_OPS(v) != &custom_ops || (m & ~(uint64_t)7) != CUSTOM_MAGIC)
    custom_bad++;
  else
    custom_finalised[m & 7]++;
}

/* 5000 custom blocks of mem 1 MiB, each dropped at once, no explicit
   collection: at least 90 % must have been finalised at the end (OCaml's
   alloc_custom_gen checks for urgent GC work after each allocation).  The
   count is not scaled: with mem/max = 1 %, the GC works in units of 100
   blocks.  With poll set, an mgc_poll (a safepoint, not a collection)
   follows each allocation. */
static void custom_run(const char *what, size_t max, int expect_young,
                       uint64_t min_minors, int poll) {
  long i, n = 5000, done;
  int young = 0, run = custom_run_no++ & 7;
  mgc_stats s0, s1;
  mgc_get_stats(&s0);
  for (i = 0; i < n; i++) {
    uint64_t m = CUSTOM_MAGIC | (uint64_t)run;
    mgc_value v = mgc_alloc_custom(&custom_ops, 8, (size_t)1 << 20, max);
    memcpy(MGC_CUSTOM_DATA(v), &m, sizeof m);
    if (i == 0)
      young = mgc_is_young(v);
    if (poll)
      mgc_poll();
  }
  mgc_get_stats(&s1);
  done = custom_finalised[run];
  CHECK(young == expect_young, "%s: blocks are %s", what,
        expect_young ? "young" : "in the major heap");
  CHECK(done * 10 >= n * 9,
        "%s: %ld of %ld finalised without an explicit collection", what, done,
        n);
  CHECK(custom_bad == 0, "%s: finalize got the block (%ld bad)", what,
        custom_bad);
  if (min_minors > 0)
    CHECK(s1.minor_collections - s0.minor_collections >= min_minors,
          "%s: minor collections requested (%llu, want >= %llu)", what,
          (unsigned long long)(s1.minor_collections - s0.minor_collections),
          (unsigned long long)min_minors);
}

/* ------------------------------------------------------------------------ */
/* 7. Manual mode                                                           */
/* ------------------------------------------------------------------------ */

static long hook_calls, hook_bad;

static void pending_hook(void) {
  hook_calls++;
  /* On the domain's thread, at a safepoint: not inside a finaliser. */
  if (!pthread_equal(pthread_self(), main_thread) || depth != 0)
    hook_bad++;
}

static void test_manual(void) {
  int i;
  long h;
  mgc_params p;
  mgc_get_params(&p);
  CHECK(p.manual_finalisers == 1, "manual_finalisers in force");
  mgc_set_finalisers_pending_hook(pending_hook);
  nev = 0;
  hook_calls = 0;

  /* One batch: a young last-kind value dead at a minor collection. */
  r[0] = make_val(200, 2);
  mgc_finalise_last(r[0], fin_last, REC(200));
  r[0] = MGC_UNIT;
  mgc_minor_collection();
  CHECK(mgc_finalisers_pending() == 1, "manual: pending after the minor");
  CHECK(hook_calls == 1, "manual: hook called once for the batch (%ld)",
        hook_calls);
  CHECK(recs[200].last == 0, "manual: not run by the minor collection");
  churn(test_scale(2000000));
  mgc_major_slice(0);
  mgc_full_major();
  mgc_compact();
  CHECK(recs[200].last == 0 && nev == 0, "manual: never run on its own (%ld)",
        recs[200].last);
  CHECK(hook_calls == 1, "manual: no new batch, no new hook call (%ld)",
        hook_calls);
  CHECK(mgc_finalisers_pending() == 1, "manual: still pending");
  mgc_run_finalisers();
  CHECK(recs[200].last == 1, "manual: mgc_run_finalisers runs it (%ld)",
        recs[200].last);
  CHECK(mgc_finalisers_pending() == 0, "manual: nothing pending after");

  /* Old values of both kinds dying together. */
  for (i = 0; i < 6; i++)
    r[i] = make_val(201 + i, 3);
  mgc_full_major();
  for (i = 0; i < 6; i++) {
    if (i % 2)
      mgc_finalise_last(r[i], fin_last, REC(201 + i));
    else
      mgc_finalise(r[i], fin_first, REC(201 + i));
  }
  h = hook_calls;
  for (i = 0; i < 6; i++)
    r[i] = MGC_UNIT;
  nev = 0;
  mgc_full_major();
  CHECK(mgc_finalisers_pending() == 1 && hook_calls > h,
        "manual: pending and hook called after the full major (%ld)",
        hook_calls - h);
  h = hook_calls;
  churn(test_scale(2000000));
  mgc_minor_collection();
  mgc_full_major();
  CHECK(nev == 0, "manual: none ran while allocating and collecting (%d)", nev);
  CHECK(hook_calls == h, "manual: no hook call without a new batch (%ld)",
        hook_calls - h);
  mgc_run_finalisers();
  CHECK(nev == 6, "manual: all six run by mgc_run_finalisers (%d)", nev);
  for (i = 0; i < 6; i++)
    CHECK(recs[201 + i].first + recs[201 + i].last == 1 &&
              recs[201 + i].bad == 0,
          "manual: value %d finalised once", i);
  CHECK(mgc_finalisers_pending() == 0, "manual: nothing pending");
  CHECK(hook_bad == 0, "manual: hook on the domain's thread, outside "
                       "finalisers");
  CHECK_VERIFY("manual");

  /* Pending at shutdown: none runs. */
  r[0] = make_val(210, 3);
  mgc_finalise(r[0], fin_first, REC(210));
  r[1] = make_val(211, 3);
  mgc_finalise_last(r[1], fin_last, REC(211));
  r[0] = r[1] = MGC_UNIT;
  mgc_full_major();
  mgc_full_major();
  CHECK(mgc_finalisers_pending() == 1, "manual: pending before shutdown");
  nev = 0;
}

/* ------------------------------------------------------------------------ */

static int init_with(int manual, size_t n_param) {
  mgc_params p;
  int rc;
  mgc_params_default(&p);
  p.manual_finalisers = manual;
  if (n_param)
    p.custom_minor_max_size = n_param;
  rc = mgc_init(&p);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return 0;
  mgc_set_fatal_handler(check_fatal_handler);
  roots_register();
  return 1;
}

static void finish(void) {
  roots_clear();
  roots_remove();
  mgc_shutdown();
}

int main(void) {
  main_thread = pthread_self();
  reset_recs();

  /* Default parameters. */
  if (!init_with(0, 0))
    return check_done();
  CHECK(mgc_domain_self() == 0 && mgc_domain_index() == 0,
        "initial thread: domain 0, slot 0 (%d, %d)", mgc_domain_self(),
        mgc_domain_index());
  CHECK_VERIFY("start");
  test_first_kind();
  test_pr12001();
  test_infix();
  test_last_kind();
  test_mark_start_without_minor();
  test_order();
  test_resurrection();
  test_busy_finalisers();
  test_automatic();
  test_finaliser_ml();
  test_finaliser2();
  custom_run("major custom blocks (max 100 MiB)", (size_t)100 << 20, 0, 0, 0);
  /* The same with a safepoint after each allocation. */
  custom_run("major custom blocks, polling", (size_t)100 << 20, 0, 0, 1);
  CHECK(max_depth == 1 && wrong_thread == 0,
        "finalisers: never nested, all on the domain's thread (%d, %ld)",
        max_depth, wrong_thread);
  CHECK_VERIFY("end of default run");
  finish();

  /* n = 2 MiB: the custom blocks are young. */
  if (!init_with(0, (size_t)2 << 20))
    return check_done();
  custom_run("young custom blocks (max 100 MiB)", (size_t)100 << 20, 1, 25, 0);
  custom_run("young custom blocks (max 0)", 0, 1, 1000, 0);
  CHECK_VERIFY("after custom");
  finish();

  /* Manual finalisers. */
  if (!init_with(1, 0))
    return check_done();
  test_manual();
  finish();
  CHECK(nev == 0 && recs[210].first == 0 && recs[211].last == 0,
        "manual: mgc_shutdown ran no finaliser (%d)", nev);
  return check_done();
}
