/* gc_stats.c (ocamlrun-mgc): OCaml's statistics from mgc's. */
#include "port.h"

#include <string.h>

#include "caml/gc_ctrl.h"
#include "caml/gc_stats.h"
#include "caml/minor_gc.h"
#include "caml/shared_heap.h"

#include <stdatomic.h>

void caml_init_gc_stats(uintnat max_domains) { (void)max_domains; }

/* mgc counts live words as of its last full major collection; the pools
   are not broken down into live and free words. */
void caml_compute_gc_stats(struct gc_stats *buf) {
  mgc_stats s;
  port_sync_in();
  mgc_get_stats(&s);
  memset(buf, 0, sizeof *buf);
  buf->alloc_stats.minor_words = s.minor_words;
  buf->alloc_stats.promoted_words = s.promoted_words;
  buf->alloc_stats.major_words = s.major_words;
  buf->alloc_stats.forced_major_collections = s.forced_major_collections;
  buf->heap_stats.pool_words = (intnat)s.heap_words;
  buf->heap_stats.pool_max_words = (intnat)s.top_heap_words;
  buf->heap_stats.pool_live_words = (intnat)s.live_words;
  /* The counters OCaml's callers read directly (sys.c's exit report). */
  atomic_store(&caml_minor_collections_count, s.minor_collections);
  caml_major_cycles_completed = s.major_collections;
  atomic_store(&caml_compactions_count, s.compactions);
}
