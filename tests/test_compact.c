/* test_compact: the moving compaction (mgc_compact, the O= and C=
 * parameters) on one domain.
 *
 * The contract is mgc.h's mgc_compact and DESIGN.md section 6.11: a full
 * major collection whose last cycle end moves the live blocks of the least
 * occupied pools of each size class into the free slots of the fullest
 * ones, updates every pointer to them (fields, local roots, classic and
 * generational global roots, the scan-roots hook, held fibers, stacks
 * inside continuations, ephemerons and weak arrays, finaliser tables) and
 * gives the emptied pools back to the OS.  Large blocks never move.
 *
 *   part 1: a fragmented heap of every kind of block (plain tags 0..9,
 *           Lazy/Forcing, closures with an infix block, strings, doubles,
 *           double arrays, custom blocks with a counting finaliser,
 *           Forward blocks, continuations holding fibers, reserved header
 *           bits) of every size class 1..127 fields, each kept block
 *           surrounded by nine dropped ones of the same kind and size, plus
 *           a bulk of major blocks of which a tenth is kept.  The kept
 *           tenth lives in a rooted array (small movable chunks), local
 *           roots, classic and generational global roots, the scan-roots
 *           hook, held fibers, fibers inside continuations and ephemeron
 *           data (keyed by other kept values); some also in a second root
 *           (sharing), a weak array and as ephemeron keys, some pointed to
 *           through an infix pointer, some with a finaliser.  heap_words
 *           must fall well below half, the large blocks (the array, the
 *           weak array) stay put; every kept value is checked exactly
 *           (contents, tag, size, reserved bits, infix offset, identity of
 *           every alias), finalisers and custom finalisers have run
 *           exactly once for the dead and never for the live.
 *   part 2: rounds of mutation (links between kept blocks, to young
 *           blocks, replacement of kept values by new ones), garbage,
 *           minor/major collections and compactions, checked against the
 *           shadow after each round.
 *   part 3: ephemerons and weak arrays across compactions: live keys keep
 *           their data (identity checked through weak arrays), a dead
 *           key's slot and data are emptied and a dead custom data block
 *           finalised exactly once, with and without a full major before.
 *   part 4: fibers and continuations: values only in suspended fibers (in a
 *           global root, in a field of a movable block, nested in another
 *           suspended fiber) and in embedder stacks survive compaction
 *           intact and updated; take after compaction works, once; held
 *           fiber values are updated (identity through an alias).
 *   part 5: parameters, independent of MGC_PARAMS (re-initialised with the
 *           environment cleared): C=1 compacts at every cycle end, C=3 at
 *           every third, O=50 compacts a sparse heap by itself, O=0 never
 *           does unless mgc_compact is called; the statistics.
 *   part 6: mgc_params_parse rejects C=x and O=-1 with MGC_EINVAL, leaving
 *           the parameters as they were.
 * Every value the test keeps across an allocation or a collection is in a
 * root or in a rooted block: blocks move.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "tally.h"

#define SEED 20250311u

static long scaled(long n, long min) {
  long v = test_scale(n);
  return v < min ? min : v;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void timed(const char *name, void (*f)(void)) {
  double t0 = now_s();
  f();
  printf("%s: %.2fs\n", name, now_s() - t0);
}

/* ------------------------------------------------------------------------ */
/* Roots                                                                    */
/* ------------------------------------------------------------------------ */

/* Classic global roots for the test's own structures. */
enum {
  R_ARR,    /* a large block of chunks (small blocks of CH fields) */
  R_TRASH,  /* a large block of trash chunks: garbage kept until promoted */
  R_NEW,    /* the value being stored */
  R_SET,    /* inside place_set */
  R_TMP,    /* scratch */
  R_TMP2,   /* scratch */
  R_CHILD,  /* scratch */
  R_WEAK,   /* weak array: kept values */
  R_WEAK2,  /* weak array: garbage */
  R_BULK,   /* the kept bulk blocks, a list */
  R_E3,     /* part 3: the ephemerons */
  R_K3,     /* part 3: the live keys */
  R_W3K,    /* part 3: weak array of keys */
  R_W3D,    /* part 3: weak array of data */
  R_F4,     /* part 4: aliases of fiber 0's values */
  R_C4A,    /* part 4: a continuation */
  R_C4B,    /* part 4: a continuation holding a nested one */
  R_HOLDER, /* part 4: a block holding a continuation */
  R_EK,     /* part 4: continuation of an embedder stack */
  R_SHRT,   /* major garbage kept until the trash is dropped */
  NR
};
static mgc_value r[NR];

#define NLOCAL 20
#define NGLOB 24
#define NGEN 24
#define NHOOK 24
#define NHELD 2
#define NCONT 4
#define FS 12 /* slots per held fiber / fiber in a continuation */
#define NEPH 12
#define CH 64    /* fields per array chunk (a small block: it moves) */
#define TCH 1024 /* fields per trash chunk (a large block) */
#define NW2 256  /* garbage weak slots */

static mgc_value gr[NGLOB];         /* classic global roots */
static mgc_value gen[NGEN];         /* generational global roots */
static mgc_value hook_slots[NHOOK]; /* reported by the scan-roots hook */
static mgc_value eph[NEPH];         /* classic roots: ephemerons */
static mgc_value conts[NCONT];      /* classic roots: continuations */
static mgc_fiber *held[NHELD];      /* held fibers */
static mgc_fiber *cfib[NCONT];      /* the fibers of conts[], while taken */
static mgc_value *local_slot[NLOCAL];
static long hook_calls;

static void scan_hook(mgc_scanning_action act, void *data) {
  int i;
  hook_calls++;
  for (i = 0; i < NHOOK; i++)
    act(data, hook_slots[i], &hook_slots[i]);
}

static uint64_t stat_compactions(void) {
  mgc_stats s;
  mgc_get_stats(&s);
  return s.compactions;
}

static int auto_compaction(void) {
  mgc_params p;
  mgc_get_params(&p);
  return p.compact_every != 0 || p.compact_overhead != 0;
}

/* ------------------------------------------------------------------------ */
/* Ids, finalisers and custom blocks                                        */
/* ------------------------------------------------------------------------ */

enum {
  V_PLAIN,
  V_LAZY,
  V_CLOSURE,
  V_STRING,
  V_DOUBLE,
  V_DARRAY,
  V_CUSTOM,
  V_FORWARD,
  V_CONT,
  NKINDS
};
static const char *const kind_name[NKINDS] = {
    "plain",        "lazy",   "closure", "string", "double",
    "double array", "custom", "forward", "cont"};

/* Registration states of finalisers and custom blocks, by id. */
#define ST_NONE 0
#define ST_LIVE 1  /* kept: never finalised */
#define ST_DEAD 2  /* dropped: finalised exactly once after a full major */
#define ST_TRASH 3 /* garbage still in the trash: not finalised yet */

static long next_id = 1, id_cap;
static int *fin_cnt, *cust_cnt;
static unsigned char *fin_state, *cust_state, *id_kind;
static long fin_bad, cust_bad;

static void *grow(void *p, size_t elt, long old, long cap) {
  char *q = realloc(p, (size_t)cap * elt);
  if (q == NULL)
    abort();
  memset(q + (size_t)old * elt, 0, (size_t)(cap - old) * elt);
  return q;
}

static long new_id(void) {
  if (next_id >= id_cap) {
    long cap = id_cap ? id_cap * 2 : 1 << 16;
    fin_cnt = grow(fin_cnt, sizeof *fin_cnt, id_cap, cap);
    cust_cnt = grow(cust_cnt, sizeof *cust_cnt, id_cap, cap);
    fin_state = grow(fin_state, 1, id_cap, cap);
    cust_state = grow(cust_state, 1, id_cap, cap);
    id_kind = grow(id_kind, 1, id_cap, cap);
    id_cap = cap;
  }
  return next_id++;
}

#define PAT(id, i) MGC_VAL_INT((long)(id)*1000 + (long)(i))
#define WORDB ((mgc_value)sizeof(mgc_value))
#define INFIX_OFF 3 /* the infix block starts at field 3 of a closure */
#define CLOS_ENV 5

/* "Code pointers": addresses outside the heap, never followed by the
   collector.  Word-aligned (as ocamlopt's code is), so that none reads as
   an infix header to the verifier. */
static const mgc_value code_area[4] = {0, 0, 0, 0};
#define CODE(i) ((mgc_value)(uintptr_t)&code_area[i])
#define code_a 0
#define code_b 2

static unsigned char str_byte(long id, size_t i) {
  return (unsigned char)('A' + (unsigned long)(id * 7 + (long)i) % 53);
}
static double dbl_of(long id) { return (double)id * 1.5 + 0.25; }
static double darr_of(long id, size_t i) {
  return (double)id + (double)i * 0.125;
}
static long cust_pat(long id, size_t j) { return id * 7919 + (long)j; }

/* The cheap check a finaliser makes on its value, by kind. */
static int quick_ok(mgc_value v, long id) {
  if (!MGC_IS_BLOCK(v) || v == 0)
    return 0;
  switch (id_kind[id]) {
  case V_PLAIN:
    return MGC_FIELD(v, 0) == MGC_VAL_INT(id);
  case V_CLOSURE:
    return MGC_TAG_VAL(v) == MGC_TAG_CLOSURE &&
           MGC_FIELD(v, CLOS_ENV) == MGC_VAL_INT(id);
  case V_STRING:
    return MGC_TAG_VAL(v) == MGC_TAG_STRING &&
           ((unsigned char *)v)[0] == str_byte(id, 0);
  case V_DOUBLE:
    return MGC_TAG_VAL(v) == MGC_TAG_DOUBLE && MGC_DOUBLE_VAL(v) == dbl_of(id);
  case V_DARRAY:
    return MGC_TAG_VAL(v) == MGC_TAG_DOUBLE_ARRAY &&
           MGC_DOUBLE_FIELD(v, 0) == darr_of(id, 0);
  case V_CUSTOM:
    return MGC_TAG_VAL(v) == MGC_TAG_CUSTOM &&
           ((long *)MGC_CUSTOM_DATA(v))[0] == id;
  default:
    return 0;
  }
}

static void fin_cb(mgc_value v, void *data) {
  long id = (long)(intptr_t)data;
  if (id <= 0 || id >= next_id) {
    fin_bad++;
    return;
  }
  fin_cnt[id]++;
  if (!quick_ok(v, id))
    fin_bad++;
}

static void cust_finalize(mgc_value v) {
  long *d = (long *)MGC_CUSTOM_DATA(v);
  size_t n = MGC_WOSIZE_VAL(v) - 1, j;
  long id = d[0];
  if (id <= 0 || id >= next_id) {
    cust_bad++;
    return;
  }
  cust_cnt[id]++;
  for (j = 1; j < n; j++)
    if (d[j] != cust_pat(id, j)) {
      cust_bad++;
      break;
    }
}

static const mgc_custom_ops cops = {"test_compact.counted", cust_finalize};

/* Finaliser and custom counts against their states.  after_full: a full
   major (or compaction) ran since the dead ones died. */
