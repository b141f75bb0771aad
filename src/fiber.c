/* Fibers, embedder stacks and continuations (DESIGN §5.6, §6.4).
 *
 * A stack (an mgc_fiber, or an embedder's stack that embeds an mgc_stack)
 * holds values outside the heap, written without any barrier.  Invariants:
 *
 *   24a. A stack is either HELD by exactly one domain (on that domain's
 *        held list, holder == the domain: a root of it, scanned at every
 *        minor collection and at every major cycle start), or IN_CONT:
 *        referenced by exactly one continuation's field 0 (address + 1),
 *        on no list, or FREED.  Only the holder reads or writes a held
 *        stack's slots while mutators run.
 *   24b. A stack inside an old continuation holds no young value: it was
 *        scanned when its continuation was promoted, and it can change only
 *        after being taken (invariant 24).
 *   24c. A stack is freed exactly once: by its holder (mgc_stack_free,
 *        termination, shutdown), or when its continuation is found dead
 *        (a young one after the end barrier of the minor collection that
 *        finds it, a major one when swept) unless taken before.
 *
 * Taking is an atomic exchange of field 0 with CONT_EMPTY: of concurrent
 * takers exactly one gets the stack.  An old continuation is darkened
 * first (mgc_darken_cont): if a marker may still scan its stack, the stack
 * must be scanned before it runs again, or values reachable only from it
 * would be missed by the snapshot.
 *
 * Memory order: mgc_cont_new publishes the stack with a release store of
 * field 0 after every write to the stack and its struct; the taker's
 * exchange (acq_rel) and a marker's acquire load of field 0 read that
 * store, so their reads of the slots happen after those writes.  A marker
 * scanning the stack (continuation NOT_MARKABLE) ends with a release store
 * of MARKED that a taker's darkening acquires before its exchange, so the
 * taker's later writes happen after the marker's reads.
 *
 * Fiber structs come from slabs and are never given back to malloc before
 * shutdown: a freed fiber sits in a FIFO quarantine of FIBER_QUARANTINE
 * entries with state FREED, so that a use after mgc_fiber_free is reported
 * instead of reading freed memory.
 *
 * Phases: the mgc_fiber_* and mgc_cont_* calls run in the mutator;
 * scanning and freeing of dead continuations run inside collections.
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FIBER_DEFAULT_CAPACITY 16
#define FIBERS_PER_SLAB 64
#define FIBER_QUARANTINE 256

static void fiber_scan(mgc_stack *s, mgc_scanning_action act, void *data);
static void fiber_free(mgc_stack *s);
static const mgc_stack_ops fiber_ops = {fiber_scan, fiber_free};

bool mgc_stack_is_fiber(const mgc_stack *s) { return s->ops == &fiber_ops; }

/* ------------------------------------------------------------------------ */
/* Fiber structs: slabs and quarantine (under fiber_lock)                   */
/* ------------------------------------------------------------------------ */

struct slab {
  struct slab *next;
  size_t used;
  mgc_fiber fibers[FIBERS_PER_SLAB];
};

static pthread_mutex_t fiber_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slab *slabs;
static mgc_fiber *quarantine_head, *quarantine_tail; /* linked by stack.next */
static size_t quarantine_count;

static mgc_fiber *fiber_struct_alloc(void) {
  mgc_fiber *f = NULL;
  pthread_mutex_lock(&fiber_lock);
  if (quarantine_count > FIBER_QUARANTINE) {
    f = quarantine_head;
    quarantine_head = (mgc_fiber *)f->stack.next;
    if (!quarantine_head)
      quarantine_tail = NULL;
    quarantine_count--;
  } else {
    if (!slabs || slabs->used == FIBERS_PER_SLAB) {
      struct slab *s = calloc(1, sizeof *s);
      if (s) {
        s->next = slabs;
        slabs = s;
      }
    }
    if (slabs && slabs->used < FIBERS_PER_SLAB)
      f = &slabs->fibers[slabs->used++];
  }
  pthread_mutex_unlock(&fiber_lock);
  return f;
}

static void fiber_struct_release(mgc_fiber *f) {
  f->stack.next = NULL;
  pthread_mutex_lock(&fiber_lock);
  if (quarantine_tail)
    quarantine_tail->stack.next = &f->stack;
  else
    quarantine_head = f;
  quarantine_tail = f;
  quarantine_count++;
  pthread_mutex_unlock(&fiber_lock);
}

static void fiber_scan(mgc_stack *s, mgc_scanning_action act, void *data) {
  mgc_fiber *f = (mgc_fiber *)s;
  for (size_t i = 0; i < f->depth; i++)
    act(data, f->slots[i], &f->slots[i]);
}

