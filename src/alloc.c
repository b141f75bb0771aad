/* The allocation API: blocks of any size, strings, doubles, double arrays,
 * custom blocks and the static atoms; and the custom table's processing
 * after a minor collection (DESIGN §3.5, §5.5 step 10).
 *
 * Checks every size and tag it is given (a misuse goes through mgc_fatal,
 * never silent corruption).  Small blocks go to the caller's minor heap,
 * larger ones (and mgc_alloc_shr) to its major heap, born in the
 * allocation colour (MARKED once marking has started, invariant 19).
 *
 * Phases: mutator; mgc_custom_after_minor runs inside the minor STW
 * section, after the end barrier (invariant 23).
 */
#include "internal.h"

#include <string.h>

/* Zero-size blocks: one static atom per tag, NOT_MARKABLE (invariant 2).
   atoms[t] is the header of the atom of tag t; its value is &atoms[t + 1]. */
static mgc_header atoms[257];

void mgc_atoms_init(void) {
  for (unsigned t = 0; t < 256; t++)
    atoms[t] = MGC_MAKE_HEADER(0, t, 0) | NOT_MARKABLE;
}

static mgc_value atom(unsigned tag) { return (mgc_value)&atoms[tag + 1]; }

bool mgc_is_atom(mgc_value v) {
  return (word)v > (word)atoms && (word)v <= (word)&atoms[256] &&
         ((word)v - (word)atoms) % WORD == 0;
}

/* Tags a generic allocation may create: not Infix (never a block of its
   own), not Custom or Cont (they need their ops or fiber), Forward and
   Double with exactly one field, closures with room for their info. */
bool mgc_tag_is_valid_alloc(size_t wosize, unsigned tag) {
  if (tag > 255)
    return false;
  switch (tag) {
  case MGC_TAG_INFIX:
  case MGC_TAG_CUSTOM:
  case MGC_TAG_CONT:
    return false;
  case MGC_TAG_FORWARD:
  case MGC_TAG_DOUBLE:
    return wosize == 1;
  case MGC_TAG_CLOSURE:
    return wosize >= 2;
  default:
    return true;
  }
}

static void check_alloc(const char *fn, size_t wosize, unsigned tag) {
  MGC_CHECK(wosize <= MGC_MAX_WOSIZE,
            "%s: size %zu words exceeds the largest block (%zu words)", fn,
            wosize, (size_t)MGC_MAX_WOSIZE);
  MGC_CHECK(tag <= 255, "%s: tag %u is out of range [0, 255]", fn, tag);
  MGC_CHECK(wosize == 0 || mgc_tag_is_valid_alloc(wosize, tag),
            "%s: tag %u cannot be allocated with %zu fields this way "
            "(Infix, Custom and Cont blocks have their own calls; Forward "
            "and Double take one field, closures at least two)",
            fn, tag, wosize);
}

static void fill(mgc_value v, size_t wosize, unsigned tag) {
  if (tag < MGC_TAG_NO_SCAN)
    for (size_t i = 0; i < wosize; i++)
      MGC_FIELD(v, i) = MGC_UNIT;
  else
    memset((void *)v, 0, wosize * WORD);
}

/* A block in d's major heap, born in the allocation colour; OOM goes to
   the handler. */
mgc_value mgc_alloc_major(struct mgc_dom *d, size_t wosize, unsigned tag,
                          unsigned reserved, bool do_fill) {
  word *hp = mgc_heap_alloc(d, wosize, tag, reserved);
  if (!hp)
    mgc_out_of_memory(wosize > (SIZE_MAX / WORD) - 1 ? SIZE_MAX
                                                     : WHSIZE(wosize) * WORD,
                      "a major block");
  mgc_value v = (mgc_value)(hp + 1);
  if (do_fill)
    fill(v, wosize, tag);
  mgc_note_direct_major_alloc(d, WHSIZE(wosize));
  return v;
}

/* A major allocation is a safepoint too (OCaml's caml_check_urgent_gc):
   a program that allocates only large or major blocks would otherwise
   never run the slices those allocations request.  The new block is
   rooted meanwhile and returned, possibly moved. */
