/* custom.c (ocamlrun-mgc): custom blocks are mgc's (the first two fields
 * of OCaml's struct custom_operations, identifier and finalize, are
 * mgc_custom_ops); the registry of custom operations for unmarshalling.
 */
#include "port.h"

#include <pthread.h>
#include <string.h>

#include "caml/alloc.h"
#include "caml/bigarray.h"
#include "caml/custom.h"
#include "caml/fail.h"
#include "caml/memory.h"
#include "caml/shared_heap.h"

#include <stddef.h>

uintnat caml_custom_major_ratio = Custom_major_ratio_def;
uintnat caml_custom_minor_ratio = Custom_minor_ratio_def;
uintnat caml_custom_minor_max_bsz = Custom_minor_max_bsz_def;

_Static_assert(offsetof(struct custom_operations, identifier) ==
                       offsetof(mgc_custom_ops, identifier) &&
                   offsetof(struct custom_operations, finalize) ==
                       offsetof(mgc_custom_ops, finalize),
               "OCaml's custom operations start as mgc's");

CAMLexport mlsize_t caml_custom_get_max_major(void) {
  return caml_heap_size(NULL) / 150 * caml_custom_major_ratio;
}

static value alloc(const struct custom_operations *ops, uintnat bsz,
                   mlsize_t mem, mlsize_t max) {
  mgc_value v;
  PORT_CALL(v = mgc_alloc_custom((const mgc_custom_ops *)ops, bsz, mem, max));
  return (value)v;
}

CAMLexport value caml_alloc_custom(const struct custom_operations *ops,
                                   uintnat bsz, mlsize_t mem, mlsize_t max) {
  return alloc(ops, bsz, mem, max);
}

CAMLexport value caml_alloc_custom_mem(const struct custom_operations *ops,
                                       uintnat bsz, mlsize_t mem) {
  return alloc(ops, bsz, mem, 0);
}

/* Append-only lists under a mutex (registration is rare). */
struct ops_list {
  const struct custom_operations *ops;
  struct ops_list *next;
};
static struct ops_list *registered, *finalisers;
static pthread_mutex_t ops_mutex = PTHREAD_MUTEX_INITIALIZER;

static void push(struct ops_list **l, const struct custom_operations *ops) {
  struct ops_list *e = caml_stat_alloc(sizeof *e);
  e->ops = ops;
  pthread_mutex_lock(&ops_mutex);
  e->next = *l;
  *l = e;
  pthread_mutex_unlock(&ops_mutex);
}

CAMLexport void
caml_register_custom_operations(const struct custom_operations *ops) {
  CAMLassert(ops->identifier != NULL);
  CAMLassert(ops->deserialize != NULL);
  push(&registered, ops);
}

struct custom_operations *caml_find_custom_operations(const char *ident) {
  pthread_mutex_lock(&ops_mutex);
  struct ops_list *l = registered;
  pthread_mutex_unlock(&ops_mutex);
  for (; l != NULL; l = l->next)
    if (strcmp(l->ops->identifier, ident) == 0)
      return (struct custom_operations *)l->ops;
  return NULL;
}

struct custom_operations *caml_final_custom_operations(void (*fn)(value)) {
  pthread_mutex_lock(&ops_mutex);
  struct ops_list *l = finalisers;
  pthread_mutex_unlock(&ops_mutex);
  for (; l != NULL; l = l->next)
    if (l->ops->finalize == fn)
      return (struct custom_operations *)l->ops;
  struct custom_operations *ops = caml_stat_alloc(sizeof *ops);
  memset(ops, 0, sizeof *ops);
  ops->identifier = "_final";
  ops->finalize = fn;
  ops->compare = custom_compare_default;
  ops->hash = custom_hash_default;
  ops->serialize = custom_serialize_default;
  ops->deserialize = custom_deserialize_default;
  ops->compare_ext = custom_compare_ext_default;
  ops->fixed_length = custom_fixed_length_default;
  push(&finalisers, ops);
  return ops;
}

void caml_init_custom_operations(void) {
  caml_register_custom_operations(&caml_int32_ops);
  caml_register_custom_operations(&caml_nativeint_ops);
  caml_register_custom_operations(&caml_int64_ops);
  caml_register_custom_operations(&caml_ba_ops);
}
