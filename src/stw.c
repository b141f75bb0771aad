/* Stop-the-world sections and barriers (DESIGN §4.2-4.3).
 *
 * A domain becomes leader by setting stw_leader under all_domains_lock
 * (invariant 38: one leader at a time; domains join or leave the
 * participant set only under that lock while there is none).  The leader
 * snapshots the participants, writes the request, interrupts every other
 * participant (flag, then all-ones in its young limit, then a signal for its
 * backup thread) and releases the lock.  Every participant — the leader too
 * — arrives at the enter barrier, runs the handler, and leaves; the last to
 * leave clears stw_leader and wakes domains waiting to join.  A domain that
 * fails to lead services its own pending interrupt (it is being asked to
 * join another section) and the caller retries.
 *
 * The global barrier is sense-reversing: arrivals fetch-add a counter; the
 * last arriver may run a single-domain action and then flips the sense
 * word with a release store; the others wait (spin, then futex) for the
 * flip with acquire loads.  Code inside a handler is exclusive with
 * mutators only up to its last barrier.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <sched.h>
#include <stdlib.h>

struct stw_request {
  mgc_stw_handler handler;
  void *data;
  int n;
  struct mgc_dom **parts; /* max_domains entries */
  uint64_t requested_at;
  _Atomic int still_processing;
};

static struct stw_request request;
static _Atomic uint32_t barrier_count;
static _Atomic uint32_t barrier_sense;

/* The domain this thread serves in the current section (its own thread
   or its backup thread): barrier waits are its events. */
static _Thread_local struct mgc_dom *serving;

static bool barrier_begin(int n, struct mgc_dom *worker) {
  /* The sense read before arriving is the current round's: it cannot flip
     before our own arrival. */
  uint32_t sense = LOAD_ACQUIRE(&barrier_sense);
  /* acq_rel: the last arriver acquires every other arriver's writes. */
  uint32_t arrived =
      atomic_fetch_add_explicit(&barrier_count, 1, memory_order_acq_rel) + 1;
  if (arrived == (uint32_t)n)
    return true;
  struct mgc_dom *d = serving;
  if (d)
    mgc_ev_begin(d, MGC_EVN_BARRIER);
  mgc_wait_change_working(&barrier_sense, sense,
                          worker ? mgc_major_opportunistic_work : NULL, worker);
  if (d)
    mgc_ev_end(d, MGC_EVN_BARRIER);
  return false;
}

bool mgc_stw_barrier_begin(int n) { return barrier_begin(n, NULL); }

void mgc_stw_barrier_working(int n, struct mgc_dom *d) {
  if (n > 1 && barrier_begin(n, d))
    mgc_stw_barrier_release();
}

/* Relaxed: written by the releaser before its release store of the sense,
   read by every participant after its acquire load that saw the flip and
   before it arrives at the next barrier, whose releaser writes again only
   after every arrival; the barrier orders both ways. */
static _Atomic uint64_t released_at;

uint64_t mgc_stw_last_release_ns(void) { return LOAD_RELAXED(&released_at); }

void mgc_stw_barrier_release(void) {
  STORE_RELAXED(&released_at, mgc_now_ns());
  /* The counter is reset before the flip, so that arrivals at the next
     barrier (which happen after they see the flip) count from zero. */
  STORE_RELAXED(&barrier_count, 0);
  uint32_t s = LOAD_RELAXED(&barrier_sense);
  STORE_RELEASE(&barrier_sense, s + 1);
  mgc_futex_wake_all(&barrier_sense);
}

void mgc_stw_barrier(int n) {
  if (n <= 1)
    return;
  if (mgc_stw_barrier_begin(n))
    mgc_stw_barrier_release();
}

bool mgc_stw_in_progress(void) {
  return LOAD_ACQUIRE(&mgc_rt.stw_leader) != NULL;
}

/* Wakes target's backup thread, only when its domain sits in a blocking
   section: a running domain serves the request itself at its next poll,
   and a signal to an idle backup thread only put that thread on the
   domain's processor for nothing (each one preempted a mutator: about
   18000 of them in a 6-second mt-binarytrees run at D=2).  No request is
   lost: the caller stored what the backup thread tests (backup_has_work)
   before taking intr_lock, and a domain that enters a blocking section
   after this look sets the state under the same lock and signals itself,
   so the backup thread's test after it wakes sees the request. */
static void wake_backup(struct mgc_dom *target) {
  pthread_mutex_lock(&target->intr_lock);
  if (target->backup_state == BACKUP_BLOCKING)
    pthread_cond_signal(&target->intr_cond);
  pthread_mutex_unlock(&target->intr_lock);
}

