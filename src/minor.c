/* Minor heaps, the allocation slow path and the minor collection
 * (DESIGN §2, §4.6, §5).
 *
 * One reservation holds a slot per possible domain, so "is this young?" is
 * one range check for every domain's heap (invariant 9).  A domain bumps
 * young_ptr downwards from young_end; young_start <= young_floor <=
 * young_ptr <= young_end outside the inline fast path (invariant 6), where
 * young_floor is the bottom of the part in use this minor cycle (the
 * pause-aware size, below).  young_trigger is the next of the slice points
 * cut from [young_floor, young_end) (crossing one asks for a major slice)
 * or young_floor (crossing it asks for a minor collection); young_limit is the
 * larger of the trigger and nothing else, or all-ones when an interrupt or
 * request is pending; only the owner writes a value other than all-ones
 * (invariant 7).
 *
 * A minor collection is a STW section in which every participant promotes,
 * in parallel, from its share of every domain's remembered set, its own
 * local roots and (participant 0) the global roots, copying young blocks
 * into its own pools.  A race for one young block is settled on its header:
 * Note [promotion race] below.  After the end barrier no reachable young
 * pointer remains (invariant 15) and each domain decides the deadness of
 * its own young custom blocks, then clears its tables (invariant 25).
 *
 * Phases: the slow path runs in the mutator; mgc_minor_from_stw runs inside
 * STW sections, on the domain's thread or its backup thread.
 */
#include "internal.h"

#include <string.h>

_Atomic uint64_t mgc_minor_gcs_started;

/* The reservation (written only at init and inside STW sections). */
static word arena_start;
static size_t arena_slot_bytes;
static size_t arena_slots;
static uint64_t arena_generation; /* bumped when it moves (stw_grow_arena) */

static size_t round_to_pages(size_t bytes) {
  size_t ps = mgc_page_size();
  return (bytes + ps - 1) & ~(ps - 1);
}

int mgc_minor_arena_init(size_t max_domains, size_t slot_words) {
  size_t slot = round_to_pages(slot_words * WORD);
  if (max_domains && slot > SIZE_MAX / max_domains)
    return MGC_ENOMEM;
  void *p = mgc_os_reserve(slot * max_domains, mgc_page_size());
  if (!p)
    return MGC_ENOMEM;
  arena_start = (word)p;
  arena_slot_bytes = slot;
  arena_slots = max_domains;
  arena_generation++;
  /* Written before any other domain exists. */
  mgc_young_range.start = arena_start;
  mgc_young_range.end = arena_start + slot * max_domains;
  return 0;
}

void mgc_minor_arena_free(void) {
  if (arena_start)
    mgc_os_release((void *)arena_start, arena_slot_bytes * arena_slots);
  arena_start = 0;
  mgc_young_range.start = mgc_young_range.end = 0;
}

static void start_pause_model(struct mgc_dom *d);

/* Commits the first `words` words of d's slot and resets its heap. */
int mgc_minor_heap_commit(struct mgc_dom *d, size_t words) {
  size_t bytes = round_to_pages(words * WORD);
  if (bytes > arena_slot_bytes)
    return MGC_EINVAL;
  word start = arena_start + (word)d->id * arena_slot_bytes;
  if (mgc_os_commit((void *)start, bytes) != 0)
    return MGC_ENOMEM;
  d->young_start = start;
  d->young_end = start + bytes;
  d->arena_generation = arena_generation;
  d->minor_heap_words = bytes / WORD;
  d->fast.young_ptr = d->young_end;
  /* A new heap: the pause model starts over (mgc_minor_size_part). */
  start_pause_model(d);
  return 0;
}

/* A domain about to join (under all_domains_lock, no section running):
   its heap was committed before a section may have moved the reservation
   (stw_grow_arena, which released the old one); commit it again in the
   reservation in force. */
int mgc_minor_heap_recommit(struct mgc_dom *d) {
  /* A new reservation may sit at the old address: compare generations. */
  if (d->arena_generation == arena_generation)
    return 0;
  return mgc_minor_heap_commit(d, d->minor_heap_words);
}

void mgc_minor_heap_decommit(struct mgc_dom *d) {
  if (d->young_start)
    mgc_os_decommit((void *)d->young_start, d->young_end - d->young_start);
  d->young_start = d->young_end = d->fast.young_ptr = d->young_trigger = 0;
  d->young_floor = 0;
}

/* ------------------------------------------------------------------------ */
/* Limits, requests and the slow path                                       */
/* ------------------------------------------------------------------------ */

/* A global slice request this domain has not served yet.  The seq_cst
   load pairs with the seq_cst increment of the requester, like the
   interrupt flag below. */
static inline bool slice_requested(struct mgc_dom *d) {
  return atomic_load_explicit(&d->slice_epoch, memory_order_relaxed) <
         atomic_load(&mgc_rt.slice_epoch);
}

/* Only the owner calls this (invariant 7): the domain's thread, or its
   backup thread while it is blocked.  The exchange and the seq_cst load of
   interrupt_pending pair with the seq_cst store of an interrupter
   (mgc_stw_interrupt), which sets the flag before storing all-ones: either
   our exchange comes after their all-ones store (and we see the flag) or
   their store comes after our exchange (and the limit stays all-ones).

   The embedder's interrupts (mgc_interrupt, invariant 40) follow the same
   pattern with embedder_interrupt, which only the domain's own thread
   clears, before its exchange: an interrupt that lands before the clear is
   served by the slow path now running (the reset hook is called below,
   after the new limit is stored); one that lands after it is seen by the
   load below or leaves its all-ones in place.  The backup thread never
   clears it, so an interrupt that arrives while the domain is blocked
   keeps the limit all-ones until the domain's own thread resets it
   (leaving the section does), and the hook runs then. */
void mgc_reset_young_limit(struct mgc_dom *d) {
  bool own = !mgc_tls_on_backup;
  word lim = mgc_rt.params.torture_every ? UINTPTR_MAX : d->young_trigger;
  /* Cleared only when set (a relaxed load on the one thread that clears
     it: a signal handler's store after the load is seen by the re-check). */
  if (own && LOAD_RELAXED(&d->embedder_interrupt))
    atomic_store(&d->embedder_interrupt, 0);
  __atomic_exchange_n(&d->fast.young_limit, lim, __ATOMIC_SEQ_CST);
  if (atomic_load(&d->interrupt_pending) ||
      atomic_load(&d->embedder_interrupt) || d->requested_minor ||
      d->requested_major_slice || slice_requested(d) ||
      mgc_final_wants_safepoint(d))
    __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
  if (own) {
    /* Acquire: pairs with the release store of the setter. */
    void (*hook)(void) = atomic_load_explicit(&mgc_rt.young_limit_reset_hook,
                                              memory_order_acquire);
    if (hook)
      hook();
  }
}

