/* Domains: runtime start-up and shutdown, per-domain state, spawn and join,
 * termination, blocking sections and backup threads (DESIGN §4.4-4.5).
 *
 * A domain's thread holds its domain_lock while it runs mutator code.  In a
 * blocking section it releases the lock and tells its backup thread, which
 * then services STW interrupts on the domain's behalf (its roots, its minor
 * heap, its share of the remembered sets), so a domain asleep in a system
 * call never delays a collection; leaving the section takes the lock back,
 * which waits for a collection the backup thread is serving.
 *
 * Invariant 37: a domain leaves the participant set only with an empty minor
 * heap, its marking and sweeping done and no interrupt pending, under
 * all_domains_lock; it then hands its pools and statistics over (orphans),
 * stops and joins its backup thread, and only then frees its slot, so a
 * slot is never reused while an old backup thread lives (ocaml #11801).
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mgc_runtime mgc_rt;
struct mgc_young_range mgc_young_range;
struct mgc_fast_state mgc_no_domain_state = {0, UINTPTR_MAX, NULL};
MGC_THREAD_LOCAL struct mgc_fast_state *mgc_tls_state = &mgc_no_domain_state;
_Thread_local bool mgc_tls_on_backup;

_Static_assert(offsetof(struct mgc_dom, fast) == 0,
               "the fast state must open the domain state");

void mgc_domain_set_self(struct mgc_dom *d) {
  mgc_tls_state = d ? &d->fast : &mgc_no_domain_state;
}

void mgc_self_or_fatal_slow(const char *what) {
  mgc_fatal("%s called from a thread that is not an mgc domain%s", what,
            mgc_rt.initialised ? "" : " (mgc_init has not been called)");
}

int mgc_domain_self(void) {
  struct mgc_fast_state *s = mgc_tls_state;
  return s == &mgc_no_domain_state ? -1 : ((struct mgc_dom *)s)->unique_id;
}

int mgc_domain_index(void) {
  struct mgc_fast_state *s = mgc_tls_state;
  return s == &mgc_no_domain_state ? -1 : ((struct mgc_dom *)s)->id;
}

/* Relaxed: the pointer is written by the domain's own thread and read by
   that thread, by its backup thread (after taking the domain lock that the
   domain released on entering its blocking section) or inside a STW section
   (after barriers): those orders publish it and what it points to. */
void mgc_domain_set_user(void *p) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_domain_set_user");
  atomic_store_explicit(&d->user, p, memory_order_relaxed);
}

/* The domain whose roots are being scanned on this thread (the verifier
   scans every domain's), else the thread's own domain (a backup thread's
   state is its domain's). */
void *mgc_domain_user(void) {
  struct mgc_dom *d = mgc_tls_scanning;
  if (!d) {
    struct mgc_fast_state *s = mgc_tls_state;
    if (s == &mgc_no_domain_state)
      return NULL;
    d = (struct mgc_dom *)s;
  }
  return atomic_load_explicit(&d->user, memory_order_relaxed);
}

void mgc_call_hook(_Atomic(void (*)(void)) *hook) {
  /* Acquire: pairs with the release store of the setter. */
  void (*f)(void) = atomic_load_explicit(hook, memory_order_acquire);
  if (f)
    f();
}

/* ------------------------------------------------------------------------ */
/* Domain state                                                             */
/* ------------------------------------------------------------------------ */

/* Prepares slot id for a new domain (under all_domains_lock the slot was
   marked in use; the state itself is private until the domain joins). */