static void check_counts(const char *where, int after_full) {
  long id, live_fin = 0, dead_fin = 0, trash_fin = 0, stray = 0;
  long live_cust = 0, dead_cust = 0, trash_cust = 0;
  long n_live = 0, n_dead = 0;
  for (id = 1; id < next_id; id++) {
    switch (fin_state[id]) {
    case ST_LIVE:
      n_live++;
      live_fin += fin_cnt[id] != 0;
      break;
    case ST_DEAD:
      n_dead++;
      dead_fin += after_full ? fin_cnt[id] != 1 : fin_cnt[id] > 1;
      break;
    case ST_TRASH:
      trash_fin += fin_cnt[id] != 0;
      break;
    default:
      stray += fin_cnt[id] != 0;
    }
    switch (cust_state[id]) {
    case ST_LIVE:
      n_live++;
      live_cust += cust_cnt[id] != 0;
      break;
    case ST_DEAD:
      n_dead++;
      dead_cust += after_full ? cust_cnt[id] != 1 : cust_cnt[id] > 1;
      break;
    case ST_TRASH:
      trash_cust += cust_cnt[id] != 0;
      break;
    default:
      stray += cust_cnt[id] != 0;
    }
  }
  CHECK(live_fin == 0 && live_cust == 0,
        "%s: live values never finalised (%ld finalisers, %ld custom blocks "
        "ran; %ld live registrations)",
        where, live_fin, live_cust, n_live);
  CHECK(dead_fin == 0 && dead_cust == 0,
        "%s: dead values finalised exactly once (%ld finalisers, %ld custom "
        "blocks wrong; %ld dead registrations)",
        where, dead_fin, dead_cust, n_dead);
  CHECK(trash_fin == 0 && trash_cust == 0 && stray == 0,
        "%s: reachable garbage not finalised (%ld, %ld), no stray calls (%ld)",
        where, trash_fin, trash_cust, stray);
  CHECK(fin_bad == 0 && cust_bad == 0,
        "%s: finalisers saw intact values (%ld, %ld bad)", where, fin_bad,
        cust_bad);
}

/* The trash is dropped: its garbage is dead. */
static void trash_to_dead(void) {
  long id;
  for (id = 1; id < next_id; id++) {
    if (fin_state[id] == ST_TRASH)
      fin_state[id] = ST_DEAD;
    if (cust_state[id] == ST_TRASH)
      cust_state[id] = ST_DEAD;
  }
}

/* ------------------------------------------------------------------------ */
/* Places: where a kept value lives                                         */
/* ------------------------------------------------------------------------ */

enum { P_NONE, P_ARR, P_LOCAL, P_GLOB, P_GEN, P_HOOK, P_HELD, P_CONT, P_EPHE };
static const char *const place_name[] = {
    "none",      "array",      "local root",    "global root", "gen. root",
    "hook slot", "held fiber", "fiber in cont", "ephe data"};

struct place {
  int kind, idx;
};

static mgc_value place_get(struct place p) {
  mgc_value ch, d;
  switch (p.kind) {
  case P_ARR:
    ch = MGC_FIELD(r[R_ARR], p.idx / CH);
    return MGC_IS_BLOCK(ch) ? MGC_FIELD(ch, p.idx % CH) : 0;
  case P_LOCAL:
    return *local_slot[p.idx];
  case P_GLOB:
    return gr[p.idx];
  case P_GEN:
    return gen[p.idx];
  case P_HOOK:
    return hook_slots[p.idx];
  case P_HELD:
    return MGC_FIBER_SLOT(held[p.idx / FS], (size_t)(p.idx % FS));
  case P_CONT:
    if (cfib[p.idx / FS] == NULL)
      return 0;
    return MGC_FIBER_SLOT(cfib[p.idx / FS], (size_t)(p.idx % FS));
  case P_EPHE:
    return mgc_ephe_get_data(eph[p.idx], &d) ? d : 0;
  default:
    return 0;
  }
}

/* Stores v (rooted first: a chunk may have to be allocated). */
static void place_set(struct place p, mgc_value v) {
  r[R_SET] = v;
  if (p.kind == P_ARR && !MGC_IS_BLOCK(MGC_FIELD(r[R_ARR], p.idx / CH))) {
    mgc_value ch = mgc_alloc(CH, 0);
    mgc_modify(&MGC_FIELD(r[R_ARR], p.idx / CH), ch);
  }
  v = r[R_SET];
  r[R_SET] = MGC_UNIT;
  switch (p.kind) {
  case P_ARR:
    mgc_modify(&MGC_FIELD(MGC_FIELD(r[R_ARR], p.idx / CH), p.idx % CH), v);
    break;
  case P_LOCAL:
    *local_slot[p.idx] = v;
    break;
  case P_GLOB:
    gr[p.idx] = v;
    break;
  case P_GEN:
    mgc_modify_generational_global_root(&gen[p.idx], v);
    break;
  case P_HOOK:
    hook_slots[p.idx] = v;
    break;
  case P_HELD:
    MGC_FIBER_SLOT(held[p.idx / FS], (size_t)(p.idx % FS)) = v;
    break;
  case P_CONT:
    if (CHECK(cfib[p.idx / FS] != NULL, "place_set: fiber %d is held",
              p.idx / FS))
      MGC_FIBER_SLOT(cfib[p.idx / FS], (size_t)(p.idx % FS)) = v;
    break;
  case P_EPHE:
    mgc_ephe_set_data(eph[p.idx], v);
    break;
  default:
    CHECK(0, "place_set: bad place %d", p.kind);
  }
}

/* The fibers of conts[] taken back / suspended again. */
static void take_all(void) {
  int c;
  for (c = 0; c < NCONT; c++)
    if (cfib[c] == NULL) {
      cfib[c] = mgc_cont_take(conts[c]);
      CHECK(cfib[c] != NULL && mgc_fiber_depth(cfib[c]) == FS,
            "continuation %d taken back (depth %zu)", c,
            cfib[c] ? mgc_fiber_depth(cfib[c]) : (size_t)0);
      conts[c] = MGC_UNIT;
    }
}