/* Async-signal-safe (mgc.h): a thread-local load and two lock-free atomic
   stores, nothing else.  Seq_cst on the flag, as mgc_stw_interrupt does:
   the backup thread may be resetting the limit at the same moment (the
   domain is blocked), and its exchange and load of the flag are seq_cst.
   On the domain's own thread a signal handler runs between two of its
   instructions, and the seq_cst operations of mgc_reset_young_limit keep
   their order: see there. */
void mgc_interrupt(void) {
  struct mgc_fast_state *s = mgc_tls_state;
  if (s == &mgc_no_domain_state)
    return;
  struct mgc_dom *d = (struct mgc_dom *)s;
  atomic_store(&d->embedder_interrupt, 1);
  __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
}

void mgc_set_young_limit_reset_hook(void (*hook)(void)) {
  atomic_store_explicit(&mgc_rt.young_limit_reset_hook, hook,
                        memory_order_release);
}

void mgc_request_minor(struct mgc_dom *d) {
  d->requested_minor = true;
  __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
}

void mgc_request_major_slice(struct mgc_dom *d) {
  d->requested_major_slice = true;
  __atomic_store_n(&d->fast.young_limit, UINTPTR_MAX, __ATOMIC_RELAXED);
}

/* A slice point, or the floor once less than half a step is left above
   it: the last step of the part is the minor collection's (invariant 7;
   mgc_minor_slices_left counts the points on the same rule). */
static word slice_point_or_floor(const struct mgc_dom *d, word point) {
  return point < d->young_floor + d->young_slice_step / 2 ? d->young_floor
                                                          : point;
}

/* The first domain to fill half its minor heap in a minor cycle (at the
   first slice point at or past the half) asks every domain for a slice
   (DESIGN §2.4: OCaml's major slice epoch), so that domains which
   allocate little, or sit in a blocking section, still do their part of
   each phase. */
static _Atomic uint64_t global_slice_minor;

static void request_global_slices_once(struct mgc_dom *d) {
  if (mgc_single_domain())
    return;
  uint64_t m = LOAD_RELAXED(&mgc_minor_gcs_started);
  uint64_t last = LOAD_RELAXED(&global_slice_minor);
  /* Relaxed CAS: it only elects the domain that sends the requests. */
  if (last < m && atomic_compare_exchange_strong_explicit(
                      &global_slice_minor, &last, m, memory_order_relaxed,
                      memory_order_relaxed))
    mgc_request_global_slices(d);
}

/* After a minor collection, in mutator time: the pools the next one may
   promote into, by the pause model's survival peak, for every domain
   alive (their collections promote at the same time), are faulted in now
   rather than in that pause (DESIGN §6.1).  The words promoted fill
   pools less than fully: a slot rounds its block up to its size class,
   and each class the collection promotes into may open a pool that it
   leaves partly used.  An eighth more pools than the words fill, and two,
   cover that: on the fragment benchmark (all of it surviving, blocks
   over 20 size classes), the pools counted exactly ran out inside 13 of
   its 250 pauses, which then mapped a chunk and faulted its pages in.
   The mutator takes pools from the same cache for the blocks it allocates
   in the major heap (ephemerons are born there): as many more as it took
   in the last minor cycle, at most 64 (2 MiB: what a program that
   allocates mostly in the major heap may hold ahead in vain), and the
   count is topped up again at every slice point.  Counted once per minor
   collection only, the cache held what promotion wanted right after it, and
   ephemerons' mutator took 8-10 of those 27 pools before the next: that pause
   mapped a chunk and took 20-48 page faults (0.8-1.2 ms against 0.5-0.6). */
static void prefault_for_next_minor(struct mgc_dom *d) {
  d->prefault_seq = d->minor_seq;
  double used = (double)(d->young_end - d->young_floor) / WORD;
  double words = used * (d->survival_peak < 1.0 ? d->survival_peak : 1.0);
  size_t pools = (size_t)(words * 1.125 / (POOL_WORDS - POOL_HEADER_WORDS)) + 2;
  pools += d->direct_pools_last < 64 ? d->direct_pools_last : 64;
  mgc_heap_prefault_pools(d, pools * LOAD_RELAXED(&mgc_rt.domains_alive));
}

/* What the domain owes (DESIGN §2.4 "poll GC work"). */
void mgc_poll_gc_work(struct mgc_dom *d) {
  if (d->fast.young_ptr - MGC_MAX_YOUNG_WOSIZE * WORD <
      d->young_trigger + WORD) {
    if (d->young_trigger == d->young_floor) {
      d->requested_minor = true;
    } else {
      d->requested_major_slice = true;
      d->young_trigger =
          slice_point_or_floor(d, d->young_trigger - d->young_slice_step);
      /* Half the part used, or more: the other domains' turn too. */
      if (d->young_end - d->young_trigger >=
          (d->young_end - d->young_floor) / 2)
        request_global_slices_once(d);
    }
  }
  if (d->requested_global_slices) {
    d->requested_global_slices = false;
    if (!mgc_single_domain())
      mgc_request_global_slices(d);
  }
  if (slice_requested(d))
    d->requested_major_slice = true;
  if (d->requested_minor) {
    d->requested_minor = false;
    mgc_empty_minor_heaps(d);
  }
  bool sliced = d->requested_major_slice;
  if (d->requested_major_slice) {
    d->requested_major_slice = false;
    mgc_major_slice_run(d, 0, SLICE_AUTO);
  }
  /* After the slice: its cycle end may give free pools back. */
  if (d->prefault_seq != d->minor_seq || sliced)
    prefault_for_next_minor(d);
  mgc_reset_young_limit(d);
}

/* Services a pending STW request, then whatever GC work is owed. */
void mgc_handle_gc_interrupt(struct mgc_dom *d) {
  /* Acquire: pairs with the leader's release store of the flag, after
     which the request is fully written. */
  if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
    mgc_stw_participate(d);
  mgc_poll_gc_work(d);
}

/* Allocates in d's minor heap, collecting as needed.  The limit is never
   below young_floor (or it is all-ones), so passing the limit test means
   there is room. */