/* The state is already FREED; the struct keeps its magic (quarantine). */
static void fiber_free(mgc_stack *s) {
  mgc_fiber *f = (mgc_fiber *)s;
  free(f->slots);
  f->slots = NULL;
  f->depth = f->limit = f->capacity = 0;
  fiber_struct_release(f);
}

/* ------------------------------------------------------------------------ */
/* Held lists                                                               */
/* ------------------------------------------------------------------------ */

void mgc_stacks_init_domain(struct mgc_dom *d) {
  d->held_stacks.prev = d->held_stacks.next = &d->held_stacks;
  mgc_table_init(&d->conts, sizeof(mgc_value));
}

static void hold(struct mgc_dom *d, mgc_stack *s) {
  s->state = STACK_HELD;
  s->holder = d;
  s->next = d->held_stacks.next;
  s->prev = &d->held_stacks;
  s->next->prev = s;
  d->held_stacks.next = s;
  if (s->ops == &fiber_ops) {
    mgc_fiber *f = (mgc_fiber *)s;
    f->limit = f->capacity;
  }
}

static void unhold(mgc_stack *s, int state) {
  s->prev->next = s->next;
  s->next->prev = s->prev;
  s->prev = s->next = NULL;
  s->holder = NULL;
  s->state = state;
  if (s->ops == &fiber_ops)
    ((mgc_fiber *)s)->limit = 0;
}

static const char *state_name(int state) {
  switch (state) {
  case STACK_HELD:
    return "held by a domain";
  case STACK_IN_CONT:
    return "inside a continuation";
  case STACK_FREED:
    return "freed";
  default:
    return "not a stack";
  }
}

/* s must be a stack held by d; fn names the call for the message. */
static void check_held(struct mgc_dom *d, mgc_stack *s, const char *fn) {
  MGC_CHECK(s != NULL, "%s: NULL stack", fn);
  MGC_CHECK(s->magic == STACK_MAGIC,
            "%s: %p is not a fiber or registered stack (or was freed)", fn,
            (void *)s);
  MGC_CHECK(s->state == STACK_HELD, "%s: stack %p is %s, not held", fn,
            (void *)s, state_name(s->state));
  MGC_CHECK(s->holder == d,
            "%s: stack %p is held by another domain (only the holder may "
            "use it)",
            fn, (void *)s);
}

/* Drops a stack: the freeing rule (invariant 24c). */
static void drop(mgc_stack *s) {
  s->state = STACK_FREED;
  if (s->ops != &fiber_ops)
    s->magic = 0; /* the embedder's memory from here on */
  s->ops->free(s);
}

void mgc_stack_scan(mgc_stack *s, mgc_root_action f, void *ctx) {
  if (MGC_LIKELY(s->ops == &fiber_ops)) {
    mgc_fiber *fb = (mgc_fiber *)s;
    mgc_value *slots = fb->slots;
    for (size_t i = 0, n = fb->depth; i < n; i++)
      f(ctx, slots[i], &slots[i]);
  } else {
    s->ops->scan(s, f, ctx);
  }
}

void mgc_stacks_scan_held(struct mgc_dom *d, mgc_root_action f, void *ctx) {
  for (mgc_stack *s = d->held_stacks.next; s != &d->held_stacks; s = s->next)
    mgc_stack_scan(s, f, ctx);
}

void mgc_stacks_release_held(struct mgc_dom *d) {
  if (!d->held_stacks.next)
    return;
  while (d->held_stacks.next != &d->held_stacks) {
    mgc_stack *s = d->held_stacks.next;
    unhold(s, STACK_FREED);
    drop(s);
  }
}

/* ------------------------------------------------------------------------ */
/* Embedder stacks                                                          */
/* ------------------------------------------------------------------------ */

void mgc_stack_register(mgc_stack *s, const mgc_stack_ops *ops) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_stack_register");
  MGC_CHECK(s != NULL, "mgc_stack_register: NULL stack");
  MGC_CHECK(ops != NULL && ops->scan != NULL && ops->free != NULL,
            "mgc_stack_register: ops must give scan and free functions");
  memset(s, 0, sizeof *s);
  s->ops = ops;
  s->magic = STACK_MAGIC;
  hold(d, s);
}

void mgc_stack_free(mgc_stack *s) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_stack_free");
  check_held(d, s, "mgc_stack_free");
  unhold(s, STACK_FREED);
  drop(s);
}

mgc_value mgc_cont_new_stack(mgc_stack *s) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_cont_new");
  check_held(d, s, "mgc_cont_new");
  /* May collect: s is still held, hence scanned, until the block exists. */
  mgc_value k = mgc_alloc_young(d, 2, MGC_TAG_CONT, 0);
  unhold(s, STACK_IN_CONT);
  MGC_FIELD(k, 1) = MGC_UNIT;
  /* Release: publishes the stack's contents and struct (header comment). */
  STORE_RELEASE(AWORD(&MGC_FIELD(k, 0)), (word)s + 1);
  *(mgc_value *)mgc_table_add(d, &d->conts) = k;
  return k;
}

