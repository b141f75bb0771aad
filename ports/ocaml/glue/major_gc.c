/* major_gc.c (ocamlrun-mgc): the major collector is mgc's; this file gives
 * OCaml's callers its entry points.
 */
#include "port.h"

#include <stdatomic.h>

#include "caml/domain.h"
#include "caml/fail.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/minor_gc.h"
#include "caml/shared_heap.h"

uintnat caml_major_cycles_completed;
gc_phase_t caml_gc_phase;
atomic_uintnat caml_major_slice_epoch;

/* The object handed to mgc_write_barrier where OCaml's code names only a
   field or a value (P4): a one-field block of the major heap, a global
   root from start-up on. */
value port_old_block = Val_unit;

void port_init_old_block(void) {
  port_old_block = (value)mgc_alloc_shr(1, 0);
  mgc_register_global_root((mgc_value *)&port_old_block);
}

/* The deletion barrier on v alone (caml_array_fill darkens the values it
   overwrites): a barrier on a field of an old block, that field neither
   read nor written by mgc_write_barrier. */
void caml_darken(void *state, value v, volatile value *ignored) {
  (void)state;
  (void)ignored;
  static value scratch;
  if (Is_block(v) && !Is_young(v))
    mgc_write_barrier((mgc_value)port_old_block, (mgc_value *)&scratch,
                      (mgc_value)v, MGC_UNIT);
}

/* Continuations are not made in milestone 1 (effects raise Failure). */
void caml_darken_cont(value cont) {
  (void)cont;
  caml_fatal_error("ocamlrun-mgc: continuations are not supported yet");
}

void caml_mark_root(value v, value *p) { caml_darken(NULL, v, p); }

/* Finishes the major cycle under way (mgc's major collection), with the
   compaction at its end when asked. */
void caml_finish_major_cycle(int force_compaction) {
  if (force_compaction)
    PORT_CALL(mgc_major_collection_compact());
  else
    PORT_CALL(mgc_major_collection());
}

void caml_major_collection_slice(intnat howmuch) {
  PORT_CALL(mgc_major_slice(howmuch < 0 ? 0 : howmuch));
}

/* At exit with c=1 (OCAMLRUNPARAM cleanup_on_exit): mgc frees everything
   at mgc_shutdown, finalising custom blocks. */
void caml_finalise_heap(void) {
  port_sync_in();
  mgc_shutdown();
}