mgc_value mgc_alloc_young(struct mgc_dom *d, size_t wosize, unsigned tag,
                          unsigned reserved) {
  size_t bytes = WHSIZE(wosize) * WORD;
  if (MGC_UNLIKELY(d->fast.young_ptr - bytes <
                   __atomic_load_n(&d->fast.young_limit, __ATOMIC_RELAXED))) {
    if (mgc_rt.params.torture_every &&
        ++d->torture_count >= mgc_rt.params.torture_every) {
      d->torture_count = 0;
      d->requested_minor = true;
    }
    for (;;) {
      mgc_handle_gc_interrupt(d);
      /* A safepoint outside the collector: due finalisers run here,
         before the block is carved (they may allocate). */
      mgc_final_run_at_safepoint(d);
      if (d->fast.young_ptr - d->young_floor >= bytes)
        break;
      d->requested_minor = true;
    }
  }
  d->fast.young_ptr -= bytes;
  *(word *)d->fast.young_ptr = MGC_MAKE_HEADER(wosize, tag, reserved);
  return (mgc_value)(d->fast.young_ptr + WORD);
}

mgc_value mgc_alloc_small_slow(size_t wosize, unsigned tag) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_alloc_small");
  MGC_CHECK(wosize >= 1 && wosize <= MGC_MAX_YOUNG_WOSIZE,
            "mgc_alloc_small: size %zu words is out of range [1, %d]", wosize,
            MGC_MAX_YOUNG_WOSIZE);
  MGC_CHECK(mgc_tag_is_valid_alloc(wosize, tag),
            "mgc_alloc_small: tag %u cannot be allocated with %zu fields "
            "this way",
            tag, wosize);
  return mgc_alloc_young(d, wosize, tag, 0);
}

void mgc_poll_slow(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_poll");
  mgc_handle_gc_interrupt(d);
  mgc_final_run_at_safepoint(d);
}

/* ------------------------------------------------------------------------ */
/* Promotion                                                                */
/* ------------------------------------------------------------------------ */

struct promote_ctx {
  struct mgc_dom *d;
  mgc_value todo; /* original address of the first block to scan, or 0 */
  size_t promoted_words;
  bool parallel;
};

/* Note [promotion race]
   Several domains may reach the same young block.  Its header moves
   original -> IN_PROGRESS -> 0 and never back (invariant 16): a promoter
   allocates its copy, then CASes the original header to IN_PROGRESS; the
   winner stores the copy's address in field 0 (relaxed) and then releases
   header 0.  Everybody reads headers with acquire, so a reader that sees 0
   also sees field 0 (invariant 17).  A loser spins until 0, takes the
   winner's copy, and turns its own into a dead filler.  Only the winner
   reads the original's fields 1.. and scans them; nobody reads a copy made
   by another domain before the end barrier except its header (invariant
   18): the copy's field 1 holds a todo link until mop-up.  With a single
   participant, plain stores suffice.

   Note [publishing copies]
   A domain that has finished promoting waits at the end barrier doing
   opportunistic marking (mgc_major_opportunistic_work) while others still
   promote.  Its marker may read a remembered slot of an old block just
   after a promoter rewrote it with the address of a copy, and then read
   what that address needs: the copy's header and, for an infix pointer
   (copy + offset), the infix header inside the copy, to step back to the
   closure.  So everything a marker may read of a copy is written before
   the copy's address can be seen:
   - the copy's header is written when it is allocated, and for a closure
     the part before its start of environment (code pointers, closure info,
     infix headers: never young, never changed by a collection) is copied
     from the original before the forwarding pointer is installed;
     mop-up starts after that part (it only restores field 1, which held
     the todo link and which no marker reads: copies are born MARKED and
     are never scanned, or before the mark start UNMARKED while nobody
     marks, invariant 19);
   - the winner's release store of header 0 orders those writes before
     any loser's acquire of header 0, so a loser that publishes the
     winner's address publishes it after them too;
   - a rewritten remembered slot is stored with release order
     (promote_remembered) and the marker loads fields with acquire order
     (mark() in major.c), so the marker's reads of the header and infix
     header happen after their writes.
   The other fields of a copy are written by mop-up with plain stores and
   read by nobody else before the end barrier (invariant 18).  Readers of
   copies that run after the end barrier (custom table, verifier, the
   cycle end) are ordered by the barrier itself. */
static inline word young_header(struct promote_ctx *c, mgc_value v) {
  if (!c->parallel)
    return LOAD_RELAXED(HDR_PTR(v));
  word hd = LOAD_ACQUIRE(HDR_PTR(v));
  while (hd == IN_PROGRESS_HD) {
    mgc_cpu_relax();
    hd = LOAD_ACQUIRE(HDR_PTR(v));
  }
  return hd;
}

static inline mgc_value forwarded(mgc_value v) {
  return (mgc_value)LOAD_RELAXED(AWORD(v));
}

/* Installs `copy` as the new address of v, whose header was hd.  Returns
   true when this domain won; *winner is the copy that counts. */
static inline bool install_forward(struct promote_ctx *c, mgc_value v, word hd,
                                   mgc_value copy, mgc_value *winner) {
  if (!c->parallel) {
    STORE_RELAXED(HDR_PTR(v), 0);
    STORE_RELAXED(AWORD(v), (word)copy);
    *winner = copy;
    return true;
  }
  word expected = hd;
  /* Relaxed CAS: what others must see (field 0) is published by the
     release store of header 0 below, see Note [promotion race]. */
  if (atomic_compare_exchange_strong_explicit(
          HDR_PTR(v), &expected, IN_PROGRESS_HD, memory_order_relaxed,
          memory_order_relaxed)) {
    STORE_RELAXED(AWORD(v), (word)copy);
    STORE_RELEASE(HDR_PTR(v), 0);
    *winner = copy;
    return true;
  }
  while (LOAD_ACQUIRE(HDR_PTR(v)) != 0)
    mgc_cpu_relax();
  *winner = forwarded(v);
  return false;
}

/* The loser's copy becomes a dead, MARKED, unscanned block (invariant 20). */
static void make_filler(mgc_value copy, size_t wosize) {
#if MGC_DEBUG >= 2
  for (size_t i = 0; i < wosize; i++)
    MGC_FIELD(copy, i) = MGC_VAL_INT(0);
#endif
  STORE_RELAXED(HDR_PTR(copy), MGC_MAKE_HEADER(wosize, MGC_TAG_ABSTRACT, 0) |
                                   mgc_colours.marked);
}

/* Forced inline: promote calls it for every block it copies, at three
   sites, and the compiler's own choice left it out of line (a call and six
   saved registers per block). */
static inline __attribute__((always_inline)) mgc_value
alloc_copy(struct promote_ctx *c, size_t wosize, word hd) {
  word *hp = mgc_heap_alloc_hd(c->d, hd);
  if (!hp)
    mgc_fatal("out of memory while promoting a block of %zu words", wosize);
  c->promoted_words += WHSIZE(wosize);
  return (mgc_value)(hp + 1);
}

