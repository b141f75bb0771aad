/* test_domains_embedder: the embedder calls of test_embedder that involve
 * several domains and backup threads (also run under ThreadSanitizer).
 *
 *   part A: each domain keeps its roots in its own state, found by the
 *           roots hook through mgc_domain_user().  Domain B fills its state
 *           with young lists and blocks (a blocking section) while domain 0
 *           runs minor collections, major cycles, a verification and a
 *           compaction: the hook is called for B on B's backup thread and,
 *           for the verification, on domain 0's thread, and must find B's
 *           state each time; B's lists are promoted, kept and updated.
 *   part B: interrupts are never lost while a domain is blocked: B raises
 *           signals inside its blocking section (the handler calls
 *           mgc_interrupt) while its backup thread resets its limit for
 *           the collections; when B leaves the section its own reset hook
 *           has served every one.  The limit-reset hook never runs on a
 *           backup thread.
 *   part C: mgc_set_params while other domains run: a domain allocating
 *           while domain 0 changes space_overhead back and forth (the
 *           parameters are written inside a stop-the-world section), and a
 *           new minor heap size is given to domains spawned afterwards
 *           while the caller's own heap is resized.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#define NV 6
#define LIST_LEN 100
#define MAGIC 0x5eed

struct dom_state {
  int magic;
  pthread_t thread;
  mgc_value vals[NV]; /* roots, reported by the hook */
  atomic_long hook_young, hook_full;
  atomic_long hook_on_backup; /* on neither its thread nor domain 0's */
  atomic_long hook_on_main;   /* on domain 0's thread (the verifier) */
  atomic_long sig_delivered, sig_pending;
  long sig_served; /* by the reset hook, on the domain's own thread */
};

static struct dom_state st_main, st_b;
static pthread_t main_thread;
static atomic_long hook_bad_user;
static atomic_long reset_wrong_thread;
static atomic_long b_state;
static atomic_int b_go;
/* During a verification one thread scans every domain's roots. */
static atomic_int verifying;
static atomic_long verify_saw_main, verify_saw_b;

static void roots_hook(mgc_scanning_action act, void *data,
                       mgc_scan_kind kind) {
  struct dom_state *u = mgc_domain_user();
  int i;
  if (u == NULL)
    return; /* a domain that has not set its state yet */
  if (u->magic != MAGIC) {
    atomic_fetch_add(&hook_bad_user, 1);
    return;
  }
  if (!pthread_equal(pthread_self(), u->thread)) {
    if (pthread_equal(pthread_self(), main_thread))
      atomic_fetch_add(&u->hook_on_main, 1);
    else
      atomic_fetch_add(&u->hook_on_backup, 1);
  }
  for (i = 0; i < NV; i++)
    act(data, u->vals[i], &u->vals[i]);
  atomic_fetch_add(kind == MGC_SCAN_YOUNG ? &u->hook_young : &u->hook_full, 1);
  if (atomic_load(&verifying) && kind == MGC_SCAN_FULL)
    atomic_fetch_add(u == &st_b ? &verify_saw_b : &verify_saw_main, 1);
}

static void reset_hook(void) {
  struct dom_state *u = mgc_domain_user();
  if (u == NULL || u->magic != MAGIC)
    return;
  if (!pthread_equal(pthread_self(), u->thread))
    atomic_fetch_add(&reset_wrong_thread, 1);
  u->sig_served += atomic_exchange(&u->sig_pending, 0);
}

/* Async-signal-safe: atomics and mgc_interrupt only. */
static void on_signal(int sig) {
  struct dom_state *u = mgc_domain_user();
  (void)sig;
  if (u != NULL) {
    atomic_fetch_add(&u->sig_delivered, 1);
    atomic_fetch_add(&u->sig_pending, 1);
  }
  mgc_interrupt();
}

static void state_init(struct dom_state *s) {
  int i;
  memset(s, 0, sizeof *s);
  s->magic = MAGIC;
  s->thread = pthread_self();
  for (i = 0; i < NV; i++)
    s->vals[i] = MGC_UNIT;
}

static mgc_value make_list(long n, long salt) {
  long i;
  MGC_PARAM0;
  MGC_LOCAL1(l);
  for (i = n; i >= 1; i--) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i * salt);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

static int list_ok(mgc_value l, long n, long salt) {
  long i;
  for (i = 1; i <= n; i++) {
    if (!MGC_IS_BLOCK(l) || MGC_FIELD(l, 0) != MGC_VAL_INT(i * salt))
      return 0;
    l = MGC_FIELD(l, 1);
  }
  return l == MGC_UNIT;
}

static int torture_on(void) {
  mgc_params p;
  mgc_get_params(&p);
  return p.torture_every != 0;
}

/* ------------------------------------------------------------------------ */
/* Parts A and B                                                            */
/* ------------------------------------------------------------------------ */

