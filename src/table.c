/* Remembered-set tables and the write barrier (DESIGN §3).
 *
 * Tables are created lazily at minor_heap_words / 8 entries plus a reserve
 * of 256.  Crossing the threshold requests a minor collection and opens the
 * reserve; exhausting the reserve doubles the table without another request
 * (invariant 13), so a table never overflows and never loses an entry.
 * Clearing after a minor collection keeps the memory.
 *
 * The barrier keeps invariants 10-12: a non-young field holding a young
 * pointer is remembered by the domain that stored it; a field whose old
 * content is young is already remembered; the overwritten value of a
 * non-young field is darkened when it is a major block (snapshot at the
 * beginning), at every phase.
 *
 * Phases: mutator only (the owner's thread).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define TABLE_RESERVE 256

void mgc_table_init(struct mgc_table *t, size_t entry_size) {
  memset(t, 0, sizeof *t);
  t->entry_size = entry_size;
}

static void table_set_bounds(struct mgc_table *t) {
  t->threshold = t->base + t->size * t->entry_size;
  t->end = t->threshold + t->reserve * t->entry_size;
}

void *mgc_table_add_slow(struct mgc_dom *d, struct mgc_table *t) {
  if (!t->base) {
    t->size = d->minor_heap_words / 8;
    if (t->size < 64)
      t->size = 64;
    t->reserve = TABLE_RESERVE;
    t->base =
        mgc_xmalloc((t->size + t->reserve) * t->entry_size, "remembered set");
    t->ptr = t->base;
    table_set_bounds(t);
    t->limit = t->threshold;
  } else if (t->limit == t->threshold) {
    COUNTER_ADD(&d->stats.remset_overflows, 1);
    mgc_log(MGC_VERBOSE_TABLES, "table threshold reached (%zu entries)",
            t->size);
    mgc_request_minor(d);
    t->limit = t->end;
  } else {
    size_t used = (size_t)(t->ptr - t->base);
    t->size *= 2;
    /* The next minor collection reads every entry: their pages are
       touched again if the table moved (mgc_xgrow). */
    t->base = mgc_xgrow(t->base, (t->size + t->reserve) * t->entry_size, used,
                        "remembered set");
    t->ptr = t->base + used;
    table_set_bounds(t);
    t->limit = t->end;
    mgc_log(MGC_VERBOSE_TABLES, "table grown to %zu entries", t->size);
  }
  void *e = t->ptr;
  t->ptr += t->entry_size;
  return e;
}

void mgc_table_clear(struct mgc_table *t) {
  t->ptr = t->base;
  t->limit = t->threshold;
}

void mgc_table_free(struct mgc_table *t) {
  free(t->base);
  size_t es = t->entry_size;
  mgc_table_init(t, es);
}

/* ------------------------------------------------------------------------ */
/* Write barrier                                                            */
/* ------------------------------------------------------------------------ */

/* The remembered set and its filter, emptied together: a filter entry
   left over from the last minor cycle would skip a field that is no longer
   in the set (a young value stored there would then be lost). */
void mgc_remembered_clear(struct mgc_dom *d) {
  mgc_table_clear(&d->major_ref);
  memset(d->remember_filter, 0, sizeof d->remember_filter);
}

/* The barrier's rare cases are out of line and cold: then the common path
   of mgc_modify_slow calls nothing and saves few registers, which matters
   when its load of the overwritten value misses (remset: the processor
   overlaps more of those misses the fewer instructions each store takes). */
static __attribute__((noinline, cold)) void grey_full(struct mgc_dom *d,
                                                      mgc_value v) {
  mgc_grey_drain(d);
  d->grey[d->grey_count++] = v;
}

static __attribute__((noinline, cold)) void remember_slow(struct mgc_dom *d,
                                                          mgc_value *fp) {
  *(mgc_value **)mgc_table_add_slow(d, &d->major_ref) = fp;
}

/* The deletion barrier: v (a major block, or a static one) is darkened
   later, by mgc_grey_drain, always before this domain's marking ends. */
static inline void darken_later(struct mgc_dom *d, mgc_value v) {
  size_t n = d->grey_count;
  if (MGC_UNLIKELY(n == GREY_CAPACITY)) {
    grey_full(d, v);
    return;
  }
  d->grey[n] = v;
  d->grey_count = n + 1;
}

/* major_ref's entries are field addresses (domain.c makes it so): the
   common case adds a constant, as mgc_table_add would add entry_size. */
static inline void remember(struct mgc_dom *d, mgc_value *fp) {
  struct mgc_table *t = &d->major_ref;
  MGC_ASSERT(t->entry_size == sizeof(mgc_value *));
  if (MGC_UNLIKELY(t->ptr >= t->limit)) {
    remember_slow(d, fp);
    return;
  }
  *(mgc_value **)t->ptr = fp;
  t->ptr += sizeof(mgc_value *);
}