mgc_value mgc_check_urgent_gc(struct mgc_dom *d, mgc_value v) {
  if (MGC_LIKELY(d->fast.young_ptr >=
                 __atomic_load_n(&d->fast.young_limit, __ATOMIC_RELAXED)))
    return v;
  MGC_PARAM1(v);
  mgc_handle_gc_interrupt(d);
  mgc_final_run_at_safepoint(d);
  MGC_RETURN(v);
}

static mgc_value alloc_any(const char *fn, size_t wosize, unsigned tag,
                           unsigned reserved) {
  struct mgc_dom *d = mgc_self_or_fatal(fn);
  check_alloc(fn, wosize, tag);
  if (wosize == 0)
    return atom(tag);
  mgc_value v;
  if (wosize <= MGC_MAX_YOUNG_WOSIZE) {
    v = mgc_alloc_young(d, wosize, tag, reserved);
    fill(v, wosize, tag);
  } else {
    v = mgc_alloc_major(d, wosize, tag, reserved, true);
    /* Not for a closure: until its closure info is written the marker
       would take its code pointers for values (they are written after
       the call, before the next safepoint). */
    if (tag != MGC_TAG_CLOSURE)
      v = mgc_check_urgent_gc(d, v);
  }
  return v;
}

mgc_value mgc_alloc(size_t wosize, unsigned tag) {
  return alloc_any("mgc_alloc", wosize, tag, 0);
}

mgc_value mgc_alloc_reserved(size_t wosize, unsigned tag, unsigned reserved) {
  MGC_CHECK(reserved <= 255,
            "mgc_alloc_reserved: reserved bits %u do not fit in 8 bits",
            reserved);
  return alloc_any("mgc_alloc_reserved", wosize, tag, reserved);
}

mgc_value mgc_alloc_shr(size_t wosize, unsigned tag) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_alloc_shr");
  check_alloc("mgc_alloc_shr", wosize, tag);
  if (wosize == 0)
    return atom(tag);
  return mgc_alloc_major(d, wosize, tag, 0, true);
}

/* The tag and reserved-bit checks of the two calls below: those of
   mgc_alloc_shr, except that Custom blocks may be made (an unmarshaller
   fills in the ops, then calls mgc_custom_register). */
static void check_shr_tag(const char *fn, size_t wosize, unsigned tag,
                          unsigned reserved) {
  MGC_CHECK(reserved <= 255, "%s: reserved bits %u do not fit in 8 bits", fn,
            reserved);
  MGC_CHECK(tag <= 255, "%s: tag %u is out of range [0, 255]", fn, tag);
  MGC_CHECK(wosize == 0 || tag == MGC_TAG_CUSTOM ||
                mgc_tag_is_valid_alloc(wosize, tag),
            "%s: tag %u cannot be allocated with %zu fields this way "
            "(Infix and Cont blocks have their own calls; Forward and "
            "Double take one field, closures at least two)",
            fn, tag, wosize);
}

mgc_value mgc_alloc_shr_reserved(size_t wosize, unsigned tag,
                                 unsigned reserved) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_alloc_shr_reserved");
  check_shr_tag("mgc_alloc_shr_reserved", wosize, tag, reserved);
  MGC_CHECK(wosize <= MGC_MAX_WOSIZE,
            "mgc_alloc_shr_reserved: size %zu words exceeds the largest "
            "block (%zu words)",
            wosize, (size_t)MGC_MAX_WOSIZE);
  if (wosize == 0)
    return atom(tag);
  return mgc_alloc_major(d, wosize, tag, reserved, true);
}

/* As mgc_alloc_major, but 0 instead of the OOM handler: memory that cannot
   be had, and sizes no block can have, are the caller's to handle (OCaml's
   caml_alloc_shr_noexc). */
mgc_value mgc_alloc_shr_noexc(size_t wosize, unsigned tag, unsigned reserved) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_alloc_shr_noexc");
  check_shr_tag("mgc_alloc_shr_noexc", wosize, tag, reserved);
  if (wosize > MGC_MAX_WOSIZE) {
    mgc_set_last_error(MGC_ENOMEM);
    return 0;
  }
  if (wosize == 0)
    return atom(tag);
  word *hp = mgc_heap_alloc(d, wosize, tag, reserved);
  if (!hp) {
    mgc_set_last_error(MGC_ENOMEM);
    return 0;
  }
  mgc_value v = (mgc_value)(hp + 1);
  fill(v, wosize, tag);
  mgc_note_direct_major_alloc(d, WHSIZE(wosize));
  return v;
}

