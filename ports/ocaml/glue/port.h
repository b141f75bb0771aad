/* port.h: what the glue files share.  ocamlrun-mgc is OCaml's bytecode
 * runtime with its memory manager (the files named in ../README.md)
 * replaced by the files of this directory, which forward to mgc.
 *
 * Invariants of the glue:
 *  P1. One mgc domain per OCaml domain (milestone 1: exactly one); its
 *      mgc user pointer (mgc_domain_set_user) is the OCaml domain state.
 *  P2. The minor heap is mgc's: young_start/young_end of the OCaml domain
 *      state are the bounds of the mgc domain's minor heap, and OCaml's
 *      Alloc_small bumps Caml_state->young_ptr inside it.  Between two
 *      calls into mgc, Caml_state->young_ptr is the allocation pointer and
 *      mgc's copy is stale; every call into mgc that may allocate, collect
 *      or read the minor heap is bracketed by port_sync_in (OCaml's pointer
 *      to mgc, plus the pending remembered fields and young custom blocks
 *      of OCaml's minor tables) and port_sync_out (mgc's pointer back, and
 *      the young limit recomputed).
 *  P3. Caml_state->young_limit is mgc's young limit, the memprof trigger,
 *      or all-ones while an OCaml action (signal, requested GC) is
 *      pending; it is recomputed by caml_reset_young_limit, which stores
 *      the limit first and checks the pending flags after, so an interrupt
 *      arriving in between is never lost.
 *  P4. OCaml's minor tables (Caml_state->minor_tables) are filled by
 *      OCaml code that is not replaced (caml_array_fill, the unmarshaller);
 *      port_sync_in hands their entries to mgc before anything can
 *      collect, and empties them.
 */
#ifndef MGC_PORT_H
#define MGC_PORT_H

#define CAML_INTERNALS
#include "caml/config.h"

#include "caml/mlvalues.h"

#include "caml/domain_state.h"
#include <mgc.h>

void port_sync_in(void);
void port_sync_out(void);
/* After anything that may resize or move the minor heaps (Gc.set). */
void port_refresh_bounds(void);
void port_flush_minor_tables(caml_domain_state *st);
/* An old block of the major heap kept alive for the life of the runtime:
   the object passed to mgc_write_barrier where OCaml's code gives only a
   field (caml_darken, Ref_table_add). */
extern value port_old_block;
void port_init_minor_tables(caml_domain_state *st);
void port_free_minor_tables(caml_domain_state *st);
/* Runs fn(arg) with the allocation pointers synchronised. */
#define PORT_CALL(stmt)                                                        \
  do {                                                                         \
    port_sync_in();                                                            \
    stmt;                                                                      \
    port_sync_out();                                                           \
  } while (0)

/* Raises Failure "<what>: not supported by ocamlrun-mgc yet". */
CAMLnoreturn_start void port_unsupported(const char *what) CAMLnoreturn_end;

#endif
