/* domain.c (ocamlrun-mgc): OCaml's domain state on top of an mgc domain.
 *
 * Milestone 1 runs one domain: the main thread, mgc's domain 0.  This
 * file owns the OCaml domain state (Caml_state), its minor heap pointers
 * (invariants P2 and P3 of port.h), interrupts, blocking sections (the
 * domain lock is mgc's blocking section), the stop-the-world entry point
 * that runtime events uses (one participant), domain-local storage, and
 * the Domain primitives (Domain.spawn raises Failure).
 */
#include "port.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "caml/alloc.h"
#include "caml/backtrace.h"
#include "caml/callback.h"
#include "caml/domain.h"
#include "caml/fail.h"
#include "caml/fiber.h"
#include "caml/globroots.h"
#include "caml/memory.h"
#include "caml/memprof.h"
#include "caml/minor_gc.h"
#include "caml/roots.h"
#include "caml/signals.h"
#include "caml/startup_aux.h"

CAMLexport CAMLthread_local caml_domain_state *caml_state;

/* Bounds of the reservation of every minor heap (Is_young). */
CAMLexport uintnat caml_minor_heaps_start;
CAMLexport uintnat caml_minor_heaps_end;

CAMLexport void (*caml_atfork_hook)(void) = NULL;
CAMLexport void (*caml_domain_initialize_hook)(void) = NULL;
CAMLexport void (*caml_domain_stop_hook)(void) = NULL;
static void no_external_interrupt(void) {}
CAMLexport void (*caml_domain_external_interrupt_hook)(void) =
    no_external_interrupt;

/* The one domain's state, also reachable from signal handlers that run
   on other threads (caml_interrupt_all_signal_safe). */
static caml_domain_state *_Atomic the_domain;

CAMLexport caml_domain_state *caml_get_domain_state(void) { return caml_state; }

/* ---------------------------------------------------------------------- */
/* P2: the allocation pointer                                             */
/* ---------------------------------------------------------------------- */

void port_sync_in(void) {
  caml_domain_state *st = caml_state;
  if (st == NULL)
    return;
  mgc_tls_state->young_ptr = (uintptr_t)st->young_ptr;
  port_flush_minor_tables(st);
}

/* The domain's minor heap and the reservation of all of them, re-read at
   start-up and whenever mgc may have moved or resized them (Gc.set). */
static void refresh_bounds(caml_domain_state *st) {
  void *start, *end;
  caml_minor_heaps_start = (uintnat)mgc_young_range.start;
  caml_minor_heaps_end = (uintnat)mgc_young_range.end;
  mgc_minor_heap_range(&start, &end);
  st->young_start = (value *)start;
  st->young_end = (value *)end;
  st->minor_heap_wsz = ((uintnat)end - (uintnat)start) / sizeof(value);
  /* memprof sampling is off in milestone 1: its trigger never fires. */
  st->memprof_young_trigger = st->young_start;
  st->young_trigger = st->young_start;
}

void port_refresh_bounds(void) {
  if (caml_state != NULL)
    refresh_bounds(caml_state);
}

void port_sync_out(void) {
  caml_domain_state *st = caml_state;
  if (st == NULL)
    return;
  if ((value *)mgc_tls_state->young_ptr < st->young_start ||
      (value *)mgc_tls_state->young_ptr > st->young_end)
    refresh_bounds(st); /* the minor heap was resized or moved */
  st->young_ptr = (value *)mgc_tls_state->young_ptr;
  caml_reset_young_limit(st);
}

/* P3.  The store comes first, the check of the pending flags after: an
   interrupt (which sets its flag, then the limit) arriving in between
   either is seen here or stores all-ones after our store. */
static int torture; /* MGC_PARAMS has t=N */