static void suspend_all(void) {
  int c;
  for (c = 0; c < NCONT; c++)
    if (cfib[c] != NULL) {
      mgc_value k = mgc_cont_new(cfib[c]);
      conts[c] = k;
      cfib[c] = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Trash: garbage kept until it is promoted, then dropped all at once       */
/* ------------------------------------------------------------------------ */

static long trash_n, trash_cap;

static void trash_new(long cap) {
  long nch = (cap + TCH - 1) / TCH + 1;
  if (nch < 130)
    nch = 130; /* a large block: never moves */
  trash_cap = (nch - 1) * TCH;
  trash_n = 0;
  r[R_TRASH] = mgc_alloc((size_t)nch, 0);
}

/* Puts r[R_NEW] in the trash (dropped when full). */
static void trash_put(void) {
  long c = trash_n / TCH;
  if (!MGC_IS_BLOCK(r[R_TRASH]) || trash_n >= trash_cap)
    return;
  if (!MGC_IS_BLOCK(MGC_FIELD(r[R_TRASH], c))) {
    mgc_value t = mgc_alloc(TCH, 0);
    mgc_modify(&MGC_FIELD(r[R_TRASH], c), t);
  }
  mgc_modify(&MGC_FIELD(MGC_FIELD(r[R_TRASH], c), trash_n % TCH), r[R_NEW]);
  trash_n++;
}

static void trash_drop(void) {
  r[R_TRASH] = MGC_UNIT;
  r[R_SHRT] = MGC_UNIT;
  trash_n = trash_cap = 0;
  trash_to_dead();
}

/* ------------------------------------------------------------------------ */
/* Values                                                                   */
/* ------------------------------------------------------------------------ */

struct item {
  int kind, infix, final;
  unsigned tag, res;
  size_t size; /* wosize (strings: words) */
  size_t len;  /* strings: bytes */
  long id;
  struct place home, alias;
  int weak;   /* slot in r[R_WEAK], or -1 */
  int key_of; /* the ephemeron this value is the key of, or -1 */
  int link;   /* -1: none, -2: a child block, else an item */
  long child;
  uintptr_t addr;
};

static struct item *items;
static long nitems;
static long next_arr, arr_cap, nweak;

static int link_field(const struct item *it) {
  if ((it->kind == V_PLAIN || it->kind == V_LAZY) && it->size >= 2)
    return 1;
  if (it->kind == V_CLOSURE)
    return 6;
  return -1;
}

static mgc_value item_value(long i) { return place_get(items[i].home); }

/* The block itself (the closure, for an infix pointer). */
static mgc_value item_base(long i) {
  mgc_value v = item_value(i);
  return items[i].infix ? v - INFIX_OFF * WORDB : v;
}

/* A fiber holding [id, "cont<id>", [id, ~id]] in a new continuation. */
static mgc_value make_cont_value(long id) {
  char buf[40];
  mgc_fiber *f = mgc_fiber_new(0);
  mgc_value c;
  if (f == NULL)
    abort();
  snprintf(buf, sizeof buf, "cont%ld", id);
  mgc_fiber_push(f, MGC_VAL_INT(id));
  mgc_fiber_push(f, mgc_copy_string(buf));
  c = mgc_alloc_small(2, 0);
  MGC_FIELD(c, 0) = MGC_VAL_INT(id);
  MGC_FIELD(c, 1) = MGC_VAL_INT(~id);
  mgc_fiber_push(f, c);
  return mgc_cont_new(f);
}

/* Builds the value of it (its id, kind, size...) into r[R_NEW]; how picks
   one of the allocation paths. */
static void make_value(const struct item *it, int how) {
  long id = it->id;
  size_t s = it->size, i;
  mgc_value v;
  id_kind[id] = (unsigned char)it->kind;
  switch (it->kind) {
  case V_PLAIN:
  case V_LAZY:
    if (it->res == 0 && how && it->kind == V_PLAIN) {
      v = mgc_alloc_small(s, it->tag);
      MGC_FIELD(v, 0) = MGC_VAL_INT(id);
      for (i = 1; i < s; i++)
        MGC_FIELD(v, i) = PAT(id, i);
    } else {
      v = mgc_alloc_reserved(s, it->kind == V_LAZY ? MGC_TAG_LAZY : it->tag,
                             it->res);
      mgc_modify(&MGC_FIELD(v, 0), MGC_VAL_INT(id));
      for (i = 1; i < s; i++)
        mgc_modify(&MGC_FIELD(v, i), PAT(id, i));
      if (it->tag == MGC_TAG_FORCING)
        CHECK(mgc_obj_update_tag(v, MGC_TAG_LAZY, MGC_TAG_FORCING) == 1,
              "Lazy -> Forcing");
    }
    break;
  case V_CLOSURE:
    if (it->res == 0 && how) {
      v = mgc_alloc_small(s, MGC_TAG_CLOSURE);
      MGC_FIELD(v, 0) = CODE(code_a);
      MGC_FIELD(v, 1) = MGC_CLOSINFO(2, CLOS_ENV);
      MGC_FIELD(v, 2) = (mgc_value)MGC_MAKE_HEADER(INFIX_OFF, MGC_TAG_INFIX, 0);
      MGC_FIELD(v, 3) = CODE(code_b);
      MGC_FIELD(v, 4) = MGC_CLOSINFO(1, CLOS_ENV - INFIX_OFF);
      MGC_FIELD(v, 5) = MGC_VAL_INT(id);
      for (i = 6; i < s; i++)
        MGC_FIELD(v, i) = PAT(id, i);
    } else {
      v = mgc_alloc_reserved(s, MGC_TAG_CLOSURE, it->res);
      mgc_modify(&MGC_FIELD(v, 1), MGC_CLOSINFO(2, CLOS_ENV));
      mgc_modify(&MGC_FIELD(v, 0), CODE(code_a));
      mgc_modify(&MGC_FIELD(v, 2),
                 (mgc_value)MGC_MAKE_HEADER(INFIX_OFF, MGC_TAG_INFIX, 0));
      mgc_modify(&MGC_FIELD(v, 3), CODE(code_b));
      mgc_modify(&MGC_FIELD(v, 4), MGC_CLOSINFO(1, CLOS_ENV - INFIX_OFF));
      mgc_modify(&MGC_FIELD(v, 5), MGC_VAL_INT(id));
      for (i = 6; i < s; i++)
        mgc_modify(&MGC_FIELD(v, i), PAT(id, i));
    }
    if (it->infix)
      v += INFIX_OFF * WORDB;
    break;
  case V_STRING:
    if (how) {
      char buf[1100];
      for (i = 0; i < it->len; i++)
        buf[i] = (char)str_byte(id, i);
      buf[it->len] = 0;
      v = mgc_copy_string(buf);
    } else {
      v = mgc_alloc_string(it->len);
      for (i = 0; i < it->len; i++)
        ((unsigned char *)v)[i] = str_byte(id, i);
    }
    break;
  case V_DOUBLE:
    v = mgc_copy_double(dbl_of(id));
    break;
  case V_DARRAY:
    v = it->res ? mgc_alloc_reserved(s, MGC_TAG_DOUBLE_ARRAY, it->res)
                : mgc_alloc_double_array(s);
    for (i = 0; i < s; i++)
      mgc_store_double_field(v, i, darr_of(id, i));
    break;
  case V_CUSTOM: {
    long *d;
    /* Some with out-of-heap memory declared: allocated in the major heap. */
    v = mgc_alloc_custom(&cops, (s - 1) * sizeof(mgc_value), how ? 100000 : 0,
                         (size_t)1 << 40);
    d = (long *)MGC_CUSTOM_DATA(v);
    d[0] = id;
    for (i = 1; i < s - 1; i++)
      d[i] = cust_pat(id, i);
    break;
  }
  case V_FORWARD:
    r[R_TMP2] = mgc_copy_double(dbl_of(id));
    if (how) {
      v = mgc_alloc_shr(1, MGC_TAG_FORWARD);
      mgc_initialize(&MGC_FIELD(v, 0), r[R_TMP2]);
    } else {
      v = mgc_alloc_small(1, MGC_TAG_FORWARD);
      MGC_FIELD(v, 0) = r[R_TMP2];
    }
    r[R_TMP2] = MGC_UNIT;
    break;
  case V_CONT:
    v = make_cont_value(id);
    break;
  default:
    v = MGC_UNIT;
  }
  r[R_NEW] = v;
}

static int child_ok(mgc_value c, long cid) {
  return MGC_IS_BLOCK(c) && c != 0 && MGC_TAG_VAL(c) == 0 &&
         MGC_WOSIZE_VAL(c) == 2 && MGC_FIELD(c, 0) == MGC_VAL_INT(cid) &&
         MGC_FIELD(c, 1) == MGC_VAL_INT(~cid);
}

/* NULL when v is item i's value exactly, else what is wrong. */
static const char *value_problem(long i, mgc_value v) {
  const struct item *it = &items[i];
  long id = it->id;
  size_t s = it->size, k;
  int lf = link_field(it);
  mgc_value w;
  if (!MGC_IS_BLOCK(v) || v == 0)
    return "not a block";
  switch (it->kind) {
  case V_PLAIN:
  case V_LAZY:
  case V_CLOSURE:
    if (it->kind == V_CLOSURE) {
      if (it->infix) {
        if (MGC_TAG_VAL(v) != MGC_TAG_INFIX || MGC_WOSIZE_VAL(v) != INFIX_OFF)
          return "the infix pointer does not lead to the infix header";
        v -= INFIX_OFF * WORDB;
      }
      if (MGC_TAG_VAL(v) != MGC_TAG_CLOSURE)
        return "tag";
      if (MGC_FIELD(v, 0) != CODE(code_a) ||
          MGC_FIELD(v, 1) != MGC_CLOSINFO(2, CLOS_ENV) ||
          MGC_FIELD(v, 2) !=
              (mgc_value)MGC_MAKE_HEADER(INFIX_OFF, MGC_TAG_INFIX, 0) ||
          MGC_FIELD(v, 3) != CODE(code_b) ||
          MGC_FIELD(v, 4) != MGC_CLOSINFO(1, CLOS_ENV - INFIX_OFF))
        return "code pointers, closure info or infix header";
      if (MGC_FIELD(v, 5) != MGC_VAL_INT(id))
        return "id field";
    } else {
      if (MGC_TAG_VAL(v) != it->tag)
        return "tag";
      if (MGC_FIELD(v, 0) != MGC_VAL_INT(id))
        return "id field";
    }
    if (MGC_WOSIZE_VAL(v) != s)
      return "size";
    if (MGC_RESERVED_HD(MGC_HD_VAL(v)) != it->res)
      return "reserved bits";
    for (k = it->kind == V_CLOSURE ? 6 : 1; k < s; k++)
      if ((int)k != lf && MGC_FIELD(v, k) != PAT(id, k))
        return "fields";
    if (lf >= 0) {
      w = MGC_FIELD(v, lf);
      if (it->link == -1 && w != PAT(id, lf))
        return "unlinked field";
      if (it->link == -2 && !child_ok(w, it->child))
        return "link to a child block";
      if (it->link >= 0 && w != item_value(it->link))
        return "link to another kept value (identity)";
    }
    return NULL;
  case V_STRING:
    if (MGC_TAG_VAL(v) != MGC_TAG_STRING || MGC_WOSIZE_VAL(v) != s ||
        MGC_RESERVED_HD(MGC_HD_VAL(v)) != 0)
      return "string header";
    if (mgc_string_length(v) != it->len)
      return "string length";
    for (k = 0; k < it->len; k++)
      if (((unsigned char *)v)[k] != str_byte(id, k))
        return "string bytes";
    return NULL;
  case V_DOUBLE:
    if (MGC_TAG_VAL(v) != MGC_TAG_DOUBLE || MGC_WOSIZE_VAL(v) != 1)
      return "double header";
    return MGC_DOUBLE_VAL(v) == dbl_of(id) ? NULL : "double value";
  case V_DARRAY:
    if (MGC_TAG_VAL(v) != MGC_TAG_DOUBLE_ARRAY || MGC_WOSIZE_VAL(v) != s ||
        MGC_RESERVED_HD(MGC_HD_VAL(v)) != it->res)
      return "double array header";
    for (k = 0; k < s; k++)
      if (MGC_DOUBLE_FIELD(v, k) != darr_of(id, k))
        return "double array contents";
    return NULL;
  case V_CUSTOM: {
    const long *d = (const long *)MGC_CUSTOM_DATA(v);
    if (MGC_TAG_VAL(v) != MGC_TAG_CUSTOM || MGC_WOSIZE_VAL(v) != s)
      return "custom header";
    if (MGC_CUSTOM_OPS(v) != &cops)
      return "custom ops";
    if (d[0] != id)
      return "custom payload id";
    for (k = 1; k < s - 1; k++)
      if (d[k] != cust_pat(id, k))
        return "custom payload";
    return NULL;
  }
  case V_FORWARD:
    if (MGC_TAG_VAL(v) != MGC_TAG_FORWARD || MGC_WOSIZE_VAL(v) != 1)
      return "forward header";
    w = MGC_FIELD(v, 0);
    if (!MGC_IS_BLOCK(w) || w == 0 || MGC_TAG_VAL(w) != MGC_TAG_DOUBLE ||
        MGC_DOUBLE_VAL(w) != dbl_of(id))
      return "forward target";
    return NULL;
  default:
    return "kind";
  }
}

/* Stores r[R_NEW] as item i's value everywhere it goes. */
static void item_store(long i) {
  struct item *it = &items[i];
  mgc_value b;
  place_set(it->home, r[R_NEW]);
  if (it->alias.kind != P_NONE)
    place_set(it->alias, r[R_NEW]);
  if (it->weak >= 0)
    mgc_weak_set(r[R_WEAK], (size_t)it->weak, r[R_NEW]);
  if (it->key_of >= 0)
    mgc_ephe_set_key(eph[it->key_of], 0, r[R_NEW]);
  b = it->infix ? r[R_NEW] - INFIX_OFF * WORDB : r[R_NEW];
  if (it->final) {
    mgc_finalise(b, fin_cb, (void *)(intptr_t)it->id);
    fin_state[it->id] = ST_LIVE;
  }
  if (it->kind == V_CUSTOM)
    cust_state[it->id] = ST_LIVE;
  r[R_NEW] = MGC_UNIT;
}

static void set_link_item(long i, long j) {
  int lf = link_field(&items[i]);
  mgc_value b = item_base(i), w = item_value(j);
  mgc_modify(&MGC_FIELD(b, lf), w);
  items[i].link = (int)j;
}

static void set_link_child(long i) {
  long cid = new_id();
  int lf = link_field(&items[i]);
  mgc_value c = mgc_alloc_small(2, 0), b;
  MGC_FIELD(c, 0) = MGC_VAL_INT(cid);
  MGC_FIELD(c, 1) = MGC_VAL_INT(~cid);
  b = item_base(i);
  mgc_modify(&MGC_FIELD(b, lf), c);
  items[i].link = -2;
  items[i].child = cid;
}

static int linkable(long j) { return items[j].kind != V_CONT; }

/* The kind-dependent shape of item k of part 1. */
static void shape(struct item *it, long k) {
  long round = k / NKINDS;
  size_t s = 1 + (size_t)((k * 53) % 127);
  it->kind = (int)(k % NKINDS);
  it->tag = 0;
  it->res = 0;
  it->infix = 0;
  it->size = s;
  switch (it->kind) {
  case V_PLAIN:
    it->tag = (unsigned)(round % 10);
    it->res = round % 3 == 0 ? (unsigned)((k * 37) | 1) & 0xFF : 0;
    break;
  case V_LAZY:
    it->tag = round % 2 ? MGC_TAG_FORCING : MGC_TAG_LAZY;
    it->res = round % 3 == 1 ? (unsigned)((k * 41) | 2) & 0xFF : 0;
    break;
  case V_CLOSURE:
    it->size = 8 + (s - 1) % 120;
    it->tag = MGC_TAG_CLOSURE;
    it->res = round % 4 == 2 ? (unsigned)((k * 43) | 4) & 0xFF : 0;
    it->infix = round % 2 == 1;
    break;
  case V_STRING:
    it->len = s * 8 - 1 - (size_t)(k % 7);
    break;
  case V_DOUBLE:
  case V_FORWARD:
    it->size = 1;
    break;
  case V_DARRAY:
    it->res = round % 3 == 2 ? (unsigned)((k * 47) | 8) & 0xFF : 0;
    break;
  case V_CUSTOM:
    it->size = 2 + (s - 1) % 126;
    break;
  case V_CONT:
    it->size = 2;
    break;
  }
}

/* Garbage like item it: in the trash (so that it is promoted and dies in
   the major heap), now and then with a finaliser or in a weak slot.  (Not
   both: a first-kind finaliser keeps its value, its weak slots and its
   custom finalisation, until the cycle after it ran.) */
static long nweak2;
static void make_garbage(const struct item *it, long n) {
  struct item g = *it;
  long j;
  for (j = 0; j < n; j++) {
    g.id = new_id();
    g.infix = 0;
    make_value(&g, (int)(g.id & 1));
    if (g.kind == V_CUSTOM)
      cust_state[g.id] = ST_TRASH;
    if (g.id % 10 == 3 && g.kind != V_LAZY && g.kind != V_FORWARD &&
        g.kind != V_CONT && g.kind != V_CUSTOM) {
      mgc_finalise(r[R_NEW], fin_cb, (void *)(intptr_t)g.id);
      fin_state[g.id] = ST_TRASH;
    } else if (g.id % 13 == 5 && nweak2 < NW2 && MGC_IS_BLOCK(r[R_WEAK2]))
      mgc_weak_set(r[R_WEAK2], (size_t)nweak2++, r[R_NEW]);
    trash_put();
  }
  r[R_NEW] = MGC_UNIT;
}

/* ------------------------------------------------------------------------ */
/* Checking every kept value                                                */
/* ------------------------------------------------------------------------ */

#define MODE_CHECK 0
#define MODE_RECORD 1
#define MODE_COMPARE 2

static void verify_cont_item(struct tally *t, long i) {
  struct item *it = &items[i];
  mgc_fiber *f;
  mgc_value k, s, c;
  r[R_TMP] = place_get(it->home);
  k = r[R_TMP];
  EXPECT(t,
         MGC_IS_BLOCK(k) && k != 0 && MGC_TAG_VAL(k) == MGC_TAG_CONT &&
             MGC_WOSIZE_VAL(k) == 2,
         "item %ld (cont, id %ld, %s %d): a continuation", i, it->id,
         place_name[it->home.kind], it->home.idx);
  if (!MGC_IS_BLOCK(k) || k == 0 || MGC_TAG_VAL(k) != MGC_TAG_CONT)
    return;
  f = mgc_cont_take(k);
  EXPECT(t, f != NULL, "item %ld (cont, id %ld): take", i, it->id);
  if (f == NULL)
    return;
  EXPECT(t, mgc_fiber_depth(f) == 3, "item %ld: fiber depth %zu", i,
         mgc_fiber_depth(f));
  if (mgc_fiber_depth(f) == 3) {
    char buf[40];
    snprintf(buf, sizeof buf, "cont%ld", it->id);
    s = MGC_FIBER_SLOT(f, 1);
    c = MGC_FIBER_SLOT(f, 2);
    EXPECT(t, MGC_FIBER_SLOT(f, 0) == MGC_VAL_INT(it->id),
           "item %ld: fiber slot 0", i);
    EXPECT(t,
           MGC_IS_BLOCK(s) && MGC_TAG_VAL(s) == MGC_TAG_STRING &&
               strcmp(MGC_STRING_VAL(s), buf) == 0,
           "item %ld: fiber slot 1 (string %s)", i, buf);
    EXPECT(t, child_ok(c, it->id), "item %ld: fiber slot 2 (block)", i);
  }
  k = mgc_cont_new(f);
  place_set(it->home, k);
  EXPECT(t, mgc_cont_take(r[R_TMP]) == NULL,
         "item %ld: the old continuation is taken once only", i);
  r[R_TMP] = MGC_UNIT;
}

static void verify_item(struct tally *t, long i, int mode, long *moved) {
  struct item *it = &items[i];
  mgc_value v, w;
  const char *why;
  if (it->kind == V_CONT) {
    verify_cont_item(t, i);
    return;
  }
  v = place_get(it->home);
  why = value_problem(i, v);
  EXPECT(t, why == NULL,
         "item %ld (%s, id %ld, size %zu, tag %u, res %#x%s) in %s %d: %s", i,
         kind_name[it->kind], it->id, it->size, it->tag, it->res,
         it->infix ? ", infix pointer" : "", place_name[it->home.kind],
         it->home.idx, why ? why : "");
  if (it->alias.kind != P_NONE) {
    w = place_get(it->alias);
    EXPECT(t, w == v,
           "item %ld (%s): its %s %d and its %s %d hold the same block "
           "(%#lx, %#lx)",
           i, kind_name[it->kind], place_name[it->home.kind], it->home.idx,
           place_name[it->alias.kind], it->alias.idx, (unsigned long)v,
           (unsigned long)w);
  }
  if (it->weak >= 0) {
    w = 0;
    EXPECT(t, mgc_weak_get(r[R_WEAK], (size_t)it->weak, &w) && w == v,
           "item %ld (%s): weak slot %d holds it", i, kind_name[it->kind],
           it->weak);
  }
  if (it->key_of >= 0) {
    w = 0;
    EXPECT(t, mgc_ephe_get_key(eph[it->key_of], 0, &w) && w == v,
           "item %ld (%s): key of ephemeron %d", i, kind_name[it->kind],
           it->key_of);
  }
  if (mode == MODE_RECORD)
    it->addr = (uintptr_t)v;
  else if (mode == MODE_COMPARE && it->addr != (uintptr_t)v)
    (*moved)++;
}

static long bulk_n;

static void verify_bulk(struct tally *t) {
  long i, n = 0;
  mgc_value l = r[R_BULK];
  for (i = ((bulk_n - 1) / 10) * 10; i >= 0; i -= 10) {
    EXPECT(t,
           MGC_IS_BLOCK(l) && l != 0 && MGC_WOSIZE_VAL(l) == 3 &&
               MGC_FIELD(l, 0) == MGC_VAL_INT(i) &&
               MGC_FIELD(l, 2) == MGC_VAL_INT(~i),
           "bulk block %ld", i);
    if (!MGC_IS_BLOCK(l) || l == 0)
      return;
    l = MGC_FIELD(l, 1);
    n++;
  }
  EXPECT(t, l == MGC_UNIT, "bulk list ends after %ld blocks", n);
}

/* Checks every kept value (taking the continuations back meanwhile). */
static long verify_all(const char *where, int mode) {
  struct tally t = {0, 0};
  long i, moved = 0;
  int e;
  take_all();
  for (i = 0; i < nitems; i++)
    verify_item(&t, i, mode, &moved);
  for (e = 0; e < NEPH; e++)
    EXPECT(&t, mgc_ephe_num_keys(eph[e]) == 1, "ephemeron %d", e);
  suspend_all();
  if (bulk_n > 0)
    verify_bulk(&t);
  tally_report(&t, where);
  return moved;
}

/* ------------------------------------------------------------------------ */
/* Part 1: a fragmented heap of every kind, kept through every root         */
/* ------------------------------------------------------------------------ */

static struct place
    spec[NLOCAL + NGLOB + NGEN + NHOOK + NHELD * FS + NCONT * FS];
static int nspec, spec_used, ephe_used;

static void build_places(void) {
  int i, k = 0;
  for (i = 0; i < NLOCAL; i++)
    spec[k++] = (struct place){P_LOCAL, i};
  for (i = 0; i < NGLOB; i++)
    spec[k++] = (struct place){P_GLOB, i};
  for (i = 0; i < NGEN; i++)
    spec[k++] = (struct place){P_GEN, i};
  for (i = 0; i < NHOOK; i++)
    spec[k++] = (struct place){P_HOOK, i};
  for (i = 0; i < NHELD * FS; i++)
    spec[k++] = (struct place){P_HELD, i};
  for (i = 0; i < NCONT * FS; i++)
    spec[k++] = (struct place){P_CONT, i};
  nspec = k;
  for (i = k - 1; i > 0; i--) {
    int j = (int)test_rand_below((uint64_t)i + 1);
    struct place p = spec[i];
    spec[i] = spec[j];
    spec[j] = p;
  }
}

static struct place arr_place(void) {
  struct place p = {P_ARR, (int)next_arr++};
  if (next_arr > arr_cap)
    abort();
  return p;
}

/* An earlier kept value that can be an ephemeron's key. */
static long pick_key(long k) {
  long tries;
  for (tries = 0; tries < 1000; tries++) {
    long j = (long)test_rand_below((uint64_t)k);
    if (items[j].kind != V_CONT && items[j].home.kind != P_EPHE &&
        items[j].key_of < 0)
      return j;
  }
  return -1;
}

static void build_item(long k) {
  struct item *it = &items[k];
  long before = (long)test_rand_below(10), j;
  memset(it, 0, sizeof *it);
  shape(it, k);
  it->weak = -1;
  it->key_of = -1;
  it->link = -1;
  it->alias.kind = P_NONE;
  make_garbage(it, before);
  it->id = new_id();
  make_value(it, (int)(k / NKINDS) & 1);
  /* Where it lives. */
  if (k % 16 == 6 && k > 32 && ephe_used < NEPH && (j = pick_key(k)) >= 0) {
    it->home = (struct place){P_EPHE, ephe_used++};
    items[j].key_of = it->home.idx;
    mgc_ephe_set_key(eph[it->home.idx], 0, item_value(j));
  } else if (k % 2 == 1 && spec_used < nspec)
    it->home = spec[spec_used++];
  else
    it->home = arr_place();
  if (it->kind != V_CONT) {
    if (k % 6 == 5)
      it->alias = spec_used < nspec ? spec[spec_used++] : arr_place();
    if (k % 5 == 2 && (size_t)nweak < mgc_weak_length(r[R_WEAK]))
      it->weak = (int)nweak++;
    /* (Not custom blocks: see make_garbage.) */
    it->final = k % 7 == 4 && it->kind != V_LAZY && it->kind != V_FORWARD &&
                it->kind != V_CUSTOM;
  }
  nitems = k + 1;
  item_store(k);
  if (link_field(it) >= 0) {
    if (k % 3 == 0 && k > 0) {
      j = (long)test_rand_below((uint64_t)k + 1);
      if (linkable(j))
        set_link_item(k, j);
    } else if (k % 3 == 1)
      set_link_child(k);
  }
  make_garbage(it, 9 - before);
}

/* Major blocks of 3 fields, straight in the major heap (no collection),
   of which every tenth is kept in a list. */
static void build_bulk(long n) {
  long i;
  for (i = 0; i < n; i++) {
    mgc_value b = mgc_alloc_shr(3, 0);
    if (i % 10 == 0) {
      mgc_initialize(&MGC_FIELD(b, 0), MGC_VAL_INT(i));
      mgc_initialize(&MGC_FIELD(b, 1), r[R_BULK]);
      mgc_initialize(&MGC_FIELD(b, 2), MGC_VAL_INT(~i));
      r[R_BULK] = b;
    } else {
      mgc_initialize(&MGC_FIELD(b, 0), MGC_VAL_INT(-i));
    }
  }
  bulk_n = n;
}

static void part1(void) {
  long n = scaled(12000, 9 * 127), k, moved, i, full = 0;
  int c, e;
  mgc_stats sb, s0, s1;
  uint64_t hw_built;
  mgc_value w, large_arr, large_weak;
  size_t nw = (size_t)(n / 4 + 8 < 200 ? 200 : n / 4 + 8);

  items = calloc((size_t)n, sizeof *items);
  arr_cap = 2 * n + 64;
  r[R_ARR] =
      mgc_alloc((size_t)(arr_cap / CH + 1 < 130 ? 130 : arr_cap / CH + 1), 0);
  trash_new(n * 10 + 64);
  r[R_WEAK] = mgc_weak_create(nw); /* more than 127 words: large */
  r[R_WEAK2] = mgc_weak_create(NW2);
  for (i = 0; i < NHELD; i++) {
    held[i] = mgc_fiber_new(0);
    for (k = 0; k < FS; k++)
      mgc_fiber_push(held[i], MGC_UNIT);
  }
  for (c = 0; c < NCONT; c++) {
    cfib[c] = mgc_fiber_new(0);
    for (k = 0; k < FS; k++)
      mgc_fiber_push(cfib[c], MGC_UNIT);
  }
  for (e = 0; e < NEPH; e++)
    eph[e] = mgc_ephe_create(1);
  build_places();

  for (k = 0; k < n; k++)
    build_item(k);
  {
    long kinds[NKINDS] = {0}, sizes[128] = {0}, missing = 0;
    for (k = 0; k < n; k++) {
      kinds[items[k].kind]++;
      if (items[k].size < 128)
        sizes[items[k].size]++;
    }
    for (k = 0; k < NKINDS; k++)
      missing += kinds[k] == 0;
    for (k = 1; k < 128; k++)
      missing += sizes[k] == 0;
    CHECK(missing == 0,
          "part 1 holds every kind and every size 1..127 (%ld missing)",
          missing);
  }
  printf("part 1: %ld kept values (%d in special roots, %d ephemeron data, "
         "%ld weak), %ld ids\n",
         n, spec_used, ephe_used, nweak, next_id);
  suspend_all();
  build_bulk(scaled(60000, 60000));
  CHECK_VERIFY("part 1 built");
  /* Addresses recorded with every kept value old (a C=/O= run may move
     them in any collection from now on). */
  mgc_minor_collection();
  verify_all("part 1, built", MODE_RECORD);
  mgc_get_stats(&sb);
  hw_built = sb.heap_words;
  trash_drop();

  /* Everything dropped is dead after the full major. */
  mgc_full_major();
  check_counts("part 1, full major", 1);
  for (i = 0; i < nweak2; i++)
    full += mgc_weak_check(r[R_WEAK2], (size_t)i);
  CHECK(full == 0, "dropped values leave their weak slots (%ld of %ld full)",
        full, nweak2);
  verify_all("part 1, before the compaction", MODE_CHECK);

  mgc_get_stats(&s0);
  hook_calls = 0;
  large_arr = r[R_ARR];
  large_weak = r[R_WEAK];
  mgc_compact();
  mgc_get_stats(&s1);
  CHECK(!mgc_is_young(large_arr) && r[R_ARR] == large_arr &&
            r[R_WEAK] == large_weak,
        "large blocks (the array of %zu fields, the weak array of %zu "
        "slots) do not move",
        (size_t)MGC_WOSIZE_VAL(r[R_ARR]), mgc_weak_length(r[R_WEAK]));
  printf("part 1: heap words %llu built, %llu before compaction, %llu after; "
         "%llu words moved\n",
         (unsigned long long)hw_built, (unsigned long long)s0.heap_words,
         (unsigned long long)s1.heap_words,
         (unsigned long long)(s1.compacted_words - s0.compacted_words));
  CHECK(s1.compactions >= s0.compactions + 1, "compactions %llu -> %llu",
        (unsigned long long)s0.compactions, (unsigned long long)s1.compactions);
  /* (With C= or O= the full major may have compacted already.) */
  CHECK(s1.compacted_words > (auto_compaction() ? sb : s0).compacted_words,
        "compacted_words grew (%llu, %llu -> %llu)",
        (unsigned long long)sb.compacted_words,
        (unsigned long long)s0.compacted_words,
        (unsigned long long)s1.compacted_words);
  CHECK(s1.compaction_pause_max_ns > 0, "compaction_pause_max_ns %llu",
        (unsigned long long)s1.compaction_pause_max_ns);
  CHECK(hook_calls > 0, "the scan-roots hook was called (%ld)", hook_calls);
  CHECK(s1.heap_words * 10 < hw_built * 4,
        "heap_words falls well below half: %llu built, %llu after",
        (unsigned long long)hw_built, (unsigned long long)s1.heap_words);
  if (!auto_compaction())
    CHECK(s1.heap_words * 10 < s0.heap_words * 4,
          "mgc_compact shrank the heap well below half: %llu -> %llu",
          (unsigned long long)s0.heap_words, (unsigned long long)s1.heap_words);
  CHECK_VERIFY("part 1, after the compaction");
  moved = verify_all("part 1, after the compaction", MODE_COMPARE);
  printf("part 1: %ld of %ld kept values moved\n", moved, nitems);
  CHECK(moved > 0, "some kept values moved (%ld of %ld)", moved, nitems);
  check_counts("part 1, after the compaction", 1);
  /* The weak array and ephemerons themselves after the compaction. */
  w = 0;
  CHECK(mgc_weak_length(r[R_WEAK]) == nw &&
            !mgc_weak_get(r[R_WEAK], nw - 1, &w),
        "weak array intact (unused slot empty)");
}

/* ------------------------------------------------------------------------ */
/* Part 2: rounds of mutation and compaction                                */
/* ------------------------------------------------------------------------ */

static void replace_item(long i) {
  struct item *it = &items[i];
  long old = it->id, j;
  if (fin_state[old] == ST_LIVE)
    fin_state[old] = ST_DEAD;
  if (cust_state[old] == ST_LIVE)
    cust_state[old] = ST_DEAD;
  it->id = new_id();
  it->link = -1;
  make_value(it, (int)(it->id & 1));
  item_store(i);
  for (j = 0; j < nitems; j++)
    if (items[j].link == i)
      set_link_item(j, i);
}

static void young_garbage(long n) {
  long j;
  for (j = 0; j < n; j++) {
    size_t s = 1 + (size_t)test_rand_below(127), q;
    mgc_value v = mgc_alloc_small(s, (unsigned)test_rand_below(5));
    for (q = 0; q < s; q++)
      MGC_FIELD(v, q) = MGC_VAL_INT(-(long)q);
  }
}

static void part2(void) {
  long rounds = scaled(10, 3), ops = scaled(6000, 40), rd, o;
  for (rd = 0; rd < rounds; rd++) {
    char where[64];
    long moved;
    uint64_t c0;
    trash_new(ops * 4 + 64);
    take_all();
    for (o = 0; o < ops; o++) {
      long i = (long)test_rand_below((uint64_t)nitems);
      long j = (long)test_rand_below((uint64_t)nitems);
      switch (test_rand_below(10)) {
      case 0:
      case 1:
        if (link_field(&items[i]) >= 0 && linkable(j))
          set_link_item(i, j);
        break;
      case 2:
        if (link_field(&items[i]) >= 0)
          set_link_child(i);
        break;
      case 3:
      case 4:
        replace_item(i);
        break;
      case 5: {
        struct item g = items[i];
        make_garbage(&g, 3);
        break;
      }
      case 6:
        young_garbage(4);
        break;
      case 7:
        if (o % 8 == 0)
          mgc_minor_collection();
        break;
      case 8:
        if (o % 32 == 0)
          mgc_major_slice(0);
        break;
      default:
        if (o % 512 == 0)
          mgc_major_collection();
      }
    }
    suspend_all();
    snprintf(where, sizeof where, "part 2 round %ld, mutated", rd);
    verify_all(where, MODE_CHECK);
    trash_drop();
    if (rd % 2 == 1) {
      mgc_full_major();
      check_counts(where, 0);
    }
    snprintf(where, sizeof where, "part 2 round %ld, before compaction", rd);
    verify_all(where, MODE_RECORD);
    c0 = stat_compactions();
    mgc_compact();
    CHECK(stat_compactions() > c0, "round %ld: a compaction", rd);
    CHECK_VERIFY("part 2, after a compaction");
    snprintf(where, sizeof where, "part 2 round %ld, after compaction", rd);
    moved = verify_all(where, MODE_COMPARE);
    /* At most once: a dead value reachable from a dead value with a
       finaliser lives one cycle longer (the finaliser's value is kept
       until it has run); exactly once is checked by part2_cleanup. */
    check_counts(where, 0);
    printf("part 2 round %ld: %ld of %ld kept values moved\n", rd, moved,
           nitems);
  }
}

/* Drops every kept value: each finaliser and custom block then runs
   exactly once. */
static void part2_cleanup(void) {
  long i;
  int c;
  for (i = 0; i < nitems; i++) {
    if (fin_state[items[i].id] == ST_LIVE)
      fin_state[items[i].id] = ST_DEAD;
    if (cust_state[items[i].id] == ST_LIVE)
      cust_state[items[i].id] = ST_DEAD;
  }
  for (i = 0; i < NLOCAL; i++)
    *local_slot[i] = MGC_UNIT;
  for (i = 0; i < NGLOB; i++)
    gr[i] = MGC_UNIT;
  for (i = 0; i < NGEN; i++)
    mgc_modify_generational_global_root(&gen[i], MGC_UNIT);
  for (i = 0; i < NHOOK; i++)
    hook_slots[i] = MGC_UNIT;
  for (i = 0; i < NEPH; i++)
    eph[i] = MGC_UNIT;
  for (c = 0; c < NCONT; c++)
    conts[c] = MGC_UNIT;
  for (i = 0; i < NHELD; i++) {
    mgc_fiber_free(held[i]);
    held[i] = NULL;
  }
  r[R_ARR] = r[R_WEAK] = r[R_WEAK2] = r[R_BULK] = MGC_UNIT;
  bulk_n = 0;
  nitems = 0;
  mgc_compact();
  /* Values only reachable from finalised ones die one cycle later. */
  mgc_full_major();
  check_counts("all kept values dropped", 1);
  CHECK_VERIFY("after dropping everything");
  free(items);
  items = NULL;
}

/* ------------------------------------------------------------------------ */
/* Part 3: ephemerons and weak arrays across compaction                     */
/* ------------------------------------------------------------------------ */

#define NE3 48

static mgc_value box(long n) {
  mgc_value v = mgc_alloc_small(2, 0);
  MGC_FIELD(v, 0) = MGC_VAL_INT(n);
  MGC_FIELD(v, 1) = MGC_VAL_INT(~n);
  return v;
}

static mgc_value old_box(long n) {
  mgc_value v = mgc_alloc_shr(2, 0);
  mgc_initialize(&MGC_FIELD(v, 0), MGC_VAL_INT(n));
  mgc_initialize(&MGC_FIELD(v, 1), MGC_VAL_INT(~n));
  return v;
}

static int box_ok(mgc_value v, long n) {
  return v != 0 && v != MGC_EPHE_NONE && MGC_IS_BLOCK(v) &&
         MGC_TAG_VAL(v) == 0 && MGC_WOSIZE_VAL(v) == 2 &&
         MGC_FIELD(v, 0) == MGC_VAL_INT(n) &&
         MGC_FIELD(v, 1) == MGC_VAL_INT(~n);
}

/* A list of three blocks [id*10 + j, next] into r[R_TMP]. */
static void make_list3(long id) {
  int j;
  r[R_TMP] = MGC_UNIT;
  for (j = 2; j >= 0; j--) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(id * 10 + j);
    MGC_FIELD(c, 1) = r[R_TMP];
    r[R_TMP] = c;
  }
}

static int list3_ok(mgc_value l, long id) {
  int j;
  for (j = 0; j < 3; j++) {
    if (!MGC_IS_BLOCK(l) || l == 0 || MGC_WOSIZE_VAL(l) != 2 ||
        MGC_FIELD(l, 0) != MGC_VAL_INT(id * 10 + j))
      return 0;
    l = MGC_FIELD(l, 1);
  }
  return l == MGC_UNIT;
}

static long e3_kid[NE3][2], e3_did[NE3];
static int e3_nkeys[NE3], e3_fate[NE3], e3_dead[NE3][2];

static void e3_check(struct tally *t, const char *where) {
  int k, q;
  for (k = 0; k < NE3; k++) {
    mgc_value e = MGC_FIELD(r[R_E3], k), w, d;
    int alive = 1;
    EXPECT(t, MGC_IS_BLOCK(e) && mgc_ephe_num_keys(e) == (size_t)e3_nkeys[k],
           "%s: ephemeron %d", where, k);
    for (q = 0; q < e3_nkeys[k]; q++) {
      if (e3_dead[k][q]) {
        alive = 0;
        EXPECT(t, !mgc_ephe_check_key(e, (size_t)q),
               "%s: ephemeron %d: dead key %d emptied", where, k, q);
        EXPECT(t, !mgc_weak_check(r[R_W3K], (size_t)(2 * k + q)),
               "%s: weak slot of dead key %d/%d emptied", where, k, q);
      } else {
        mgc_value key = MGC_FIELD(r[R_K3], 2 * k + q);
        w = 0;
        EXPECT(t, box_ok(key, e3_kid[k][q]), "%s: live key %d/%d intact", where,
               k, q);
        EXPECT(t, mgc_ephe_get_key(e, (size_t)q, &w) && w == key,
               "%s: ephemeron %d: live key %d is the same block", where, k, q);
        w = 0;
        EXPECT(t, mgc_weak_get(r[R_W3K], (size_t)(2 * k + q), &w) && w == key,
               "%s: weak slot of live key %d/%d is the same block", where, k,
               q);
      }
    }
    if (alive) {
      d = 0;
      EXPECT(t, mgc_ephe_get_data(e, &d), "%s: ephemeron %d keeps its data",
             where, k);
      if (d != 0) {
        if (k % 3 == 0)
          EXPECT(t,
                 MGC_IS_BLOCK(d) && MGC_TAG_VAL(d) == MGC_TAG_CUSTOM &&
                     ((long *)MGC_CUSTOM_DATA(d))[0] == e3_did[k],
                 "%s: ephemeron %d: custom data intact", where, k);
        else
          EXPECT(t, list3_ok(d, e3_did[k]), "%s: ephemeron %d: data intact",
                 where, k);
        w = 0;
        EXPECT(t, mgc_weak_get(r[R_W3D], (size_t)k, &w) && w == d,
               "%s: ephemeron %d: data is the block in the weak array", where,
               k);
      }
    } else {
      EXPECT(t, !mgc_ephe_check_data(e),
             "%s: ephemeron %d with a dead key: data emptied", where, k);
      EXPECT(t, !mgc_weak_check(r[R_W3D], (size_t)k),
             "%s: ephemeron %d with a dead key: the data died", where, k);
    }
  }
}

/* Drops key q of ephemeron k (its data dies with it). */
static void e3_drop(int k, int q) {
  mgc_modify(&MGC_FIELD(r[R_K3], 2 * k + q), MGC_UNIT);
  e3_dead[k][q] = 1;
  if (k % 3 == 0 && cust_state[e3_did[k]] == ST_LIVE)
    cust_state[e3_did[k]] = ST_DEAD;
}

/* Garbage straight in the major heap, n blocks of wosize fields. */
/* n major blocks of wosize fields, kept (in a holder chained from
   r[R_SHRT]) until trash_drop: a cycle that ends before then cannot free
   them, whenever it took its snapshot.  Never collects (only
   mgc_alloc_shr), so a caller's unrooted major block stays valid. */
static void shr_garbage(long n, size_t wosize) {
  long i;
  mgc_value h = mgc_alloc_shr((size_t)n + 1, 0);
  for (i = 0; i < n; i++)
    mgc_initialize(&MGC_FIELD(h, i), mgc_alloc_shr(wosize, 0));
  mgc_initialize(&MGC_FIELD(h, n), r[R_SHRT]);
  r[R_SHRT] = h;
}

static void part3(void) {
  struct tally t = {0, 0};
  int k, q;
  long moved_keys = 0, moved_ephes = 0, moved_data = 0;
  uintptr_t addr[NE3], eaddr[NE3], daddr[NE3];
  struct item g;
  memset(&g, 0, sizeof g);
  g.kind = V_PLAIN;
  trash_new(NE3 * 40);
  r[R_E3] = mgc_alloc(NE3, 0);         /* small: moves */
  r[R_K3] = mgc_alloc(2 * NE3, 0);     /* small: moves */
  r[R_W3K] = mgc_weak_create(2 * NE3); /* 98 words: moves */
  r[R_W3D] = mgc_weak_create(NE3);
  for (k = 0; k < NE3; k++) {
    mgc_value e;
    g.size = 2 + (size_t)(k % 5);
    make_garbage(&g, 8);
    e3_nkeys[k] = k % 4 == 3 ? 2 : 1;
    e3_fate[k] = k % 5;
    e3_dead[k][0] = e3_dead[k][1] = 0;
    /* Ephemerons and keys interleaved with major garbage of their size
       classes: spread over sparse pools, they move. */
    shr_garbage(40, 2 + (size_t)e3_nkeys[k]);
    e = mgc_ephe_create((size_t)e3_nkeys[k]);
    mgc_modify(&MGC_FIELD(r[R_E3], k), e);
    for (q = 0; q < e3_nkeys[k]; q++) {
      mgc_value key;
      e3_kid[k][q] = new_id();
      shr_garbage(40, 2);
      key = (k + q) % 2 ? old_box(e3_kid[k][q]) : box(e3_kid[k][q]);
      mgc_modify(&MGC_FIELD(r[R_K3], 2 * k + q), key);
      make_garbage(&g, 4);
    }
    e3_did[k] = new_id();
    if (k % 3 == 0) {
      struct item c;
      memset(&c, 0, sizeof c);
      c.kind = V_CUSTOM;
      c.size = 2 + (size_t)k;
      c.id = e3_did[k];
      make_value(&c, 0);
      cust_state[c.id] = ST_LIVE;
      r[R_TMP] = r[R_NEW];
      r[R_NEW] = MGC_UNIT;
    } else
      make_list3(e3_did[k]);
    e = MGC_FIELD(r[R_E3], k);
    for (q = 0; q < e3_nkeys[k]; q++) {
      mgc_ephe_set_key(e, (size_t)q, MGC_FIELD(r[R_K3], 2 * k + q));
      mgc_weak_set(r[R_W3K], (size_t)(2 * k + q),
                   MGC_FIELD(r[R_K3], 2 * k + q));
    }
    mgc_ephe_set_data(e, r[R_TMP]);
    mgc_weak_set(r[R_W3D], (size_t)k, r[R_TMP]);
    r[R_TMP] = MGC_UNIT;
    make_garbage(&g, 8);
  }
  mgc_minor_collection();
  for (k = 0; k < NE3; k++) {
    mgc_value d = 0;
    addr[k] = (uintptr_t)MGC_FIELD(r[R_K3], 2 * k);
    eaddr[k] = (uintptr_t)MGC_FIELD(r[R_E3], k);
    daddr[k] = mgc_ephe_get_data(MGC_FIELD(r[R_E3], k), &d) ? (uintptr_t)d : 0;
  }
  trash_drop();
  e3_check(&t, "part 3, built");

  /* Round 1: fate 1 loses key 0 before a full major, fate 2 its last key
     just before the compaction. */
  for (k = 0; k < NE3; k++)
    if (e3_fate[k] == 1)
      e3_drop(k, 0);
  mgc_full_major();
  for (k = 0; k < NE3; k++)
    if (e3_fate[k] == 2)
      e3_drop(k, e3_nkeys[k] - 1);
  mgc_compact();
  CHECK_VERIFY("part 3, first compaction");
  e3_check(&t, "part 3, first compaction");
  check_counts("part 3, first compaction", 1);
  for (k = 0; k < NE3; k++) {
    mgc_value d = 0;
    moved_keys +=
        !e3_dead[k][0] && addr[k] != (uintptr_t)MGC_FIELD(r[R_K3], 2 * k);
    moved_ephes += eaddr[k] != (uintptr_t)MGC_FIELD(r[R_E3], k);
    moved_data += mgc_ephe_get_data(MGC_FIELD(r[R_E3], k), &d) &&
                  daddr[k] != (uintptr_t)d;
  }
  printf("part 3: moved %ld keys, %ld ephemerons, %ld data\n", moved_keys,
         moved_ephes, moved_data);
  CHECK(moved_keys > 0 && moved_ephes > 0,
        "ephemerons and keys moved (%ld, %ld)", moved_ephes, moved_keys);

  /* Round 2: fate 3 loses its keys, more garbage, another compaction. */
  trash_new(NE3 * 10);
  for (k = 0; k < NE3; k++) {
    g.size = 2 + (size_t)(k % 5);
    make_garbage(&g, 4);
    if (e3_fate[k] == 3)
      for (q = 0; q < e3_nkeys[k]; q++)
        e3_drop(k, q);
  }
  trash_drop();
  mgc_compact();
  CHECK_VERIFY("part 3, second compaction");
  e3_check(&t, "part 3, second compaction");
  check_counts("part 3, second compaction", 1);
  tally_report(&t, "part 3: ephemerons and weak arrays across compaction");

  for (k = 0; k < NE3; k++)
    if (k % 3 == 0 && cust_state[e3_did[k]] == ST_LIVE)
      cust_state[e3_did[k]] = ST_DEAD;
  r[R_E3] = r[R_K3] = r[R_W3K] = r[R_W3D] = MGC_UNIT;
  mgc_full_major();
  check_counts("part 3, all dropped", 1);
}

/* ------------------------------------------------------------------------ */
/* Part 4: fibers and continuations                                         */
/* ------------------------------------------------------------------------ */

#define NF4 6
static mgc_fiber *f4[NF4];
static long *f4_id[NF4];

/* An embedder stack: a fixed array of slots. */
struct estack {
  mgc_stack hdr; /* first */
  mgc_value slots[16];
  size_t n;
  int freed;
};
static struct estack es_held, es_cont;

static void es_scan(mgc_stack *s, mgc_scanning_action act, void *data) {
  struct estack *e = (struct estack *)s;
  size_t i;
  for (i = 0; i < e->n; i++)
    act(data, e->slots[i], &e->slots[i]);
}
static void es_free(mgc_stack *s) { ((struct estack *)s)->freed++; }
static const mgc_stack_ops es_ops = {es_scan, es_free};

/* Slot j's value into r[R_NEW]: a block, a string or a two-block list. */
/* Every sixth value is a 3-field block made in the major heap among
   major garbage of its size: such values are spread over sparse pools. */
static size_t f4_size(long j) { return j % 6 == 0 ? 3 : 1 + (size_t)(j % 30); }

static void f4_make(long id, long j) {
  mgc_value v;
  size_t i, s = f4_size(j);
  switch (j % 3) {
  case 0:
    if (j % 6 == 0) {
      shr_garbage(150, s);
      v = mgc_alloc_shr(s, (unsigned)(j % 5));
      mgc_initialize(&MGC_FIELD(v, 0), MGC_VAL_INT(id));
      for (i = 1; i < s; i++)
        mgc_initialize(&MGC_FIELD(v, i), PAT(id, i));
      shr_garbage(150, s);
      break;
    }
    v = mgc_alloc_small(s, (unsigned)(j % 5));
    MGC_FIELD(v, 0) = MGC_VAL_INT(id);
    for (i = 1; i < s; i++)
      MGC_FIELD(v, i) = PAT(id, i);
    break;
  case 1: {
    char buf[64];
    snprintf(buf, sizeof buf, "fiber value %ld", id);
    v = mgc_copy_string(buf);
    break;
  }
  default:
    r[R_TMP2] = box(~id);
    v = mgc_alloc_small(2, 0);
    MGC_FIELD(v, 0) = MGC_VAL_INT(id);
    MGC_FIELD(v, 1) = r[R_TMP2];
    r[R_TMP2] = MGC_UNIT;
  }
  r[R_NEW] = v;
}

static int f4_ok(mgc_value v, long id, long j) {
  size_t i, s = f4_size(j);
  if (!MGC_IS_BLOCK(v) || v == 0)
    return 0;
  switch (j % 3) {
  case 0:
    if (MGC_WOSIZE_VAL(v) != s || MGC_TAG_VAL(v) != (unsigned)(j % 5) ||
        MGC_FIELD(v, 0) != MGC_VAL_INT(id))
      return 0;
    for (i = 1; i < s; i++)
      if (MGC_FIELD(v, i) != PAT(id, i))
        return 0;
    return 1;
  case 1: {
    char buf[64];
    snprintf(buf, sizeof buf, "fiber value %ld", id);
    return MGC_TAG_VAL(v) == MGC_TAG_STRING &&
           strcmp(MGC_STRING_VAL(v), buf) == 0;
  }
  default:
    return MGC_WOSIZE_VAL(v) == 2 && MGC_FIELD(v, 0) == MGC_VAL_INT(id) &&
           box_ok(MGC_FIELD(v, 1), ~id);
  }
}

static void f4_check(struct tally *t, int f, long depth, const char *where) {
  long j;
  EXPECT(t, f4[f] != NULL && (long)mgc_fiber_depth(f4[f]) >= depth,
         "%s: fiber %d held, depth %zu", where, f,
         f4[f] ? mgc_fiber_depth(f4[f]) : (size_t)0);
  if (f4[f] == NULL || (long)mgc_fiber_depth(f4[f]) < depth)
    return;
  for (j = 0; j < depth; j++)
    EXPECT(t, f4_ok(MGC_FIBER_SLOT(f4[f], (size_t)j), f4_id[f][j], j),
           "%s: fiber %d slot %ld (id %ld)", where, f, j, f4_id[f][j]);
}

static void es_check(struct tally *t, struct estack *e, long base,
                     const char *where) {
  size_t i;
  EXPECT(t, e->n == 16 && e->freed == 0, "%s: embedder stack intact", where);
  for (i = 0; i < e->n; i++)
    EXPECT(t, box_ok(e->slots[i], base + (long)i),
           "%s: embedder stack slot %zu", where, i);
}

static void part4(void) {
  struct tally t = {0, 0};
  long depth = scaled(300, 40), j, moved = 0, aliased = 0;
  int f;
  size_t i;
  uintptr_t *addr = calloc((size_t)(2 * depth), sizeof *addr);
  mgc_stack *st;
  struct item g;
  memset(&g, 0, sizeof g);
  g.kind = V_PLAIN;
  trash_new(depth * NF4 * 6 + 64);
  r[R_F4] = mgc_alloc(64, 0);
  for (f = 0; f < NF4; f++) {
    f4[f] = mgc_fiber_new(0);
    f4_id[f] = calloc((size_t)depth, sizeof(long));
  }
  memset(&es_held, 0, sizeof es_held);
  memset(&es_cont, 0, sizeof es_cont);
  for (i = 0; i < 16; i++)
    es_held.slots[i] = es_cont.slots[i] = MGC_UNIT;
  mgc_stack_register(&es_held.hdr, &es_ops);
  mgc_stack_register(&es_cont.hdr, &es_ops);
  for (j = 0; j < depth; j++)
    for (f = 0; f < NF4; f++) {
      g.size = 1 + (size_t)(j % 30);
      make_garbage(&g, 5);
      f4_id[f][j] = new_id();
      f4_make(f4_id[f][j], j);
      mgc_fiber_push(f4[f], r[R_NEW]);
      if (f == 0 && j % 4 == 0 && j / 4 < 64) {
        mgc_modify(&MGC_FIELD(r[R_F4], j / 4), r[R_NEW]);
        aliased++;
      }
      if (j < 16 && f < 2) {
        struct estack *e = f ? &es_cont : &es_held;
        mgc_value b;
        make_garbage(&g, 3);
        b = box(1000000L * (f + 1) + j);
        e->slots[e->n++] = b;
      }
    }
  r[R_NEW] = MGC_UNIT;
  /* Fiber 2 in a continuation in a root, fiber 3 in one in a field of a
     small block, fiber 4 in one on fiber 5, itself in a continuation. */
  r[R_C4A] = mgc_cont_new(f4[2]);
  f4[2] = NULL;
  r[R_HOLDER] = mgc_alloc_small(3, 0);
  MGC_FIELD(r[R_HOLDER], 0) = MGC_VAL_INT(77);
  MGC_FIELD(r[R_HOLDER], 1) = MGC_UNIT;
  MGC_FIELD(r[R_HOLDER], 2) = MGC_VAL_INT(78);
  {
    mgc_value k = mgc_cont_new(f4[3]);
    mgc_modify(&MGC_FIELD(r[R_HOLDER], 1), k);
  }
  f4[3] = NULL;
  {
    mgc_value k = mgc_cont_new(f4[4]);
    mgc_fiber_push(f4[5], k);
  }
  f4[4] = NULL;
  r[R_C4B] = mgc_cont_new(f4[5]);
  f4[5] = NULL;
  r[R_EK] = mgc_cont_new_stack(&es_cont.hdr);
  mgc_minor_collection();
  for (f = 0; f < 2; f++)
    for (j = 0; j < depth; j++)
      addr[f * depth + j] = (uintptr_t)MGC_FIBER_SLOT(f4[f], (size_t)j);
  trash_drop();
  mgc_full_major();

  mgc_compact();
  CHECK_VERIFY("part 4, after the compaction");
  for (f = 0; f < 2; f++) {
    f4_check(&t, f, depth, "part 4, held");
    for (j = 0; j < depth; j++)
      moved +=
          addr[f * depth + j] != (uintptr_t)MGC_FIBER_SLOT(f4[f], (size_t)j);
  }
  for (j = 0; j < depth && j / 4 < 64; j += 4)
    EXPECT(&t, MGC_FIELD(r[R_F4], j / 4) == MGC_FIBER_SLOT(f4[0], (size_t)j),
           "part 4: held fiber slot %ld and its alias are the same block", j);
  printf("part 4: %ld of %ld held fiber values moved (%ld aliased)\n", moved,
         2 * depth, aliased);
  CHECK(moved > 0, "held fiber values moved and were updated (%ld)", moved);
  es_check(&t, &es_held, 1000000L, "part 4, held embedder stack");

  /* Take everything back after the compaction. */
  f4[2] = mgc_cont_take(r[R_C4A]);
  CHECK(f4[2] != NULL && mgc_cont_take(r[R_C4A]) == NULL,
        "continuation in a root: taken after the compaction, once");
  f4_check(&t, 2, depth, "part 4, from a root");
  CHECK(MGC_FIELD(r[R_HOLDER], 0) == MGC_VAL_INT(77) &&
            MGC_FIELD(r[R_HOLDER], 2) == MGC_VAL_INT(78) &&
            MGC_TAG_VAL(MGC_FIELD(r[R_HOLDER], 1)) == MGC_TAG_CONT,
        "the block holding a continuation is intact");
  f4[3] = mgc_cont_take(MGC_FIELD(r[R_HOLDER], 1));
  CHECK(f4[3] != NULL && mgc_cont_take(MGC_FIELD(r[R_HOLDER], 1)) == NULL,
        "continuation in a field: taken after the compaction, once");
  f4_check(&t, 3, depth, "part 4, from a field");
  f4[5] = mgc_cont_take(r[R_C4B]);
  CHECK(f4[5] != NULL && mgc_fiber_depth(f4[5]) == (size_t)depth + 1,
        "outer continuation taken (depth %zu)",
        f4[5] ? mgc_fiber_depth(f4[5]) : (size_t)0);
  if (f4[5] != NULL && mgc_fiber_depth(f4[5]) == (size_t)depth + 1) {
    r[R_TMP] = mgc_fiber_pop(f4[5]);
    f4[4] = mgc_cont_take(r[R_TMP]);
    CHECK(f4[4] != NULL, "nested continuation taken after the compaction");
    r[R_TMP] = MGC_UNIT;
  }
  f4_check(&t, 5, depth, "part 4, outer");
  f4_check(&t, 4, depth, "part 4, nested");
  st = mgc_cont_take_stack(r[R_EK]);
  CHECK(st == &es_cont.hdr, "embedder stack taken back after compaction");
  es_check(&t, &es_cont, 2000000L, "part 4, embedder stack in a cont");

  /* All held now: compact again, check again. */
  trash_new(depth * 8 + 64);
  for (j = 0; j < depth; j++) {
    g.size = 1 + (size_t)(j % 30);
    make_garbage(&g, 2);
  }
  trash_drop();
  mgc_compact();
  CHECK_VERIFY("part 4, second compaction");
  for (f = 0; f < NF4; f++)
    f4_check(&t, f, depth, "part 4, all held, second compaction");
  es_check(&t, &es_held, 1000000L, "part 4, second compaction");
  es_check(&t, &es_cont, 2000000L, "part 4, second compaction");
  tally_report(&t, "part 4: fibers and continuations across compaction");

  for (f = 0; f < NF4; f++) {
    if (f4[f])
      mgc_fiber_free(f4[f]);
    f4[f] = NULL;
    free(f4_id[f]);
  }
  mgc_stack_free(&es_held.hdr);
  mgc_stack_free(&es_cont.hdr);
  CHECK(es_held.freed == 1 && es_cont.freed == 1,
        "embedder stacks freed once (%d, %d)", es_held.freed, es_cont.freed);
  r[R_F4] = r[R_C4A] = r[R_C4B] = r[R_HOLDER] = r[R_EK] = MGC_UNIT;
  free(addr);
  check_counts("part 4", 0);
}

/* ------------------------------------------------------------------------ */
/* Local roots: frames of MGC_LOCAL5 around the parts                       */
/* ------------------------------------------------------------------------ */

static void parts_1_to_4(void) {
  timed("part 1: a fragmented heap of every kind", part1);
  timed("part 2: mutation and compaction rounds", part2);
  part2_cleanup();
  timed("part 3: ephemerons", part3);
  timed("part 4: fibers and continuations", part4);
}

static void with_locals(int depth) {
  MGC_PARAM0;
  MGC_LOCAL5(a, b, c, d, e);
  local_slot[depth * 5 + 0] = &a;
  local_slot[depth * 5 + 1] = &b;
  local_slot[depth * 5 + 2] = &c;
  local_slot[depth * 5 + 3] = &d;
  local_slot[depth * 5 + 4] = &e;
  if ((depth + 1) * 5 < NLOCAL)
    with_locals(depth + 1);
  else
    parts_1_to_4();
  MGC_DROP;
}

/* ------------------------------------------------------------------------ */
/* Part 5: parameters C= and O=                                             */
/* ------------------------------------------------------------------------ */

static mgc_value p5_keep;

/* A sparse heap: n blocks of 3 fields in the major heap, one in ten kept
   in a list rooted at p5_keep. */
static void p5_sparse(long n) {
  long i;
  for (i = 0; i < n; i++) {
    mgc_value b = mgc_alloc_shr(3, 0);
    if (i % 10 == 0) {
      mgc_initialize(&MGC_FIELD(b, 0), MGC_VAL_INT(i));
      mgc_initialize(&MGC_FIELD(b, 1), p5_keep);
      mgc_initialize(&MGC_FIELD(b, 2), MGC_VAL_INT(~i));
      p5_keep = b;
    }
  }
}

static int p5_keep_ok(long n) {
  long i;
  mgc_value l = p5_keep;
  for (i = ((n - 1) / 10) * 10; i >= 0; i -= 10) {
    if (!MGC_IS_BLOCK(l) || MGC_FIELD(l, 0) != MGC_VAL_INT(i) ||
        MGC_FIELD(l, 2) != MGC_VAL_INT(~i))
      return 0;
    l = MGC_FIELD(l, 1);
  }
  return l == MGC_UNIT;
}

static int p5_init(const char *spec) {
  mgc_params p, q;
  mgc_params_default(&p);
  if (!CHECK(mgc_params_parse(&p, spec) == 0, "parse \"%s\"", spec))
    return 0;
  unsetenv("MGC_PARAMS");
  p.verify = 1;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init with \"%s\"", spec))
    return 0;
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_get_params(&q);
  CHECK(q.compact_every == p.compact_every &&
            q.compact_overhead == p.compact_overhead,
        "\"%s\": parameters in force C=%zu O=%u", spec, q.compact_every,
        q.compact_overhead);
  p5_keep = MGC_UNIT;
  mgc_register_global_root(&p5_keep);
  return 1;
}

