/* gc_ctrl.c (ocamlrun-mgc): the Gc module's primitives and start-up of the
 * memory manager, on mgc.
 */
#include "port.h"

#include <stdatomic.h>

#include "caml/alloc.h"
#include "caml/custom.h"
#include "caml/domain.h"
#include "caml/fail.h"
#include "caml/fiber.h"
#include "caml/gc.h"
#include "caml/gc_ctrl.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/minor_gc.h"
#include "caml/misc.h"
#include "caml/platform.h"
#include "caml/shared_heap.h"
#include "caml/signals.h"
#include "caml/startup_aux.h"

atomic_uintnat caml_max_stack_wsize;
uintnat caml_fiber_wsz;
uintnat caml_percent_free;
extern uintnat caml_minor_heap_max_wsz;
extern uintnat caml_custom_minor_ratio;   /* custom.c */
extern uintnat caml_custom_minor_max_bsz; /* custom.c */
void port_init_old_block(void);

static mgc_stats stats_now(void) {
  mgc_stats s;
  port_sync_in();
  mgc_get_stats(&s);
  return s;
}

/* Words allocated in the minor heap, the part of the current minor heap
   in use included (mgc_get_stats counts it, after port_sync_in). */
static double minor_words(void) { return (double)stats_now().minor_words; }

static void counters_to_ocaml(const mgc_stats *s) {
  atomic_store(&caml_minor_collections_count, s->minor_collections);
  caml_major_cycles_completed = s->major_collections;
  atomic_store(&caml_compactions_count, s->compactions);
}

CAMLprim value caml_gc_quick_stat(value v) {
  CAMLparam0();
  CAMLlocal1(res);
  (void)v;
  /* One reading for all the fields: the compiler calls Gc.quick_stat
     around each of its passes (its Profile module), about 50 times a
     compile, and each reading takes percentiles over every domain's
     pause histograms. */
  mgc_stats s = stats_now();
  double minw = (double)s.minor_words;
  counters_to_ocaml(&s);
  res = caml_alloc_tuple(17);
  Store_field(res, 0, caml_copy_double(minw));
  Store_field(res, 1, caml_copy_double((double)s.promoted_words));
  Store_field(res, 2, caml_copy_double((double)s.major_words));
  Store_field(res, 3, Val_long(s.minor_collections));
  Store_field(res, 4, Val_long(s.major_collections));
  Store_field(res, 5, Val_long(s.heap_words));
  Store_field(res, 6, Val_long(0));
  Store_field(res, 7, Val_long(s.live_words));
  Store_field(res, 8, Val_long(0));
  Store_field(
      res, 9,
      Val_long(s.heap_words > s.live_words ? s.heap_words - s.live_words : 0));
  Store_field(res, 10, Val_long(0));
  Store_field(res, 11, Val_long(0));
  Store_field(res, 12, Val_long(0));
  Store_field(res, 13, Val_long(s.compactions));
  Store_field(res, 14, Val_long(s.top_heap_words));
  Store_field(res, 15, Val_long(0));
  Store_field(res, 16, Val_long(s.forced_major_collections));
  CAMLreturn(res);
}

double caml_gc_minor_words_unboxed(void) { return minor_words(); }

CAMLprim value caml_gc_minor_words(value v) {
  (void)v;
  return caml_copy_double(minor_words());
}

CAMLprim value caml_gc_counters(value v) {
  CAMLparam0();
  CAMLlocal3(a, b, c);
  (void)v;
  mgc_stats s = stats_now();
  a = caml_copy_double((double)s.minor_words);
  b = caml_copy_double((double)s.promoted_words);
  c = caml_copy_double((double)s.major_words);
  CAMLreturn(caml_alloc_3(0, a, b, c));
}

CAMLprim value caml_gc_get(value v) {
  CAMLparam0();
  CAMLlocal1(res);
  (void)v;
  mgc_params p;
  mgc_get_params(&p);
  res = caml_alloc_tuple(11);
  Store_field(res, 0, Val_long(Caml_state->minor_heap_wsz));
  Store_field(res, 1, Val_long(0));
  Store_field(res, 2, Val_long(p.space_overhead));
  Store_field(res, 3, Val_long(atomic_load_relaxed(&caml_verb_gc)));
  Store_field(res, 4, Val_long(0));
  Store_field(res, 5, Val_long(caml_max_stack_wsize));
  Store_field(res, 6, Val_long(0));
  Store_field(res, 7, Val_long(0));
  Store_field(res, 8, Val_long(p.custom_major_ratio));
  Store_field(res, 9, Val_long(p.custom_minor_ratio));
  Store_field(res, 10, Val_long(p.custom_minor_max_size));
  CAMLreturn(res);
}

static uintnat at_least_one(intnat x) { return x < 1 ? 1 : (uintnat)x; }

/* Gc.set: OCaml's normalisation of each field, then mgc_set_params for
   the ones mgc owns (the minor heap size last: it empties the minor
   heap, which moves v). */