/* ------------------------------------------------------------------------ */
/* Strings and doubles                                                      */
/* ------------------------------------------------------------------------ */

/* OCaml's padding: the last byte of the block says how many bytes of the
   last word are padding minus one; the padding bytes before it are 0, so
   the contents are always NUL-terminated. */
mgc_value mgc_alloc_string(size_t len) {
  MGC_CHECK(len < MGC_MAX_WOSIZE * WORD,
            "mgc_alloc_string: length %zu is too large", len);
  size_t wosize = len / WORD + 1;
  mgc_value v = alloc_any("mgc_alloc_string", wosize, MGC_TAG_STRING, 0);
  MGC_FIELD(v, wosize - 1) = 0;
  ((unsigned char *)v)[wosize * WORD - 1] =
      (unsigned char)(wosize * WORD - 1 - len);
  return v;
}

mgc_value mgc_copy_string(const char *s) {
  MGC_CHECK(s != NULL, "mgc_copy_string: NULL string");
  size_t len = strlen(s);
  mgc_value v = mgc_alloc_string(len);
  memcpy((void *)v, s, len);
  return v;
}

size_t mgc_string_length(mgc_value s) {
  MGC_CHECK(MGC_IS_BLOCK(s) && s != 0,
            "mgc_string_length: %#lx is an integer, not a string",
            (unsigned long)s);
  word hd = MGC_HD_VAL(s);
  MGC_CHECK(MGC_TAG_HD(hd) == MGC_TAG_STRING && MGC_WOSIZE_HD(hd) > 0,
            "mgc_string_length: block of tag %u is not a string",
            MGC_TAG_HD(hd));
  size_t bytes = MGC_WOSIZE_HD(hd) * WORD;
  return bytes - 1 - ((unsigned char *)s)[bytes - 1];
}

mgc_value mgc_copy_double(double x) {
  mgc_value v = alloc_any("mgc_copy_double", 1, MGC_TAG_DOUBLE, 0);
  memcpy((void *)v, &x, sizeof x);
  return v;
}

mgc_value mgc_alloc_double_array(size_t n) {
  return alloc_any("mgc_alloc_double_array", n, MGC_TAG_DOUBLE_ARRAY, 0);
}

void mgc_store_double_field(mgc_value v, size_t i, double x) {
  MGC_CHECK(MGC_IS_BLOCK(v) && v != 0,
            "mgc_store_double_field: %#lx is an integer, not a double array",
            (unsigned long)v);
  word hd = MGC_HD_VAL(v);
  MGC_CHECK(MGC_TAG_HD(hd) == MGC_TAG_DOUBLE_ARRAY,
            "mgc_store_double_field: block of tag %u is not a double array",
            MGC_TAG_HD(hd));
  MGC_CHECK(i < MGC_WOSIZE_HD(hd),
            "mgc_store_double_field: index %zu out of range [0, %zu)", i,
            (size_t)MGC_WOSIZE_HD(hd));
  memcpy((char *)v + i * sizeof(double), &x, sizeof x);
}

/* ------------------------------------------------------------------------ */
/* Custom blocks                                                            */
/* ------------------------------------------------------------------------ */

/* A young custom block of d with its ops in place: the custom table
   decides after each minor collection whether it died (finalised) or was
   promoted (its mem charged to the major GC), DESIGN §3.5.  Not a
   safepoint: a full table or share only requests a minor collection. */
static void custom_young(struct mgc_dom *d, mgc_value v,
                         const mgc_custom_ops *ops, size_t mem, size_t max) {
  if (ops->finalize || mem) {
    struct custom_entry *e = mgc_table_add(d, &d->custom);
    e->block = v;
    e->mem = mem;
    e->max = max;
  }
  if (mem) {
    /* The minor heap's share (OCaml's alloc_custom_gen): mem / max of a
       minor collection, or with max = 0 relative to the minor heap (the
       m parameter); a whole one requests a minor collection. */
    double max_minor = max ? (double)max
                           : (double)d->minor_heap_words * WORD / 100.0 *
                                 mgc_rt.params.custom_minor_ratio;
    d->extra_minor_resources +=
        (double)((double)mem < max_minor ? (double)mem : max_minor) / max_minor;
    if (d->extra_minor_resources > 1.0)
      mgc_request_minor(d);
  }
}