static mgc_value body_b(mgc_value arg) {
  int i, young = 0, intact = 1, promoted = 1;
  struct timespec ms = {0, 1000000};
  (void)arg;
  state_init(&st_b);
  mgc_domain_set_user(&st_b);
  MT_CHECK(mgc_domain_user() == &st_b, "B: its user pointer reads back");
  for (i = 0; i < NV; i++) {
    /* A root from here on: the hook reports it. */
    mgc_value l = make_list(LIST_LEN, i + 1);
    st_b.vals[i] = l;
    young += mgc_is_young(st_b.vals[i]);
  }
  atomic_store_explicit(&b_state, 1, memory_order_release);

  mgc_enter_blocking_section();
  /* Signals while blocked: the handler interrupts the domain whose backup
     thread resets its limit meanwhile. */
  for (i = 0; i < 3; i++)
    raise(SIGUSR1);
  while (atomic_load(&st_b.sig_delivered) < 3)
    nanosleep(&ms, NULL);
  atomic_store_explicit(&b_state, 2, memory_order_release);
  while (!atomic_load_explicit(&b_go, memory_order_acquire))
    nanosleep(&ms, NULL);
  mgc_leave_blocking_section();

  MT_CHECK(atomic_load(&st_b.sig_pending) == 0 && st_b.sig_served == 3,
           "B: the interrupts raised while blocked were all served by its "
           "reset hook on leaving (%ld served, %ld pending)",
           st_b.sig_served, (long)atomic_load(&st_b.sig_pending));
  for (i = 0; i < NV; i++) {
    intact &= list_ok(st_b.vals[i], LIST_LEN, i + 1);
    promoted &= !mgc_is_young(st_b.vals[i]);
  }
  MT_CHECK(intact, "B: the lists only its hook reported are intact");
  MT_CHECK(promoted || young == 0, "B: they were promoted while B was blocked");
  MT_CHECK(atomic_load(&st_b.hook_on_backup) > 0,
           "B: its roots were scanned by its backup thread (%ld)",
           (long)atomic_load(&st_b.hook_on_backup));
  MT_CHECK(
      atomic_load(&st_b.hook_young) > 0 && atomic_load(&st_b.hook_full) > 0,
      "B: young and full scans (%ld, %ld)", (long)atomic_load(&st_b.hook_young),
      (long)atomic_load(&st_b.hook_full));
  for (i = 0; i < NV; i++)
    st_b.vals[i] = MGC_UNIT;
  return MGC_UNIT;
}

static void part_ab(void) {
  struct sigaction sa, old;
  mgc_domain *b;
  unsigned long spins = 0;
  long on_main, on_backup;
  int i;
  mgc_params p, q;

  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, &old);

  b = mgc_domain_spawn(body_b, MGC_UNIT);
  MT_CHECK(b != NULL, "spawn B");
  if (b == NULL)
    return;
  mt_wait_at_least(&b_state, 2);
  while (atomic_load(&st_b.hook_young) == 0 && spins < 1000000) {
    /* B's lists may all have been promoted before it stored them (torture
       mode): a minor collection still scans B's roots. */
    mt_relax(&spins);
    mgc_minor_collection();
  }
  on_backup = atomic_load(&st_b.hook_on_backup);
  for (i = 0; i < 3; i++)
    mgc_minor_collection();
  MT_CHECK(atomic_load(&st_b.hook_on_backup) > on_backup,
           "blocked B's roots are scanned on its backup thread, which finds "
           "its state");
  mgc_major_collection();
  mgc_major_collection();
  /* One thread (the last to reach the section's barrier: domain 0's, or
     B's backup thread) scans both domains' roots: the hook must be given
     each domain's state, whatever the thread acts for. */
  on_main =
      atomic_load(&st_b.hook_on_main) + atomic_load(&st_main.hook_on_backup);
  atomic_store(&verifying, 1);
  MT_CHECK(mgc_verify_heap() == 0, "mgc_verify_heap with B blocked");
  atomic_store(&verifying, 0);
  MT_CHECK(
      atomic_load(&verify_saw_main) > 0 && atomic_load(&verify_saw_b) > 0,
      "the verification's hook calls found both domains' states (%ld, %ld)",
      (long)atomic_load(&verify_saw_main), (long)atomic_load(&verify_saw_b));
  MT_CHECK(atomic_load(&st_b.hook_on_main) +
                   atomic_load(&st_main.hook_on_backup) >
               on_main,
           "one of them on a thread acting for the other domain");
  /* Parameters changed while B is blocked (its backup thread serves). */
  mgc_get_params(&p);
  q = p;
  q.space_overhead = p.space_overhead + 11;
  MT_CHECK(mgc_set_params(&q) == MGC_OK, "mgc_set_params with B blocked");
  mgc_compact();
  MT_CHECK(mgc_set_params(&p) == MGC_OK, "and back");
  atomic_store_explicit(&b_go, 1, memory_order_release);
  mgc_domain_join(b);
  MT_CHECK(atomic_load(&hook_bad_user) == 0,
           "the hook never found another domain's state or garbage");
  sigaction(SIGUSR1, &old, NULL);
}

