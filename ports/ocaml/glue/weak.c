/* weak.c (ocamlrun-mgc): weak arrays and ephemerons are not supported in
 * milestone 1; every primitive raises Failure.
 */
#include "port.h"

#include "caml/fail.h"

#define UNSUPPORTED1(name)                                                     \
  CAMLprim value name(value a) {                                               \
    (void)a;                                                                   \
    port_unsupported(#name);                                                   \
  }
#define UNSUPPORTED2(name)                                                     \
  CAMLprim value name(value a, value b) {                                      \
    (void)a;                                                                   \
    (void)b;                                                                   \
    port_unsupported(#name);                                                   \
  }
#define UNSUPPORTED3(name)                                                     \
  CAMLprim value name(value a, value b, value c) {                             \
    (void)a;                                                                   \
    (void)b;                                                                   \
    (void)c;                                                                   \
    port_unsupported(#name);                                                   \
  }
#define UNSUPPORTED5(name)                                                     \
  CAMLprim value name(value a, value b, value c, value d, value e) {           \
    (void)a;                                                                   \
    (void)b;                                                                   \
    (void)c;                                                                   \
    (void)d;                                                                   \
    (void)e;                                                                   \
    port_unsupported(#name);                                                   \
  }

UNSUPPORTED1(caml_ephe_create)
UNSUPPORTED1(caml_weak_create)
UNSUPPORTED3(caml_ephe_set_key)
UNSUPPORTED3(caml_weak_set)
UNSUPPORTED2(caml_ephe_unset_key)
UNSUPPORTED2(caml_ephe_set_data)
UNSUPPORTED1(caml_ephe_unset_data)
UNSUPPORTED2(caml_ephe_get_key)
UNSUPPORTED2(caml_weak_get)
UNSUPPORTED1(caml_ephe_get_data)
UNSUPPORTED2(caml_ephe_get_key_copy)
UNSUPPORTED2(caml_weak_get_copy)
UNSUPPORTED1(caml_ephe_get_data_copy)
UNSUPPORTED2(caml_ephe_check_key)
UNSUPPORTED2(caml_weak_check)
UNSUPPORTED1(caml_ephe_check_data)
UNSUPPORTED5(caml_ephe_blit_key)
UNSUPPORTED5(caml_weak_blit)
UNSUPPORTED2(caml_ephe_blit_data)