static inline bool no_shortcut_tag(unsigned t) {
  return t == MGC_TAG_FORWARD || t == MGC_TAG_LAZY || t == MGC_TAG_FORCING ||
         t == MGC_TAG_DOUBLE;
}

/* The tag of the block f points to, looking through a young block already
   promoted (header 0) to its copy. */
static unsigned target_tag(struct promote_ctx *c, mgc_value f) {
  if (!mgc_is_young(f))
    return MGC_TAG_HD(LOAD_RELAXED(HDR_PTR(f)));
  word hd = young_header(c, f);
  if (hd == 0)
    return MGC_TAG_HD(LOAD_RELAXED(HDR_PTR(forwarded(f))));
  return MGC_TAG_HD(hd);
}

/* Copies fields 1 .. start of environment - 1 of the young closure v into
   its copy before the copy is published, so that an infix header is in
   place before anyone can step back over it (Note [publishing copies]).
   The original's fields 1.. are not written during a collection. */
static void copy_closure_prefix(mgc_value copy, mgc_value v, size_t sz) {
  size_t start = mgc_closure_env_start(v, sz);
  for (size_t i = 1; i < start; i++)
    MGC_FIELD(copy, i) = MGC_FIELD(v, i);
}

/* Promotes the young block v and returns its new address (DESIGN §5.2).
   One-field blocks and non-shortcut Forward chains continue in a loop into
   the copy's field 0; larger scanned blocks go on the todo list, threaded
   through field 1 of their copies.  Forced inline into mop-up's loop, its
   one call per field of every promoted block; promote() is the same, out
   of line, for the roots and the remembered sets. */
static inline __attribute__((always_inline)) mgc_value
promote_inline(struct promote_ctx *c, mgc_value v) {
  mgc_value first;
  mgc_value *slot = &first;
  for (;;) {
    if (!IS_YOUNG_BLOCK(v)) {
      *slot = v;
      return first;
    }
    word hd = young_header(c, v);
    mgc_value off = 0;
    if (hd != 0 && MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
      off = (mgc_value)(MGC_WOSIZE_HD(hd) * WORD);
      v -= off;
      hd = young_header(c, v);
    }
    if (hd == 0) {
      *slot = forwarded(v) + off;
      return first;
    }
    unsigned tag = MGC_TAG_HD(hd);
    size_t sz = MGC_WOSIZE_HD(hd);
    mgc_value copy, winner;
    if (tag < MGC_TAG_INFIX) {
      copy = alloc_copy(c, sz, hd);
      mgc_value f0 = (mgc_value)LOAD_RELAXED(AWORD(v));
      MGC_FIELD(copy, 0) = f0;
      if (tag == MGC_TAG_CLOSURE)
        copy_closure_prefix(copy, v, sz);
      if (!install_forward(c, v, hd, copy, &winner)) {
        make_filler(copy, sz);
        *slot = winner + off;
        return first;
      }
      *slot = copy + off;
      if (sz > 1) {
        /* A continuation too: mop-up scans its stack (DESIGN §5.6). */
        MGC_FIELD(copy, 1) = c->todo;
        c->todo = v;
        return first;
      }
      slot = &MGC_FIELD(copy, 0);
      v = f0;
    } else if (tag >= MGC_TAG_NO_SCAN) {
      copy = alloc_copy(c, sz, hd);
      /* Field 0 may be written right now by a winning promoter of
         another domain: read it atomically (the rest is never written
         during a collection). */
      MGC_FIELD(copy, 0) = (mgc_value)LOAD_RELAXED(AWORD(v));
      memcpy((void *)(copy + WORD), (void *)(v + WORD), (sz - 1) * WORD);
      if (!install_forward(c, v, hd, copy, &winner))
        make_filler(copy, sz);
      *slot = winner + off;
      return first;
    } else {
      /* Forward: short-circuit unless the target is lazy-like or a
         double (invariant 5, DESIGN §1.3). */
      mgc_value f = (mgc_value)LOAD_RELAXED(AWORD(v));
      if (!MGC_IS_BLOCK(f) || !no_shortcut_tag(target_tag(c, f))) {
        v = f;
        continue;
      }
      copy = alloc_copy(c, 1, hd);
      if (!install_forward(c, v, hd, copy, &winner)) {
        make_filler(copy, 1);
        *slot = winner;
        return first;
      }
      *slot = copy;
      MGC_FIELD(copy, 0) = f;
      slot = &MGC_FIELD(copy, 0);
      v = f;
    }
  }
}

static mgc_value promote(struct promote_ctx *c, mgc_value v) {
  return promote_inline(c, v);
}

static void promote_action(void *ctx, mgc_value v, mgc_value *slot);

/* Scans the todo list (DESIGN §5.4): for each promoted block, promote its
   copy's field 0 in place and fields 1.. from the original. */
static void mopup(struct promote_ctx *c) {
  while (c->todo) {
    mgc_value v = c->todo;
    mgc_value copy = forwarded(v);
    c->todo = MGC_FIELD(copy, 1);
    /* The next original to scan: its fields are read on the next turn. */
    __builtin_prefetch((void *)c->todo);
    word hd = LOAD_RELAXED(HDR_PTR(copy));
    size_t sz = MGC_WOSIZE_HD(hd);
    if (MGC_UNLIKELY(MGC_TAG_HD(hd) == MGC_TAG_CONT)) {
      /* Field 0 is the stack (copied before the forwarding), field 1 an
         opaque word.  Only the winner gets here: it scans the stack, whose
         slots were written without a barrier (invariant 24). */
      MGC_FIELD(copy, 1) = MGC_FIELD(v, 1);
      mgc_stack *s = mgc_cont_field_stack((word)MGC_FIELD(copy, 0));
      if (s)
        mgc_stack_scan(s, promote_action, c);
      continue;
    }
    size_t i = 0;
    size_t env =
        MGC_TAG_HD(hd) == MGC_TAG_CLOSURE ? mgc_closure_env_start(v, sz) : 0;
    if (env >= 2) {
      /* The prefix is in place already (copy_closure_prefix); only the
         closure info in field 1, overwritten by the todo link, is
         restored.  Field 0 is a code pointer. */
      MGC_FIELD(copy, 1) = MGC_FIELD(v, 1);
      i = env;
    }
    /* Field 0 from the copy, where it is in place already (the
       original's holds the forwarding pointer) and is written only when
       it changes; the others from the original.  One call site, so that
       promote_inline is inlined once. */
    for (; i < sz; i++) {
      mgc_value f = i == 0 ? MGC_FIELD(copy, 0) : MGC_FIELD(v, i);
      if (IS_YOUNG_BLOCK(f))
        f = promote_inline(c, f);
      else if (i == 0)
        continue;
      MGC_FIELD(copy, i) = f;
    }
  }
}