static struct mgc_dom *dom_prepare(int id) {
  struct mgc_dom *d = mgc_rt.slots[id];
  if (!d) {
    d = mgc_xcalloc(1, sizeof *d, "domain state");
    pthread_mutex_init(&d->domain_lock, NULL);
    pthread_mutex_init(&d->intr_lock, NULL);
    pthread_cond_init(&d->intr_cond, NULL);
    mgc_rt.slots[id] = d;
  }
  d->id = id;
  d->ring = mgc_events_ring_for(id);
  d->fast.local_roots = NULL;
  __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
  d->requested_minor = d->requested_major_slice = false;
  d->requested_global_slices = false;
  d->torture_count = 0;
  d->promote_sweeps = -1;
  d->minor_seq = LOAD_RELAXED(&mgc_minor_gcs_started);
  mgc_table_init(&d->major_ref, sizeof(mgc_value *));
  memset(d->remember_filter, 0, sizeof d->remember_filter);
  mgc_table_init(&d->custom, sizeof(struct custom_entry));
  mgc_table_init(&d->ephe_ref, sizeof(struct ephe_ref_entry));
  mgc_stacks_init_domain(d);
  d->extra_minor_resources = 0;
  atomic_store(&d->interrupt_pending, 0);
  atomic_store(&d->embedder_interrupt, 0);
  atomic_store_explicit(&d->user, NULL, memory_order_relaxed);
  memset(&d->heap, 0, sizeof d->heap);
  memset(&d->mark, 0, sizeof d->mark);
  if (!d->grey)
    d->grey = mgc_xmalloc(GREY_CAPACITY * sizeof(mgc_value), "grey buffer");
  d->grey_count = 0;
  d->sweeping_done = d->marking_done = true;
  d->mark_given = d->mark_taken = 0;
  memset(&d->ephe, 0, sizeof d->ephe);
  mgc_final_info_free(d->final);
  d->final = mgc_final_info_new();
  atomic_store(&d->slice_epoch, 0);
  d->allocated_words = 0;
  d->direct_major_words = 0;
  d->extra_resources = 0;
  memset(&d->stats, 0, sizeof d->stats);
  memset(&d->pauses, 0, sizeof d->pauses);
  memset(&d->major_pauses, 0, sizeof d->major_pauses);
  d->backup_state = BACKUP_RUNNING;
  d->backup_wakeups = 0; /* no backup thread yet: the slot is ours */
  d->has_backup = false;
  d->terminating = false;
  return d;
}

static void dom_release_memory(struct mgc_dom *d) {
  mgc_table_free(&d->major_ref);
  mgc_table_free(&d->custom);
  mgc_table_free(&d->ephe_ref);
  mgc_table_free(&d->conts);
  mgc_final_info_free(d->final);
  d->final = NULL;
  mgc_mark_stack_free(&d->mark);
  mgc_minor_heap_decommit(d);
}

/* Takes all_domains_lock at a moment when no section runs (for a domain
   that is not a participant yet).  After waiting through two sections it
   holds new ones off (joiners_waiting, OCaml 5.3's remedy for spawn
   starvation) until unlock_joiner.  Returns what to pass to it. */
static int lock_joiner(void) {
  int waited = 0;
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  while (LOAD_RELAXED(&mgc_rt.stw_leader) != NULL) {
    if (++waited == 2)
      atomic_fetch_add(&mgc_rt.joiners_waiting, 1);
    pthread_cond_wait(&mgc_rt.all_domains_cond, &mgc_rt.all_domains_lock);
  }
  return waited;
}

static void unlock_joiner(int waited) {
  if (waited >= 2)
    atomic_fetch_sub(&mgc_rt.joiners_waiting, 1);
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
}

/* Adds d to the participants once no section is running. */
static void join_participants(struct mgc_dom *d) {
  int waited = lock_joiner();
  /* A section that grew the reservation since our heap was committed
     (stw_grow_arena) released that memory: commit it again there.  No
     section runs now, so the reservation is stable. */
  if (mgc_minor_heap_recommit(d) != 0)
    mgc_fatal("cannot commit a minor heap of %zu words", d->minor_heap_words);
  int n = LOAD_RELAXED(&mgc_rt.n_participants);
  mgc_major_domain_join(d);
  mgc_rt.participants[n] = d;
  STORE_RELAXED(&mgc_rt.n_participants, n + 1);
  unlock_joiner(waited);
}

/* ------------------------------------------------------------------------ */
/* Backup threads and blocking sections                                     */
/* ------------------------------------------------------------------------ */

/* Work the backup thread does for its blocked domain: a STW request, or
   a global slice request (DESIGN §4.2: after serving a section, a
   participant polls GC work, so that a blocked domain's slice is run). */
