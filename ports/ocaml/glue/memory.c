/* memory.c (ocamlrun-mgc): major-heap allocation, the write barrier and
 * the atomic primitives forwarded to mgc; the caml_stat_* allocator of C
 * memory (malloc, with an optional pool freed as a whole at exit).
 */
#include "port.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "caml/custom.h"
#include "caml/domain.h"
#include "caml/fail.h"
#include "caml/memory.h"
#include "caml/minor_gc.h"
#include "caml/signals.h"

/* ---------------------------------------------------------------------- */
/* The major heap                                                         */
/* ---------------------------------------------------------------------- */

/* mgc_alloc_shr never collects; fields start as unit (scanned tags) or
   zero bytes, and OCaml's callers fill them with caml_initialize. */
CAMLexport value caml_alloc_shr_reserved(mlsize_t wosize, tag_t tag,
                                         reserved_t reserved) {
  mgc_value v;
  PORT_CALL(v = mgc_alloc_shr_noexc(wosize, tag, (unsigned)reserved));
  if (v == 0)
    caml_raise_out_of_memory();
  return (value)v;
}

CAMLexport value caml_alloc_shr(mlsize_t wosize, tag_t tag) {
  return caml_alloc_shr_reserved(wosize, tag, 0);
}

CAMLexport value caml_alloc_shr_noexc(mlsize_t wosize, tag_t tag) {
  mgc_value v;
  PORT_CALL(v = mgc_alloc_shr_noexc(wosize, tag, 0));
  return (value)v;
}

CAMLexport void caml_adjust_gc_speed(mlsize_t res, mlsize_t max) {
  (void)res;
  (void)max;
}
CAMLexport void caml_adjust_minor_gc_speed(mlsize_t res, mlsize_t max) {
  (void)res;
  (void)max;
}
CAMLexport void caml_alloc_dependent_memory(mlsize_t nbytes) { (void)nbytes; }
CAMLexport void caml_free_dependent_memory(mlsize_t nbytes) { (void)nbytes; }

/* ---------------------------------------------------------------------- */
/* Writes                                                                 */
/* ---------------------------------------------------------------------- */

/* Neither collects: the minor tables need no flush first (P4 holds for
   what they hold; mgc's remembered set is mgc's). */
CAMLexport void caml_modify(volatile value *fp, value val) {
  mgc_modify((mgc_value *)fp, (mgc_value)val);
}

CAMLexport void caml_initialize(volatile value *fp, value val) {
  if (Is_young((value)fp))
    *fp = val;
  else
    mgc_initialize((mgc_value *)fp, (mgc_value)val);
}

/* The store is ours (an atomic operation), the barrier mgc's. */
CAMLexport int caml_atomic_cas_field(value obj, intnat field, value oldval,
                                     value newval) {
  value *p = (value *)&Field(obj, field);
  value expected = oldval;
  if (!atomic_compare_exchange_strong((_Atomic value *)p, &expected, newval))
    return 0;
  if (!Is_young(obj))
    mgc_write_barrier((mgc_value)obj, (mgc_value *)p, (mgc_value)oldval,
                      (mgc_value)newval);
  return 1;
}

CAMLprim value caml_atomic_cas(value ref, value oldv, value newv) {
  return Val_bool(caml_atomic_cas_field(ref, 0, oldv, newv));
}

CAMLprim value caml_atomic_load(value ref) {
  return atomic_load((_Atomic value *)&Field(ref, 0));
}

CAMLprim value caml_atomic_exchange(value ref, value v) {
  value *p = (value *)&Field(ref, 0);
  value old = atomic_exchange((_Atomic value *)p, v);
  if (!Is_young(ref))
    mgc_write_barrier((mgc_value)ref, (mgc_value *)p, (mgc_value)old,
                      (mgc_value)v);
  return old;
}

/* Integers only: no barrier needed. */
CAMLprim value caml_atomic_fetch_add(value ref, value incr) {
  _Atomic value *p = (_Atomic value *)&Field(ref, 0);
  value old = atomic_load(p);
  while (!atomic_compare_exchange_weak(p, &old, old + (incr - 1)))
    ;
  return old;
}

/* ---------------------------------------------------------------------- */
/* caml_stat_*: C memory                                                  */
/* ---------------------------------------------------------------------- */

/* With a pool (caml_startup_aux when OCAMLRUNPARAM has c=1), every block
   is linked into a ring behind a header, so that caml_stat_destroy_pool
   frees them all; without, plain malloc. */
struct pool_link {
  struct pool_link *prev, *next;
};
#define POOL_HDR ((sizeof(struct pool_link) + 15) & ~(size_t)15)

static struct pool_link *pool;
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;