/* The scanning action for roots: a no-op for every word that is not an
   address inside the minor heaps (integers, 0, old and out-of-heap blocks,
   pointers outside any heap, code pointers), so that a hook told
   MGC_SCAN_YOUNG may report such words unfiltered (invariant 41). */
static void promote_action(void *ctx, mgc_value v, mgc_value *slot) {
  if (IS_YOUNG_BLOCK(v))
    *slot = promote(ctx, v);
}

/* This participant's share of every remembered set (DESIGN §4.6): starting
   with table idx, the j-th table visited gives its j-th of n slices, so
   each entry is processed exactly once (invariant 21).  Slots are read and
   written with relaxed atomics: the same slot may sit in two domains'
   tables, or twice in one (the remembered filter, table.c), and be
   rewritten by another participant at the same moment (ocaml #12737);
   both write the same winner's address. */
static void promote_remembered(struct promote_ctx *c, int idx, int n,
                               struct mgc_dom **parts) {
  for (int j = 0; j < n; j++) {
    struct mgc_table *t = &parts[(idx + j) % n]->major_ref;
    size_t count = mgc_table_count(t);
    size_t per = count / (size_t)n;
    size_t lo = per * (size_t)j;
    size_t hi = j == n - 1 ? count : lo + per;
    mgc_value **e = (mgc_value **)t->base;
    for (size_t k = lo; k < hi; k++) {
      if (k + 16 < hi)
        __builtin_prefetch(e[k + 16], 1);
      aword *slot = AWORD(e[k]);
      mgc_value v = (mgc_value)LOAD_RELAXED(slot);
      /* Release: a marker of another domain may load this slot (acquire)
         and read the copy's header and infix header (Note [publishing
         copies]). */
      if (IS_YOUNG_BLOCK(v))
        STORE_RELEASE(slot, (word)promote(c, v));
    }
  }
}

#if MGC_DEBUG >= 2
static void check_remembered_promoted(struct mgc_dom *d) {
  size_t count = mgc_table_count(&d->major_ref);
  mgc_value **e = (mgc_value **)d->major_ref.base;
  for (size_t k = 0; k < count; k++) {
    mgc_value v = (mgc_value)LOAD_RELAXED(AWORD(e[k]));
    MGC_CHECK(!IS_YOUNG_BLOCK(v),
              "remembered slot %p still holds young %p after promotion",
              (void *)e[k], (void *)v);
  }
}

static void poison_minor_heap(word from, word to) {
  for (word *p = (word *)from; p < (word *)to; p++)
    *p = 0xD700D7D7D700D6D7u; /* odd: reads as an integer */
}
#endif

void mgc_minor_leader_setup(void) {
  /* Relaxed: readers compare counts only to see that a collection ran;
     the STW barriers order everything else. */
  atomic_fetch_add_explicit(&mgc_minor_gcs_started, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mgc_rt.minor_collections, 1, memory_order_relaxed);
}

static void minor_setup(void *data) {
  (void)data;
  mgc_minor_leader_setup();
}

/* The pause-aware minor heap (DESIGN §5.8).  A minor collection costs
   about what it promotes, and what it promotes grows with the part of the
   minor heap the cycle used, so that part is what bounds the pause:
   - after a collection that took longer than the goal, the domain uses a
     part scaled down by goal / pause, with a margin of 7/8;
   - after one that took less than 7/8 of it, half as much again, or
     less: by the words that the pause's room under 7/8 of the goal would
     promote at the measured rate if they all survived, so that a part
     whose pause sits under the goal keeps growing back (where the young
     survivors are a fixed set, a part shrunk by a slow collection promotes
     as much as before, and with a rule that grew only under half the goal
     it never grew back);
   - either way, up to the whole heap, but no further than the part whose
     pause at the recent peak survival would be 7/8 of the goal (the
     model, below), so that a stretch of collections where nothing
     survives does not grow the heap that the next burst of survival (a
     tree being built) then meets whole.  A part already above that is
     kept, not shrunk: the pause measured at this size is better evidence
     than the model's.
   The pause that counts is the domain's own work, up to its arrival at
   the promotion barrier: waiting there for a domain with more to promote
   would not end sooner if this one used less.  Except with more domains
   running than processors (mgc_crowded): the domains promote by turns, the
   wait is for the work of the domains that were off a processor, and the
   whole pause counts, so that every part shrinks until the turns fit the
   goal together: from the release of the barrier that starts everybody's
   promotion, since a domain given its processor back after the others'
   turns starts its own collection late.  The part never goes below
   MIN_USED_WORDS (a 256-word block and a few more always fit, invariant
   6) nor above the whole heap.

   The model: pause ~ rate x survival x used, with
   - rate the ratio of decaying sums (weight 7/8 per collection) of own
     pauses and promoted words, over the collections that promoted at
     least RATE_MIN_WORDS (so the fixed part of a pause, roots and tables,
     does not count on its own, and one slow pause moves it by an eighth);
   - survival the peak of promoted / allocated (the words allocated in
     the heap since the last collection) over the recent collections,
     each older one counting 5 % less per collection, over the
     collections that found at least half the part used (one that
     another domain made early, this one idle, does not count).  It comes
     from the words promoted, not from timing.
   It only limits growth: where the young data that survive are a fixed
   set (a pool of threads' states), promoted / used rises as the part
   shrinks, and a model that shrank the part on its own would spiral down
   to promoting everything.

   The probe.  Neither rule can tell a fixed set from survival that grows
   with the part: at a part smaller than one round of the set's updates
   (fibers: each of 10,000 threads allocates 13 words a step and keeps
   11) survival is as high as a tree's, the model caps the part there,
   and where the pause at that part reaches 7/8 of the goal (a slow
   machine, or a lower goal) nothing grows it, though the whole heap
   would promote no more and pause no longer.  So when the rules leave a
   fully used part unchanged, its pause at most 8/9 of the goal and its
   survival at least 3/4 of the peak (the cap is then the current
   survival's, not the memory of an earlier burst, which the cap is there
   to keep), the next part is larger by a quarter: were survival to stay,
   its pause would be at most 10/9 of the goal.  The probe pays when that
   part, used fully, promoted less than 3/4 of what its extra words would
   at the survival before it but at least 3/4 of what the part before it
   did (a burst's end, whose promotion drops whatever the part, says
   nothing of it), and its pause stayed under the goal: the part is kept,
   and the next collection may probe again, with any pause under the goal
   (promotion was just seen not to follow the part).  Otherwise the part
   goes back (or lower, if the pause passed the goal) and the next probe
   waits PROBE_WAIT_MIN qualifying collections, twice as many after each
   probe that did not pay, up to PROBE_WAIT_MAX: where survival follows
   the part, a probe costs one pause of at most 10/9 of the goal a few
   times a run.  A collection that found less than half the part used
   neither judges a probe nor starts one. */
