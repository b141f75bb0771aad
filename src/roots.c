/* Roots: local-root frames, classic and generational global roots, and the
 * embedder's scan hook (DESIGN §3.6, §5.5).
 *
 * Global roots live in three address sets under roots_lock: classic (scanned
 * at every collection), young generational (may point into a minor heap;
 * scanned at minor collections, then moved wholesale to the old set) and
 * old generational (scanned by the major collector only).  Invariant 14: a
 * root holding a young pointer is in the young set; one holding another
 * block is in the old or the young set; one holding an immediate is in
 * neither.  Generational roots change only through
 * mgc_modify_generational_global_root (ocaml #12861).
 *
 * Phases: registration in the mutator (any domain); scanning inside STW
 * sections by participant 0 only (invariant 21).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* An open-addressing set of root addresses. */
struct root_set {
  mgc_value **slots;
  size_t capacity; /* power of two, or 0 */
  size_t count;    /* live entries */
  size_t used;     /* live entries + tombstones */
};

#define TOMBSTONE ((mgc_value *)1)

static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct root_set classic, young_gen, old_gen;

static size_t hash_addr(mgc_value *r, size_t mask) {
  return (size_t)(((uintptr_t)r >> 3) * 0x9E3779B97F4A7C15u >> 17) & mask;
}

static void set_insert(struct root_set *s, mgc_value *r);

static void set_rehash(struct root_set *s, size_t capacity) {
  struct root_set old = *s;
  s->slots = mgc_xcalloc(capacity, sizeof *s->slots, "global roots");
  s->capacity = capacity;
  s->count = s->used = 0;
  for (size_t i = 0; i < old.capacity; i++)
    if (old.slots[i] && old.slots[i] != TOMBSTONE)
      set_insert(s, old.slots[i]);
  free(old.slots);
}

static void set_insert(struct root_set *s, mgc_value *r) {
  if (2 * (s->used + 1) > s->capacity)
    set_rehash(
        s, s->capacity < 16
               ? 16
               : (s->count * 4 > s->capacity ? s->capacity * 2 : s->capacity));
  size_t mask = s->capacity - 1, i = hash_addr(r, mask);
  size_t tomb = SIZE_MAX;
  while (s->slots[i]) {
    if (s->slots[i] == r)
      return;
    if (s->slots[i] == TOMBSTONE && tomb == SIZE_MAX)
      tomb = i;
    i = (i + 1) & mask;
  }
  if (tomb != SIZE_MAX) {
    s->slots[tomb] = r;
  } else {
    s->slots[i] = r;
    s->used++;
  }
  s->count++;
}

static bool set_remove(struct root_set *s, mgc_value *r) {
  if (!s->capacity)
    return false;
  size_t mask = s->capacity - 1, i = hash_addr(r, mask);
  while (s->slots[i]) {
    if (s->slots[i] == r) {
      s->slots[i] = TOMBSTONE;
      s->count--;
      return true;
    }
    i = (i + 1) & mask;
  }
  return false;
}

static bool set_contains(const struct root_set *s, mgc_value *r) {
  if (!s->capacity)
    return false;
  size_t mask = s->capacity - 1, i = hash_addr(r, mask);
  while (s->slots[i]) {
    if (s->slots[i] == r)
      return true;
    i = (i + 1) & mask;
  }
  return false;
}

static void set_clear(struct root_set *s) {
  if (s->capacity)
    memset(s->slots, 0, s->capacity * sizeof *s->slots);
  s->count = s->used = 0;
}

static void set_free(struct root_set *s) {
  free(s->slots);
  memset(s, 0, sizeof *s);
}

static void set_scan(struct root_set *s, mgc_root_action f, void *ctx) {
  for (size_t i = 0; i < s->capacity; i++) {
    mgc_value *r = s->slots[i];
    if (r && r != TOMBSTONE)
      f(ctx, *r, r);
  }
}