mgc_stack *mgc_cont_take_stack(mgc_value k) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_cont_take");
  MGC_CHECK(MGC_IS_BLOCK(k) && k != 0 && !mgc_is_atom(k),
            "mgc_cont_take: %#lx is not a continuation", (unsigned long)k);
  word hd = LOAD_RELAXED(HDR_PTR(k));
  MGC_CHECK(MGC_TAG_HD(hd) == MGC_TAG_CONT && MGC_WOSIZE_HD(hd) == 2,
            "mgc_cont_take: %p is a block of tag %u and %zu fields, not a "
            "continuation",
            (void *)k, (unsigned)MGC_TAG_HD(hd), (size_t)MGC_WOSIZE_HD(hd));
  if (!mgc_is_young(k))
    mgc_darken_cont(d, k);
  /* Acq_rel: acquires the stack published by mgc_cont_new; the release
     half orders nothing we need but costs nothing on an exchange. */
  word f0 = atomic_exchange_explicit(AWORD(&MGC_FIELD(k, 0)), CONT_EMPTY,
                                     memory_order_acq_rel);
  mgc_stack *s = mgc_cont_field_stack(f0);
  if (!s)
    return NULL;
  MGC_CHECK(s->magic == STACK_MAGIC && s->state == STACK_IN_CONT,
            "mgc_cont_take: continuation %p holds a corrupted stack %p",
            (void *)k, (void *)s);
  hold(d, s);
  return s;
}

/* ------------------------------------------------------------------------ */
/* Fibers                                                                   */
/* ------------------------------------------------------------------------ */

mgc_fiber *mgc_fiber_new(size_t capacity) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_fiber_new");
  if (capacity == 0)
    capacity = FIBER_DEFAULT_CAPACITY;
  if (capacity > mgc_rt.params.fiber_max_words) {
    mgc_set_last_error(MGC_EINVAL);
    return NULL;
  }
  mgc_fiber *f = fiber_struct_alloc();
  mgc_value *slots = f ? malloc(capacity * sizeof(mgc_value)) : NULL;
  if (!slots) {
    if (f) {
      f->stack.magic = STACK_MAGIC;
      f->stack.state = STACK_FREED;
      fiber_struct_release(f);
    }
    mgc_set_last_error(MGC_ENOMEM);
    return NULL;
  }
  memset(&f->stack, 0, sizeof f->stack);
  f->stack.ops = &fiber_ops;
  f->stack.magic = STACK_MAGIC;
  f->slots = slots;
  f->depth = 0;
  f->capacity = capacity;
  hold(d, &f->stack);
  return f;
}

static void check_fiber(mgc_fiber *f, const char *fn) {
  MGC_CHECK(f != NULL, "%s: NULL fiber", fn);
  MGC_CHECK(f->stack.magic == STACK_MAGIC && f->stack.ops == &fiber_ops,
            "%s: %p is not a fiber", fn, (void *)f);
}

void mgc_fiber_free(mgc_fiber *f) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_fiber_free");
  check_fiber(f, "mgc_fiber_free");
  check_held(d, &f->stack, "mgc_fiber_free");
  unhold(&f->stack, STACK_FREED);
  drop(&f->stack);
}

/* The OOM handler, then (if it returns) a fatal error. */
static _Noreturn void fiber_oom(mgc_fiber *f, size_t want) {
  mgc_call_oom_handler(want * sizeof(mgc_value));
  mgc_fatal("mgc_fiber_push: out of memory: fiber %p cannot grow from %zu to "
            "%zu slots (limit l=%zu)",
            (void *)f, f->capacity, want, mgc_rt.params.fiber_max_words);
}

void mgc_fiber_push_slow(mgc_fiber *f, mgc_value v) {
  check_fiber(f, "mgc_fiber_push");
  MGC_CHECK(f->stack.state == STACK_HELD && f->limit != 0,
            "mgc_fiber_push: fiber %p is %s, not held", (void *)f,
            state_name(f->stack.state));
  size_t max = mgc_rt.params.fiber_max_words;
  if (f->capacity >= max)
    fiber_oom(f, f->capacity + 1);
  size_t cap = f->capacity > max / 2 ? max : f->capacity * 2;
  uintptr_t was = (uintptr_t)f->slots;
  mgc_value *slots = realloc(f->slots, cap * sizeof(mgc_value));
  if (!slots)
    fiber_oom(f, cap);
  /* A minor collection scans the slots: moved pages touched again. */
  mgc_retouch_moved(slots, was, f->depth * sizeof(mgc_value));
  f->slots = slots;
  f->capacity = f->limit = cap;
  mgc_log(MGC_VERBOSE_TABLES, "fiber %p grown to %zu slots", (void *)f, cap);
  f->slots[f->depth++] = v;
}

