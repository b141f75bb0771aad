/* test_domains_storm.c: spawn/join storms while other domains collect.
 *
 * DESIGN.md §4.5, invariants 37-38 and the spawn_burn tests of §9: with
 * max_domains = 8, hundreds of domains are spawned and joined over time
 * while two "burner" domains loop on mgc_minor_collection and
 * mgc_full_major.  Each spawned domain receives a young argument block
 * (which it must root itself), allocates a list whose sum is known, and
 * returns a result block the joiner checks, including that the argument it
 * returns is the joiner's own copy.
 *   phase 1: spawn until mgc_domain_spawn returns NULL with
 *            MGC_ETOOMANYDOMAINS (the children wait until released, so
 *            exactly max_domains domains are alive), check that the runtime
 *            still works, release and join them all, again and again (slots
 *            are reused);
 *   phase 2: serial spawn/join;
 *   phase 3: three domains spawning and joining at the same time, retrying
 *            when every slot is taken.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define SEED 4242u
#define MAX_DOMAINS 8
#define NBURNERS 2
#define NSPAWNERS 2

static atomic_int burners_stop;
static atomic_int release_children;
static atomic_long spawned_total;
static uint64_t seed;

/* ------------------------------------------------------------------------ */
/* Children                                                                 */
/* ------------------------------------------------------------------------ */

/* The argument: [n, wait, salt] (young when spawned). */
static mgc_value make_arg(long n, int wait, long salt) {
  mgc_value a = mgc_alloc_small(3, 5);
  MGC_FIELD(a, 0) = MGC_VAL_INT(n);
  MGC_FIELD(a, 1) = MGC_VAL_INT(wait);
  MGC_FIELD(a, 2) = MGC_VAL_INT(salt);
  return a;
}

/* Builds the list n, n-1, ..., 1 with some garbage in between; returns
   [n, list, arg, domain id]. */
static mgc_value child_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(l, res);
  long n = MGC_INT_VAL(MGC_FIELD(arg, 0)), i;
  for (i = 1; i <= n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = l;
    l = c;
    if (i % 16 == 0)
      (void)mgc_alloc(1 + (size_t)(i % 40), 0);
  }
  if (n % 7 == 0)
    mgc_minor_collection();
  if (MGC_FIELD(arg, 1) != MGC_VAL_INT(0)) {
    unsigned long spins = 0;
    while (!atomic_load_explicit(&release_children, memory_order_acquire))
      mt_relax(&spins);
  }
  res = mgc_alloc_small(4, 6);
  MGC_FIELD(res, 0) = MGC_VAL_INT(n);
  MGC_FIELD(res, 1) = l;
  MGC_FIELD(res, 2) = arg;
  MGC_FIELD(res, 3) = MGC_VAL_INT(mgc_domain_self());
  MGC_RETURN(res);
}

/* 1 when res is the result of the child that was given arg. */
static int result_ok(mgc_value res, mgc_value arg) {
  long n, i, sum = 0;
  mgc_value l;
  if (!MGC_IS_BLOCK(res) || MGC_WOSIZE_VAL(res) != 4 || MGC_TAG_VAL(res) != 6)
    return 0;
  n = MGC_INT_VAL(MGC_FIELD(arg, 0));
  if (MGC_FIELD(res, 0) != MGC_VAL_INT(n) || MGC_FIELD(res, 2) != arg)
    return 0;
  l = MGC_FIELD(res, 1);
  for (i = n; i >= 1; i--) {
    if (!MGC_IS_BLOCK(l) || MGC_FIELD(l, 0) != MGC_VAL_INT(i))
      return 0;
    sum += MGC_INT_VAL(MGC_FIELD(l, 0));
    l = MGC_FIELD(l, 1);
  }
  return l == MGC_UNIT && sum == n * (n + 1) / 2 && MGC_WOSIZE_VAL(arg) == 3 &&
         MGC_TAG_VAL(arg) == 5;
}

/* Spawn with retries while every slot is taken (phase 3); NULL on any
   other error. */
static mgc_domain *spawn_retry(mgc_value arg, long *retries) {
  MGC_PARAM1(arg);
  unsigned long spins = 0;
  for (;;) {
    mgc_domain *d = mgc_domain_spawn(child_body, arg);
    if (d != NULL) {
      atomic_fetch_add(&spawned_total, 1);
      MGC_DROP;
      return d;
    }
    if (mgc_last_error() != MGC_ETOOMANYDOMAINS) {
      MGC_DROP;
      return NULL;
    }
    ++*retries;
    mt_relax(&spins);
  }
}