static void link_in(struct pool_link *l) {
  pthread_mutex_lock(&pool_mutex);
  l->next = pool->next;
  l->prev = pool;
  pool->next->prev = l;
  pool->next = l;
  pthread_mutex_unlock(&pool_mutex);
}

static void unlink_out(struct pool_link *l) {
  pthread_mutex_lock(&pool_mutex);
  l->prev->next = l->next;
  l->next->prev = l->prev;
  pthread_mutex_unlock(&pool_mutex);
}

CAMLexport void caml_stat_create_pool(void) {
  if (pool != NULL)
    return;
  pool = malloc(sizeof *pool);
  if (pool == NULL)
    caml_fatal_error("out of memory creating the memory pool");
  pool->next = pool->prev = pool;
}

CAMLexport void caml_stat_destroy_pool(void) {
  if (pool == NULL)
    return;
  struct pool_link *l = pool->next;
  while (l != pool) {
    struct pool_link *n = l->next;
    free(l);
    l = n;
  }
  free(pool);
  pool = NULL;
}

CAMLexport caml_stat_block caml_stat_alloc_noexc(asize_t sz) {
  if (pool == NULL)
    return malloc(sz);
  struct pool_link *l = malloc(POOL_HDR + sz);
  if (l == NULL)
    return NULL;
  link_in(l);
  return (char *)l + POOL_HDR;
}

CAMLexport caml_stat_block caml_stat_alloc(asize_t sz) {
  void *r = caml_stat_alloc_noexc(sz);
  if (r == NULL && sz != 0)
    caml_raise_out_of_memory();
  return r;
}

CAMLexport void caml_stat_free(caml_stat_block b) {
  if (pool == NULL) {
    free(b);
  } else if (b != NULL) {
    struct pool_link *l = (struct pool_link *)((char *)b - POOL_HDR);
    unlink_out(l);
    free(l);
  }
}

CAMLexport caml_stat_block caml_stat_resize_noexc(caml_stat_block b,
                                                  asize_t sz) {
  if (b == NULL)
    return caml_stat_alloc_noexc(sz);
  if (pool == NULL)
    return realloc(b, sz);
  struct pool_link *l = (struct pool_link *)((char *)b - POOL_HDR);
  unlink_out(l);
  struct pool_link *n = realloc(l, POOL_HDR + sz);
  if (n == NULL) {
    link_in(l);
    return NULL;
  }
  link_in(n);
  return (char *)n + POOL_HDR;
}

CAMLexport caml_stat_block caml_stat_resize(caml_stat_block b, asize_t sz) {
  void *r = caml_stat_resize_noexc(b, sz);
  if (r == NULL && sz != 0)
    caml_raise_out_of_memory();
  return r;
}

CAMLexport caml_stat_block caml_stat_calloc_noexc(asize_t num, asize_t sz) {
  if (sz != 0 && num > (asize_t)-1 / sz)
    return NULL;
  void *r = caml_stat_alloc_noexc(num * sz);
  if (r != NULL)
    memset(r, 0, num * sz);
  return r;
}

/* [modulo] bytes past the returned address is page-aligned; *b is what
   to free. */
CAMLexport void *caml_stat_alloc_aligned_noexc(asize_t sz, int modulo,
                                               caml_stat_block *b) {
  char *raw = caml_stat_alloc_noexc(sz + Page_size);
  if (raw == NULL)
    return NULL;
  *b = raw;
  uintnat target = ((uintnat)(raw + modulo) / Page_size + 1) * Page_size;
  return (char *)(target - modulo);
}

CAMLexport void *caml_stat_alloc_aligned(asize_t sz, int modulo,
                                         caml_stat_block *b) {
  void *r = caml_stat_alloc_aligned_noexc(sz, modulo, b);
  if (r == NULL && sz != 0)
    caml_raise_out_of_memory();
  return r;
}

CAMLexport caml_stat_string caml_stat_strdup_noexc(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = caml_stat_alloc_noexc(n);
  if (r != NULL)
    memcpy(r, s, n);
  return r;
}

CAMLexport caml_stat_string caml_stat_strdup(const char *s) {
  char *r = caml_stat_strdup_noexc(s);
  if (r == NULL)
    caml_raise_out_of_memory();
  return r;
}

CAMLexport caml_stat_string caml_stat_strconcat(int n, ...) {
  va_list args;
  size_t len = 0;
  va_start(args, n);
  for (int i = 0; i < n; i++)
    len += strlen(va_arg(args, const char *));
  va_end(args);
  char *r = caml_stat_alloc(len + 1), *p = r;
  va_start(args, n);
  for (int i = 0; i < n; i++) {
    const char *s = va_arg(args, const char *);
    size_t l = strlen(s);
    memcpy(p, s, l);
    p += l;
  }
  va_end(args);
  *p = 0;
  return r;
}