static bool backup_has_work(struct mgc_dom *d) {
  return atomic_load_explicit(&d->interrupt_pending, memory_order_acquire) ||
         atomic_load_explicit(&d->slice_epoch, memory_order_relaxed) <
             atomic_load(&mgc_rt.slice_epoch);
}

static void *backup_main(void *arg) {
  struct mgc_dom *d = arg;
  mgc_domain_set_self(d);
  mgc_tls_on_backup = true;
  pthread_mutex_lock(&d->intr_lock);
  for (;;) {
    if (d->backup_state == BACKUP_TERMINATE)
      break;
    if (d->backup_state == BACKUP_BLOCKING && backup_has_work(d)) {
      pthread_mutex_unlock(&d->intr_lock);
      if (pthread_mutex_trylock(&d->domain_lock) == 0) {
        if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
          mgc_stw_participate(d);
        /* Never finalisers: they run on the domain's own thread. */
        mgc_poll_gc_work(d);
        pthread_mutex_unlock(&d->domain_lock);
      } else {
        /* The domain is coming back and will serve the interrupt. */
        sched_yield();
      }
      pthread_mutex_lock(&d->intr_lock);
      continue;
    }
    pthread_cond_wait(&d->intr_cond, &d->intr_lock);
    d->backup_wakeups++;
  }
  d->backup_state = BACKUP_RUNNING;
  pthread_mutex_unlock(&d->intr_lock);
  return NULL;
}

static int start_backup(struct mgc_dom *d) {
  if (d->has_backup)
    return 0;
  if (pthread_create(&d->backup_thread, NULL, backup_main, d) != 0)
    return MGC_ETHREAD;
  d->has_backup = true;
  return 0;
}

static void stop_backup(struct mgc_dom *d) {
  if (!d->has_backup)
    return;
  pthread_mutex_lock(&d->intr_lock);
  d->backup_state = BACKUP_TERMINATE;
  pthread_cond_signal(&d->intr_cond);
  pthread_mutex_unlock(&d->intr_lock);
  pthread_join(d->backup_thread, NULL);
  d->has_backup = false;
}

void mgc_enter_blocking_section(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_enter_blocking_section");
  pthread_mutex_lock(&d->intr_lock);
  bool nested = d->backup_state == BACKUP_BLOCKING;
  pthread_mutex_unlock(&d->intr_lock);
  MGC_CHECK(!nested,
            "mgc_enter_blocking_section: already in a blocking section");
  if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
    mgc_stw_participate(d);
  pthread_mutex_unlock(&d->domain_lock);
  pthread_mutex_lock(&d->intr_lock);
  d->backup_state = BACKUP_BLOCKING;
  /* Relaxed: mgc_crowded is a heuristic and reads it so. */
  atomic_fetch_add_explicit(&mgc_rt.domains_blocking, 1, memory_order_relaxed);
  pthread_cond_signal(&d->intr_cond);
  pthread_mutex_unlock(&d->intr_lock);
}

void mgc_leave_blocking_section(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_leave_blocking_section");
  pthread_mutex_lock(&d->intr_lock);
  if (d->backup_state != BACKUP_BLOCKING) {
    pthread_mutex_unlock(&d->intr_lock);
    mgc_fatal("mgc_leave_blocking_section: not in a blocking section");
  }
  d->backup_state = BACKUP_RUNNING;
  atomic_fetch_sub_explicit(&mgc_rt.domains_blocking, 1, memory_order_relaxed);
  pthread_mutex_unlock(&d->intr_lock);
  /* Waits while the backup thread serves a collection for us. */
  pthread_mutex_lock(&d->domain_lock);
  mgc_handle_gc_interrupt(d);
}

/* ------------------------------------------------------------------------ */
/* Init and shutdown                                                        */
/* ------------------------------------------------------------------------ */

/* The processors this process may run on (its affinity mask), at least 1. */
static size_t usable_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return (size_t)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (size_t)n : 1;
}