/* Before the mark start: remembers fp unless the filter has it, which
   means it is in major_ref already.  A filter entry is overwritten by any
   other field with the same hash; the field is then remembered twice,
   which promotion tolerates (each entry's slot is promoted only while it
   holds a young block, and two participants may rewrite one slot with the
   same copy, see promote_remembered).  The field itself is not read: on a
   store into a cold old block, that load's cache miss was most of the
   barrier's cost (DESIGN §3.2). */
static inline void remember_once(struct mgc_dom *d, mgc_value *fp) {
  mgc_value **entry = &d->remember_filter[mgc_remember_filter_index(fp)];
  if (*entry == fp)
    return;
  *entry = fp;
  remember(d, fp);
}

/* Before marking starts (PHASE_SWEEP_FIRST) nothing is darkened and the
   field is not read: a young v is remembered unless the filter knows the
   field (remember_once); a store that neither deletes for a snapshot nor
   creates a pointer to a young block costs a flag test. */
void mgc_modify_slow(mgc_value *fp, mgc_value v) {
  MGC_CHECK(fp != NULL, "mgc_modify: NULL field address");
  if (!mgc_is_young((mgc_value)fp)) {
    struct mgc_dom *d = mgc_self_or_fatal("mgc_modify");
    /* The loads of the old value are relaxed: another domain may be
       storing here too; the old value we see is one that was in the
       field, which is all the barrier needs. */
    if (mgc_marking_on()) {
      mgc_value old = (mgc_value)LOAD_RELAXED(AWORD(fp));
      if (MGC_IS_BLOCK(old)) {
        if (mgc_is_young(old)) {
          STORE_RELEASE(AWORD(fp), (word)v);
          return; /* already remembered (invariant 11) */
        }
        darken_later(d, old);
      }
      if (IS_YOUNG_BLOCK(v))
        remember(d, fp);
    } else if (IS_YOUNG_BLOCK(v)) {
      remember_once(d, fp);
    }
  }
  /* Release: whoever reads v through this field sees the block's fields
     as they were written before (publication safety). */
  STORE_RELEASE(AWORD(fp), (word)v);
}

/* mgc_modify without its store (invariant 42): the embedder stored newv
   itself (a CAS, an exchange, a fill), old being what its store replaced.
   The same decisions on the same values: a young obj needs nothing; an old
   field whose old content was young is remembered already (invariant 11);
   an old major value is darkened while marking is under way (invariant
   12); a young newv is remembered (invariant 10).  obj decides the young
   test (its fields are young exactly when it is). */
void mgc_write_barrier(mgc_value obj, mgc_value *fp, mgc_value old,
                       mgc_value newv) {
  MGC_CHECK(fp != NULL, "mgc_write_barrier: NULL field address");
  MGC_CHECK(MGC_IS_BLOCK(obj) && obj != 0,
            "mgc_write_barrier: %#lx is not a block", (unsigned long)obj);
  MGC_ASSERT((word)fp >= (word)obj &&
             (word)fp < (word)obj + MGC_WOSIZE_VAL(obj) * WORD);
  if (mgc_is_young(obj))
    return;
  struct mgc_dom *d = mgc_self_or_fatal("mgc_write_barrier");
  if (MGC_IS_BLOCK(old) && old != 0) {
    if (mgc_is_young(old))
      return; /* already remembered (invariant 11) */
    if (mgc_marking_on())
      darken_later(d, old);
  }
  if (IS_YOUNG_BLOCK(newv))
    remember(d, fp);
}

void mgc_initialize(mgc_value *fp, mgc_value v) {
  MGC_CHECK(fp != NULL, "mgc_initialize: NULL field address");
  /* Relaxed: the block is not yet published to other domains. */
  STORE_RELAXED(AWORD(fp), (word)v);
  if (!mgc_is_young((mgc_value)fp) && IS_YOUNG_BLOCK(v))
    remember(mgc_self_or_fatal("mgc_initialize"), fp);
}

int mgc_obj_update_tag(mgc_value blk, unsigned old_tag, unsigned new_tag) {
  MGC_CHECK(MGC_IS_BLOCK(blk) && blk != 0,
            "mgc_obj_update_tag: %#lx is not a block", (unsigned long)blk);
  MGC_CHECK(old_tag < 256 && new_tag < 256,
            "mgc_obj_update_tag: tag out of range (%u -> %u)", old_tag,
            new_tag);
  word hd = LOAD_RELAXED(HDR_PTR(blk));
  for (;;) {
    if (MGC_TAG_HD(hd) != old_tag)
      return 0;
    /* acq_rel: the tag change publishes the fields written before it (a
       forced value in field 0) and sees those of a concurrent forcer.  A
       failure is retried when only the colour changed (a marker). */
    if (atomic_compare_exchange_weak_explicit(
            HDR_PTR(blk), &hd, (hd & ~(word)0xFF) | new_tag,
            memory_order_acq_rel, memory_order_relaxed))
      return 1;
  }
}