mgc_value mgc_fiber_pop_slow(mgc_fiber *f) {
  check_fiber(f, "mgc_fiber_pop");
  MGC_CHECK(f->stack.state == STACK_HELD && f->limit != 0,
            "mgc_fiber_pop: fiber %p is %s, not held", (void *)f,
            state_name(f->stack.state));
  mgc_fatal("mgc_fiber_pop: fiber %p is empty", (void *)f);
}

mgc_value *mgc_fiber_bad_slot(mgc_fiber *f, size_t i) {
  check_fiber(f, "MGC_FIBER_SLOT");
  MGC_CHECK(f->stack.state == STACK_HELD && f->limit != 0,
            "MGC_FIBER_SLOT: fiber %p is %s, not held", (void *)f,
            state_name(f->stack.state));
  mgc_fatal("MGC_FIBER_SLOT: slot %zu of fiber %p is past its depth %zu", i,
            (void *)f, f->depth);
}

mgc_value mgc_cont_new(mgc_fiber *f) {
  MGC_CHECK(f != NULL, "mgc_cont_new: NULL fiber");
  return mgc_cont_new_stack(&f->stack);
}

mgc_fiber *mgc_cont_take(mgc_value k) {
  mgc_stack *s = mgc_cont_take_stack(k);
  /* An embedder stack is taken now; the misuse ends the program anyway. */
  MGC_CHECK(s == NULL || s->ops == &fiber_ops,
            "mgc_cont_take: continuation %p holds an embedder stack, not a "
            "fiber (use mgc_cont_take_stack)",
            (void *)k);
  return (mgc_fiber *)s;
}

/* ------------------------------------------------------------------------ */
/* Dead continuations                                                       */
/* ------------------------------------------------------------------------ */

/* Nobody else can reach a dead continuation: plain access would do, but
   the field is atomic everywhere else. */
void mgc_cont_dead(mgc_value k) {
  mgc_stack *s = mgc_cont_field_stack(LOAD_RELAXED(AWORD(&MGC_FIELD(k, 0))));
  if (!s)
    return;
  STORE_RELAXED(AWORD(&MGC_FIELD(k, 0)), CONT_EMPTY);
  MGC_ASSERT(s->magic == STACK_MAGIC && s->state == STACK_IN_CONT);
  drop(s);
}

void mgc_conts_after_minor(struct mgc_dom *d) {
  size_t n = mgc_table_count(&d->conts);
  mgc_value *e = (mgc_value *)d->conts.base;
  for (size_t i = 0; i < n; i++)
    if (LOAD_RELAXED(HDR_PTR(e[i])) != 0) /* not promoted: dead */
      mgc_cont_dead(e[i]);
  mgc_table_clear(&d->conts);
}

/* ------------------------------------------------------------------------ */
/* Shutdown                                                                 */
/* ------------------------------------------------------------------------ */

static void free_pool_conts(void *data, struct pool *p, bool swept) {
  (void)data;
  (void)swept;
  word *start, *end;
  size_t wh;
  mgc_pool_bounds(p, &start, &end, &wh);
  for (word *s = start; s < end; s += wh) {
    word hd = LOAD_RELAXED(AWORD(s));
    if (hd != 0 && MGC_TAG_HD(hd) == MGC_TAG_CONT)
      mgc_cont_dead((mgc_value)(s + 1));
  }
}

static void no_large_conts(void *data, word *hp, bool swept) {
  (void)data;
  (void)hp;
  (void)swept;
}

/* Single-threaded (mgc_shutdown, every other domain joined). */
void mgc_stacks_teardown(void) {
  for (size_t i = 0; i < mgc_rt.max_domains; i++) {
    struct mgc_dom *d = mgc_rt.slots[i];
    if (!d)
      continue;
    mgc_stacks_release_held(d);
    /* Young continuations: the dead ones' stacks, and (at shutdown) the
       live ones' too, since nothing will promote them. */
    mgc_conts_after_minor(d);
    mgc_heap_for_each(d, free_pool_conts, no_large_conts, NULL);
  }
  mgc_heap_for_each_orphan(free_pool_conts, no_large_conts, NULL);
  pthread_mutex_lock(&fiber_lock);
  while (slabs) {
    struct slab *s = slabs;
    slabs = s->next;
    for (size_t i = 0; i < s->used; i++)
      if (s->fibers[i].stack.state != STACK_FREED)
        free(s->fibers[i].slots); /* unreachable, never dropped */
    free(s);
  }
  quarantine_head = quarantine_tail = NULL;
  quarantine_count = 0;
  pthread_mutex_unlock(&fiber_lock);
}