/* Serial spawn/join of count children; returns the number of bad results. */
static long spawn_join_serially(long count, struct mt_rng *rng, long *retries) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  long k, bad = 0;
  for (k = 0; k < count; k++) {
    mgc_domain *d;
    arg = make_arg(1 + (long)mt_below(rng, 300), 0, k);
    d = spawn_retry(arg, retries);
    if (d == NULL) {
      MT_CHECK(d != NULL, "serial spawn %ld: error %d", k, mgc_last_error());
      bad++;
      break;
    }
    res = mgc_domain_join(d);
    bad += !result_ok(res, arg);
  }
  MGC_RETURN(bad);
}

/* Phase 3: a domain that spawns and joins children. */
static mgc_value spawner_body(mgc_value arg) {
  MGC_PARAM1(arg);
  struct mt_rng rng;
  long retries = 0, bad;
  mt_rng_seed(&rng, seed, 100 + (uint64_t)MGC_INT_VAL(arg));
  bad = spawn_join_serially(test_scale(40), &rng, &retries);
  MT_CHECK(bad == 0, "spawner %ld: %ld bad results (%ld retries)",
           (long)MGC_INT_VAL(arg), bad, retries);
  MGC_RETURN(MGC_VAL_INT(bad));
}

/* ------------------------------------------------------------------------ */
/* Burners                                                                  */
/* ------------------------------------------------------------------------ */

static mgc_value burner_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL1(keep);
  long kind = MGC_INT_VAL(arg), n = 0, bad = 0;
  keep = mgc_alloc_small(2, 0);
  MGC_FIELD(keep, 0) = MGC_VAL_INT(kind);
  MGC_FIELD(keep, 1) = MGC_VAL_INT(12345);
  while (!atomic_load_explicit(&burners_stop, memory_order_relaxed)) {
    int k;
    /* Some mutator work between collections: back-to-back collections
       would keep a leader in place almost all the time, and a spawning
       domain only joins while there is none. */
    for (k = 0; k < 200; k++) {
      mgc_value junk = mgc_alloc_small(3, 0);
      MGC_FIELD(junk, 0) = MGC_FIELD(junk, 1) = MGC_FIELD(junk, 2) = keep;
    }
    if (kind == 0 || n % 8 != 7)
      mgc_minor_collection();
    else
      mgc_full_major();
    bad += MGC_FIELD(keep, 0) != MGC_VAL_INT(kind) ||
           MGC_FIELD(keep, 1) != MGC_VAL_INT(12345) || mgc_is_young(keep);
    n++;
  }
  MT_CHECK(bad == 0, "burner %ld: its rooted block survived %ld collections",
           kind, n);
  MGC_RETURN(MGC_VAL_INT(n));
}

/* ------------------------------------------------------------------------ */
/* Domain 0                                                                 */
/* ------------------------------------------------------------------------ */

static mgc_value g_args =
    MGC_UNIT; /* classic root: old block of MAX_DOMAINS args */
static mgc_value g_results = MGC_UNIT; /* idem, results */

static void phase1(long rounds, struct mt_rng *rng) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, x);
  mgc_domain *d[MAX_DOMAINS];
  long r, bad_count = 0, bad_err = 0, bad_res = 0, bad_ids = 0;
  long bad_stats = 0, bad_work = 0;
  for (r = 0; r < rounds; r++) {
    int n = 0, i, j;
    mgc_stats st;
    atomic_store_explicit(&release_children, 0, memory_order_release);
    for (;;) {
      arg = make_arg(1 + (long)mt_below(rng, 400), 1, r);
      d[n] = mgc_domain_spawn(child_body, arg);
      if (d[n] == NULL)
        break;
      atomic_fetch_add(&spawned_total, 1);
      mgc_modify(&MGC_FIELD(g_args, n), arg);
      if (++n == MAX_DOMAINS)
        break;
    }
    bad_err += d[n < MAX_DOMAINS ? n : 0] != NULL ||
               mgc_last_error() != MGC_ETOOMANYDOMAINS;
    bad_count += n != MAX_DOMAINS - 1 - NBURNERS;
    mgc_get_stats(&st);
    bad_stats += st.domains != MAX_DOMAINS;
    /* The runtime keeps working with every slot taken. */
    x = make_arg(r, 0, 0);
    mgc_minor_collection();
    bad_work += mgc_is_young(x) || MGC_FIELD(x, 0) != MGC_VAL_INT(r);
    if (r % 10 == 0)
      MT_CHECK(mgc_verify_heap() == 0,
               "verify with every slot taken, "
               "round %ld",
               r);
    atomic_store_explicit(&release_children, 1, memory_order_release);
    for (i = 0; i < n; i++) {
      x = mgc_domain_join(d[i]);
      mgc_modify(&MGC_FIELD(g_results, i), x);
    }
    for (i = 0; i < n; i++) {
      mgc_value res = MGC_FIELD(g_results, i);
      bad_res += !result_ok(res, MGC_FIELD(g_args, i));
      for (j = 0; j < i; j++)
        bad_ids += MGC_FIELD(MGC_FIELD(g_results, j), 3) == MGC_FIELD(res, 3);
      bad_ids += MGC_FIELD(res, 3) == MGC_VAL_INT(0);
    }
  }
  MT_CHECK(bad_count == 0 && bad_err == 0,
           "phase 1, %ld rounds: %ld rounds without exactly %d spawns, %ld "
           "where the failing spawn did not say MGC_ETOOMANYDOMAINS",
           rounds, bad_count, MAX_DOMAINS - 1 - NBURNERS, bad_err);
  MT_CHECK(bad_stats == 0,
           "phase 1: stats.domains == %d with every slot "
           "taken (%ld rounds differ)",
           MAX_DOMAINS, bad_stats);
  MT_CHECK(bad_work == 0 && bad_res == 0 && bad_ids == 0,
           "phase 1: %ld failed minor collections with every slot taken, "
           "%ld bad results, %ld duplicated or zero domain ids",
           bad_work, bad_res, bad_ids);
  MGC_DROP;
}