void caml_reset_young_limit(caml_domain_state *st) {
  uintnat lim = __atomic_load_n(&mgc_tls_state->young_limit, __ATOMIC_RELAXED);
  /* Under mgc's torture mode every allocation must take mgc's slow path
     (it counts them), but the interpreter's polls need not: a limit equal
     to the allocation pointer fails every allocation and no poll.  mgc's
     own requests are served by that slow path at the next allocation. */
  if (torture)
    lim = (uintnat)st->young_ptr;
  if ((uintnat)st->memprof_young_trigger > lim)
    lim = (uintnat)st->memprof_young_trigger;
  atomic_exchange(&st->young_limit, lim);
  if (atomic_load(&st->action_pending) || st->requested_minor_gc ||
      st->requested_major_slice ||
      atomic_load_relaxed(&st->requested_external_interrupt))
    atomic_store_relaxed(&st->young_limit, (uintnat)-1);
}

void caml_update_young_limit_after_c_call(caml_domain_state *st) {
  if (CAMLunlikely(st->action_pending))
    atomic_store_relaxed(&st->young_limit, (uintnat)-1);
}

/* mgc recomputed its own limit (after a collection, after serving an
   interrupt): OCaml's follows, without losing a pending action. */
static void on_mgc_limit_reset(void) {
  caml_domain_state *st = caml_state;
  if (st != NULL && st->young_start != NULL)
    caml_reset_young_limit(st);
}

/* ---------------------------------------------------------------------- */
/* Interrupts and GC polling                                              */
/* ---------------------------------------------------------------------- */

/* Async-signal-safe: relaxed stores only. */
static void interrupt_state(caml_domain_state *st) {
  atomic_store_relaxed(&st->young_limit, (uintnat)-1);
}

void caml_interrupt_self(void) {
  interrupt_state(Caml_state);
  mgc_interrupt();
}

void caml_interrupt_all_signal_safe(void) {
  caml_domain_state *st =
      atomic_load_explicit(&the_domain, memory_order_acquire);
  if (st != NULL)
    interrupt_state(st);
}

int caml_incoming_interrupts_queued(void) { return 0; }
void caml_handle_incoming_interrupts(void) {}

/* Whatever GC work is due: mgc's safepoint does it (minor collection when
   the minor heap is full or requested, major slices, stop-the-world
   requests). */
void caml_poll_gc_work(void) {
  caml_domain_state *st = Caml_state;
  port_sync_in();
  if (st->requested_minor_gc) {
    st->requested_minor_gc = 0;
    mgc_minor_collection();
  }
  if (st->requested_major_slice || st->requested_global_major_slice) {
    st->requested_major_slice = 0;
    st->requested_global_major_slice = 0;
    mgc_major_slice(0);
  }
  mgc_poll_slow();
  port_sync_out();
}

void caml_handle_gc_interrupt(void) { caml_poll_gc_work(); }

void caml_process_external_interrupt(void) {
  if (atomic_load_acquire(&Caml_state->requested_external_interrupt))
    caml_domain_external_interrupt_hook();
}

/* ---------------------------------------------------------------------- */
/* Blocking sections                                                      */
/* ---------------------------------------------------------------------- */

CAMLexport void caml_bt_enter_ocaml(void) {}
CAMLexport void caml_bt_exit_ocaml(void) {}
CAMLexport int caml_bt_is_in_blocking_section(void) { return 0; }
CAMLexport int caml_bt_is_self(void) { return 0; }
CAMLexport intnat caml_domain_is_multicore(void) { return 0; }

CAMLexport void caml_release_domain_lock(void) {
  port_sync_in();
  mgc_enter_blocking_section();
  caml_state = NULL;
}

CAMLexport void caml_acquire_domain_lock(void) {
  caml_state = atomic_load_explicit(&the_domain, memory_order_relaxed);
  mgc_leave_blocking_section();
  port_sync_out();
}

CAMLexport void caml_reset_domain_lock(void) {}

/* ---------------------------------------------------------------------- */
/* Stop the world, with one participant                                   */
/* ---------------------------------------------------------------------- */

