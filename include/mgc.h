/* mgc: a multicore generational garbage collector for language runtimes.
 *
 * The one public header.  Values follow OCaml's uniform representation: a
 * word is either an immediate integer (low bit 1) or a pointer to the first
 * field of a block whose header is the word before it.  Every domain (an OS
 * thread owning a minor heap) allocates small blocks by bumping a pointer
 * downwards; the inline fast paths below read the calling thread's domain
 * state through one thread-local pointer.
 *
 * Everything not declared here is internal; docs/HACKING.md has the debug
 * recipes.
 * The header is the same for every debug level of the library.
 */
#ifndef MGC_H
#define MGC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MGC_VERSION_MAJOR 0
#define MGC_VERSION_MINOR 2
#define MGC_VERSION_PATCH 0
#define MGC_VERSION                                                            \
  (MGC_VERSION_MAJOR * 10000 + MGC_VERSION_MINOR * 100 + MGC_VERSION_PATCH)

#if defined(__GNUC__)
#define MGC_API __attribute__((visibility("default")))
#define MGC_LIKELY(c) __builtin_expect(!!(c), 1)
#define MGC_UNLIKELY(c) __builtin_expect(!!(c), 0)
#define MGC_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define MGC_API
#define MGC_LIKELY(c) (c)
#define MGC_UNLIKELY(c) (c)
#define MGC_TLS_MODEL
#endif