CAMLprim value caml_gc_set(value v) {
  mgc_params p;
  mgc_get_params(&p);
  uintnat minor = caml_norm_minor_heap_size(Long_val(Field(v, 0)));
  p.space_overhead = (unsigned)at_least_one(Long_val(Field(v, 2)));
  caml_percent_free = p.space_overhead;
  atomic_store_relaxed(&caml_verb_gc, Long_val(Field(v, 3)));
  caml_change_max_stack_size(Long_val(Field(v, 5)));
  if (Wosize_val(v) >= 11) {
    p.custom_major_ratio = (unsigned)at_least_one(Long_val(Field(v, 8)));
    p.custom_minor_ratio = (unsigned)at_least_one(Long_val(Field(v, 9)));
    p.custom_minor_max_size = Long_val(Field(v, 10));
    caml_custom_major_ratio = p.custom_major_ratio;
    caml_custom_minor_ratio = p.custom_minor_ratio;
    caml_custom_minor_max_bsz = p.custom_minor_max_size;
  }
  p.minor_heap_words = minor;
  int rc;
  port_sync_in();
  rc = mgc_set_params(&p);
  port_refresh_bounds();
  port_sync_out();
  if (rc != MGC_OK)
    caml_invalid_argument("Gc.set");
  if (minor > caml_minor_heap_max_wsz)
    caml_minor_heap_max_wsz = minor;
  return Val_unit;
}

/* Sizes are rounded as OCaml does: at least Minor_heap_min words, a
   multiple of the page size. */
asize_t caml_norm_minor_heap_size(intnat wsize) {
  if (wsize < Minor_heap_min)
    wsize = Minor_heap_min;
  asize_t bs = caml_mem_round_up_pages(Bsize_wsize(wsize));
  return Wsize_bsize(bs);
}

void caml_set_minor_heap_size(asize_t wsize) {
  port_sync_in();
  mgc_set_minor_heap_size(wsize);
  port_refresh_bounds();
  port_sync_out();
}

void caml_update_minor_heap_max(uintnat wsize) {
  caml_minor_heap_max_wsz = wsize;
}

static value pending_or_raise(void) {
  return caml_get_value_or_raise(caml_process_pending_actions_res());
}

CAMLprim value caml_gc_minor(value v) {
  (void)v;
  caml_minor_collection();
  return pending_or_raise();
}

CAMLprim value caml_gc_major(value v) {
  (void)v;
  caml_minor_collection();
  caml_finish_major_cycle(0);
  return pending_or_raise();
}

CAMLprim value caml_gc_full_major(value v) {
  (void)v;
  PORT_CALL(mgc_full_major());
  return pending_or_raise();
}

CAMLprim value caml_gc_major_slice(value v) {
  caml_major_collection_slice(Long_val(v));
  return pending_or_raise();
}

CAMLprim value caml_gc_compaction(value v) {
  (void)v;
  PORT_CALL(mgc_compact());
  return pending_or_raise();
}

CAMLprim value caml_gc_stat(value v) {
  (void)v;
  PORT_CALL(mgc_full_major());
  caml_process_pending_actions();
  return caml_gc_quick_stat(Val_unit);
}

CAMLprim value caml_get_minor_free(value v) {
  (void)v;
  return Val_long((uintnat)Caml_state->young_ptr -
                  (uintnat)Caml_state->young_start);
}

void caml_init_gc(void) {
  caml_minor_heap_max_wsz =
      caml_norm_minor_heap_size(caml_params->init_minor_heap_wsz);
  caml_max_stack_wsize = caml_params->init_max_stack_wsz;
  caml_fiber_wsz = (Stack_threshold * 2) / sizeof(value);
  caml_percent_free = at_least_one(caml_params->init_percent_free);
  caml_custom_major_ratio = at_least_one(caml_params->init_custom_major_ratio);
  caml_custom_minor_ratio = at_least_one(caml_params->init_custom_minor_ratio);
  caml_custom_minor_max_bsz = caml_params->init_custom_minor_max_bsz;
  caml_gc_phase = Phase_sweep_and_mark_main;
  caml_init_domains(caml_params->max_domains, caml_params->init_minor_heap_wsz);
  port_init_old_block();
  caml_init_gc_stats(caml_params->max_domains);
}

CAMLprim value caml_runtime_variant(value unit) {
  (void)unit;
  return caml_copy_string("");
}

CAMLprim value caml_runtime_parameters(value unit) {
  (void)unit;
  mgc_params p;
  mgc_get_params(&p);
  return caml_alloc_sprintf(
      "b=%d,c=%lu,e=%lu,l=%lu,M=%u,m=%u,n=%lu,o=%u,p=%d,s=%lu,t=%lu,v=%lu,"
      "V=%lu,W=%lu",
      (int)Caml_state->backtrace_active,
      (unsigned long)caml_params->cleanup_on_exit,
      (unsigned long)caml_params->runtime_events_log_wsize,
      (unsigned long)caml_max_stack_wsize, p.custom_major_ratio,
      p.custom_minor_ratio, (unsigned long)p.custom_minor_max_size,
      p.space_overhead, (int)Caml_state->parser_trace,
      (unsigned long)Caml_state->minor_heap_wsz,
      (unsigned long)caml_params->trace_level,
      (unsigned long)atomic_load_relaxed(&caml_verb_gc),
      (unsigned long)caml_params->verify_heap,
      (unsigned long)caml_runtime_warnings);
}

CAMLprim value caml_ml_enable_runtime_warnings(value vbool) {
  caml_runtime_warnings = Bool_val(vbool);
  return Val_unit;
}

CAMLprim value caml_ml_runtime_warnings_enabled(value unit) {
  (void)unit;
  return Val_bool(caml_runtime_warnings);
}