#define MIN_USED_WORDS 8192
#define RATE_KEEP 0.875
#define SURVIVAL_KEEP 0.95
#define RATE_MIN_WORDS 4096
#define MARGIN 0.875 /* pauses are aimed at this part of the goal */
#define PROBE_WAIT_MIN 16
#define PROBE_WAIT_MAX 1024
/* A new heap's rate before any domain measured one: pessimistic (the
   first collections measured 8-10 ns a word where later ones take 4-6). */
#define PRIOR_NS_PER_WORD 10.0

/* The rate (ps per promoted word) last measured by any domain, for the
   next new heap.  Relaxed: a hint, read and written whole. */
static _Atomic uint64_t rate_hint_ps;

/* The measured ns per promoted word (from start_pause_model's seed until
   collections are measured); 0 only for sums never seeded. */
static double ns_per_word(const struct mgc_dom *d) {
  return d->promoted_sum > 0 ? d->pause_ns_sum / d->promoted_sum : 0;
}

/* The largest part whose pause at the peak survival stays under aim (ns). */
static word model_part_words(const struct mgc_dom *d, double aim, word full) {
  double cost = ns_per_word(d) * d->survival_peak;
  return cost * (double)full <= aim ? full : (word)(aim / cost);
}

/* The slice points of an empty heap (invariant 7): the part in use cut
   into mgc_major_slices_per_minor() steps of whole words, the trigger at
   the first step below young_end.  Allocation crossing a point asks for a
   major slice and moves the trigger one step down (mgc_poll_gc_work); the
   last step is the floor, where a minor collection is due. */
void mgc_minor_place_trigger(struct mgc_dom *d) {
  word used = (d->young_end - d->young_floor) / WORD;
  word step = used / mgc_major_slices_per_minor();
  d->young_slice_step = (step > 0 ? step : 1) * WORD;
  d->young_trigger =
      slice_point_or_floor(d, d->young_end - d->young_slice_step);
}

/* The slice points left in this minor cycle, the one just crossed (or the
   collection just made) counted: the slice running now and one for each
   point still ahead above the floor. */
unsigned mgc_minor_slices_left(const struct mgc_dom *d) {
  if (d->young_slice_step == 0 || d->young_trigger <= d->young_floor)
    return 1;
  return 1 + (unsigned)((d->young_trigger - d->young_floor +
                         d->young_slice_step / 2) /
                        d->young_slice_step);
}

/* Puts the part in use at the top `used` words of the heap, with its slice
   points (the heap is empty: after a collection or a commit). */
static void use_part(struct mgc_dom *d, word used) {
  d->young_floor = d->young_end - used * WORD;
  mgc_minor_place_trigger(d);
}

/* A new heap (a new domain, a resize): nothing is known of its survival
   yet, so the model assumes the worst, all of it surviving (the peak
   then decays as above); its rate is the last one a domain measured
   (rate_hint_ps), or PRIOR_NS_PER_WORD before any, counted as one
   collection of RATE_MIN_WORDS words, which the first real ones
   outweigh.  The part starts at the model's cap: a new heap's first
   collections can be its slowest (they fault in fresh major pages and
   meet cold caches), and a whole heap met then was the ephemerons
   benchmark's 1.3-1.5 ms p99, the only one over 1 ms.  Called where no
   section can change the parameters meanwhile: at init, by a joining
   domain under the joiner lock, by a running domain resizing its own
   heap (a section would need it), or inside a section. */
static void start_pause_model(struct mgc_dom *d) {
  word full = (d->young_end - d->young_start) / WORD;
  uint64_t hint = LOAD_RELAXED(&rate_hint_ps);
  d->promoted_sum = RATE_MIN_WORDS;
  d->pause_ns_sum =
      RATE_MIN_WORDS * (hint ? (double)hint / 1000 : PRIOR_NS_PER_WORD);
  d->survival_peak = 1.0;
  d->last_pause_ns = 0;
  d->probe_from = 0;
  d->probe_wait = d->probe_backoff = PROBE_WAIT_MIN;
  d->probe_paid = false;
  uint64_t goal = (uint64_t)mgc_rt.params.minor_pause_goal_us * 1000;
  word used = goal ? model_part_words(d, (double)goal * MARGIN, full) : full;
  word min = full < MIN_USED_WORDS ? full : MIN_USED_WORDS;
  if (used < min)
    used = min;
  use_part(d, used);
}

/* The probe's verdict or start (the comment above), given the part the
   rules chose; returns the part to use. */
static word probe_part(struct mgc_dom *d, uint64_t goal, uint64_t pause_ns,
                       size_t promoted, word allocated, double survival,
                       word before, word chosen, word full) {
  bool used_fully = allocated >= before - before / 16;
  if (goal == 0) { /* no goal: the whole heap, no probe left pending */
    d->probe_from = 0;
    return chosen;
  }
  /* A collection that found less than half the part used (another
     domain's, a cycle end's) says nothing of it: the probe waits. */
  if (d->probe_from != 0 && allocated >= before / 2) {
    word from = d->probe_from;
    d->probe_from = 0;
    double extra = (double)allocated - d->probe_allocated;
    double base = d->probe_promoted / d->probe_allocated;
    if (used_fully && pause_ns <= goal &&
        (double)promoted * 4 >= d->probe_promoted * 3 &&
        ((double)promoted - d->probe_promoted) * 4 < extra * base * 3) {
      d->probe_wait = 0;
      d->probe_backoff = PROBE_WAIT_MIN;
      d->probe_paid = true;
      return chosen;
    }
    d->probe_paid = false;
    d->probe_wait = d->probe_backoff;
    if (d->probe_backoff < PROBE_WAIT_MAX)
      d->probe_backoff *= 2;
    return chosen < from ? chosen : from;
  }
  if (d->probe_from != 0 || chosen != before || before >= full || !used_fully ||
      pause_ns > goal || survival * 4 < d->survival_peak * 3 ||
      (!d->probe_paid && (double)pause_ns * 9 > (double)goal * 8))
    return chosen;
  if (d->probe_wait > 0) {
    d->probe_wait--;
    return chosen;
  }
  d->probe_from = before;
  d->probe_promoted = (double)promoted;
  d->probe_allocated = (double)allocated;
  return full - before < before / 4 ? full : before + before / 4;
}

