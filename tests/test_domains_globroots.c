/* test_domains_globroots.c: global roots used from several domains at once.
 *
 * DESIGN.md §3.6, invariant 14 and the globroots_parallel /
 * globroots_parallel_spawn_burn tests of §9: 4 domains each own a disjoint
 * set of cells that they register, change and remove as classic or
 * generational global roots (generational ones changed only through
 * mgc_modify_generational_global_root), holding young strings, old strings
 * (made with mgc_alloc_shr), static atoms or integers, with minor
 * collections, major slices and full majors from any domain in between.
 * After each step the touched cell is checked, and every cell now and then.
 * A removed cell is overwritten with a poison word that the collector would
 * trip on if it still scanned it (young2old of globroots_sequential); a
 * generational root set to a static atom then to a young string must be
 * updated by the next minor collection (static2young).  At the end of a
 * round each domain removes the roots another domain registered
 * (cross-domain removal).  Rounds are repeated with fresh domains.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define SEED 1789u
#define NDOM 4
#define NCELLS 48
#define POISON ((mgc_value)0x10)

enum kind { K_NONE, K_CLASSIC, K_GEN };
enum what { W_INT, W_YOUNG, W_OLD, W_ATOM };

struct cell_state {
  enum kind kind;
  enum what what;
  long n;         /* the integer, or the string's number */
  mgc_value atom; /* W_ATOM: the expected atom */
};

struct domain_cells {
  mgc_value *cells; /* malloc'd: the roots themselves */
  struct cell_state st[NCELLS];
};

static struct domain_cells doms_cells[NDOM];
static struct mt_barrier bar;
static uint64_t seed;
static long nsteps;
static atomic_long round_no;

static void string_text(char *buf, size_t len, int self, long n) {
  snprintf(buf, len, "root d%d n%ld %s", self, n,
           n % 3 == 0 ? "with a longer tail to cross a word" : "");
}

/* An old string, padded as OCaml pads strings. */
static mgc_value old_string(const char *s) {
  size_t len = strlen(s);
  size_t wosize = (len + sizeof(mgc_value)) / sizeof(mgc_value);
  mgc_value v = mgc_alloc_shr(wosize, MGC_TAG_STRING);
  char *p = MGC_STRING_VAL(v);
  memset(p, 0, wosize * sizeof(mgc_value));
  memcpy(p, s, len);
  p[wosize * sizeof(mgc_value) - 1] =
      (char)(wosize * sizeof(mgc_value) - 1 - len);
  return v;
}

/* A fresh value of the chosen kind; never allocates after creating it. */
static mgc_value make_value(int self, enum what w, long n, mgc_value *atom) {
  char buf[96];
  switch (w) {
  case W_INT:
    return MGC_VAL_INT(n);
  case W_YOUNG:
    string_text(buf, sizeof buf, self, n);
    return mgc_copy_string(buf);
  case W_OLD:
    string_text(buf, sizeof buf, self, n);
    return old_string(buf);
  default:
    *atom = mgc_alloc(0, (unsigned)(n % 200));
    return *atom;
  }
}

/* 1 when the cell holds what its state says. */
static int cell_ok(int owner, int i) {
  struct domain_cells *dc = &doms_cells[owner];
  struct cell_state *st = &dc->st[i];
  mgc_value v = dc->cells[i];
  char buf[96];
  if (st->kind == K_NONE)
    return 1;
  switch (st->what) {
  case W_INT:
    return v == MGC_VAL_INT(st->n);
  case W_YOUNG:
  case W_OLD:
    string_text(buf, sizeof buf, owner, st->n);
    return MGC_IS_BLOCK(v) && MGC_TAG_VAL(v) == MGC_TAG_STRING &&
           strcmp(MGC_STRING_VAL(v), buf) == 0 &&
           mgc_string_length(v) == strlen(buf);
  default:
    return v == st->atom && MGC_WOSIZE_VAL(v) == 0;
  }
}

static void unregister(int owner, int i) {
  struct domain_cells *dc = &doms_cells[owner];
  if (dc->st[i].kind == K_CLASSIC)
    mgc_remove_global_root(&dc->cells[i]);
  else if (dc->st[i].kind == K_GEN)
    mgc_remove_generational_global_root(&dc->cells[i]);
  dc->st[i].kind = K_NONE;
  dc->cells[i] = POISON;
}

/* One random step on one of our cells; returns 1 when the cell is fine
   afterwards. */
static int step(int self, struct mt_rng *rng, long *counter) {
  struct domain_cells *dc = &doms_cells[self];
  int i = (int)mt_below(rng, NCELLS);
  struct cell_state *st = &dc->st[i];
  enum what w = (enum what)mt_below(rng, 4);
  long n = ++*counter;
  mgc_value atom = MGC_UNIT, v;
  uint64_t k = mt_below(rng, 10);
  if (st->kind == K_NONE) {
    v = make_value(self, w, n, &atom);
    dc->cells[i] = v;
    if (k < 5) {
      mgc_register_global_root(&dc->cells[i]);
      st->kind = K_CLASSIC;
    } else {
      mgc_register_generational_global_root(&dc->cells[i]);
      st->kind = K_GEN;
    }
  } else if (k < 2) {
    unregister(self, i);
    return 1;
  } else {
    v = make_value(self, w, n, &atom);
    if (st->kind == K_CLASSIC)
      dc->cells[i] = v;
    else
      mgc_modify_generational_global_root(&dc->cells[i], v);
  }
  st->what = w;
  st->n = n;
  st->atom = atom;
  return cell_ok(self, i);
}

