/* unsupported.c (ocamlrun-mgc): primitives of OCaml files that are kept
 * whole but start what milestone 1 does not support; the link wraps them
 * (ld --wrap) so that they raise Failure instead.
 */
#include "port.h"

#include "caml/fail.h"

CAMLprim value __wrap_caml_alloc_stack(value hval, value hexn, value heff) {
  (void)hval;
  (void)hexn;
  (void)heff;
  port_unsupported("effects (Effect handlers)");
}

CAMLprim value __wrap_caml_memprof_start(value lv, value szv, value tracker) {
  (void)lv;
  (void)szv;
  (void)tracker;
  port_unsupported("Gc.Memprof");
}
