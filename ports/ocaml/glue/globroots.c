/* globroots.c (ocamlrun-mgc): global roots are mgc's. */
#include "port.h"

#include "caml/globroots.h"
#include "caml/memory.h"

CAMLexport void caml_register_global_root(value *r) {
  mgc_register_global_root((mgc_value *)r);
}

CAMLexport void caml_remove_global_root(value *r) {
  mgc_remove_global_root((mgc_value *)r);
}

CAMLexport void caml_register_generational_global_root(value *r) {
  mgc_register_generational_global_root((mgc_value *)r);
}

CAMLexport void caml_remove_generational_global_root(value *r) {
  mgc_remove_generational_global_root((mgc_value *)r);
}

CAMLexport void caml_modify_generational_global_root(value *r, value newval) {
  mgc_modify_generational_global_root((mgc_value *)r, (mgc_value)newval);
}

/* mgc scans its own global roots: nothing to add to roots.c's scan. */
void caml_scan_global_roots(scanning_action f, void *fdata) {
  (void)f;
  (void)fdata;
}