void mgc_roots_init(void) {
  set_free(&classic);
  set_free(&young_gen);
  set_free(&old_gen);
}

void mgc_global_roots_teardown(void) { mgc_roots_init(); }

/* ------------------------------------------------------------------------ */
/* Public API                                                               */
/* ------------------------------------------------------------------------ */

void mgc_register_global_root(mgc_value *r) {
  MGC_CHECK(r != NULL, "mgc_register_global_root: NULL root address");
  pthread_mutex_lock(&roots_lock);
  set_insert(&classic, r);
  pthread_mutex_unlock(&roots_lock);
}

void mgc_remove_global_root(mgc_value *r) {
  MGC_CHECK(r != NULL, "mgc_remove_global_root: NULL root address");
  pthread_mutex_lock(&roots_lock);
  set_remove(&classic, r);
  pthread_mutex_unlock(&roots_lock);
}

void mgc_register_generational_global_root(mgc_value *r) {
  MGC_CHECK(r != NULL,
            "mgc_register_generational_global_root: NULL root address");
  pthread_mutex_lock(&roots_lock);
  mgc_value v = *r;
  if (IS_YOUNG_BLOCK(v))
    set_insert(&young_gen, r);
  else if (MGC_IS_BLOCK(v))
    set_insert(&old_gen, r);
  pthread_mutex_unlock(&roots_lock);
}

/* Re-files the root for its new value (invariant 14), then stores it. */
void mgc_modify_generational_global_root(mgc_value *r, mgc_value v) {
  MGC_CHECK(r != NULL,
            "mgc_modify_generational_global_root: NULL root address");
  pthread_mutex_lock(&roots_lock);
  mgc_value old = *r;
  if (IS_YOUNG_BLOCK(v)) {
    if (!IS_YOUNG_BLOCK(old)) {
      set_remove(&old_gen, r);
      set_insert(&young_gen, r);
    }
  } else if (MGC_IS_BLOCK(v)) {
    /* A young-set root now holding an old value is fine until the next
       minor collection moves it to the old set. */
    if (!MGC_IS_BLOCK(old))
      set_insert(&old_gen, r);
    else if (!IS_YOUNG_BLOCK(old) && !set_contains(&old_gen, r) &&
             !set_contains(&young_gen, r))
      set_insert(&old_gen, r);
  } else {
    set_remove(&young_gen, r);
    set_remove(&old_gen, r);
  }
  *r = v;
  pthread_mutex_unlock(&roots_lock);
}

void mgc_remove_generational_global_root(mgc_value *r) {
  MGC_CHECK(r != NULL,
            "mgc_remove_generational_global_root: NULL root address");
  pthread_mutex_lock(&roots_lock);
  set_remove(&young_gen, r);
  set_remove(&old_gen, r);
  pthread_mutex_unlock(&roots_lock);
}

/* One hook slot (mgc.h): the older, kind-less hook is called through this
   trampoline, which reads the hook it stands for.  A scan that races with
   a change of hook may call the old hook or the new one, as with any hook
   replaced while collections run. */
static void plain_hook_trampoline(mgc_scanning_action act, void *data,
                                  mgc_scan_kind kind) {
  (void)kind;
  /* Acquire: pairs with the release store of the setter. */
  void (*h)(mgc_scanning_action, void *) =
      atomic_load_explicit(&mgc_rt.scan_roots_hook_plain, memory_order_acquire);
  if (h)
    h(act, data);
}

/* Release stores: a collector that loads the hook (acquire) sees what the
   embedder wrote before installing it. */
void mgc_set_scan_roots_hook(void (*hook)(mgc_scanning_action, void *)) {
  atomic_store_explicit(&mgc_rt.scan_roots_hook_plain, hook,
                        memory_order_release);
  atomic_store_explicit(&mgc_rt.scan_roots_hook,
                        hook ? plain_hook_trampoline : NULL,
                        memory_order_release);
}