int caml_try_run_on_all_domains_with_spin_work(
    int sync,
    void (*handler)(caml_domain_state *, void *, int, caml_domain_state **),
    void *data, void (*leader_setup)(caml_domain_state *),
    int (*enter_spin_callback)(caml_domain_state *, void *),
    void *enter_spin_data) {
  (void)sync;
  (void)enter_spin_callback;
  (void)enter_spin_data;
  caml_domain_state *self = Caml_state;
  if (leader_setup != NULL)
    leader_setup(self);
  handler(self, data, 1, &self);
  return 1;
}

int caml_try_run_on_all_domains(void (*handler)(caml_domain_state *, void *,
                                                int, caml_domain_state **),
                                void *data,
                                void (*leader_setup)(caml_domain_state *)) {
  return caml_try_run_on_all_domains_with_spin_work(1, handler, data,
                                                    leader_setup, NULL, NULL);
}

int caml_try_run_on_all_domains_async(
    void (*handler)(caml_domain_state *, void *, int, caml_domain_state **),
    void *data, void (*leader_setup)(caml_domain_state *)) {
  return caml_try_run_on_all_domains_with_spin_work(0, handler, data,
                                                    leader_setup, NULL, NULL);
}

barrier_status caml_global_barrier_and_check_final(int num_participating) {
  (void)num_participating;
  return 1; /* alone: always the final party */
}

void caml_global_barrier_release_as_final(barrier_status status) {
  (void)status;
}

int caml_domain_is_in_stw(void) { return 0; }

/* caml_domain_alone() (domain.h) reads it. */
CAMLexport atomic_uintnat caml_num_domains_running = 1;

/* ---------------------------------------------------------------------- */
/* Start-up                                                               */
/* ---------------------------------------------------------------------- */

static void scan_ocaml_roots(mgc_scanning_action act, void *data,
                             mgc_scan_kind kind);

static void mgc_fatal_to_ocaml(const char *msg) {
  caml_fatal_error("mgc: %s", msg);
}

/* mgc calls this from inside a collection or an allocation (the direct
   major allocations of the glue use mgc_alloc_shr_noexc and raise
   Out_of_memory themselves): an OCaml exception may not unwind through
   mgc, so this is fatal, as OCaml's own out-of-memory during a minor
   collection is. */
static void mgc_oom_to_ocaml(size_t bytes) {
  caml_fatal_error("out of memory (mgc could not get %zu bytes)", bytes);
}

/* Called by caml_init_gc (gc_ctrl.c) with OCAMLRUNPARAM's sizes;
   MGC_PARAMS from the environment applies on top (mgc_init). */
void caml_init_domains(uintnat max_domains, uintnat minor_heap_wsz) {
  (void)max_domains;
  mgc_params p;
  mgc_params_default(&p);
  if (minor_heap_wsz >= 257)
    p.minor_heap_words = minor_heap_wsz;
  p.space_overhead = caml_params->init_percent_free;
  p.custom_major_ratio = caml_params->init_custom_major_ratio;
  p.custom_minor_ratio = caml_params->init_custom_minor_ratio;
  p.custom_minor_max_size = caml_params->init_custom_minor_max_bsz;
  p.max_domains = 1;
  mgc_set_fatal_handler(mgc_fatal_to_ocaml);
  int rc = mgc_init(&p);
  if (rc != MGC_OK)
    caml_fatal_error("mgc_init failed (%d): bad MGC_PARAMS?", rc);
  mgc_set_oom_handler(mgc_oom_to_ocaml);
  mgc_get_params(&p);
  torture = p.torture_every != 0;

  caml_domain_state *st = calloc(1, sizeof(caml_domain_state));
  if (st == NULL)
    caml_fatal_error("cannot allocate the domain state");
  caml_state = st;
  st->id = 0;
  st->unique_id = 0;
  port_init_minor_tables(st);
  st->shared_heap = NULL;
  refresh_bounds(st);
  st->young_ptr = (value *)mgc_tls_state->young_ptr;
  mgc_domain_set_user(st);
  mgc_set_scan_roots_hook_kind(scan_ocaml_roots);
  mgc_set_young_limit_reset_hook(on_mgc_limit_reset);

  st->dls_root = Val_unit;
  caml_register_generational_global_root(&st->dls_root);
  st->backtrace_last_exn = Val_unit;
  caml_register_generational_global_root(&st->backtrace_last_exn);
  st->stack_cache = caml_alloc_stack_cache();
  if (st->stack_cache == NULL)
    caml_fatal_error("cannot allocate the stack cache");
  st->current_stack = caml_alloc_main_stack(caml_get_init_stack_wsize());
  if (st->current_stack == NULL)
    caml_fatal_error("cannot allocate the main stack");
  st->c_stack = NULL;
  st->exn_handler = NULL;
  st->action_pending = 0;
  st->local_roots = NULL;
  st->backtrace_buffer = NULL;
  st->backtrace_active = 0;
  if (caml_params->backtrace_enabled)
    caml_record_backtraces(1);
  st->compare_unordered = 0;
  st->oo_next_id_local = 0;
  st->requested_major_slice = 0;
  st->requested_minor_gc = 0;
  st->major_slice_epoch = 0;
  st->requested_external_interrupt = 0;
  st->parser_trace = 0;
  st->external_raise = NULL;
  st->trap_sp_off = 1;
  st->trap_barrier_off = 0;
  st->trap_barrier_block = -1;
  caml_memprof_new_domain(NULL, st);
  if (st->memprof == NULL)
    caml_fatal_error("cannot initialise memprof");
  refresh_bounds(st);
  caml_reset_young_limit(st);
  atomic_store_explicit(&the_domain, st, memory_order_release);
  caml_init_signal_handling();
}