static void p5_done(void) {
  mgc_remove_global_root(&p5_keep);
  mgc_shutdown();
}

static void part5(void) {
  long n = 40000, i;
  mgc_stats s0, s1, s2;
  uint64_t dc, dm;

  /* C=1: a compaction at every cycle end. */
  if (p5_init("C=1")) {
    p5_sparse(n);
    mgc_get_stats(&s0);
    for (i = 0; i < 4; i++)
      mgc_major_collection();
    mgc_get_stats(&s1);
    dc = s1.compactions - s0.compactions;
    dm = s1.major_collections - s0.major_collections;
    CHECK(dm >= 4 && dc == dm, "C=1: %llu compactions in %llu major cycles",
          (unsigned long long)dc, (unsigned long long)dm);
    CHECK(s1.compacted_words > s0.compacted_words &&
              s1.compaction_pause_max_ns > 0,
          "C=1: compacted_words %llu, pause max %llu ns",
          (unsigned long long)s1.compacted_words,
          (unsigned long long)s1.compaction_pause_max_ns);
    CHECK(s1.heap_words * 2 < s0.heap_words,
          "C=1: the sparse heap shrank (%llu -> %llu words)",
          (unsigned long long)s0.heap_words, (unsigned long long)s1.heap_words);
    CHECK(p5_keep_ok(n), "C=1: the kept list is intact");
    CHECK_VERIFY("C=1");
    p5_done();
  }

  /* C=3: at every third. */
  if (p5_init("C=3")) {
    p5_sparse(n / 4);
    mgc_get_stats(&s0);
    for (i = 0; i < 9; i++)
      mgc_major_collection();
    mgc_get_stats(&s1);
    dc = s1.compactions - s0.compactions;
    dm = s1.major_collections - s0.major_collections;
    CHECK(dm >= 9 && dc >= dm / 3 && dc <= (dm + 2) / 3,
          "C=3: %llu compactions in %llu major cycles", (unsigned long long)dc,
          (unsigned long long)dm);
    CHECK(p5_keep_ok(n / 4), "C=3: the kept list is intact");
    p5_done();
  }

  /* O=50: a sparse heap is compacted without being asked. */
  if (p5_init("O=50")) {
    p5_sparse(n);
    mgc_get_stats(&s0);
    for (i = 0; i < 8; i++) {
      mgc_major_collection();
      mgc_get_stats(&s1);
      if (s1.compactions > s0.compactions)
        break;
    }
    CHECK(s1.compactions > s0.compactions,
          "O=50: a sparse heap compacted by itself after %ld cycles (%llu)",
          i + 1, (unsigned long long)s1.compactions);
    CHECK(s1.compacted_words > 0 && s1.heap_words * 2 < s0.heap_words,
          "O=50: words moved %llu, heap %llu -> %llu",
          (unsigned long long)s1.compacted_words,
          (unsigned long long)s0.heap_words, (unsigned long long)s1.heap_words);
    CHECK(p5_keep_ok(n), "O=50: the kept list is intact");
    p5_done();
  }

  /* O=0 (and C=0): never, until mgc_compact. */
  if (p5_init("O=0,C=0")) {
    p5_sparse(n);
    for (i = 0; i < 8; i++)
      mgc_major_collection();
    mgc_full_major();
    mgc_get_stats(&s1);
    CHECK(s1.compactions == 0 && s1.compacted_words == 0,
          "O=0: no compaction by itself (%llu)",
          (unsigned long long)s1.compactions);
    mgc_compact();
    mgc_get_stats(&s2);
    CHECK(s2.compactions == 1, "O=0: mgc_compact compacts once (%llu)",
          (unsigned long long)s2.compactions);
    CHECK(s2.compacted_words > 0 && s2.compaction_pause_max_ns > 0,
          "O=0: compacted_words %llu, pause max %llu ns",
          (unsigned long long)s2.compacted_words,
          (unsigned long long)s2.compaction_pause_max_ns);
    CHECK(s2.heap_words * 2 < s1.heap_words,
          "O=0: mgc_compact shrank the heap (%llu -> %llu)",
          (unsigned long long)s1.heap_words, (unsigned long long)s2.heap_words);
    CHECK(p5_keep_ok(n), "O=0: the kept list is intact");
    CHECK_VERIFY("O=0 after mgc_compact");
    p5_done();
  }
}