/* ------------------------------------------------------------------------ */
/* Part C                                                                   */
/* ------------------------------------------------------------------------ */

static atomic_int alloc_stop;
static atomic_long alloc_rounds;

static mgc_value body_alloc(mgc_value arg) {
  struct dom_state s;
  long n = 0;
  (void)arg;
  state_init(&s);
  mgc_domain_set_user(&s);
  while (!atomic_load_explicit(&alloc_stop, memory_order_acquire)) {
    s.vals[n % NV] = make_list(50, n + 1);
    if (n >= NV && n % 64 == 0)
      MT_CHECK(list_ok(s.vals[(n + 1) % NV], 50, n + 1 - NV + 1),
               "allocating domain: a list kept through its hook");
    n++;
    atomic_store_explicit(&alloc_rounds, n, memory_order_release);
  }
  mgc_domain_set_user(NULL);
  return MGC_UNIT;
}

static size_t range_words(void) {
  void *s, *e;
  mgc_minor_heap_range(&s, &e);
  return (size_t)((char *)e - (char *)s) / sizeof(mgc_value);
}

static mgc_value body_range(mgc_value arg) {
  (void)arg;
  return MGC_VAL_INT((long)range_words());
}

static void part_c(void) {
  mgc_params p, q;
  mgc_domain *e, *c;
  long i, r;
  mgc_value res;
  size_t want;

  mgc_get_params(&p);
  e = mgc_domain_spawn(body_alloc, MGC_UNIT);
  MT_CHECK(e != NULL, "spawn the allocating domain");
  if (e == NULL)
    return;
  mt_wait_at_least(&alloc_rounds, 3);
  for (i = 0; i < 20; i++) {
    q = p;
    q.space_overhead = i % 2 ? p.space_overhead : 40 + (unsigned)i;
    q.custom_minor_ratio = 50 + (unsigned)i;
    r = mgc_set_params(&q);
    if (r != MGC_OK)
      break;
    r = atomic_load(&alloc_rounds);
    mt_wait_at_least(&alloc_rounds, r + 1);
  }
  MT_CHECK(i == 20, "20 changes while another domain allocates");
  atomic_store_explicit(&alloc_stop, 1, memory_order_release);
  mgc_domain_join(e);

  /* A new default minor heap size: ours now, spawned domains' later. */
  q = p;
  want = p.minor_heap_words == 8192 ? 16384 : 8192;
  q.minor_heap_words = want;
  MT_CHECK(mgc_set_params(&q) == MGC_OK, "s changed to %zu", want);
  MT_CHECK(range_words() == want, "the caller's minor heap has %zu words (%zu)",
           want, range_words());
  c = mgc_domain_spawn(body_range, MGC_UNIT);
  MT_CHECK(c != NULL, "spawn after the change");
  if (c != NULL) {
    res = mgc_domain_join(c);
    MT_CHECK(MGC_INT_VAL(res) == (long)want,
             "a domain spawned afterwards gets %zu words (%ld)", want,
             (long)MGC_INT_VAL(res));
  }
  MT_CHECK(mgc_set_params(&p) == MGC_OK, "s back to %zu", p.minor_heap_words);
  c = mgc_domain_spawn(body_range, MGC_UNIT);
  MT_CHECK(c != NULL, "spawn after restoring");
  if (c != NULL) {
    res = mgc_domain_join(c);
    MT_CHECK(MGC_INT_VAL(res) == (long)p.minor_heap_words &&
                 range_words() == p.minor_heap_words,
             "both have the original size again (%ld)", (long)MGC_INT_VAL(res));
  }
}

int main(void) {
  int rc;
  setvbuf(stdout, NULL, _IOLBF, 0);
  mt_watchdog(600);
  mgc_set_fatal_handler(check_fatal_handler);
  rc = mgc_init(NULL);
  if (rc != 0) {
    CHECK(rc == 0, "mgc_init -> %d", rc);
    return check_done();
  }
  main_thread = pthread_self();
  state_init(&st_main);
  mgc_domain_set_user(&st_main);
  st_main.vals[0] = make_list(LIST_LEN, 1000);
  mgc_set_scan_roots_hook_kind(roots_hook);
  mgc_set_young_limit_reset_hook(reset_hook);

  part_ab();
  part_c();

  MT_CHECK(list_ok(st_main.vals[0], LIST_LEN, 1000),
           "domain 0's list, reported by the hook only, is intact");
  MT_CHECK(atomic_load(&reset_wrong_thread) == 0,
           "the limit-reset hook never ran on a backup thread (%ld)",
           (long)atomic_load(&reset_wrong_thread));
  MT_CHECK(torture_on() || atomic_load(&st_main.hook_young) > 0,
           "domain 0's roots were scanned");
  mgc_set_scan_roots_hook_kind(NULL);
  mgc_set_young_limit_reset_hook(NULL);
  mgc_domain_set_user(NULL);
  mgc_shutdown();
  return check_mt_done();
}
