/* shared_heap.c (ocamlrun-mgc): the major heap is mgc's pools and large
 * blocks.
 */
#include "port.h"

#include <stdatomic.h>

#include "caml/domain.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/shared_heap.h"

struct global_heap_state caml_global_heap_state = {0 << 8, 1 << 8, 2 << 8};
atomic_uintnat caml_compactions_count;

/* mgc's static atoms (never marked, never freed). */
CAMLexport value caml_atom(tag_t tag) { return (value)mgc_alloc(0, tag); }

/* For the unmarshaller, which writes the header itself with
   caml_global_heap_state.MARKED: that colour is set to the one mgc gave
   this block, so the rewritten header is mgc's own. */
value *caml_shared_try_alloc(struct caml_heap_state *heap, mlsize_t wosize,
                             tag_t tag, reserved_t reserved) {
  (void)heap;
  mgc_value v;
  PORT_CALL(v = mgc_alloc_shr_noexc(wosize, tag, (unsigned)reserved));
  if (v == 0)
    return NULL;
  caml_global_heap_state.MARKED = Color_hd(Hd_val((value)v));
  return (value *)Hp_val((value)v);
}

static mgc_stats current(void) {
  mgc_stats s;
  mgc_get_stats(&s);
  return s;
}

uintnat caml_heap_size(struct caml_heap_state *heap) {
  (void)heap;
  return Bsize_wsize(current().heap_words);
}

uintnat caml_top_heap_words(struct caml_heap_state *heap) {
  (void)heap;
  return current().top_heap_words;
}

uintnat caml_heap_blocks(struct caml_heap_state *heap) {
  (void)heap;
  return 0;
}