void mgc_minor_size_part(struct mgc_dom *d, uint64_t pause_ns, size_t promoted,
                         word allocated) {
  word full = (d->young_end - d->young_start) / WORD;
  word used = (d->young_end - d->young_floor) / WORD;
  word before = used;
  double survival = 0;
  word min = full < MIN_USED_WORDS ? full : MIN_USED_WORDS;
  uint64_t goal = (uint64_t)mgc_rt.params.minor_pause_goal_us * 1000;
  if (promoted >= RATE_MIN_WORDS) {
    d->pause_ns_sum = d->pause_ns_sum * RATE_KEEP + (double)pause_ns;
    d->promoted_sum = d->promoted_sum * RATE_KEEP + (double)promoted;
    STORE_RELAXED(&rate_hint_ps, (uint64_t)(ns_per_word(d) * 1000));
  }
  /* Survival is measured on the words allocated since the last
     collection, and only after a collection that found at least half the
     part used: one that another domain (or a cycle end) made early, this
     domain idle, says nothing of how much a whole part would promote, and
     aging the peak then let an idle domain's part grow back to the whole
     heap, which it met with its next tree (1.5 ms pauses at D=2). */
  if (allocated > 0 && allocated >= used / 2) {
    /* Above 1 when this domain promoted other domains' young blocks,
       which using less of its own heap would not shorten: capped. */
    survival = (double)promoted / (double)allocated;
    if (survival > 1.0)
      survival = 1.0;
    d->survival_peak *= SURVIVAL_KEEP;
    if (survival > d->survival_peak)
      d->survival_peak = survival;
  }
  d->last_pause_ns = pause_ns;
  double aim = (double)goal * MARGIN;
  if (goal == 0) {
    used = full;
  } else if (pause_ns > goal) {
    double scaled = (double)used * (double)goal / (double)pause_ns * MARGIN;
    used = scaled < (double)min ? min : (word)scaled;
  } else if ((double)pause_ns < aim) {
    /* Grow by half, or by the words that the room left under the aim
       would promote at the measured rate if all of them survived. */
    double room = aim - (double)pause_ns;
    word step = used / 2;
    if (ns_per_word(d) > 0 &&
        room * d->promoted_sum / d->pause_ns_sum < (double)step)
      step = (word)(room * d->promoted_sum / d->pause_ns_sum);
    word grown = used + step > full ? full : used + step;
    word cap = model_part_words(d, aim, full);
    if (grown > cap)
      grown = cap > used ? cap : used;
    used = grown;
  }
  used = probe_part(d, goal, pause_ns, promoted, allocated, survival, before,
                    used, full);
  use_part(d, used);
}

/* One participant's minor collection (DESIGN §5.5). */
void mgc_minor_from_stw(struct mgc_dom *d, int idx, int n,
                        struct mgc_dom **parts) {
  uint64_t t0 = mgc_now_ns();
  /* Every caller released a barrier just before (the section's enter
     barrier, or the leader's setup): the promotion's start for all. */
  uint64_t t_start = n > 1 ? mgc_stw_last_release_ns() : t0;
  mgc_call_hook(&mgc_rt.minor_begin_hook);
  mgc_ev_begin(d, MGC_EVN_MINOR);
#if MGC_DEBUG >= 3
  mgc_verify_in_stw(d, idx, n); /* before, at level 3; after, below */
#endif
  struct promote_ctx c = {d, 0, 0, n > 1};
  word used_from = d->fast.young_ptr;
  d->promote_sweeps = 32;
  d->minor_seq = LOAD_RELAXED(&mgc_minor_gcs_started);
  size_t remembered = mgc_table_count(&d->major_ref);
  mgc_ev_begin(d, MGC_EVN_MINOR_ROOTS);
  if (idx == 0) {
    mgc_scan_global_roots(promote_action, &c, true);
    mgc_global_roots_young_to_old();
  }
  mgc_scan_local_roots(d, promote_action, &c, MGC_SCAN_YOUNG);
  /* Young first-kind finalised values, then young ephemeron contents,
     are promoted unconditionally (invariant 22, DESIGN §5.5). */
  mgc_final_scan_young(d, promote_action, &c);
  mgc_ephe_scan_young(d, promote_action, &c);
  mgc_ev_end(d, MGC_EVN_MINOR_ROOTS);
  mgc_ev_begin(d, MGC_EVN_MINOR_REMSET);
  promote_remembered(&c, idx, n, parts);
  mgc_ev_end(d, MGC_EVN_MINOR_REMSET);
  mgc_ev_begin(d, MGC_EVN_MINOR_MOPUP);
  mopup(&c);
  mgc_ev_end(d, MGC_EVN_MINOR_MOPUP);
  d->promote_sweeps = -1;
  d->direct_pools_last = d->direct_pools;
  d->direct_pools = 0;

  /* The words allocated in this heap since its last collection. */
  word allocated = (d->young_end - used_from) / WORD;
  COUNTER_ADD(&d->stats.minor_words, allocated);
  COUNTER_ADD(&d->stats.promoted_words, c.promoted_words);
  d->fast.young_ptr = d->young_end;
  mgc_note_major_alloc(d, c.promoted_words);

  /* Nobody decides a young block is dead before everybody has promoted
     (invariant 23, ocaml #11995).  While waiting, opportunistic major
     work: promoters of other domains only write copies (born MARKED, never
     scanned by our marking; before the mark start, when our work only
     sweeps our own pools, UNMARKED) and remembered slots (atomically). */
  uint64_t t_own = mgc_now_ns();
  mgc_stw_barrier_working(n, d);
#if MGC_DEBUG >= 2
  /* Every remembered slot now holds an immediate or a major block; checked
     before anyone resumes (a second barrier), since mutators may store
     young values into those slots again right after. */
  check_remembered_promoted(d);
  if (n > 1)
    mgc_stw_barrier(n);
#endif
  uint64_t t1 = mgc_now_ns();
  mgc_ev_counter(d, MGC_EVN_PROMOTED_WORDS, c.promoted_words);
  mgc_ev_counter(d, MGC_EVN_REMEMBERED, remembered);
  mgc_ev_end(d, MGC_EVN_MINOR);
  mgc_call_hook(&mgc_rt.minor_end_hook);
  mgc_custom_after_minor(d);
  mgc_conts_after_minor(d);
  mgc_final_after_minor(d);
  /* A domain's last-kind table may hold another domain's young blocks,
     whose headers it has just read: nobody poisons or reuses its minor
     heap before everybody has (set for the whole section, see stw.c). */
  if (n > 1 && mgc_rt.final_barrier)
    mgc_stw_barrier(n);
  /* Every table's young entries are processed now: the next registration
     on another domain's young block sets the flag again. */
  if (idx == 0 && mgc_rt.final_barrier)
    atomic_store_explicit(&mgc_rt.young_last_foreign, false,
                          memory_order_relaxed);
#if MGC_DEBUG >= 2
  poison_minor_heap(used_from, d->young_end);
#endif
  mgc_remembered_clear(d);
  mgc_table_clear(&d->custom);
  mgc_table_clear(&d->ephe_ref);
  d->extra_minor_resources = 0;
  mgc_histogram_add(&d->pauses, t1 - t0, false);
  mgc_minor_size_part(d, mgc_crowded() ? t1 - t_start : t_own - t0,
                      c.promoted_words, allocated);
  mgc_log(MGC_VERBOSE_MINOR, "minor collection: %zu words promoted, %.1f us",
          (size_t)c.promoted_words, (double)(t1 - t0) / 1e3);
  if (mgc_rt.params.verify || MGC_DEBUG >= 3)
    mgc_verify_in_stw(d, idx, n);
  /* Every minor heap is empty: once every pool is swept and the cycle
     has allocated up to its mark trigger, marking starts here.  The copies just
     made are UNMARKED, like every block born before the mark start, and marking
     traces them from the roots.  The phase, read alike by every participant,
     changes only in sections. */
  if (mgc_major_mark_start_due(n, false)) {
    mgc_major_mark_start(d, n);
    /* Again: the mark start changes the number of slice points. */
    mgc_minor_place_trigger(d);
  }
  mgc_reset_young_limit(d);
}

