/* finalise.c (ocamlrun-mgc): Gc.finalise is not supported in milestone 1:
 * its primitives raise Failure and there is never a finaliser to run.
 */
#include "port.h"

#include "caml/fail.h"
#include "caml/finalise.h"
#include "caml/roots.h"

CAMLprim value caml_final_register(value f, value v) {
  (void)f;
  (void)v;
  port_unsupported("Gc.finalise");
}

CAMLprim value caml_final_register_called_without_value(value f, value v) {
  (void)f;
  (void)v;
  port_unsupported("Gc.finalise_last");
}

CAMLprim value caml_final_release(value unit) {
  (void)unit;
  return Val_unit;
}

caml_result caml_final_do_calls_res(void) { return Result_unit; }

void caml_final_do_roots(scanning_action f, scanning_action_flags fflags,
                         void *fdata, caml_domain_state *domain, int do_val) {
  (void)f;
  (void)fflags;
  (void)fdata;
  (void)domain;
  (void)do_val;
}