mgc_value mgc_alloc_custom(const mgc_custom_ops *ops, size_t bytes, size_t mem,
                           size_t max) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_alloc_custom");
  MGC_CHECK(ops != NULL, "mgc_alloc_custom: NULL ops");
  MGC_CHECK(bytes < (MGC_MAX_WOSIZE - 1) * WORD,
            "mgc_alloc_custom: %zu bytes is too large", bytes);
  size_t wosize = 1 + (bytes + WORD - 1) / WORD;
  mgc_value v;
  if (wosize <= MGC_MAX_YOUNG_WOSIZE &&
      mem <= mgc_rt.params.custom_minor_max_size) {
    v = mgc_alloc_young(d, wosize, MGC_TAG_CUSTOM, 0);
    memset((void *)v, 0, wosize * WORD);
    MGC_FIELD(v, 0) = (mgc_value)ops;
    custom_young(d, v, ops, mem, max);
  } else {
    v = mgc_alloc_major(d, wosize, MGC_TAG_CUSTOM, 0, false);
    memset((void *)v, 0, wosize * WORD);
    MGC_FIELD(v, 0) = (mgc_value)ops;
    if (mem)
      mgc_adjust_gc_speed(d, mem, max);
    v = mgc_check_urgent_gc(d, v);
  }
  return v;
}

/* A custom block made by hand (mgc.h): a young one of the calling domain's
   minor heap joins the custom table as if from mgc_alloc_custom; a major
   one only has its mem charged (the sweeper finalises every dead major
   custom block whatever made it). */
void mgc_custom_register(mgc_value v, size_t mem, size_t max) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_custom_register");
  MGC_CHECK(MGC_IS_BLOCK(v) && v != 0,
            "mgc_custom_register: %#lx is not a block", (unsigned long)v);
  word hd = LOAD_RELAXED(HDR_PTR(v));
  MGC_CHECK(MGC_TAG_HD(hd) == MGC_TAG_CUSTOM && MGC_WOSIZE_HD(hd) >= 1,
            "mgc_custom_register: %p is a block of tag %u and %zu fields, not "
            "a custom block",
            (void *)v, MGC_TAG_HD(hd), (size_t)MGC_WOSIZE_HD(hd));
  MGC_CHECK(COLOUR_HD(hd) != NOT_MARKABLE,
            "mgc_custom_register: %p is a block outside the heap", (void *)v);
  const mgc_custom_ops *ops = MGC_CUSTOM_OPS(v);
  MGC_CHECK(ops != NULL, "mgc_custom_register: %p has NULL ops in field 0",
            (void *)v);
  if (mgc_is_young(v)) {
    /* The table is read after each minor collection by this domain only,
       which must own the block's heap (invariant 21). */
    MGC_CHECK((word)v > d->fast.young_ptr && (word)v < d->young_end,
              "mgc_custom_register: young %p is not in the calling domain's "
              "allocated minor heap",
              (void *)v);
    custom_young(d, v, ops, mem, max);
  } else if (mem) {
    mgc_adjust_gc_speed(d, mem, max);
  }
}

/* After the end barrier: every young custom block of this domain is either
   promoted (header 0: charge its memory to the major GC) or dead (run its
   finaliser now).  Headers are read relaxed: the barrier ordered every
   promoter's writes before this read. */
void mgc_custom_after_minor(struct mgc_dom *d) {
  size_t n = mgc_table_count(&d->custom);
  struct custom_entry *e = (struct custom_entry *)d->custom.base;
  for (size_t i = 0; i < n; i++) {
    mgc_value v = e[i].block;
    if (!mgc_is_young(v))
      continue;
    if (LOAD_RELAXED(HDR_PTR(v)) == 0) {
      if (e[i].mem)
        mgc_adjust_gc_speed(d, e[i].mem, e[i].max);
    } else {
      const mgc_custom_ops *ops = MGC_CUSTOM_OPS(v);
      if (ops->finalize)
        ops->finalize(v);
    }
  }
}