static void run(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *burners[NBURNERS], *spawners[NSPAWNERS];
  struct mt_rng rng;
  long retries = 0, bad, total_burns = 0;
  mgc_stats st;
  int i;
  mt_rng_seed(&rng, seed, 0);
  MT_CHECK(mgc_domain_self() == 0, "the initial thread is domain 0 (%d)",
           mgc_domain_self());
  g_args = mgc_alloc_shr(MAX_DOMAINS, 0);
  g_results = mgc_alloc_shr(MAX_DOMAINS, 0);
  for (i = 0; i < MAX_DOMAINS; i++) {
    mgc_initialize(&MGC_FIELD(g_args, i), MGC_UNIT);
    mgc_initialize(&MGC_FIELD(g_results, i), MGC_UNIT);
  }
  for (i = 0; i < NBURNERS; i++) {
    arg = MGC_VAL_INT(i);
    burners[i] = mgc_domain_spawn(burner_body, arg);
    if (!CHECK(burners[i] != NULL, "spawn burner %d", i))
      exit(check_done());
  }

  phase1(test_scale(25), &rng);

  bad = spawn_join_serially(test_scale(80), &rng, &retries);
  MT_CHECK(bad == 0, "phase 2: serial spawn/join, %ld bad results", bad);

  for (i = 0; i < NSPAWNERS; i++) {
    arg = MGC_VAL_INT(i);
    spawners[i] = mgc_domain_spawn(spawner_body, arg);
    MT_CHECK(spawners[i] != NULL, "spawn spawner %d", i);
  }
  bad = spawn_join_serially(test_scale(40), &rng, &retries);
  MT_CHECK(bad == 0, "phase 3: domain 0's spawn/join, %ld bad results", bad);
  for (i = 0; i < NSPAWNERS; i++)
    if (spawners[i] != NULL)
      (void)mgc_domain_join(spawners[i]);

  atomic_store(&burners_stop, 1);
  for (i = 0; i < NBURNERS; i++) {
    res = mgc_domain_join(burners[i]);
    total_burns += MGC_INT_VAL(res);
  }
  mgc_get_stats(&st);
  printf("%ld domains spawned, %ld burner collections, %ld spawn retries\n",
         (long)atomic_load(&spawned_total), total_burns, retries);
  MT_CHECK(total_burns > 0, "the burners collected (%ld)", total_burns);
  MT_CHECK(st.domains == 1, "only domain 0 is left (stats: %llu)",
           (unsigned long long)st.domains);
  MT_CHECK(mgc_verify_heap() == 0, "verify at the end");
  /* After all that, a last full house: every slot can be taken again. */
  atomic_store(&release_children, 0);
  {
    mgc_domain *d[MAX_DOMAINS];
    int n = 0;
    while (n < MAX_DOMAINS) {
      arg = make_arg(10, 1, n);
      mgc_modify(&MGC_FIELD(g_args, n), arg);
      if ((d[n] = mgc_domain_spawn(child_body, arg)) == NULL)
        break;
      n++;
    }
    MT_CHECK(n == MAX_DOMAINS - 1 && mgc_last_error() == MGC_ETOOMANYDOMAINS,
             "after the storm, %d spawns succeed (got %d)", MAX_DOMAINS - 1, n);
    atomic_store(&release_children, 1);
    for (i = 0; i < n; i++) {
      res = mgc_domain_join(d[i]);
      MT_CHECK(result_ok(res, MGC_FIELD(g_args, i)), "last child %d", i);
    }
  }
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(600);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = MAX_DOMAINS;
  p.minor_heap_words = 8192;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  mgc_get_params(&p);
  if (!CHECK(p.max_domains == MAX_DOMAINS, "max_domains %u", p.max_domains))
    return check_done();
  mgc_register_global_root(&g_args);
  mgc_register_global_root(&g_results);
  run();
  mgc_remove_global_root(&g_results);
  mgc_remove_global_root(&g_args);
  mgc_shutdown();
  return check_mt_done();
}