int mgc_init(const mgc_params *given) {
  if (mgc_rt.initialised)
    return MGC_ESTATE;
  mgc_params p;
  if (given)
    p = *given;
  else
    mgc_params_default(&p);
  int r = mgc_params_validate(&p);
  if (r)
    return r;
  const char *env = getenv("MGC_PARAMS");
  if (env && (r = mgc_params_parse(&p, env)) != 0) {
    fprintf(stderr, "mgc: MGC_PARAMS rejected\n");
    return r;
  }
  memset(&mgc_rt, 0, sizeof mgc_rt);
  mgc_rt.params = p;
  mgc_rt.max_domains = p.max_domains;
  mgc_rt.cpus = usable_cpus();
  pthread_mutex_init(&mgc_rt.all_domains_lock, NULL);
  pthread_cond_init(&mgc_rt.all_domains_cond, NULL);
  pthread_mutex_init(&mgc_rt.pool_lock, NULL);
  mgc_colours.marked = (word)0 << 8;
  mgc_colours.unmarked = (word)1 << 8;
  mgc_colours.garbage = (word)2 << 8;
  mgc_colours.cycle = 0;                  /* = mgc_rt.major_cycles */
  mgc_colours.alloc = mgc_colours.marked; /* PHASE_MARK_MAIN */
  atomic_store(&mgc_minor_gcs_started, 0);
  mgc_heap_init();
  mgc_roots_init();
  mgc_atoms_init();
  r = mgc_minor_arena_init(p.max_domains, p.minor_heap_words);
  if (r) {
    fprintf(stderr, "mgc: cannot reserve the minor heaps (%u x %zu words)\n",
            p.max_domains, p.minor_heap_words);
    return r;
  }
  mgc_rt.slots = mgc_xcalloc(p.max_domains, sizeof *mgc_rt.slots, "slots");
  mgc_rt.participants =
      mgc_xcalloc(p.max_domains, sizeof *mgc_rt.participants, "domains");
  mgc_stw_init(p.max_domains);
  mgc_events_init(p.max_domains);
  mgc_log_open(p.log_path);
  mgc_major_init();
  struct mgc_dom *d = dom_prepare(0);
  d->in_use = true;
  d->unique_id = mgc_rt.next_unique_id++;
  mgc_major_domain_join(d);
  if ((r = mgc_minor_heap_commit(d, p.minor_heap_words)) != 0) {
    fprintf(stderr, "mgc: cannot commit the minor heap\n");
    return r;
  }
  pthread_mutex_lock(&d->domain_lock);
  mgc_rt.participants[0] = d;
  STORE_RELAXED(&mgc_rt.n_participants, 1);
  STORE_RELAXED(&mgc_rt.domains_alive, 1);
  mgc_domain_set_self(d);
  if (p.trace_path[0])
    mgc_trace_open(p.trace_path);
  mgc_rt.initialised = true;
  mgc_reset_young_limit(d);
  mgc_log(MGC_VERBOSE_PARAMS, "init: s=%zu o=%u d=%u t=%zu V=%d",
          p.minor_heap_words, p.space_overhead, p.max_domains, p.torture_every,
          p.verify);
  return 0;
}