void mgc_set_scan_roots_hook_kind(void (*hook)(mgc_scanning_action, void *,
                                               mgc_scan_kind)) {
  atomic_store_explicit(&mgc_rt.scan_roots_hook, hook, memory_order_release);
  atomic_store_explicit(&mgc_rt.scan_roots_hook_plain, NULL,
                        memory_order_release);
}

/* ------------------------------------------------------------------------ */
/* Scanning (STW)                                                           */
/* ------------------------------------------------------------------------ */

_Thread_local struct mgc_dom *mgc_tls_scanning;

/* The domain's local-root frames, held stacks and the embedder's hook.  Run
   by the domain's thread or by its backup thread holding the domain lock
   (the frames are then frozen: the domain is in a blocking section), or by
   the verifier for every domain, all stopped.  Meanwhile mgc_domain_user()
   answers for d on this thread (saved and restored: scans do not nest
   today, but a verifier inside a collection would).  The kind tells the
   hook whether only young values matter (MGC_SCAN_YOUNG, the promotion
   action ignores every other word) or every value does. */
void mgc_scan_local_roots(struct mgc_dom *d, mgc_root_action f, void *ctx,
                          mgc_scan_kind kind) {
  struct mgc_dom *outer = mgc_tls_scanning;
  mgc_tls_scanning = d;
  for (struct mgc_root_frame *fr = d->fast.local_roots; fr; fr = fr->prev)
    for (size_t i = 0; i < fr->count; i++)
      f(ctx, *fr->slots[i], fr->slots[i]);
  mgc_stacks_scan_held(d, f, ctx);
  void (*hook)(mgc_scanning_action, void *, mgc_scan_kind) =
      atomic_load_explicit(&mgc_rt.scan_roots_hook, memory_order_acquire);
  if (hook)
    hook(f, ctx, kind);
  mgc_tls_scanning = outer;
}

/* Participant 0 only.  Minor: classic and young generational roots.
   Major: every set. */
void mgc_scan_global_roots(mgc_root_action f, void *ctx, bool minor) {
  pthread_mutex_lock(&roots_lock);
  set_scan(&classic, f, ctx);
  set_scan(&young_gen, f, ctx);
  if (!minor)
    set_scan(&old_gen, f, ctx);
  pthread_mutex_unlock(&roots_lock);
}

/* After a minor collection no root is young: the young set joins the old
   one, except roots that hold an immediate now. */
void mgc_global_roots_young_to_old(void) {
  pthread_mutex_lock(&roots_lock);
  for (size_t i = 0; i < young_gen.capacity; i++) {
    mgc_value *r = young_gen.slots[i];
    if (r && r != TOMBSTONE && MGC_IS_BLOCK(*r))
      set_insert(&old_gen, r);
  }
  set_clear(&young_gen);
  pthread_mutex_unlock(&roots_lock);
}

/* Verifier (STW): invariant 14 on the sets, and each root's value passes
   the check. */
int mgc_verify_global_roots_with(bool (*check)(void *, mgc_value, const char *),
                                 void (*report)(void *, const char *),
                                 void *ctx) {
  int bad = 0;
  pthread_mutex_lock(&roots_lock);
  struct root_set *sets[3] = {&classic, &young_gen, &old_gen};
  const char *names[3] = {"a classic global root", "a young generational root",
                          "an old generational root"};
  for (int k = 0; k < 3; k++) {
    for (size_t i = 0; i < sets[k]->capacity; i++) {
      mgc_value *r = sets[k]->slots[i];
      if (!r || r == TOMBSTONE)
        continue;
      if (!check(ctx, *r, names[k]))
        bad++;
      if (k == 2 && IS_YOUNG_BLOCK(*r) && !set_contains(&young_gen, r)) {
        bad++;
        report(ctx, "an old generational root holds a young value outside "
                    "the young set (invariant 14)");
      }
    }
  }
  pthread_mutex_unlock(&roots_lock);
  return bad;
}