static void stw_minor(struct mgc_dom *d, void *data, int idx, int n,
                      struct mgc_dom **parts) {
  (void)data;
  mgc_minor_from_stw(d, idx, n, parts);
}

/* Runs until this domain has taken part in a minor collection that started
   after the call: ours, or one led by another domain (DESIGN §4.6).  The
   test is on the collections this domain was in, not on the global count:
   a leader bumps the count before it interrupts us, so a moved count alone
   does not mean our heap was emptied yet. */
void mgc_empty_minor_heaps(struct mgc_dom *d) {
  uint64_t start = LOAD_RELAXED(&mgc_minor_gcs_started);
  while (d->minor_seq <= start)
    mgc_try_run_on_all_domains(d, stw_minor, NULL, minor_setup);
}

void mgc_minor_collection(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_minor_collection");
  d->requested_minor = false;
  mgc_empty_minor_heaps(d);
  mgc_poll_gc_work(d);
  mgc_final_run_at_safepoint(d);
}

/* ------------------------------------------------------------------------ */
/* Resizing                                                                 */
/* ------------------------------------------------------------------------ */

struct resize_request {
  struct mgc_dom *requester;
  size_t words;
};

/* STW: empties every minor heap, moves the reservation to one with bigger
   slots, and has every domain commit its heap there (DESIGN §2.6). */
static void stw_grow_arena(struct mgc_dom *d, void *data, int idx, int n,
                           struct mgc_dom **parts) {
  struct resize_request *r = data;
  if (mgc_stw_barrier_begin(n)) {
    mgc_minor_leader_setup();
    mgc_stw_barrier_release();
  }
  mgc_minor_from_stw(d, idx, n, parts);
  if (mgc_stw_barrier_begin(n)) {
    size_t need = round_to_pages(r->words * WORD);
    if (need > arena_slot_bytes) {
      mgc_os_release((void *)arena_start, arena_slot_bytes * arena_slots);
      void *p = mgc_os_reserve(need * arena_slots, mgc_page_size());
      if (!p)
        mgc_fatal("cannot reserve %zu bytes for the minor heaps",
                  need * arena_slots);
      arena_start = (word)p;
      arena_slot_bytes = need;
      arena_generation++;
      mgc_young_range.start = arena_start;
      mgc_young_range.end = arena_start + need * arena_slots;
    }
    mgc_stw_barrier_release();
  }
  size_t words = d == r->requester ? r->words : d->minor_heap_words;
  if (mgc_minor_heap_commit(d, words) != 0)
    mgc_fatal("cannot commit a minor heap of %zu words", words);
  mgc_table_free(&d->major_ref);
  mgc_table_free(&d->custom);
  mgc_table_free(&d->ephe_ref);
  mgc_reset_young_limit(d);
  mgc_stw_barrier(n);
}

void mgc_set_minor_heap_size(size_t words) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_set_minor_heap_size");
  MGC_CHECK(words >= MGC_MAX_YOUNG_WOSIZE + 1 && words <= ((size_t)1 << 32),
            "mgc_set_minor_heap_size: %zu words is out of range [%d, 2^32]",
            words, MGC_MAX_YOUNG_WOSIZE + 1);
  if (round_to_pages(words * WORD) <= arena_slot_bytes) {
    /* Always collect first, even with an empty own heap: our tables may
       hold slots pointing into other domains' heaps (DESIGN §2.6). */
    mgc_empty_minor_heaps(d);
    MGC_CHECK(d->fast.young_ptr == d->young_end,
              "minor heap not empty before resizing");
    mgc_minor_heap_decommit(d);
    if (mgc_minor_heap_commit(d, words) != 0)
      mgc_fatal("cannot commit a minor heap of %zu words", words);
    mgc_table_free(&d->major_ref);
    mgc_table_free(&d->custom);
    mgc_table_free(&d->ephe_ref);
    mgc_reset_young_limit(d);
  } else {
    struct resize_request r = {d, words};
    uint64_t start = LOAD_RELAXED(&mgc_minor_gcs_started);
    while (d->minor_seq <= start ||
           d->minor_heap_words != round_to_pages(words * WORD) / WORD)
      mgc_try_run_on_all_domains(d, stw_grow_arena, &r, NULL);
  }
  mgc_log(MGC_VERBOSE_PARAMS, "minor heap: %zu words", d->minor_heap_words);
}

/* ------------------------------------------------------------------------ */
/* Geometry                                                                 */
/* ------------------------------------------------------------------------ */

void mgc_minor_heap_range(void **start, void **end) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_minor_heap_range");
  MGC_CHECK(start != NULL && end != NULL,
            "mgc_minor_heap_range: NULL argument");
  *start = (void *)d->young_start;
  *end = (void *)d->young_end;
}

size_t mgc_minor_free_words(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_minor_free_words");
  return (d->fast.young_ptr - d->young_floor) / WORD;
}