/* ------------------------------------------------------------------------ */
/* Part 6: bad parameters                                                   */
/* ------------------------------------------------------------------------ */

static void part6(void) {
  mgc_params p, q;
  static const char *const bad[] = {"C=x", "O=-1", "O=50,C=x", "C=1,O=-1",
                                    "O=x"};
  size_t i;
  mgc_params_default(&p);
  p.compact_every = 7;
  p.compact_overhead = 33;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc;
    q = p;
    rc = mgc_params_parse(&q, bad[i]);
    CHECK(rc == MGC_EINVAL, "mgc_params_parse(\"%s\") -> %d", bad[i], rc);
    CHECK(memcmp(&p, &q, sizeof p) == 0,
          "\"%s\" leaves the parameters as they were", bad[i]);
  }
  q = p;
  CHECK(mgc_params_parse(&q, "O=50,C=2") == 0 && q.compact_overhead == 50 &&
            q.compact_every == 2,
        "\"O=50,C=2\" parsed (O=%u C=%zu)", q.compact_overhead,
        q.compact_every);
  mgc_params_default(&q);
  CHECK(q.compact_overhead == 0 && q.compact_every == 0, "defaults: O=0, C=0");
}

int main(int argc, char **argv) {
  int i, rc;
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_seed(argc, argv, SEED);
  timed("part 6: bad parameters", part6);
  mgc_set_fatal_handler(check_fatal_handler);
  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  for (i = 0; i < NR; i++) {
    r[i] = MGC_UNIT;
    mgc_register_global_root(&r[i]);
  }
  for (i = 0; i < NGLOB; i++) {
    gr[i] = MGC_UNIT;
    mgc_register_global_root(&gr[i]);
  }
  for (i = 0; i < NGEN; i++) {
    gen[i] = MGC_UNIT;
    mgc_register_generational_global_root(&gen[i]);
  }
  for (i = 0; i < NEPH; i++) {
    eph[i] = MGC_UNIT;
    mgc_register_global_root(&eph[i]);
  }
  for (i = 0; i < NCONT; i++) {
    conts[i] = MGC_UNIT;
    mgc_register_global_root(&conts[i]);
  }
  for (i = 0; i < NHOOK; i++)
    hook_slots[i] = MGC_UNIT;
  mgc_set_scan_roots_hook(scan_hook);

  with_locals(0);

  mgc_set_scan_roots_hook(NULL);
  for (i = 0; i < NR; i++)
    mgc_remove_global_root(&r[i]);
  for (i = 0; i < NGLOB; i++)
    mgc_remove_global_root(&gr[i]);
  for (i = 0; i < NGEN; i++)
    mgc_remove_generational_global_root(&gen[i]);
  for (i = 0; i < NEPH; i++)
    mgc_remove_global_root(&eph[i]);
  for (i = 0; i < NCONT; i++)
    mgc_remove_global_root(&conts[i]);
  mgc_shutdown();

  timed("part 5: parameters C= and O=", part5);

  free(fin_cnt);
  free(cust_cnt);
  free(fin_state);
  free(cust_state);
  free(id_kind);
  return check_done();
}