/* Asks target to join the section.  The seq_cst store of the flag pairs
   with the owner's limit reset (see mgc_reset_young_limit). */
void mgc_stw_interrupt(struct mgc_dom *target) {
  atomic_store(&target->interrupt_pending, 1);
  __atomic_store_n(&target->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
  wake_backup(target);
}

/* Makes target's next allocation or poll take the slow path and, when it
   is in a blocking section, wakes its backup thread; no section: a global
   slice request. */
void mgc_domain_interrupt(struct mgc_dom *target) {
  __atomic_store_n(&target->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
  wake_backup(target);
}

static void run_section(struct mgc_dom *d) {
  struct stw_request *r = &request;
  int n = r->n, idx = d->stw_index;
  struct mgc_dom *outer = serving;
  serving = d;
  mgc_ev_begin(d, MGC_EVN_STW);
  /* Enter barrier: while the others come, do some marking or sweeping. */
  if (barrier_begin(n, d)) {
    uint64_t latency = mgc_now_ns() - r->requested_at;
    /* Everybody is in: no registration can happen until the end.  The
       flag stays set until a minor collection has processed the tables
       (a section may hold no minor collection). */
    mgc_rt.final_barrier =
        atomic_load_explicit(&mgc_rt.young_last_foreign, memory_order_relaxed);
    mgc_histogram_add(&mgc_rt.stw_latency, latency, true);
    mgc_log(MGC_VERBOSE_STW, "section of %d domains: all stopped after %.1f us",
            n, (double)latency / 1e3);
    mgc_stw_barrier_release();
  }
  r->handler(d, r->data, idx, n, r->parts);
  mgc_ev_end(d, MGC_EVN_STW);
  serving = outer;
  /* acq_rel: the last one out sees everybody's handler writes before it
     lets a new leader in. */
  if (atomic_fetch_sub_explicit(&r->still_processing, 1,
                                memory_order_acq_rel) == 1) {
    pthread_mutex_lock(&mgc_rt.all_domains_lock);
    atomic_store_explicit(&mgc_rt.stw_leader, NULL, memory_order_release);
    pthread_cond_broadcast(&mgc_rt.all_domains_cond);
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
  }
}

/* Called by the interrupted domain (or its backup thread) after an acquire
   load saw its flag set: the request is complete by then. */
void mgc_stw_participate(struct mgc_dom *d) {
  atomic_store_explicit(&d->interrupt_pending, 0, memory_order_relaxed);
  run_section(d);
}

/* We could not lead: if another section wants us, join it (invariant 38);
   otherwise let the domain that holds things up run. */
static int not_leading(struct mgc_dom *d) {
  if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
    mgc_stw_participate(d);
  else
    sched_yield();
  return 0;
}

int mgc_try_run_on_all_domains(struct mgc_dom *d, mgc_stw_handler h, void *data,
                               void (*leader_setup)(void *)) {
  if (LOAD_ACQUIRE(&mgc_rt.stw_leader) != NULL ||
      pthread_mutex_trylock(&mgc_rt.all_domains_lock) != 0)
    return not_leading(d);
  if (LOAD_RELAXED(&mgc_rt.stw_leader) != NULL ||
      atomic_load(&mgc_rt.joiners_waiting) > 0) {
    pthread_mutex_unlock(&mgc_rt.all_domains_lock);
    return not_leading(d);
  }
  atomic_store_explicit(&mgc_rt.stw_leader, d, memory_order_relaxed);
  struct stw_request *r = &request;
  r->requested_at = mgc_now_ns();
  r->handler = h;
  r->data = data;
  int n = LOAD_RELAXED(&mgc_rt.n_participants);
  r->n = n;
  atomic_store_explicit(&r->still_processing, n, memory_order_relaxed);
  if (leader_setup)
    leader_setup(data);
  for (int i = 0; i < n; i++) {
    struct mgc_dom *p = mgc_rt.participants[i];
    r->parts[i] = p;
    p->stw_index = i;
  }
  for (int i = 0; i < n; i++)
    if (r->parts[i] != d)
      mgc_stw_interrupt(r->parts[i]);
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
  run_section(d);
  return 1;
}

void mgc_stw_init(size_t max_domains) {
  request.parts = mgc_xcalloc(max_domains, sizeof *request.parts, "stw");
  STORE_RELAXED(&barrier_count, 0);
  STORE_RELAXED(&barrier_sense, 0);
}

void mgc_stw_teardown(void) {
  free(request.parts);
  request.parts = NULL;
}