void mgc_shutdown(void) {
  if (!mgc_rt.initialised)
    return;
  struct mgc_dom *d = mgc_self_or_fatal("mgc_shutdown");
  MGC_CHECK(LOAD_RELAXED(&mgc_rt.n_participants) == 1,
            "mgc_shutdown: %d domains are still running; join them first",
            LOAD_RELAXED(&mgc_rt.n_participants));
  if (mgc_rt.params.verbose & MGC_VERBOSE_STATS)
    mgc_stats_print();
  stop_backup(d);
  mgc_trace_close();
  mgc_stacks_teardown();
  mgc_events_teardown();
  mgc_log_close();
  for (size_t i = 0; i < mgc_rt.max_domains; i++) {
    struct mgc_dom *s = mgc_rt.slots[i];
    if (!s)
      continue;
    mgc_heap_free_domain(s);
    dom_release_memory(s);
    if (s == d)
      pthread_mutex_unlock(&s->domain_lock);
    pthread_mutex_destroy(&s->domain_lock);
    pthread_mutex_destroy(&s->intr_lock);
    pthread_cond_destroy(&s->intr_cond);
    free(s->grey);
    mgc_final_info_free(s->final);
    free(s);
  }
  mgc_heap_teardown();
  mgc_final_teardown();
  mgc_ephe_teardown();
  mgc_mark_share_teardown();
  mgc_global_roots_teardown();
  mgc_minor_arena_free();
  mgc_stw_teardown();
  free(mgc_rt.slots);
  free(mgc_rt.participants);
  pthread_mutex_destroy(&mgc_rt.all_domains_lock);
  pthread_cond_destroy(&mgc_rt.all_domains_cond);
  pthread_mutex_destroy(&mgc_rt.pool_lock);
  mgc_domain_set_self(NULL);
  memset(&mgc_rt, 0, sizeof mgc_rt);
}

/* ------------------------------------------------------------------------ */
/* Spawn, terminate, join                                                   */
/* ------------------------------------------------------------------------ */

struct mgc_domain {
  pthread_t thread;
  mgc_value (*body)(mgc_value);
  mgc_value arg;    /* generational global root until the body starts */
  mgc_value result; /* generational global root once the body returned */
  int id;
  size_t minor_words;   /* the s= in force at the spawn (mgc_set_params) */
  pthread_mutex_t lock; /* handshake */
  pthread_cond_t cond;
  int state; /* 0 starting, 1 running, negative: error */
};

/* Leaves the participant set (invariant 37), looping until nothing is left
   to do under all_domains_lock. */
/* Takes all_domains_lock at a moment when no section runs and nothing is
   asked of d; serves the sections meanwhile (without doing d's own work
   again: a section of its own may still be finishing on other domains). */
static void lock_between_sections(struct mgc_dom *d) {
  for (;;) {
    pthread_mutex_lock(&mgc_rt.all_domains_lock);
    if (LOAD_RELAXED(&mgc_rt.stw_leader) == NULL &&
        !atomic_load(&d->interrupt_pending))
      return;
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
    if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
      mgc_stw_participate(d);
    else
      sched_yield();
  }
}

static void domain_terminate(struct mgc_dom *d) {
  d->terminating = true;
  /* Stacks still held die with their domain (mgc.h, Continuations). */
  mgc_stacks_release_held(d);
  for (;;) {
    mgc_major_domain_terminate(d);
    lock_between_sections(d);
    if (!mgc_major_domain_done(d) || d->fast.young_ptr != d->young_end ||
        mgc_table_count(&d->major_ref) != 0 ||
        mgc_table_count(&d->ephe_ref) != 0) {
      /* A section served meanwhile gave d work again (a cycle start). */
      pthread_mutex_unlock(&mgc_rt.all_domains_lock);
      continue;
    }
    int n = LOAD_RELAXED(&mgc_rt.n_participants);
    for (int i = 0; i < n; i++) {
      if (mgc_rt.participants[i] == d) {
        mgc_rt.participants[i] = mgc_rt.participants[n - 1];
        break;
      }
    }
    STORE_RELAXED(&mgc_rt.n_participants, n - 1);
    mgc_heap_orphan(d);
    mgc_stats_orphan(d);
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
    break;
  }
  stop_backup(d);
  pthread_mutex_unlock(&d->domain_lock);
  dom_release_memory(d);
  mgc_domain_set_self(NULL);
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  d->in_use = false;
  atomic_fetch_sub(&mgc_rt.domains_alive, 1);
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
}

static void handshake(struct mgc_domain *h, int state) {
  pthread_mutex_lock(&h->lock);
  h->state = state;
  pthread_cond_signal(&h->cond);
  pthread_mutex_unlock(&h->lock);
}

