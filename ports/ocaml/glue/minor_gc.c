/* minor_gc.c (ocamlrun-mgc): allocation slow path, minor collections and
 * OCaml's minor tables, forwarded to mgc (invariants P2 and P4 of port.h).
 */
#include "port.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "caml/domain.h"
#include "caml/fail.h"
#include "caml/memory.h"
#include "caml/minor_gc.h"
#include "caml/signals.h"

atomic_uintnat caml_minor_collections_count;
uintnat caml_minor_heap_max_wsz;

/* ---------------------------------------------------------------------- */
/* P4: OCaml's minor tables                                               */
/* ---------------------------------------------------------------------- */

void port_init_minor_tables(caml_domain_state *st) {
  st->minor_tables = calloc(1, sizeof(struct caml_minor_tables));
  if (st->minor_tables == NULL)
    caml_fatal_error("cannot allocate the minor tables");
}

void port_free_minor_tables(caml_domain_state *st) {
  struct caml_minor_tables *t = st->minor_tables;
  if (t == NULL)
    return;
  free(t->major_ref.base);
  free(t->ephe_ref.base);
  free(t->custom.base);
  free(t);
  st->minor_tables = NULL;
}

/* Doubles a table (its element size given); base..ptr kept. */
static void grow(void **base, void **ptr, void **limit, void **threshold,
                 void **end, asize_t *size, size_t elt) {
  size_t used = *base ? (size_t)((char *)*ptr - (char *)*base) / elt : 0;
  size_t n = *size ? *size * 2 : 256;
  char *nb = realloc(*base, n * elt);
  if (nb == NULL)
    caml_fatal_error("cannot grow a minor table");
  *base = nb;
  *ptr = nb + used * elt;
  *limit = *threshold = *end = nb + n * elt;
  *size = n;
}

#define GROW(tbl)                                                              \
  grow((void **)&(tbl)->base, (void **)&(tbl)->ptr, (void **)&(tbl)->limit,    \
       (void **)&(tbl)->threshold, (void **)&(tbl)->end, &(tbl)->size,         \
       sizeof(*(tbl)->base))

void caml_realloc_ref_table(struct caml_ref_table *tbl) { GROW(tbl); }
void caml_realloc_ephe_ref_table(struct caml_ephe_ref_table *tbl) { GROW(tbl); }
void caml_realloc_custom_table(struct caml_custom_table *tbl) { GROW(tbl); }

/* Hands the entries made by OCaml's own code to mgc, before anything can
   collect: a remembered field (an old block's field that received a young
   value with a plain store, caml_array_fill) goes through mgc's barrier,
   a young custom block made by hand (the unmarshaller) is registered. */
void port_flush_minor_tables(caml_domain_state *st) {
  struct caml_minor_tables *t = st->minor_tables;
  if (t == NULL)
    return;
  if (t->major_ref.ptr != t->major_ref.base) {
    for (value **p = t->major_ref.base; p < t->major_ref.ptr; p++) {
      value v = **p;
      mgc_write_barrier((mgc_value)port_old_block, (mgc_value *)*p, MGC_UNIT,
                        (mgc_value)v);
    }
    t->major_ref.ptr = t->major_ref.base;
  }
  if (t->custom.ptr != t->custom.base) {
    for (struct caml_custom_elt *e = t->custom.base; e < t->custom.ptr; e++)
      if (Is_block(e->block) && Is_young(e->block))
        mgc_custom_register((mgc_value)e->block, e->mem, e->max);
    t->custom.ptr = t->custom.base;
  }
  t->ephe_ref.ptr = t->ephe_ref.base;
}

/* ---------------------------------------------------------------------- */
/* Allocation slow path                                                   */
/* ---------------------------------------------------------------------- */

/* Alloc_small took whsize words off Caml_state->young_ptr and found it
   below the limit.  Undo, run what is pending, let mgc's slow path find
   room (it collects as needed, and counts the allocation under torture),
   and leave young_ptr on the new block's header, which the caller then
   writes. */
void caml_alloc_small_dispatch(caml_domain_state *dom_st, intnat wosize,
                               int flags, int nallocs,
                               unsigned char *encoded_alloc_lens) {
  (void)nallocs;
  (void)encoded_alloc_lens;
  dom_st->young_ptr += Whsize_wosize(wosize);
  if (flags & CAML_FROM_CAML)
    caml_get_value_or_raise(caml_do_pending_actions_res());
  else
    caml_handle_gc_interrupt();
  port_sync_in();
  mgc_value v = mgc_alloc_small_slow((size_t)wosize, 0);
  port_sync_out();
  CAMLassert((value *)Hp_val((value)v) == dom_st->young_ptr);
  (void)v;
}

CAMLexport void caml_minor_collection(void) {
  PORT_CALL(mgc_minor_collection());
}

void caml_empty_minor_heaps_once(void) { caml_minor_collection(); }

int caml_try_empty_minor_heap_on_all_domains(void) {
  caml_minor_collection();
  return 1;
}

CAMLexport value caml_check_urgent_gc(value extra_root) {
  caml_domain_state *st = Caml_state;
  if (st->requested_major_slice || st->requested_minor_gc ||
      (uintnat)st->young_ptr < atomic_load_relaxed(&st->young_limit)) {
    CAMLparam1(extra_root);
    caml_poll_gc_work();
    CAMLdrop;
  }
  return extra_root;
}

header_t caml_get_header_val(value v) { return Hd_val(v); }