#ifdef __cplusplus
#define MGC_THREAD_LOCAL thread_local
extern "C" {
#else
#define MGC_THREAD_LOCAL _Thread_local
#endif

/* ------------------------------------------------------------------------ */
/* Values and blocks                                                        */
/* ------------------------------------------------------------------------ */

typedef intptr_t mgc_value;
typedef uintptr_t mgc_header;

#define MGC_VAL_INT(n) ((mgc_value)(((uintptr_t)(intptr_t)(n) << 1) + 1))
#define MGC_INT_VAL(v) ((intptr_t)(v) >> 1)
#define MGC_IS_INT(v) (((uintptr_t)(v)&1) != 0)
#define MGC_IS_BLOCK(v) (((uintptr_t)(v)&1) == 0)
#define MGC_UNIT MGC_VAL_INT(0)
#define MGC_FALSE MGC_VAL_INT(0)
#define MGC_TRUE MGC_VAL_INT(1)

#define MGC_FIELD(v, i) (((mgc_value *)(v))[i])

/* Header layout (64-bit): bits 0-7 tag, 8-9 colour (GC-owned), 10-55 wosize,
   56-63 reserved for the embedder (kept by every copy the GC makes). */
#define MGC_WOSIZE_BITS 46
#define MGC_MAX_WOSIZE ((((uintptr_t)1) << MGC_WOSIZE_BITS) - 1)
#define MGC_WOSIZE_HD(h) (((uintptr_t)(h) >> 10) & MGC_MAX_WOSIZE)
#define MGC_TAG_HD(h) ((unsigned)((uintptr_t)(h)&0xFF))
#define MGC_RESERVED_HD(h) ((unsigned)((uintptr_t)(h) >> 56))
#define MGC_MAKE_HEADER(wosize, tag, reserved)                                 \
  ((mgc_header)(((uintptr_t)(wosize) << 10) | ((uintptr_t)(tag)&0xFF) |        \
                ((uintptr_t)((reserved)&0xFF) << 56)))

/* Out-of-heap blocks.  An embedder may build blocks outside every heap (in
   static or malloc'd memory: an interpreter's atoms, static strings) whose
   header has the colour MGC_COLOUR_NOT_MARKABLE; pointers to them may be
   stored anywhere a value goes (fields, roots, stacks, ephemerons).  The
   collector never marks, scans, moves, promotes or frees them, and never
   writes their header (it may be read-only memory).  Their fields are NOT
   scanned: they must not be the only reference to a heap value.  Their tag
   is neither MGC_TAG_INFIX nor MGC_TAG_CONT, and they cannot be finalised
   (mgc_finalise refuses them). */
#define MGC_COLOUR_NOT_MARKABLE ((mgc_header)3 << 8)
#define MGC_MAKE_OUT_OF_HEAP_HEADER(wosize, tag)                               \
  (MGC_MAKE_HEADER(wosize, tag, 0) | MGC_COLOUR_NOT_MARKABLE)

/* The header is read with a relaxed atomic load: other domains may be
   changing its colour bits while marking. */
#define MGC_HD_VAL(v)                                                          \
  ((mgc_header)__atomic_load_n(&((mgc_header *)(v))[-1], __ATOMIC_RELAXED))
#define MGC_WOSIZE_VAL(v) MGC_WOSIZE_HD(MGC_HD_VAL(v))
#define MGC_TAG_VAL(v) MGC_TAG_HD(MGC_HD_VAL(v))

#define MGC_MAX_YOUNG_WOSIZE 256

#define MGC_TAG_FORCING 244
#define MGC_TAG_CONT 245
#define MGC_TAG_LAZY 246
#define MGC_TAG_CLOSURE 247
#define MGC_TAG_OBJECT 248
#define MGC_TAG_INFIX 249
#define MGC_TAG_FORWARD 250
#define MGC_TAG_NO_SCAN 251
#define MGC_TAG_ABSTRACT 251
#define MGC_TAG_STRING 252
#define MGC_TAG_DOUBLE 253
#define MGC_TAG_DOUBLE_ARRAY 254
#define MGC_TAG_CUSTOM 255

/* Closure info (field 1 of a closure): arity in the top 8 bits, start of
   environment (a word offset) in bits 1..55, low bit 1. */
#define MGC_CLOSINFO(arity, startenv)                                          \
  ((mgc_value)(((uintptr_t)(arity) << 56) + ((uintptr_t)(startenv) << 1) + 1))
#define MGC_CLOSINFO_ARITY(ci) ((intptr_t)(ci) >> 56)
#define MGC_CLOSINFO_STARTENV(ci) ((((uintptr_t)(ci)) << 8) >> 9)

/* Internal: the bounds of the one reservation that holds every domain's
   minor heap, read by the inline young test (written only while the world
   is stopped). */
struct mgc_young_range {
  uintptr_t start;
  uintptr_t end;
};
extern MGC_API struct mgc_young_range mgc_young_range;

/* 1 when v is a block in any domain's minor heap. */
static inline int mgc_is_young(mgc_value v) {
  return (uintptr_t)v > mgc_young_range.start &&
         (uintptr_t)v < mgc_young_range.end;
}

/* ------------------------------------------------------------------------ */
/* Errors, runtime and parameters                                           */
/* ------------------------------------------------------------------------ */

#define MGC_OK 0
#define MGC_ENOMEM (-1)          /* out of memory */
#define MGC_EINVAL (-2)          /* invalid argument or parameter */
#define MGC_ETOOMANYDOMAINS (-3) /* max_domains domains already alive */
#define MGC_ESTATE (-4)          /* not initialised / already initialised */
#define MGC_ETHREAD (-5)         /* the OS refused to create a thread */

MGC_API const char *mgc_strerror(int err);
/* The last error of a call made by this thread that returned NULL/-1. */
MGC_API int mgc_last_error(void);

typedef struct mgc_params {
  size_t minor_heap_words; /* s: per domain; default 262144 (256k words) */
  unsigned space_overhead; /* o: major GC speed in percent; default 120 */
  unsigned max_domains;    /* d: default 128, counts domain 0 */
  unsigned verbose;        /* v: log mask, printed on stderr */
  size_t torture_every;    /* t: 0 = off; else a minor GC every N small
                              allocations */
  int verify;              /* V: 1 = mgc_verify_heap after every collection */
  char trace_path[256];    /* trace=: "" = off; else a JSON trace of GC
                              events (Chrome trace-event format) */
  /* Additions to the contract (OCaml's letters): */
  unsigned custom_major_ratio;  /* M: default 44 (% of major heap) */
  unsigned custom_minor_ratio;  /* m: default 100 (% of minor heap) */
  size_t custom_minor_max_size; /* n: default 70000 bytes */
  int manual_finalisers;        /* F: 1 = finalisers run only when
                                   mgc_run_finalisers is called (see
                                   Finalisers); default 0 */
  size_t fiber_max_words;       /* l: the most slots a fiber may grow to;
                                   default 128M (OCaml's stack limit) */
  unsigned compact_overhead;    /* O: compact at a cycle end when free
                                   words exceed this % of live words;
                                   0 (default) = never automatically */
  size_t compact_every;         /* C: 0 = off; else compact at every N-th
                                   cycle end (a torture mode) */
  size_t event_ring_size;       /* e: events kept per domain (a power of
                                   two, rounded up); default 8192; 0 = no
                                   runtime events */
  char log_path[256];           /* log=: "" = stderr; else the v= log and
                                   the exit statistics go to this file */
  unsigned minor_pause_goal_us; /* P: the minor pause to stay under, in
                                   microseconds: a domain whose minor
                                   collection took longer uses less of its
                                   minor heap until they are short again;
                                   default 600; 0 = always all of it */
} mgc_params;

/* Verbose mask bits (v=). */
#define MGC_VERBOSE_MAJOR 0x001  /* major cycles */
#define MGC_VERBOSE_MINOR 0x002  /* minor collections and slices */
#define MGC_VERBOSE_HEAP 0x004   /* heap growth and shrinking */
#define MGC_VERBOSE_TABLES 0x008 /* table and mark-stack resizing */
#define MGC_VERBOSE_STW 0x010    /* stop-the-world sections */
#define MGC_VERBOSE_PARAMS 0x020 /* parameters */
#define MGC_VERBOSE_FINAL 0x080  /* finaliser calls */
#define MGC_VERBOSE_STATS 0x400  /* statistics at shutdown */

MGC_API void mgc_params_default(mgc_params *p);
/* Parses "s=256k,o=120,d=64,v=0x400,t=1000,V=1,trace=out.json" on top of
 *p.  Returns 0, or MGC_EINVAL after naming the bad key on stderr. */
MGC_API int mgc_params_parse(mgc_params *p, const char *spec);
/* NULL = defaults; MGC_PARAMS from the environment is applied on top.  The
   calling thread becomes domain 0.  Returns 0 or a negative MGC_E* code. */
MGC_API int mgc_init(const mgc_params *p);
/* Frees everything; all other domains must have been joined. */
MGC_API void mgc_shutdown(void);
/* The parameters in force (after MGC_PARAMS). */
MGC_API void mgc_get_params(mgc_params *out);
/* Changes the parameters that may change while running (OCaml's Gc.set):
   space_overhead, verbose, verify, the custom ratios and
   custom_minor_max_size, fiber_max_words, compact_overhead, compact_every,
   and minor_heap_words: when it differs from the value in force, the
   calling domain's minor heap is resized (as mgc_set_minor_heap_size) and
   domains spawned later get the new size; other running domains keep
   theirs.  Every other field must equal the value in force.  Returns
   MGC_OK, or MGC_EINVAL (nothing applied, a line on stderr naming the key)
   for a NULL p, a value mgc_init would refuse, or a change to a field that
   cannot change at run time.  A safepoint (a stop-the-world section). */
MGC_API int mgc_set_params(const mgc_params *p);

MGC_API void mgc_set_fatal_handler(void (*handler)(const char *msg));
MGC_API void mgc_set_oom_handler(void (*handler)(size_t bytes));

/* ------------------------------------------------------------------------ */
/* Domain state read by the inline fast paths (internal layout)             */
/* ------------------------------------------------------------------------ */

struct mgc_root_frame {
  struct mgc_root_frame *prev;
  size_t count;
  mgc_value *slots[5];
};

/* The first fields of every domain's state; the library checks at start-up
   that its internal layout matches. */
struct mgc_fast_state {
  uintptr_t young_ptr;   /* allocation pointer, moves down */
  uintptr_t young_limit; /* atomic: all-ones = interrupt */
  struct mgc_root_frame *local_roots;
};

/* Never NULL: a thread that is not a domain sees a state whose limit makes
   every allocation take the slow path, which reports the misuse. */
extern MGC_API MGC_THREAD_LOCAL struct mgc_fast_state *mgc_tls_state
    MGC_TLS_MODEL;

/* ------------------------------------------------------------------------ */
/* Allocation                                                               */
/* ------------------------------------------------------------------------ */

MGC_API mgc_value mgc_alloc_small_slow(size_t wosize, unsigned tag);

/* A tag the small fast path may not take (checked for real, with the size,
   by the slow path): Cont, Infix and Custom blocks have their own calls;
   Forward and Double take one field, closures at least two. */
#define MGC_SMALL_TAG_SPECIAL(wosize, tag)                                     \
  ((tag) >= MGC_TAG_CONT &&                                                    \
   ((tag) == MGC_TAG_CONT || (tag) == MGC_TAG_INFIX ||                         \
    (tag) >= MGC_TAG_CUSTOM ||                                                 \
    (((tag) == MGC_TAG_FORWARD || (tag) == MGC_TAG_DOUBLE) &&                  \
     (wosize) != 1) ||                                                         \
    ((tag) == MGC_TAG_CLOSURE && (wosize) < 2)))

/* 1 <= wosize <= 256, in the minor heap.  Fields are uninitialised: write
   every one with a plain store before the next allocation or poll. */
static inline mgc_value mgc_alloc_small(size_t wosize, unsigned tag) {
  struct mgc_fast_state *s = mgc_tls_state;
  uintptr_t p = s->young_ptr - (wosize + 1) * sizeof(mgc_value);
  if (MGC_UNLIKELY(wosize - 1 >= MGC_MAX_YOUNG_WOSIZE ||
                   MGC_SMALL_TAG_SPECIAL(wosize, tag) ||
                   p < __atomic_load_n(&s->young_limit, __ATOMIC_RELAXED)))
    return mgc_alloc_small_slow(wosize, tag);
  s->young_ptr = p;
  *(mgc_header *)p = MGC_MAKE_HEADER(wosize, tag, 0);
  return (mgc_value)(p + sizeof(mgc_header));
}

/* Any size (0: a static atom).  Blocks of more than 256 words go to the
   major heap.  Scanned fields start as MGC_UNIT, others as zero bytes.
   Like every allocation but mgc_alloc_shr, it may collect; except a large
   closure, which must get its code pointers and closure info (with
   mgc_modify) before the next allocation or poll. */
MGC_API mgc_value mgc_alloc(size_t wosize, unsigned tag);
/* In the major heap; scanned fields start as MGC_UNIT; set them with
   mgc_initialize.  Never collects (not a safepoint). */
MGC_API mgc_value mgc_alloc_shr(size_t wosize, unsigned tag);
/* As mgc_alloc, with the header's 8 reserved bits set. */
MGC_API mgc_value mgc_alloc_reserved(size_t wosize, unsigned tag,
                                     unsigned reserved);
/* As mgc_alloc_shr, with the header's reserved bits set; tag
   MGC_TAG_CUSTOM is allowed too (its fields start as zero: store the ops
   into field 0 before the next safepoint, then call mgc_custom_register).
   Never collects.  Out of memory: the OOM handler. */
MGC_API mgc_value mgc_alloc_shr_reserved(size_t wosize, unsigned tag,
                                         unsigned reserved);
/* The same, but returns 0 (and sets mgc_last_error to MGC_ENOMEM) instead
   of calling the OOM handler when the memory cannot be had, a wosize above
   MGC_MAX_WOSIZE included.  A bad tag is still a fatal error. */
MGC_API mgc_value mgc_alloc_shr_noexc(size_t wosize, unsigned tag,
                                      unsigned reserved);

MGC_API mgc_value mgc_alloc_string(size_t len);
MGC_API mgc_value mgc_copy_string(const char *s);
MGC_API size_t mgc_string_length(mgc_value s);
#define MGC_STRING_VAL(v) ((char *)(v))

MGC_API mgc_value mgc_copy_double(double d);
static inline double mgc_double_val(mgc_value v) {
  double d;
  memcpy(&d, (const void *)v, sizeof d);
  return d;
}
#define MGC_DOUBLE_VAL(v) mgc_double_val(v)
MGC_API mgc_value mgc_alloc_double_array(size_t n);
static inline double mgc_double_field(mgc_value v, size_t i) {
  double d;
  memcpy(&d, (const char *)v + i * sizeof(double), sizeof d);
  return d;
}
#define MGC_DOUBLE_FIELD(v, i) mgc_double_field((v), (i))
MGC_API void mgc_store_double_field(mgc_value v, size_t i, double d);

/* Custom blocks: field 0 points to the ops, data follows. */
typedef struct mgc_custom_ops {
  const char *identifier;
  void (*finalize)(mgc_value v); /* may be NULL; must not allocate */
} mgc_custom_ops;
/* mem: out-of-heap bytes held; max: the amount of such memory worth a full
   major cycle (0: relative to the major heap, as custom_major_ratio says). */
MGC_API mgc_value mgc_alloc_custom(const mgc_custom_ops *ops, size_t bytes,
                                   size_t mem, size_t max);
/* Registers a custom block the embedder made by hand (an unmarshaller),
   once, before the next safepoint.  A young v (in the calling domain's
   minor heap): allocate it with mgc_alloc_small under an ordinary tag
   (MGC_TAG_ABSTRACT), then, before any safepoint, rewrite its header with
   MGC_MAKE_HEADER(wosize, MGC_TAG_CUSTOM, reserved) and store the ops into
   field 0; from then on it behaves as a block of mgc_alloc_custom(ops,
   bytes, mem, max): finalised once when it dies, young or later, its mem
   accounted.  A major v (from mgc_alloc_shr_noexc or _reserved with tag
   MGC_TAG_CUSTOM): only mem is accounted (the sweeper finalises every dead
   major custom block anyway).  Not a safepoint. */
MGC_API void mgc_custom_register(mgc_value v, size_t mem, size_t max);
#define MGC_CUSTOM_OPS(v) (*(const mgc_custom_ops **)(v))
#define MGC_CUSTOM_DATA(v) ((void *)&MGC_FIELD((v), 1))

/* ------------------------------------------------------------------------ */
/* Writes                                                                   */
/* ------------------------------------------------------------------------ */

/* Store into a field of any block: the write barrier.  Inline when the
   field is in a minor heap (a store, release ordered as the slow path's);
   mgc_modify_slow, which does the whole barrier, otherwise. */
MGC_API void mgc_modify_slow(mgc_value *field, mgc_value v);
static inline void mgc_modify(mgc_value *field, mgc_value v) {
  if (MGC_LIKELY(mgc_is_young((mgc_value)field)))
    __atomic_store_n(field, v, __ATOMIC_RELEASE);
  else
    mgc_modify_slow(field, v);
}
/* The write barrier without the store: to be called right after the
   embedder itself stored newv into *field, a field of block obj (a CAS,
   an atomic exchange, a fill), where old was the previous content.  Does
   what mgc_modify does besides the store: with obj outside the minor
   heaps, darkens old when it is a major block (unless old is young: the
   field is remembered already) and remembers the field when newv is
   young.  The embedder's store must be a release store (or stronger) if
   another domain may read newv through the field. */
MGC_API void mgc_write_barrier(mgc_value obj, mgc_value *field, mgc_value old,
                               mgc_value newv);
/* First store into a field of a block from mgc_alloc_shr. */
MGC_API void mgc_initialize(mgc_value *field, mgc_value v);
/* Atomic tag change (Lazy -> Forcing -> Forward); 1 on success. */
MGC_API int mgc_obj_update_tag(mgc_value blk, unsigned old_tag,
                               unsigned new_tag);

/* ------------------------------------------------------------------------ */
/* Roots                                                                    */
/* ------------------------------------------------------------------------ */

/* Local roots, OCaml style.  MGC_PARAMn opens a frame registering existing
   variables, MGC_LOCALn declares variables set to MGC_UNIT and registers
   them, MGC_RETURN / MGC_RETURN0 / MGC_DROP close the frame.  At most one of
   these macros per source line. */
#define MGC__CAT2(a, b) a##b
#define MGC__CAT(a, b) MGC__CAT2(a, b)
#define MGC__FRAME MGC__CAT(mgc__frame_, __LINE__)
/* The frame's prev, count and first count slots are written one by one:
   an initialiser would also zero the unused slots, which nobody reads (the
   scan stops at count), three stores per frame of two roots. */
#define MGC__OPEN_FRAME(n)                                                     \
  struct mgc_root_frame MGC__FRAME;                                            \
  MGC__FRAME.prev = mgc__state->local_roots;                                   \
  MGC__FRAME.count = (n)
#define MGC__LINK_FRAME mgc__state->local_roots = &MGC__FRAME
#define MGC__FRAME1(a)                                                         \
  MGC__OPEN_FRAME(1);                                                          \
  MGC__FRAME.slots[0] = &(a);                                                  \
  MGC__LINK_FRAME
#define MGC__FRAME2(a, b)                                                      \
  MGC__OPEN_FRAME(2);                                                          \
  MGC__FRAME.slots[0] = &(a);                                                  \
  MGC__FRAME.slots[1] = &(b);                                                  \
  MGC__LINK_FRAME
#define MGC__FRAME3(a, b, c)                                                   \
  MGC__OPEN_FRAME(3);                                                          \
  MGC__FRAME.slots[0] = &(a);                                                  \
  MGC__FRAME.slots[1] = &(b);                                                  \
  MGC__FRAME.slots[2] = &(c);                                                  \
  MGC__LINK_FRAME
#define MGC__FRAME4(a, b, c, d)                                                \
  MGC__OPEN_FRAME(4);                                                          \
  MGC__FRAME.slots[0] = &(a);                                                  \
  MGC__FRAME.slots[1] = &(b);                                                  \
  MGC__FRAME.slots[2] = &(c);                                                  \
  MGC__FRAME.slots[3] = &(d);                                                  \
  MGC__LINK_FRAME
#define MGC__FRAME5(a, b, c, d, e)                                             \
  MGC__OPEN_FRAME(5);                                                          \
  MGC__FRAME.slots[0] = &(a);                                                  \
  MGC__FRAME.slots[1] = &(b);                                                  \
  MGC__FRAME.slots[2] = &(c);                                                  \
  MGC__FRAME.slots[3] = &(d);                                                  \
  MGC__FRAME.slots[4] = &(e);                                                  \
  MGC__LINK_FRAME

#define MGC_PARAM0                                                             \
  struct mgc_fast_state *mgc__state = mgc_tls_state;                           \
  struct mgc_root_frame *mgc__saved_roots = mgc__state->local_roots
#define MGC_PARAM1(a)                                                          \
  MGC_PARAM0;                                                                  \
  MGC__FRAME1(a)
#define MGC_PARAM2(a, b)                                                       \
  MGC_PARAM0;                                                                  \
  MGC__FRAME2(a, b)
#define MGC_PARAM3(a, b, c)                                                    \
  MGC_PARAM0;                                                                  \
  MGC__FRAME3(a, b, c)
#define MGC_PARAM4(a, b, c, d)                                                 \
  MGC_PARAM0;                                                                  \
  MGC__FRAME4(a, b, c, d)
#define MGC_PARAM5(a, b, c, d, e)                                              \
  MGC_PARAM0;                                                                  \
  MGC__FRAME5(a, b, c, d, e)

#define MGC_LOCAL1(x)                                                          \
  mgc_value x = MGC_UNIT;                                                      \
  MGC__FRAME1(x)
#define MGC_LOCAL2(x, y)                                                       \
  mgc_value x = MGC_UNIT, y = MGC_UNIT;                                        \
  MGC__FRAME2(x, y)
#define MGC_LOCAL3(x, y, z)                                                    \
  mgc_value x = MGC_UNIT, y = MGC_UNIT, z = MGC_UNIT;                          \
  MGC__FRAME3(x, y, z)
#define MGC_LOCAL4(x, y, z, t)                                                 \
  mgc_value x = MGC_UNIT, y = MGC_UNIT, z = MGC_UNIT, t = MGC_UNIT;            \
  MGC__FRAME4(x, y, z, t)
#define MGC_LOCAL5(x, y, z, t, u)                                              \
  mgc_value x = MGC_UNIT, y = MGC_UNIT, z = MGC_UNIT, t = MGC_UNIT,            \
            u = MGC_UNIT;                                                      \
  MGC__FRAME5(x, y, z, t, u)

#define MGC_DROP (mgc__state->local_roots = mgc__saved_roots)
#define MGC_RETURN(v)                                                          \
  do {                                                                         \
    mgc_value mgc__result = (v);                                               \
    mgc__state->local_roots = mgc__saved_roots;                                \
    return mgc__result;                                                        \
  } while (0)
#define MGC_RETURN0                                                            \
  do {                                                                         \
    mgc__state->local_roots = mgc__saved_roots;                                \
    return;                                                                    \
  } while (0)

/* Global roots: classic ones are scanned at every collection. */
MGC_API void mgc_register_global_root(mgc_value *r);
MGC_API void mgc_remove_global_root(mgc_value *r);
/* Generational ones are scanned at a minor collection only while they hold a
   young value; change them only with mgc_modify_generational_global_root. */
MGC_API void mgc_register_generational_global_root(mgc_value *r);
MGC_API void mgc_modify_generational_global_root(mgc_value *r, mgc_value v);
MGC_API void mgc_remove_generational_global_root(mgc_value *r);

typedef void (*mgc_scanning_action)(void *data, mgc_value v, mgc_value *slot);
/* The embedder reports its own roots; called on each domain (by the domain's
   thread, or its backup thread while it sits in a blocking section). */
MGC_API void mgc_set_scan_roots_hook(void (*hook)(mgc_scanning_action,
                                                  void *data));
/* Why the roots are scanned.  MGC_SCAN_YOUNG: by a minor collection; only
   young values matter, and the action ignores every other word (integers,
   old or out-of-heap blocks, pointers outside the heaps, code pointers: any
   word that is not an address inside a minor heap), so the hook may skip
   its filtering of non-values.  MGC_SCAN_FULL: anything else (the start of
   a major cycle, compaction, the verifier): report only values. */
typedef enum mgc_scan_kind {
  MGC_SCAN_FULL = 0,
  MGC_SCAN_YOUNG = 1
} mgc_scan_kind;
/* The same hook, told the kind of scan.  There is one hook: setting either
   kind replaces the other. */
MGC_API void mgc_set_scan_roots_hook_kind(
    void (*hook)(mgc_scanning_action action, void *data, mgc_scan_kind kind));

/* ------------------------------------------------------------------------ */
/* Domains, threads, safepoints                                             */
/* ------------------------------------------------------------------------ */

typedef struct mgc_domain mgc_domain;

/* A new OS thread with its own minor heap running body(arg); NULL when it
   cannot (mgc_last_error says why, e.g. MGC_ETOOMANYDOMAINS). */
MGC_API mgc_domain *mgc_domain_spawn(mgc_value (*body)(mgc_value arg),
                                     mgc_value arg);
/* Waits for the domain, returns body's result (kept alive until now). */
MGC_API mgc_value mgc_domain_join(mgc_domain *d);
/* The calling domain's id: unique for the life of the process, never
   reused after its domain terminates (as OCaml's Domain.self); domain 0 is
   the first.  -1 on a thread that is not a domain. */
MGC_API int mgc_domain_self(void);
/* The calling domain's slot, in [0, max_domains): reused by a later domain
   once this one has terminated.  -1 on a thread that is not a domain. */
MGC_API int mgc_domain_index(void);
/* A pointer of the embedder's per domain (its own domain state): set by
   the domain for itself, NULL until then.  mgc_domain_user returns that of
   the domain the calling thread acts for: the domain's own thread, its
   backup thread, or any thread scanning that domain's roots (inside the
   roots hook, whichever thread calls it); NULL on another thread. */
MGC_API void mgc_domain_set_user(void *p);
MGC_API void *mgc_domain_user(void);

MGC_API void mgc_poll_slow(void);
/* A safepoint for loops that do not allocate. */
static inline void mgc_poll(void) {
  struct mgc_fast_state *s = mgc_tls_state;
  if (MGC_UNLIKELY(s->young_ptr <
                   __atomic_load_n(&s->young_limit, __ATOMIC_RELAXED)))
    mgc_poll_slow();
}

/* Makes the calling domain's next mgc_alloc_small or mgc_poll take the slow
   path, which does the GC work due and returns normally (calling the reset
   hook below).  Async-signal-safe: may be called from a signal handler
   running on a domain's thread (a no-op on another thread).  Never lost:
   an interrupt that arrives while the slow path runs is either seen by the
   next fast-path check, or followed by a call of the reset hook. */
MGC_API void mgc_interrupt(void);
/* Called on the domain's own thread (never its backup thread) each time
   mgc recomputes the domain's young limit (after a minor collection, at
   the end of every slow path, ...), after the new limit is stored: an
   embedder with its own pending flags (signals) calls mgc_interrupt again
   from it.  It may run inside a collection: it must not allocate or call
   into mgc other than mgc_interrupt and mgc_domain_user.  NULL removes. */
MGC_API void mgc_set_young_limit_reset_hook(void (*hook)(void));

/* Around code that may block without touching the heap: no mgc_ call, no
   MGC_FIELD access, no root change inside.  Collections go on meanwhile. */
MGC_API void mgc_enter_blocking_section(void);
MGC_API void mgc_leave_blocking_section(void);

/* ------------------------------------------------------------------------ */
/* Weak values                                                              */
/* ------------------------------------------------------------------------ */

/* An ephemeron with n keys is an MGC_TAG_ABSTRACT block of 2 + n words in
   the major heap (OCaml 5.2's layout): field 0 belongs to the collector,
   field MGC_EPHE_DATA_OFFSET is the data, keys start at MGC_EPHE_FIRST_KEY;
   an empty slot holds MGC_EPHE_NONE.  The data is kept alive only while
   the ephemeron and every key are alive; when a key dies, its slot and the
   data are emptied.  Keys and data may be immediates (always alive) or any
   block, young or old, of any domain.  A weak array is an ephemeron whose
   data is never set.  Read and write the slots only with the calls below
   (they cooperate with the collector; a direct store is a bug).  Every
   call may be made from any domain; only the creators allocate (and may
   collect, as every allocation).  Misuse (not an ephemeron, an index out of
   range, a size of 0 or beyond MGC_EPHE_MAX_KEYS) goes to the fatal
   handler with a message naming the call. */
#define MGC_EPHE_DATA_OFFSET 1
#define MGC_EPHE_FIRST_KEY 2
#define MGC_EPHE_MAX_KEYS (MGC_MAX_WOSIZE - MGC_EPHE_FIRST_KEY)
/* The empty slot: a static block, never a valid key or data. */
extern MGC_API const mgc_header mgc_ephe_none_block[2];
#define MGC_EPHE_NONE ((mgc_value)&mgc_ephe_none_block[1])

/* A new ephemeron with nkeys empty keys and no data, in the major heap.
   An allocation: it may collect (root what you hold across it). */
MGC_API mgc_value mgc_ephe_create(size_t nkeys);
MGC_API size_t mgc_ephe_num_keys(mgc_value e);
/* k = MGC_EPHE_NONE empties the slot, as unset does. */
MGC_API void mgc_ephe_set_key(mgc_value e, size_t i, mgc_value k);
MGC_API void mgc_ephe_unset_key(mgc_value e, size_t i);
/* 1 and *out = the key (out may be NULL) when the slot is full; the key
   is then kept alive by the caller like any value it holds. */
MGC_API int mgc_ephe_get_key(mgc_value e, size_t i, mgc_value *out);
/* 1 when the slot is full; unlike get, keeps nothing alive. */
MGC_API int mgc_ephe_check_key(mgc_value e, size_t i);
MGC_API void mgc_ephe_set_data(mgc_value e, mgc_value d);
MGC_API void mgc_ephe_unset_data(mgc_value e);
MGC_API int mgc_ephe_get_data(mgc_value e, mgc_value *out);
MGC_API int mgc_ephe_check_data(mgc_value e);
/* Copies keys [si, si + len) of src to [di, di + len) of dst (overlap
   allowed), or the data of src to dst: OCaml's Weak.blit and
   Ephemeron blit_data. */
MGC_API void mgc_ephe_blit_keys(mgc_value src, size_t si, mgc_value dst,
                                size_t di, size_t len);
MGC_API void mgc_ephe_blit_data(mgc_value src, mgc_value dst);

/* Weak arrays: n slots, each a key of an ephemeron without data. */
MGC_API mgc_value mgc_weak_create(size_t n);
MGC_API size_t mgc_weak_length(mgc_value w);
MGC_API void mgc_weak_set(mgc_value w, size_t i, mgc_value v);
MGC_API void mgc_weak_unset(mgc_value w, size_t i);
MGC_API int mgc_weak_get(mgc_value w, size_t i, mgc_value *out);
MGC_API int mgc_weak_check(mgc_value w, size_t i);

/* ------------------------------------------------------------------------ */
/* Finalisers                                                               */
/* ------------------------------------------------------------------------ */

/* f(v, data) is called once, when v first becomes unreachable (OCaml's
   Gc.finalise); v stays alive until f returns and longer if f stores it.
   v is then a major block: root it (MGC_PARAM1) if f allocates and uses it
   afterwards. */
typedef void (*mgc_finaliser)(mgc_value v, void *data);
MGC_API void mgc_finalise(mgc_value v, mgc_finaliser f, void *data);
/* f(data) is called once, after v is dead (OCaml's Gc.finalise_last). */
MGC_API void mgc_finalise_last(mgc_value v, void (*f)(void *data), void *data);
/* v must be a block of the heap (young or major, not an atom or a static
   block) and not a Lazy, Forcing or Forward block; a value may be given
   several finalisers.  Finalisers run on the domain that registered them
   (a terminated domain's are adopted by another), at a safepoint outside
   the collector: an allocation that takes the slow path, mgc_poll, the end
   of mgc_minor_collection / mgc_major_slice / mgc_major_collection /
   mgc_full_major / mgc_compact, or mgc_run_finalisers; one at a time per
   domain (one that allocates, collects, registers finalisers or spawns
   domains works).  Order: those found dead together run in the reverse
   order of their registration; earlier findings run first; a value's
   first-kind finaliser runs before its last-kind one.  With the parameter
   F=1 (manual_finalisers) they run only in mgc_run_finalisers, and the
   pending hook is called (on the domain's thread, at its next safepoint)
   when some become due; mgc_shutdown runs none. */
MGC_API void mgc_run_finalisers(void);
/* 1 when the calling domain has finalisers waiting to run. */
MGC_API int mgc_finalisers_pending(void);
/* Called once per batch of due finalisers in manual mode; must not
   allocate (set a flag, then call mgc_run_finalisers later); NULL removes. */
MGC_API void mgc_set_finalisers_pending_hook(void (*hook)(void));

/* ------------------------------------------------------------------------ */
/* Continuations: fibers and embedder stacks                                */
/* ------------------------------------------------------------------------ */

/* A stack is memory outside the heap holding values: an mgc_fiber (a
   growable value stack owned by the library) or an embedder's own stack
   (an interpreter's frames), which embeds an mgc_stack as its first member
   and registers scan and free functions.  Every stack is in one of two
   states:
   - held by a domain (the one that created it or last took it): it is a
     root of that domain, scanned at every minor collection and at the start
     of every major cycle (by the domain, or by its backup thread while it
     sits in a blocking section).  Its slots are written without a write
     barrier, like a machine stack, and only by the holding domain.
   - inside a continuation: a two-field MGC_TAG_CONT block (OCaml 5.2's
     layout) whose field 0 is the stack's address + 1 and whose field 1 is
     an opaque word the collector never reads (MGC_UNIT at creation; set it
     with a plain store, copied verbatim when the block is promoted).  The
     stack is scanned when its continuation is promoted or marked, is
     darkened before it is taken while marking runs, and is freed when the
     continuation is found dead (a dead young one after the minor collection
     that finds it, a dead major one when its block is swept) unless it was
     taken before.
   A domain that terminates frees the stacks it still holds (their values
   are dropped; pass them to mgc_cont_new first to keep them).  mgc_shutdown
   frees every stack, held or inside a continuation. */
typedef struct mgc_stack mgc_stack;
typedef struct mgc_stack_ops {
  /* Calls act(data, *slot, slot) on every live slot of s; the collector
     may store into *slot (a promoted value's new address).  Must not
     allocate, call into mgc or block; runs on any domain or backup
     thread, inside a collection. */
  void (*scan)(mgc_stack *s, mgc_scanning_action act, void *data);
  /* Releases s; called once, when s is dropped (mgc_stack_free, a dead
     continuation, a terminating domain, mgc_shutdown).  Must not call into
     mgc (it may run inside a collection, on any domain). */
  void (*free)(mgc_stack *s);
} mgc_stack_ops;

/* The library's part of a stack; its fields are private. */
struct mgc_stack {
  const mgc_stack_ops *ops;
  struct mgc_stack *prev, *next; /* the holder's list */
  void *holder;                  /* the holding domain, or NULL */
  uint64_t verify_stamp;
  int state; /* held, in a continuation, freed */
  int magic;
};

/* Embedder stacks.  s becomes held by the calling domain. */
MGC_API void mgc_stack_register(mgc_stack *s, const mgc_stack_ops *ops);
/* Drops a held stack: it stops being a root and ops->free(s) is called. */
MGC_API void mgc_stack_free(mgc_stack *s);
/* The continuation holding s (held by the calling domain), as
   mgc_cont_new. */
MGC_API mgc_value mgc_cont_new_stack(mgc_stack *s);
/* Takes the stack out of continuation k, fiber or embedder stack, as
   mgc_cont_take; NULL when it was taken already. */
MGC_API mgc_stack *mgc_cont_take_stack(mgc_value k);

/* Fibers.  The layout is visible for the inline calls below; use only
   the calls.  While held, slots 0 .. depth - 1 are live (slot 0 is the
   first pushed). */
typedef struct mgc_fiber {
  mgc_stack stack;
  mgc_value *slots;
  size_t depth;
  size_t limit; /* capacity while held, 0 otherwise */
  size_t capacity;
} mgc_fiber;

/* A fiber with room for capacity slots (0: a small default), held by the
   calling domain.  It grows on demand up to the l parameter (words); NULL
   with MGC_ENOMEM when the memory is not there. */
MGC_API mgc_fiber *mgc_fiber_new(size_t capacity);
/* Drops a held fiber and its values. */
MGC_API void mgc_fiber_free(mgc_fiber *f);
MGC_API void mgc_fiber_push_slow(mgc_fiber *f, mgc_value v);
MGC_API mgc_value mgc_fiber_pop_slow(mgc_fiber *f);
MGC_API mgc_value *mgc_fiber_bad_slot(mgc_fiber *f, size_t i);

/* Pushes v on a held fiber, growing it (past the l parameter: the OOM
   handler, then a fatal error). */
static inline void mgc_fiber_push(mgc_fiber *f, mgc_value v) {
  if (MGC_LIKELY(f->depth < f->limit))
    f->slots[f->depth++] = v;
  else
    mgc_fiber_push_slow(f, v);
}
/* Pops the last value pushed (a fatal error on an empty fiber). */
static inline mgc_value mgc_fiber_pop(mgc_fiber *f) {
  size_t d = f->depth - 1; /* SIZE_MAX when empty */
  if (MGC_LIKELY(d < f->limit)) {
    f->depth = d;
    return f->slots[d];
  }
  return mgc_fiber_pop_slow(f);
}
static inline size_t mgc_fiber_depth(const mgc_fiber *f) { return f->depth; }
static inline mgc_value *mgc_fiber_slot_ptr(mgc_fiber *f, size_t i) {
  if (MGC_UNLIKELY(i >= f->depth || f->limit == 0))
    return mgc_fiber_bad_slot(f, i);
  return &f->slots[i];
}
/* Slot i (< depth) of a held fiber, an lvalue: plain loads and stores, no
   write barrier.  A slot past the depth, or of a fiber that is not held, is
   a fatal error. */
#define MGC_FIBER_SLOT(f, i) (*mgc_fiber_slot_ptr((f), (i)))

/* A new young MGC_TAG_CONT block holding f, which must be held by the
   calling domain; f is no longer a root and may not be used until it is
   taken back.  NULL, a fiber already inside a continuation, freed, or held
   by another domain: a fatal error. */
MGC_API mgc_value mgc_cont_new(mgc_fiber *f);
/* Takes the fiber out of continuation k, from any domain; the calling
   domain then holds it.  One-shot: of concurrent takers exactly one gets
   the fiber, the others (and every later call) get NULL.  k not a
   continuation, or holding an embedder stack: a fatal error. */
MGC_API mgc_fiber *mgc_cont_take(mgc_value k);

/* ------------------------------------------------------------------------ */
/* Collection control and statistics                                        */
/* ------------------------------------------------------------------------ */

MGC_API void mgc_minor_collection(void);
/* 0 = the automatic amount; else that many words of marking/sweeping. */
MGC_API void mgc_major_slice(intptr_t work);
/* Finish the major cycle under way. */
MGC_API void mgc_major_collection(void);
/* Finish the major cycle under way, as mgc_major_collection, and compact
   the heap at its end (the compaction of mgc_compact, at that cycle end:
   what was unreachable when its marking started is freed, the rest moves as
   needed).  OCaml's caml_finish_major_cycle(1). */
MGC_API void mgc_major_collection_compact(void);
/* Empty the minor heaps, then run three major cycles, the calling domain's
   due finalisers after each (OCaml's Gc.full_major): when it returns, every
   block that was dead at the call has been freed, every ephemeron key and
   weak slot whose value was unreachable at the call is empty, and the
   first-kind finaliser of every such value registered by the calling
   domain has run (other domains run theirs at their next safepoint).  A
   value kept alive only by a pending first-kind finaliser (its own
   last-kind finaliser, or what it alone references) is found dead one
   cycle after that finaliser ran: it may take another call, as in OCaml. */
MGC_API void mgc_full_major(void);
/* A full major collection whose last cycle end compacts the heap: in each
   size class the live blocks of the least occupied pools move into the
   free slots of the others (every pointer to them, in the heap, roots,
   stacks, ephemerons and finaliser tables, is updated), and the emptied
   pools and every free pool go back to the OS.  Large blocks (more than
   127 fields) do not move.  All domains take part, in one pause. */
MGC_API void mgc_compact(void);
/* Empties the minor heap first; at least 257 words. */
MGC_API void mgc_set_minor_heap_size(size_t words);
/* The calling domain's minor heap: [*start, *end), allocation going down
   from *end.  It moves when a minor heap is resized (mgc_set_minor_heap_size
   and mgc_set_params on this domain; growing beyond the reservation's slots
   from any domain moves every domain's): read it again after those. */
MGC_API void mgc_minor_heap_range(void **start, void **end);
/* Words the calling domain may still allocate in its minor heap before its
   next minor collection: young_ptr minus the bottom of the part in use
   (the start, unless the pause goal, P=, shrank that part). */
MGC_API size_t mgc_minor_free_words(void);

typedef struct mgc_stats {
  uint64_t minor_words;
  uint64_t promoted_words;
  uint64_t major_words;
  uint64_t minor_collections;
  uint64_t major_collections;
  uint64_t forced_major_collections;
  uint64_t compactions;
  uint64_t heap_words;
  uint64_t top_heap_words;
  uint64_t live_words; /* as of the last mgc_full_major */
  uint64_t minor_pause_max_ns;
  uint64_t minor_pause_p50_ns;
  uint64_t minor_pause_p99_ns;
  /* Additions: */
  uint64_t major_slices;
  uint64_t stw_latency_max_ns; /* collection request to all domains stopped */
  uint64_t stw_latency_p50_ns;
  uint64_t stw_latency_p99_ns;
  uint64_t remset_overflows; /* minor GCs requested by a full table */
  uint64_t domains;          /* domains alive now */
  /* The major collector's stop-the-world pauses, per domain: phase changes
     and cycle ends (a cycle end's minor collection is counted as a minor
     pause, not here). */
  uint64_t major_stw_pause_max_ns;
  uint64_t major_stw_pause_p99_ns;
  /* Compactions (mgc_compact, the O= and C= parameters): words moved in
     all, and the longest pause of a domain in one. */
  uint64_t compacted_words;
  uint64_t compaction_pause_max_ns;
} mgc_stats;

/* Never forces a collection.  Summed over all domains. */
MGC_API void mgc_get_stats(mgc_stats *out);
/* The figures of the domain in slot `slot` (see mgc_domain_index) alone:
   its minor_words, promoted_words, major_words, major_slices,
   remset_overflows and its pause percentiles (minor, major STW,
   compaction); the global fields (heap, collections) as mgc_get_stats.
   Returns -1 (MGC_EINVAL) when no domain is running in that slot. */
MGC_API int mgc_get_domain_stats(int slot, mgc_stats *out);
/* Prints the statistics, totals then one line per running domain, as
   OCaml's Gc.print_stat does (to stderr when f is NULL). */
MGC_API void mgc_print_stats(FILE *f);

/* Runtime events: every domain slot has a ring of its last events (the e=
   parameter sets its size; 0 turns events off), written without locks by
   the domain and read by anyone at any time without stopping the world.
   Spans are BEGIN/END pairs, properly nested per domain; counters carry a
   value.  trace=FILE writes them as a JSON trace (Chrome trace-event
   format, one track per domain). */
enum mgc_event_kind { MGC_EV_BEGIN = 1, MGC_EV_END = 2, MGC_EV_COUNTER = 3 };
enum mgc_event_name {
  MGC_EVN_MINOR,          /* span: a minor collection's pause */
  MGC_EVN_MINOR_ROOTS,    /* span: its roots (local, global, finalisers) */
  MGC_EVN_MINOR_REMSET,   /* span: its share of the remembered sets */
  MGC_EVN_MINOR_MOPUP,    /* span: copying what was reached */
  MGC_EVN_MAJOR_SLICE,    /* span: a major slice */
  MGC_EVN_MARK,           /* span: marking in a slice */
  MGC_EVN_SWEEP,          /* span: sweeping in a slice */
  MGC_EVN_CYCLE_END,      /* span: the cycle-end section */
  MGC_EVN_PHASE_CHANGE,   /* span: a major phase-change section */
  MGC_EVN_MAJOR_FINISH,   /* span: finishing a cycle on request */
  MGC_EVN_COMPACT,        /* span: a compaction */
  MGC_EVN_STW,            /* span: inside a stop-the-world section */
  MGC_EVN_BARRIER,        /* span: waiting at a barrier of a section */
  MGC_EVN_PROMOTED_WORDS, /* counter: words promoted by a minor collection */
  MGC_EVN_HEAP_WORDS,     /* counter: major heap words, at a cycle end */
  MGC_EVN_REMEMBERED,     /* counter: remembered-set entries at a minor GC */
  MGC_EVN_COUNT
};
typedef struct mgc_event {
  uint64_t time_ns; /* since mgc_init, monotonic */
  unsigned kind;    /* enum mgc_event_kind */
  unsigned name;    /* enum mgc_event_name */
  uint64_t value;   /* counters */
  int domain;       /* the domain slot */
} mgc_event;
/* "minor", "major_slice", ...: the name used in traces. */
MGC_API const char *mgc_event_name(unsigned name);
/* Copies into buf, oldest first, at most max events of domain slot `slot`
   not read yet by this cursor (start it at 0), and advances the cursor;
   *lost (when not NULL) gets how many events were overwritten before this
   reader got to them.  Lock-free; any thread, domain or not. */
MGC_API size_t mgc_events_read(int slot, uint64_t *cursor, mgc_event *buf,
                               size_t max, uint64_t *lost);

/* Checks the invariants of DESIGN.md that hold on a stopped heap (stopping
   the world); 0 when they hold, else prints what broke and returns -1. */
MGC_API int mgc_verify_heap(void);

/* Hooks must not allocate; NULL removes. */
MGC_API void mgc_set_minor_gc_begin_hook(void (*hook)(void));
MGC_API void mgc_set_minor_gc_end_hook(void (*hook)(void));
MGC_API void mgc_set_major_slice_begin_hook(void (*hook)(void));
MGC_API void mgc_set_major_slice_end_hook(void (*hook)(void));

#ifdef __cplusplus
}
#endif

#endif /* MGC_H */