static void *domain_main(void *arg) {
  struct mgc_domain *h = arg;
  struct mgc_dom *d = mgc_rt.slots[h->id];
  /* The reservation changes only inside sections (stw_grow_arena): read it
     under the lock with none running (join_participants checks again). */
  int waited = lock_joiner();
  int r = mgc_minor_heap_commit(d, h->minor_words);
  unlock_joiner(waited);
  if (r == 0)
    r = start_backup(d);
  if (r) {
    mgc_minor_heap_decommit(d);
    pthread_mutex_lock(&mgc_rt.all_domains_lock);
    d->in_use = false;
    atomic_fetch_sub(&mgc_rt.domains_alive, 1);
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
    handshake(h, r);
    return NULL;
  }
  pthread_mutex_lock(&d->domain_lock);
  mgc_domain_set_self(d);
  mgc_reset_young_limit(d);
  join_participants(d);
  mgc_value a = h->arg;
  mgc_remove_generational_global_root(&h->arg);
  handshake(h, 1);
  mgc_value res = h->body(a);
  h->result = res;
  mgc_register_generational_global_root(&h->result);
  domain_terminate(d);
  return NULL;
}

mgc_domain *mgc_domain_spawn(mgc_value (*body)(mgc_value arg), mgc_value arg) {
  struct mgc_dom *self = mgc_self_or_fatal("mgc_domain_spawn");
  MGC_CHECK(body != NULL, "mgc_domain_spawn: NULL body");
  int r = start_backup(self);
  if (r) {
    mgc_set_last_error(r);
    return NULL;
  }
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  int id = -1;
  if (LOAD_RELAXED(&mgc_rt.domains_alive) < mgc_rt.max_domains) {
    for (size_t i = 0; i < mgc_rt.max_domains; i++) {
      if (!mgc_rt.slots[i] || !mgc_rt.slots[i]->in_use) {
        id = (int)i;
        break;
      }
    }
  }
  if (id < 0) {
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
    mgc_set_last_error(MGC_ETOOMANYDOMAINS);
    return NULL;
  }
  struct mgc_dom *d = dom_prepare(id);
  d->in_use = true;
  d->unique_id = mgc_rt.next_unique_id++;
  atomic_fetch_add(&mgc_rt.domains_alive, 1);
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);

  struct mgc_domain *h = mgc_xcalloc(1, sizeof *h, "domain handle");
  h->body = body;
  h->arg = arg;
  h->result = MGC_UNIT;
  h->id = id;
  /* Read by a participant: mgc_set_params writes it inside a section. */
  h->minor_words = mgc_rt.params.minor_heap_words;
  pthread_mutex_init(&h->lock, NULL);
  pthread_cond_init(&h->cond, NULL);
  mgc_register_generational_global_root(&h->arg);
  if (pthread_create(&h->thread, NULL, domain_main, h) != 0) {
    mgc_remove_generational_global_root(&h->arg);
    pthread_mutex_lock(&mgc_rt.all_domains_lock);
    d->in_use = false;
    atomic_fetch_sub(&mgc_rt.domains_alive, 1);
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    free(h);
    mgc_set_last_error(MGC_ETHREAD);
    return NULL;
  }
  /* Wait for the child inside a blocking section: collections (which the
     child may already take part in) must not wait for us. */
  mgc_enter_blocking_section();
  pthread_mutex_lock(&h->lock);
  while (h->state == 0)
    pthread_cond_wait(&h->cond, &h->lock);
  int state = h->state;
  pthread_mutex_unlock(&h->lock);
  mgc_leave_blocking_section();
  if (state < 0) {
    pthread_join(h->thread, NULL);
    mgc_remove_generational_global_root(&h->arg);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    free(h);
    mgc_set_last_error(state);
    return NULL;
  }
  return h;
}

mgc_value mgc_domain_join(mgc_domain *h) {
  mgc_self_or_fatal("mgc_domain_join");
  MGC_CHECK(h != NULL, "mgc_domain_join: NULL domain");
  mgc_enter_blocking_section();
  pthread_join(h->thread, NULL);
  mgc_leave_blocking_section();
  mgc_value res = h->result;
  mgc_remove_generational_global_root(&h->result);
  pthread_mutex_destroy(&h->lock);
  pthread_cond_destroy(&h->cond);
  free(h);
  return res;
}