/* static2young: an atom, then a young string, in a generational root. */
static int static_to_young(int self, long n) {
  mgc_value atom = mgc_alloc(0, 0);
  char buf[96];
  int ok;
  mgc_value cell = atom;
  mgc_register_generational_global_root(&cell);
  string_text(buf, sizeof buf, self, n);
  mgc_modify_generational_global_root(&cell, mgc_copy_string(buf));
  mgc_minor_collection();
  ok = MGC_IS_BLOCK(cell) && !mgc_is_young(cell) &&
       strcmp(MGC_STRING_VAL(cell), buf) == 0;
  mgc_remove_generational_global_root(&cell);
  return ok;
}

/* young2old: a young string, then an old one, then removed and poisoned;
   the collections that follow must not look at it. */
static int young_to_old(int self, long n) {
  char buf[96];
  mgc_value cell, poison;
  string_text(buf, sizeof buf, self, n);
  cell = mgc_copy_string(buf);
  mgc_register_generational_global_root(&cell);
  mgc_modify_generational_global_root(&cell, old_string(buf));
  mgc_remove_generational_global_root(&cell);
  /* A word in the minor reservation: a collection that still scanned the
     cell would try to promote it and rewrite the cell. */
  poison = (mgc_value)(mgc_young_range.start + 16 * sizeof(mgc_value));
  cell = poison;
  mgc_minor_collection();
  mgc_major_slice(0);
  return cell == poison;
}

static mgc_value globroots_body(mgc_value arg) {
  MGC_PARAM1(arg);
  int self = (int)MGC_INT_VAL(arg), i, o;
  struct domain_cells *dc = &doms_cells[self];
  struct mt_rng rng;
  long s, counter = 0, bad_step = 0, bad_all = 0, bad_special = 0;
  long bad_cross = 0, full_checks = 0;
  mt_rng_seed(&rng, seed, (uint64_t)(self + NDOM * atomic_load(&round_no)));
  dc->cells = malloc(NCELLS * sizeof(mgc_value));
  if (dc->cells == NULL) {
    perror("malloc");
    exit(2);
  }
  for (i = 0; i < NCELLS; i++) {
    dc->cells[i] = POISON;
    dc->st[i].kind = K_NONE;
  }
  mt_barrier_wait(&bar);
  for (s = 0; s < nsteps; s++) {
    uint64_t k = mt_below(&rng, 1000);
    bad_step += !step(self, &rng, &counter);
    if (k < 25)
      mgc_minor_collection();
    else if (k < 30)
      mgc_major_slice(0);
    else if (k < 31)
      mgc_full_major();
    else if (k < 33)
      bad_special += !static_to_young(self, ++counter);
    else if (k < 35)
      bad_special += !young_to_old(self, ++counter);
    if (k < 31 || s % 200 == 199) {
      full_checks++;
      for (i = 0; i < NCELLS; i++)
        bad_all += !cell_ok(self, i);
    }
  }
  /* Hand the cells over: the next domain checks and removes ours. */
  mt_barrier_wait(&bar);
  o = (self + 1) % NDOM;
  for (i = 0; i < NCELLS; i++) {
    bad_cross += !cell_ok(o, i);
    unregister(o, i);
  }
  mgc_minor_collection();
  mt_barrier_wait(&bar);
  mgc_full_major();
  free(dc->cells);
  dc->cells = NULL;
  MT_CHECK(bad_step == 0 && bad_all == 0 && bad_special == 0 && bad_cross == 0,
           "round %ld, domain %d, %ld steps: %ld bad cells after a step, "
           "%ld in %ld full checks, %ld failed static2young/young2old, %ld "
           "bad cells of domain %d at hand-over",
           (long)atomic_load(&round_no), self, nsteps, bad_step, bad_all,
           full_checks, bad_special, bad_cross, o);
  MGC_RETURN(MGC_VAL_INT(bad_step + bad_all + bad_special + bad_cross));
}

static void run(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *d[NDOM];
  long r, rounds = 1 + test_scale(4), bad = 0;
  int i;
  mt_barrier_init(&bar, NDOM);
  for (r = 0; r < rounds; r++) {
    atomic_store(&round_no, r);
    nsteps = r == 0 ? test_scale(20000) : test_scale(3000);
    for (i = 1; i < NDOM; i++) {
      arg = MGC_VAL_INT(i);
      d[i] = mgc_domain_spawn(globroots_body, arg);
      if (!CHECK(d[i] != NULL, "spawn %d", i))
        exit(check_mt_done());
    }
    res = globroots_body(MGC_VAL_INT(0));
    bad += MGC_INT_VAL(res);
    for (i = 1; i < NDOM; i++) {
      res = mgc_domain_join(d[i]);
      bad += MGC_INT_VAL(res);
    }
  }
  MT_CHECK(bad == 0, "%ld rounds of %d domains on global roots", rounds, NDOM);
  MT_CHECK(mgc_verify_heap() == 0, "verify at the end");
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(600);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 8;
  p.minor_heap_words = 8192;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  run();
  mgc_shutdown();
  return check_mt_done();
}