/* ---------------------------------------------------------------------- */
/* Roots (P1): OCaml's local roots, stack, global roots of roots.c        */
/* ---------------------------------------------------------------------- */

struct scan_env {
  mgc_scanning_action act;
  void *data;
};

static void scan_one(void *env, value v, volatile value *p) {
  struct scan_env *e = env;
  e->act(e->data, (mgc_value)v, (mgc_value *)p);
}

static void scan_ocaml_roots(mgc_scanning_action act, void *data,
                             mgc_scan_kind kind) {
  caml_domain_state *st = mgc_domain_user();
  if (st == NULL)
    return;
  struct scan_env env = {act, data};
  /* Young-only scans pass every word of the stack (the action ignores
     what is not young); full scans skip code pointers (roots.c, fiber.c). */
  caml_do_roots(scan_one,
                kind == MGC_SCAN_YOUNG ? SCANNING_ONLY_YOUNG_VALUES : 0, &env,
                st, 1);
}

/* ---------------------------------------------------------------------- */
/* Domain primitives                                                      */
/* ---------------------------------------------------------------------- */

CAMLnoret void port_unsupported(const char *what) {
  char buf[200];
  snprintf(buf, sizeof buf, "%s: not supported by ocamlrun-mgc yet", what);
  caml_failwith(buf);
}

CAMLprim value caml_domain_spawn(value callback, value term_sync) {
  (void)callback;
  (void)term_sync;
  port_unsupported("Domain.spawn");
}

CAMLprim value caml_ml_domain_id(value unit) {
  (void)unit;
  return Val_int(Caml_state->unique_id);
}

CAMLprim value caml_ml_domain_index(value unit) {
  (void)unit;
  return Val_int(Caml_state->id);
}

CAMLprim value caml_ml_domain_cpu_relax(value unit) {
  (void)unit;
  caml_poll_gc_work();
  return Val_unit;
}

CAMLprim value caml_recommended_domain_count(value unit) {
  (void)unit;
  return Val_int(1);
}

CAMLprim value caml_domain_dls_set(value t) {
  caml_modify_generational_global_root(&Caml_state->dls_root, t);
  return Val_unit;
}

CAMLprim value caml_domain_dls_get(value unused) {
  (void)unused;
  return Caml_state->dls_root;
}

CAMLprim value caml_domain_dls_compare_and_set(value old, value new) {
  if (Caml_state->dls_root != old)
    return Val_false;
  caml_modify_generational_global_root(&Caml_state->dls_root, new);
  return Val_true;
}
