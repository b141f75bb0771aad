/* fuzz_ops.c: libFuzzer target: random sequences of mgc API operations on
 * one domain, checked against a shadow model.
 *
 * The input is a byte code: each operation is one byte (op = byte % NOPS)
 * followed by the bytes of its operands (a missing byte reads as 0); at
 * most MAX_OPS operations run per input.  The operations:
 *   - allocation of blocks carrying their model id in field 0 (young with
 *     mgc_alloc_small, mgc_alloc, mgc_alloc_shr + mgc_initialize,
 *     mgc_alloc_reserved, large ones of more than 256 fields), strings,
 *     doubles, double arrays; "garbage" allocations that nothing keeps;
 *   - stores with mgc_modify into any reachable block, root loads, copies
 *     and drops; the roots are classic and generational global roots and
 *     the locals of nested MGC_LOCAL3 frames (a frame op recurses into the
 *     interpreter, the matching pop returns from it);
 *   - collections: mgc_minor_collection, mgc_major_slice,
 *     mgc_major_collection, mgc_full_major, mgc_compact,
 *     mgc_set_minor_heap_size, mgc_poll, and mgc_verify_heap() == 0;
 *   - ephemerons and weak arrays: create, set/unset/get/check of keys and
 *     data, blits of keys and data;
 *   - finalisers of both kinds (counted: each at most once, never while the
 *     model holds its value strongly, all of them after the last
 *     collections of the input), mgc_run_finalisers;
 *   - fibers and continuations: new, push, pop, slot reads and writes,
 *     free, mgc_cont_new, mgc_cont_take (one-shot, contents intact).
 * The model is a graph of C structs by id.  Every operation checks what it
 * touches; after each operation the roots and held fibers are compared
 * with the model, and after each collection (and every 128 operations) the
 * whole graph reachable from them: same shape, tags, sizes, reserved bits,
 * contents and sharing; no young block right after a minor collection.
 * Weak slots: a get returns the model's value or nothing; nothing is
 * allowed only when the model value may have died (not held strongly and
 * continuously since it was stored, see definitely_alive); after
 * mgc_full_major and mgc_compact, slots whose values were dead at the call
 * must be empty and the finalisers of such values must have run.  Any
 * mismatch aborts (libFuzzer reports it as a crash).
 *
 * mgc_init runs once (LLVMFuzzerInitialize) with s=4k so that collections
 * happen often; MGC_PARAMS applies on top (e.g. MGC_PARAMS=C=1,V=1).  Each
 * input ends by dropping everything, one checked mgc_full_major
 * (collect_and_check), then more until no more finalisers run, so the next
 * input starts from an empty heap and every finaliser has run exactly
 * once.  FUZZ_TRACE=1 prints every operation on stderr (to turn a
 * crashing input into an op sequence).
 *
 * Built with FUZZ_DOMAINS=2 (fuzz_ops2.c), each input also spawns a second
 * domain that runs the second half of the input on its own model while the
 * first domain runs the first half; they exchange immutable "message"
 * blocks through a shared block (OP_PUBLISH / OP_CONSUME), and the second
 * domain leaves some fibers held when it terminates.  Finalisers of the
 * second domain are adopted by the first one when it terminates.
 *
 * Library bugs found (their inputs are the regress-* files of the corpus;
 * the two-domain finaliser ones are also tests/test_domains_final_regress.c)
 * each have a switch: FUZZ_TWO_DOMAIN_EPHEMERONS (ephemerons on two
 * domains) and FUZZ_CROSS_DOMAIN_LAST (last-kind finalisers on another
 * domain's young blocks), 1 since their fixes, 0 steps around the bug.
 * FUZZ_STRICT_FULL_MAJOR=1 checks the promise mgc.h made for mgc_full_major
 * before f40c688, which the collector does not keep (see
 * collect_and_check).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgc.h"

#ifndef FUZZ_DOMAINS
#define FUZZ_DOMAINS 1
#endif

/* Ephemerons on two domains hit a library bug, fixed in 6551acd (run_slice
   in src/major.c swept ephemerons after serving a cycle end: "a cycle
   countdown went below zero", or ephemerons lost from their lists; input
   in fuzz/corpus/fuzz_ops2/regress-ephe-sweep-countdown).  Should it come
   back, -DFUZZ_TWO_DOMAIN_EPHEMERONS=0 keeps the two-domain target from
   creating any. */
#ifndef FUZZ_TWO_DOMAIN_EPHEMERONS
#define FUZZ_TWO_DOMAIN_EPHEMERONS 1
#endif

/* A last-kind finaliser registered on a young block of another domain ran
   while the block lived, or left a stale pointer in the finaliser table
   (mgc_final_after_minor read the other domain's minor heap after it could
   be poisoned or reused; fixed in 906fc9a; input in
   fuzz/corpus/fuzz_ops2/regress-cross-domain-finalise-last, test in
   tests/test_domains_final_regress.c).  Should it come back,
   -DFUZZ_CROSS_DOMAIN_LAST=0 keeps the two-domain target from registering
   those. */
#ifndef FUZZ_CROSS_DOMAIN_LAST
#define FUZZ_CROSS_DOMAIN_LAST 1
#endif

#define MAX_OPS 2000
#define NG 8   /* classic global roots */
#define NGEN 4 /* generational global roots */
#define NLOC 3 /* locals per frame */
#define MAXDEPTH 6
#define MAXR (NG + NGEN + NLOC * MAXDEPTH)
#define NFIB 4
#define FIB_MAX_DEPTH 48
#define NSH 8 /* the shared block: [0, 4) domain 1's, [4, 8) domain 0's */
#define MSG_TAG 9
#define MINOR_WORDS 4096

/* ------------------------------------------------------------------------ */
/* The model                                                                */
/* ------------------------------------------------------------------------ */

enum kind { K_BLOCK, K_STRING, K_DOUBLE, K_DARRAY, K_CONT, K_EPHE, K_WEAK };
static const char *const kind_names[] = {"block", "string", "double", "darray",
                                         "cont",  "ephe",   "weak"};

struct obj;
/* A model value: an object, or (o == NULL) the integer i. */
struct sval {
  struct obj *o;
  long i;
};

/* A fiber: held by the domain (ctx.held) or inside a continuation. */
struct mfiber {
  mgc_fiber *f;
  struct sval v[FIB_MAX_DEPTH];
  size_t depth;
};

struct obj {
  long id;
  unsigned char kind, tag, res;
  unsigned char frozen;      /* a message: never stored into */
  unsigned char resurrected; /* was handed out by a weak read while the
                                model did not hold it: exempt from the
                                "must be alive" checks */
  size_t n;                  /* block/darray: wosize; string: length;
                                ephemeron/weak array: number of keys */
  struct sval *f;            /* block: fields (f[0] unused); ephe: keys */
  unsigned char *kset;       /* ephe: which key slots are full */
  struct sval data;          /* ephe: the data */
  unsigned char data_set, data_certain;
  unsigned char data_doubt; /* a key may have been emptied before the data
                               was stored: the data may outlive its death */
  struct mfiber *fib;       /* cont: the fiber inside, NULL once taken */
  unsigned long mark[4];    /* traversal stamps (see traverse) */
  unsigned long seen;       /* comparison stamp */
  mgc_value addr;           /* where the comparison found it */
  struct obj *next;         /* all objects of the context */
};

/* A finaliser registration. */
struct freg {
  struct freg *next;
  struct ctx *owner;
  struct obj *obj;
  int last;
  atomic_int calls;
};

struct ctx {
  int dom;
  const uint8_t *p, *end;
  long ops;
  long counter;
  int last_op;
  mgc_value groots[NG + NGEN];
  mgc_value *rp[MAXR];
  struct sval mr[MAXR];
  int nroots;
  struct mfiber *held[NFIB];
  struct obj *all;
  unsigned long stamp; /* for obj.mark[] */
  unsigned long reach_stamp;
  int dirty; /* the strong reachability is stale */
  unsigned long cmp;
  struct freg *regs;
  struct freg **called;
  size_t ncalled, capcalled;
  mgc_value *shared; /* root holding the shared block (FUZZ_DOMAINS 2) */
  struct obj **foreign;
  size_t nforeign, capforeign;
  atomic_int terminated;
  int minor_changed;
  /* scratch */
  struct obj **stk;
  size_t capstk;
  struct cmp_item *cstk;
  size_t capcstk;
  mgc_value *eaddr;
  size_t neaddr, capeaddr;
};

struct cmp_item {
  mgc_value v;
  struct obj *o;
};

static struct ctx ctx0;
#if FUZZ_DOMAINS > 1
static struct ctx ctx1;
#endif
static _Thread_local struct ctx *cur;
static int trace_on;

static void fail(const char *fmt, ...) {
  va_list ap;
  struct ctx *c = cur;
  fprintf(stderr, "\nfuzz_ops: MISMATCH");
  if (c)
    fprintf(stderr, " (domain %d, op #%ld, last op %d)", c->dom, c->ops,
            c->last_op);
  fprintf(stderr, ": ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  fflush(stderr);
  abort();
}

static void fatal_handler(const char *msg) {
  struct ctx *c = cur;
  fprintf(stderr, "\nfuzz_ops: mgc fatal error");
  if (c)
    fprintf(stderr, " (domain %d, op #%ld, last op %d)", c->dom, c->ops,
            c->last_op);
  fprintf(stderr, ": %s\n", msg);
  fflush(stderr);
}

#define TR(c, ...)                                                             \
  do {                                                                         \
    if (trace_on) {                                                            \
      fprintf(stderr, "[d%d #%ld] ", (c)->dom, (c)->ops);                      \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

static void *xcalloc(size_t n, size_t s) {
  void *p = calloc(n ? n : 1, s ? s : 1);
  if (!p)
    abort();
  return p;
}

static void grow(void **a, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return;
  size_t nc = *cap ? *cap * 2 : 64;
  while (nc < need)
    nc *= 2;
  void *p = realloc(*a, nc * elem);
  if (!p)
    abort();
  *a = p;
  *cap = nc;
}

static unsigned rd(struct ctx *c) { return c->p < c->end ? *c->p++ : 0; }

static long rd_int(struct ctx *c) {
  unsigned b = rd(c);
  long x = (long)(signed char)b;
  return (b & 0x40) ? x * 1000003L + 7 : x;
}

static struct obj *new_obj(struct ctx *c, enum kind k, size_t n) {
  struct obj *o = xcalloc(1, sizeof *o);
  o->id = ++c->counter * 2 + c->dom;
  o->kind = (unsigned char)k;
  o->n = n;
  if (k == K_BLOCK || k == K_EPHE || k == K_WEAK)
    o->f = xcalloc(n, sizeof *o->f);
  if (k == K_EPHE || k == K_WEAK)
    o->kset = xcalloc(n, 1);
  o->data_certain = 1;
  o->next = c->all;
  c->all = o;
  return o;
}

static long field_pat(long id, size_t i) {
  return (id * 2654435761L) ^ (long)(i * 40503u);
}
static char str_byte(long id, size_t i) {
  return (char)('a' + (unsigned long)(id * 7 + (long)i * 13) % 26);
}
static double dbl_of(long id, size_t i) {
  return (double)id + 0.5 * (double)i + 0.25;
}
static size_t msg_size(long id) { return 2 + (size_t)((id >> 1) % 5); }

/* One block against its model object: kind, tag, size, id. */
static int same_obj(mgc_value v, const struct obj *o) {
  if (v == 0 || !MGC_IS_BLOCK(v))
    return 0;
  mgc_header h = MGC_HD_VAL(v);
  size_t i;
  switch (o->kind) {
  case K_BLOCK:
    return MGC_TAG_HD(h) == o->tag && MGC_WOSIZE_HD(h) == o->n &&
           MGC_RESERVED_HD(h) == o->res &&
           MGC_FIELD(v, 0) == MGC_VAL_INT(o->id);
  case K_STRING:
    if (MGC_TAG_HD(h) != MGC_TAG_STRING || mgc_string_length(v) != o->n)
      return 0;
    for (i = 0; i < o->n; i++)
      if (MGC_STRING_VAL(v)[i] != str_byte(o->id, i))
        return 0;
    return MGC_STRING_VAL(v)[o->n] == 0;
  case K_DOUBLE:
    return MGC_TAG_HD(h) == MGC_TAG_DOUBLE && MGC_WOSIZE_HD(h) == 1 &&
           MGC_DOUBLE_VAL(v) == dbl_of(o->id, 0);
  case K_DARRAY:
    if (MGC_TAG_HD(h) != MGC_TAG_DOUBLE_ARRAY || MGC_WOSIZE_HD(h) != o->n)
      return 0;
    for (i = 0; i < o->n; i++)
      if (MGC_DOUBLE_FIELD(v, i) != dbl_of(o->id, i))
        return 0;
    return 1;
  case K_CONT:
    return MGC_TAG_HD(h) == MGC_TAG_CONT && MGC_WOSIZE_HD(h) == 2 &&
           MGC_FIELD(v, 1) == MGC_VAL_INT(o->id);
  default:
    return MGC_TAG_HD(h) == MGC_TAG_ABSTRACT &&
           MGC_WOSIZE_HD(h) == o->n + MGC_EPHE_FIRST_KEY &&
           mgc_ephe_num_keys(v) == o->n;
  }
}

static void check_same(mgc_value v, const struct obj *o, const char *where) {
  if (!same_obj(v, o))
    fail("%s: value %#lx is not model %s %ld (header %#lx)", where,
         (unsigned long)v, kind_names[o->kind], o->id,
         (v && MGC_IS_BLOCK(v)) ? (unsigned long)MGC_HD_VAL(v) : 0UL);
}

static void check_sval(mgc_value v, struct sval s, const char *where) {
  if (s.o == NULL) {
    if (v != MGC_VAL_INT(s.i))
      fail("%s: %#lx is not the integer %ld", where, (unsigned long)v, s.i);
  } else {
    check_same(v, s.o, where);
  }
}

/* ------------------------------------------------------------------------ */
/* Roots                                                                    */
/* ------------------------------------------------------------------------ */

static void set_root(struct ctx *c, int j, mgc_value v, struct sval s) {
  if (j >= NG && j < NG + NGEN)
    mgc_modify_generational_global_root(c->rp[j], v);
  else
    *c->rp[j] = v;
  c->mr[j] = s;
  c->dirty = 1;
}

static struct sval sv_int(long i) {
  struct sval s = {NULL, i};
  return s;
}
static struct sval sv_obj(struct obj *o) {
  struct sval s = {o, 0};
  return s;
}

static int root_ix(struct ctx *c) { return (int)(rd(c) % (unsigned)c->nroots); }

/* A source chosen before an allocation, read after it. */
struct src {
  int root; /* -1: the integer i */
  long i;
};
static struct src choose_src(struct ctx *c) {
  struct src s;
  unsigned b = rd(c);
  if (b % 3 == 0) {
    s.root = -1;
    s.i = (long)(b / 3) - 40;
  } else {
    s.root = (int)((b / 3) % (unsigned)c->nroots);
    s.i = 0;
  }
  return s;
}
static mgc_value src_val(struct ctx *c, struct src s) {
  return s.root < 0 ? MGC_VAL_INT(s.i) : *c->rp[s.root];
}
static struct sval src_model(struct ctx *c, struct src s) {
  return s.root < 0 ? sv_int(s.i) : c->mr[s.root];
}

/* A reachable object (with its current address in *v): from a root or a
   held fiber's slot, then along up to 3 reference fields.  NULL when the
   start holds an integer. */
static struct obj *pick(struct ctx *c, mgc_value *v) {
  unsigned b = rd(c);
  struct obj *o;
  mgc_value cv;
  struct mfiber *mf = c->held[(b >> 3) % NFIB];
  if ((b & 7) == 7 && mf && mf->depth > 0) {
    size_t i = rd(c) % mf->depth;
    o = mf->v[i].o;
    cv = MGC_FIBER_SLOT(mf->f, i);
  } else {
    int j = (int)(b % (unsigned)c->nroots);
    o = c->mr[j].o;
    cv = *c->rp[j];
  }
  if (!o)
    return NULL;
  check_same(cv, o, "pick");
  unsigned steps = rd(c) % 4;
  while (steps-- > 0 && o->kind == K_BLOCK && o->n > 1) {
    size_t i = 1 + rd(c) % (o->n - 1);
    if (!o->f[i].o)
      break;
    cv = MGC_FIELD(cv, i);
    o = o->f[i].o;
    check_same(cv, o, "pick (field)");
  }
  *v = cv;
  return o;
}

/* A reachable object of a kind (mask of 1 << kind): a pick, else the first
   root from a random one on. */
static struct obj *pick_kind(struct ctx *c, unsigned mask, mgc_value *v) {
  struct obj *o = pick(c, v);
  if (o && (mask & (1u << o->kind)))
    return o;
  int start = root_ix(c);
  for (int k = 0; k < c->nroots; k++) {
    int j = (start + k) % c->nroots;
    o = c->mr[j].o;
    if (o && (mask & (1u << o->kind))) {
      *v = *c->rp[j];
      check_same(*v, o, "pick_kind");
      return o;
    }
  }
  return NULL;
}

/* A value for a store (no allocation between the choice and the use). */
static void get_value(struct ctx *c, mgc_value *v, struct sval *s) {
  unsigned b = rd(c);
  if (b % 3 == 0) {
    *s = sv_int((long)(b / 3) * 977 - 30000);
    *v = MGC_VAL_INT(s->i);
  } else if (b % 3 == 1) {
    int j = (int)((b / 3) % (unsigned)c->nroots);
    *s = c->mr[j];
    *v = *c->rp[j];
  } else {
    struct obj *o = pick(c, v);
    if (o) {
      *s = sv_obj(o);
    } else {
      *s = sv_int(3);
      *v = MGC_VAL_INT(3);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Reachability in the model                                                */
/* ------------------------------------------------------------------------ */

static void push_obj(struct ctx *c, size_t *sp, struct obj *o) {
  grow((void **)&c->stk, &c->capstk, *sp + 1, sizeof *c->stk);
  c->stk[(*sp)++] = o;
}

/* What o references (strongly; with ext, also its ephemeron data). */
static void push_children(struct ctx *c, size_t *sp, struct obj *o, int ext) {
  size_t i;
  if (o->kind == K_BLOCK) {
    for (i = 1; i < o->n; i++)
      if (o->f[i].o)
        push_obj(c, sp, o->f[i].o);
  } else if (o->kind == K_CONT && o->fib) {
    for (i = 0; i < o->fib->depth; i++)
      if (o->fib->v[i].o)
        push_obj(c, sp, o->fib->v[i].o);
  } else if (o->kind == K_EPHE && ext && o->data_set && o->data.o) {
    push_obj(c, sp, o->data.o);
  }
}

/* Marks (o->mark[which] = stamp) what the roots and the held fibers reach
   through fields and continuations; with ext, also through ephemeron data
   (an upper bound of what the collector keeps).  extra: 1 = the values of
   first-kind finalisers not run yet are roots too, 2 = what they
   reference is.  mark[0] is the strong reachability (ensure_reach). */
static unsigned long traverse(struct ctx *c, int which, int ext, int extra) {
  unsigned long st = ++c->stamp;
  size_t sp = 0, i;
  for (int j = 0; j < c->nroots; j++)
    if (c->mr[j].o)
      push_obj(c, &sp, c->mr[j].o);
  for (int k = 0; k < NFIB; k++)
    if (c->held[k])
      for (i = 0; i < c->held[k]->depth; i++)
        if (c->held[k]->v[i].o)
          push_obj(c, &sp, c->held[k]->v[i].o);
  if (extra)
    for (struct freg *r = c->regs; r; r = r->next)
      if (!r->last && atomic_load(&r->calls) == 0) {
        if (extra == 1)
          push_obj(c, &sp, r->obj);
        else
          push_children(c, &sp, r->obj, ext);
      }
  while (sp > 0) {
    struct obj *o = c->stk[--sp];
    if (o->mark[which] == st)
      continue;
    o->mark[which] = st;
    push_children(c, &sp, o, ext);
  }
  return st;
}

static void ensure_reach(struct ctx *c) {
  if (c->dirty || c->reach_stamp == 0) {
    c->reach_stamp = traverse(c, 0, 0, 0);
    c->dirty = 0;
  }
}

static int strongly_held(struct ctx *c, struct obj *o) {
  ensure_reach(c);
  return o->mark[0] == c->reach_stamp;
}

/* A weak slot holding s cannot have been emptied: an integer, or an object
   the model has held strongly ever since (held now, never resurrected: the
   strongly held set only grows by new objects and weak reads). */
static int definitely_alive(struct ctx *c, struct sval s) {
  return s.o == NULL || (!s.o->resurrected && strongly_held(c, s.o));
}

static int data_definitely_present(struct ctx *c, struct obj *e) {
  if (!e->data_set || !e->data_certain || e->resurrected)
    return 0;
  for (size_t i = 0; i < e->n; i++)
    if (e->kset[i] && !definitely_alive(c, e->f[i]))
      return 0;
  return 1;
}

/* Some key of e may already have been emptied (by a death the model has
   not observed). */
static int key_doubt(struct ctx *c, struct obj *e) {
  for (size_t i = 0; i < e->n; i++)
    if (e->kset[i] && !definitely_alive(c, e->f[i]))
      return 1;
  return 0;
}

/* A weak read handed out o: if the model did not hold it, o and what it
   reaches are exempt from the liveness checks from now on. */
static void resurrect(struct ctx *c, struct obj *o) {
  if (strongly_held(c, o))
    return;
  size_t sp = 0, i;
  push_obj(c, &sp, o);
  while (sp > 0) {
    struct obj *x = c->stk[--sp];
    if (x->resurrected)
      continue;
    x->resurrected = 1;
    if (x->kind == K_BLOCK) {
      for (i = 1; i < x->n; i++)
        if (x->f[i].o)
          push_obj(c, &sp, x->f[i].o);
    } else if (x->kind == K_CONT && x->fib) {
      for (i = 0; i < x->fib->depth; i++)
        if (x->fib->v[i].o)
          push_obj(c, &sp, x->fib->v[i].o);
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Finalisers                                                               */
/* ------------------------------------------------------------------------ */

static void note_called(struct freg *r) {
  struct ctx *c = cur;
  if (trace_on)
    fprintf(stderr, "[d%d] %s-kind finaliser of %s %ld runs\n", c ? c->dom : -1,
            r->last ? "last" : "first", kind_names[r->obj->kind], r->obj->id);
  if (c == NULL)
    return;
  if (r->owner != c) {
    if (!atomic_load(&r->owner->terminated))
      fail("finaliser of domain %d's value %ld ran on domain %d", r->owner->dom,
           r->obj->id, c->dom);
    return;
  }
  grow((void **)&c->called, &c->capcalled, c->ncalled + 1, sizeof *c->called);
  c->called[c->ncalled++] = r;
}

static void fin_first(mgc_value v, void *data) {
  struct freg *r = data;
  if (atomic_fetch_add(&r->calls, 1) != 0)
    fail("first-kind finaliser of %ld called twice", r->obj->id);
  check_same(v, r->obj, "finalised value");
  if (mgc_is_young(v))
    fail("finalised value %ld is young", r->obj->id);
  note_called(r);
}

static void fin_last(void *data) {
  struct freg *r = data;
  if (atomic_fetch_add(&r->calls, 1) != 0)
    fail("last-kind finaliser of %ld called twice", r->obj->id);
  note_called(r);
}

/* Finalisers that ran during the operation: their values must not be held
   by the model (unless a weak read resurrected them). */
static void check_called(struct ctx *c) {
  for (size_t k = 0; k < c->ncalled; k++) {
    struct obj *o = c->called[k]->obj;
    if (!o->resurrected && strongly_held(c, o))
      fail("%s-kind finaliser of %s %ld ran while the model holds it",
           c->called[k]->last ? "last" : "first", kind_names[o->kind], o->id);
  }
  c->ncalled = 0;
}

/* ------------------------------------------------------------------------ */
/* Comparison of the whole graph                                            */
/* ------------------------------------------------------------------------ */

static void cpush(struct ctx *c, size_t *sp, mgc_value v, struct obj *o) {
  grow((void **)&c->cstk, &c->capcstk, *sp + 1, sizeof *c->cstk);
  c->cstk[*sp].v = v;
  c->cstk[*sp].o = o;
  (*sp)++;
}

static int cmp_addr(const void *a, const void *b) {
  mgc_value x = *(const mgc_value *)a, y = *(const mgc_value *)b;
  return x < y ? -1 : x > y;
}

/* The slots of ephemeron or weak array e (at v) against the model; a slot
   found empty that the model says may have died becomes empty in the
   model. */
static void check_ephe_slots(struct ctx *c, mgc_value v, struct obj *e) {
  for (size_t i = 0; i < e->n; i++) {
    int full =
        e->kind == K_WEAK ? mgc_weak_check(v, i) : mgc_ephe_check_key(v, i);
    if (!e->kset[i]) {
      if (full)
        fail("empty key %zu of %s %ld is full", i, kind_names[e->kind], e->id);
    } else if (!full) {
      if (definitely_alive(c, e->f[i]))
        fail("key %zu of %s %ld (a live value) was emptied", i,
             kind_names[e->kind], e->id);
      e->kset[i] = 0;
      e->data_certain = 0;
    }
  }
  if (e->kind == K_EPHE) {
    int full = mgc_ephe_check_data(v);
    if (!e->data_set) {
      if (full)
        fail("empty data of ephemeron %ld is full", e->id);
    } else if (!full) {
      if (data_definitely_present(c, e))
        fail("data of ephemeron %ld was emptied while its keys live", e->id);
      e->data_set = 0;
      e->data_certain = 1;
    }
  }
}

static void compare_all(struct ctx *c, int none_young) {
  unsigned long ep = ++c->cmp;
  size_t sp = 0, i;
  c->neaddr = 0;
  ensure_reach(c);
  for (int j = 0; j < c->nroots; j++) {
    if (c->mr[j].o)
      cpush(c, &sp, *c->rp[j], c->mr[j].o);
    else
      check_sval(*c->rp[j], c->mr[j], "root");
  }
  for (int k = 0; k < NFIB; k++) {
    struct mfiber *mf = c->held[k];
    if (!mf)
      continue;
    if (mgc_fiber_depth(mf->f) != mf->depth)
      fail("fiber depth %zu, model %zu", mgc_fiber_depth(mf->f), mf->depth);
    for (i = 0; i < mf->depth; i++) {
      mgc_value v = MGC_FIBER_SLOT(mf->f, i);
      if (mf->v[i].o)
        cpush(c, &sp, v, mf->v[i].o);
      else
        check_sval(v, mf->v[i], "fiber slot");
    }
  }
  while (sp > 0) {
    sp--;
    mgc_value v = c->cstk[sp].v;
    struct obj *o = c->cstk[sp].o;
    if (o->seen == ep) {
      if (o->addr != v)
        fail("%s %ld reached at two addresses %#lx and %#lx",
             kind_names[o->kind], o->id, (unsigned long)o->addr,
             (unsigned long)v);
      continue;
    }
    o->seen = ep;
    o->addr = v;
    check_same(v, o, "compare");
    if (none_young && mgc_is_young(v))
      fail("%s %ld is young after a minor collection", kind_names[o->kind],
           o->id);
    if (o->kind == K_BLOCK) {
      for (i = 1; i < o->n; i++) {
        mgc_value f = MGC_FIELD(v, i);
        if (o->f[i].o)
          cpush(c, &sp, f, o->f[i].o);
        else if (f != MGC_VAL_INT(o->f[i].i))
          fail("field %zu of block %ld is %#lx, model integer %ld", i, o->id,
               (unsigned long)f, o->f[i].i);
      }
    } else if (o->kind == K_EPHE || o->kind == K_WEAK) {
      grow((void **)&c->eaddr, &c->capeaddr, c->neaddr + 1, sizeof *c->eaddr);
      c->eaddr[c->neaddr++] = v;
      check_ephe_slots(c, v, o);
    }
  }
  /* Two model ephemerons (which carry no id) are two blocks. */
  if (c->neaddr > 1)
    qsort(c->eaddr, c->neaddr, sizeof *c->eaddr, cmp_addr);
  for (i = 1; i < c->neaddr; i++)
    if (c->eaddr[i] == c->eaddr[i - 1])
      fail("two model ephemerons share the block %#lx",
           (unsigned long)c->eaddr[i]);
}

/* Roots and held fibers only. */
static void light_check(struct ctx *c) {
  for (int j = 0; j < c->nroots; j++)
    check_sval(*c->rp[j], c->mr[j], "root (light)");
  for (int k = 0; k < NFIB; k++) {
    struct mfiber *mf = c->held[k];
    if (!mf)
      continue;
    if (mgc_fiber_depth(mf->f) != mf->depth)
      fail("fiber depth %zu, model %zu", mgc_fiber_depth(mf->f), mf->depth);
    for (size_t i = 0; i < mf->depth; i++)
      check_sval(MGC_FIBER_SLOT(mf->f, i), mf->v[i], "fiber slot (light)");
  }
}

/* ------------------------------------------------------------------------ */
/* Operations                                                               */
/* ------------------------------------------------------------------------ */

static const unsigned char tags[] = {
    0, 1, 2, 3, 7, 100, 200, 243, MGC_TAG_OBJECT};
#define NTAGS (sizeof tags / sizeof tags[0])
#define NEXPLICIT 4 /* fields chosen by the input; the others are integers */

enum alloc_way { A_SMALL, A_ALLOC, A_LARGE, A_SHR, A_RESERVED };

static void op_alloc(struct ctx *c, enum alloc_way way) {
  unsigned b = rd(c);
  int dst = root_ix(c);
  unsigned tag = tags[rd(c) % NTAGS];
  size_t n, i, nexp;
  struct src s[NEXPLICIT];
  if (way == A_LARGE)
    n = MGC_MAX_YOUNG_WOSIZE + 1 + rd(c) % 100;
  else if (b < 12)
    n = 9 + rd(c) % (MGC_MAX_YOUNG_WOSIZE - 8);
  else
    n = 1 + b % 8;
  nexp = n - 1 < NEXPLICIT ? n - 1 : NEXPLICIT;
  for (i = 0; i < nexp; i++)
    s[i] = choose_src(c);
  struct obj *o = new_obj(c, K_BLOCK, n);
  o->tag = (unsigned char)tag;
  for (i = 1; i < n; i++)
    o->f[i] = i <= nexp ? src_model(c, s[i - 1]) : sv_int(field_pat(o->id, i));
  TR(c, "alloc way=%d n=%zu tag=%u id=%ld -> root %d", (int)way, n, tag, o->id,
     dst);
  mgc_value v;
  switch (way) {
  case A_SMALL:
    v = mgc_alloc_small(n, tag);
    MGC_FIELD(v, 0) = MGC_VAL_INT(o->id);
    for (i = 1; i < n; i++)
      MGC_FIELD(v, i) =
          i <= nexp ? src_val(c, s[i - 1]) : MGC_VAL_INT(o->f[i].i);
    if (!mgc_is_young(v))
      fail("mgc_alloc_small gave an old block");
    break;
  case A_SHR:
    v = mgc_alloc_shr(n, tag);
    for (i = 0; i < n; i++)
      if (MGC_FIELD(v, i) != MGC_UNIT)
        fail("mgc_alloc_shr: field %zu not MGC_UNIT", i);
    mgc_initialize(&MGC_FIELD(v, 0), MGC_VAL_INT(o->id));
    for (i = 1; i < n; i++)
      mgc_initialize(&MGC_FIELD(v, i),
                     i <= nexp ? src_val(c, s[i - 1]) : MGC_VAL_INT(o->f[i].i));
    break;
  default:
    if (way == A_RESERVED) {
      o->res = (unsigned char)rd(c);
      v = mgc_alloc_reserved(n, tag, o->res);
    } else {
      v = mgc_alloc(n, tag);
    }
    for (i = 0; i < n; i++)
      if (MGC_FIELD(v, i) != MGC_UNIT)
        fail("mgc_alloc: field %zu of %zu not MGC_UNIT", i, n);
    if (n > MGC_MAX_YOUNG_WOSIZE && mgc_is_young(v))
      fail("large block is young");
    mgc_modify(&MGC_FIELD(v, 0), MGC_VAL_INT(o->id));
    for (i = 1; i < n; i++)
      mgc_modify(&MGC_FIELD(v, i),
                 i <= nexp ? src_val(c, s[i - 1]) : MGC_VAL_INT(o->f[i].i));
    break;
  }
  set_root(c, dst, v, sv_obj(o));
  check_same(*c->rp[dst], o, "fresh block");
  for (i = 1; i < n; i++)
    if (o->f[i].o == NULL &&
        MGC_FIELD(*c->rp[dst], i) != MGC_VAL_INT(o->f[i].i))
      fail("fresh block field %zu", i);
}

static void op_alloc_string(struct ctx *c) {
  unsigned b = rd(c);
  int dst = root_ix(c);
  size_t n = b % 40, i;
  struct obj *o = new_obj(c, K_STRING, n);
  char buf[48];
  for (i = 0; i < n; i++)
    buf[i] = str_byte(o->id, i);
  buf[n] = 0;
  TR(c, "string len=%zu id=%ld -> root %d", n, o->id, dst);
  mgc_value v;
  if (b & 0x80) {
    v = mgc_copy_string(buf);
  } else {
    v = mgc_alloc_string(n);
    memcpy(MGC_STRING_VAL(v), buf, n);
  }
  set_root(c, dst, v, sv_obj(o));
  check_same(*c->rp[dst], o, "fresh string");
}

static void op_alloc_double(struct ctx *c, int array) {
  unsigned b = rd(c);
  int dst = root_ix(c);
  size_t n = array ? 1 + b % 6 : 1, i;
  struct obj *o = new_obj(c, array ? K_DARRAY : K_DOUBLE, n);
  TR(c, "%s n=%zu id=%ld -> root %d", array ? "darray" : "double", n, o->id,
     dst);
  mgc_value v;
  if (array) {
    v = mgc_alloc_double_array(n);
    for (i = 0; i < n; i++)
      mgc_store_double_field(v, i, dbl_of(o->id, i));
  } else {
    v = mgc_copy_double(dbl_of(o->id, 0));
  }
  set_root(c, dst, v, sv_obj(o));
  check_same(*c->rp[dst], o, "fresh double");
}

static void op_store(struct ctx *c) {
  mgc_value v, w;
  struct sval s;
  struct obj *o = pick(c, &v);
  get_value(c, &w, &s);
  unsigned b = rd(c);
  if (!o || o->kind != K_BLOCK || o->frozen || o->n < 2)
    return;
  size_t i = 1 + b % (o->n - 1);
  TR(c, "store block %ld field %zu <- %s %ld", o->id, i, s.o ? "obj" : "int",
     s.o ? s.o->id : s.i);
  mgc_modify(&MGC_FIELD(v, i), w);
  o->f[i] = s;
  c->dirty = 1;
  check_sval(MGC_FIELD(v, i), s, "stored field");
}

static void op_load(struct ctx *c) {
  mgc_value v;
  struct sval s;
  get_value(c, &v, &s);
  int dst = root_ix(c);
  TR(c, "load root %d <- %s %ld", dst, s.o ? "obj" : "int",
     s.o ? s.o->id : s.i);
  set_root(c, dst, v, s);
}

static void op_drop(struct ctx *c) {
  int dst = root_ix(c);
  long x = rd_int(c);
  TR(c, "drop root %d", dst);
  set_root(c, dst, MGC_VAL_INT(x), sv_int(x));
}

static void op_garbage(struct ctx *c) {
  unsigned n = rd(c) % 64, k;
  TR(c, "garbage %u", n);
  for (k = 0; k < n; k++) {
    size_t sz = 1 + k % 11, i;
    mgc_value v = mgc_alloc_small(sz, 0);
    for (i = 0; i < sz; i++)
      MGC_FIELD(v, i) = MGC_VAL_INT(-7);
  }
  if (n & 1)
    (void)mgc_alloc(300 + n, 0);
}

/* Finalisers whose values were dead at a mgc_full_major / mgc_compact call
   have run when it returns, and weak slots holding such values are empty.
   l0: what may keep values alive at the call; l1: the same plus the values
   of first-kind finalisers not run yet (kept alive by their finaliser, with
   what they reach).
   By default this is mgc.h's promise (since f40c688): the first-kind
   finalisers of values dead at the call have run, except for values that
   only a pending first-kind finaliser keeps alive (reached from what such
   a value references: l2); and what the collector does besides: the
   last-kind finalisers of values no pending first-kind finaliser keeps
   alive (outside l1) have run too.  mgc_full_major runs the finalisers it
   queues after each cycle end, when the next cycle has started with the
   queued values among its roots, so a value kept by a first-kind finaliser
   is found dead one cycle after it ran.  -DFUZZ_STRICT_FULL_MAJOR=1 checks
   the older promise (every finaliser of every value dead at the call),
   which fails on fuzz/corpus/fuzz_ops/regress-strict-full-major-both-kinds
   (a value with both kinds). */
#ifndef FUZZ_STRICT_FULL_MAJOR
#define FUZZ_STRICT_FULL_MAJOR 0
#endif
static void collect_and_check(struct ctx *c, int compact) {
  unsigned long l0 = traverse(c, 1, 1, 0);
  unsigned long l1 = traverse(c, 2, 1, 1);
  unsigned long l2 = FUZZ_STRICT_FULL_MAJOR ? 0 : traverse(c, 3, 1, 2);
  if (compact)
    mgc_compact();
  else
    mgc_full_major();
  check_called(c);
  for (struct freg *r = c->regs; r; r = r->next) {
    struct obj *o = r->obj;
    if (o->frozen || o->id % 2 != c->dom || atomic_load(&r->calls) != 0)
      continue;
    if (r->last ? o->mark[2] != l1
                : o->mark[1] != l0 && (l2 == 0 || o->mark[3] != l2))
      fail("%s returned, %s-kind finaliser of dead %s %ld has not run",
           compact ? "mgc_compact" : "mgc_full_major",
           r->last ? "last" : "first", kind_names[o->kind], o->id);
  }
  /* Weak slots of reachable ephemerons holding values dead at the call. */
  ensure_reach(c);
  for (struct obj *e = c->all; e; e = e->next) {
    if ((e->kind != K_EPHE && e->kind != K_WEAK) ||
        e->mark[0] != c->reach_stamp)
      continue;
    for (size_t i = 0; i < e->n; i++) {
      struct obj *k = e->f[i].o;
      if (!e->kset[i] || !k || k->frozen || k->id % 2 != c->dom ||
          k->mark[2] == l1)
        continue;
      e->data_certain = 0;
      e->kset[i] = 2; /* must read empty: the comparison below looks */
      if (e->data_set && !e->data_doubt)
        e->data_set = 2; /* and so must the data */
    }
  }
  compare_all(c, 1);
  /* The comparison looked at the ephemerons it reached (not those inside
     continuations): a slot it left at 2 reads full. */
  for (struct obj *e = c->all; e; e = e->next) {
    if (e->kind != K_EPHE && e->kind != K_WEAK)
      continue;
    for (size_t i = 0; i < e->n; i++)
      if (e->kset[i] == 2) {
        if (e->seen == c->cmp)
          fail("%s returned, key %zu of %s %ld still holds dead %ld",
               compact ? "mgc_compact" : "mgc_full_major", i,
               kind_names[e->kind], e->id, e->f[i].o->id);
        e->kset[i] = 1;
      }
    if (e->data_set == 2) {
      if (e->seen == c->cmp)
        fail("%s returned, ephemeron %ld with a dead key still has data",
             compact ? "mgc_compact" : "mgc_full_major", e->id);
      e->data_set = 1;
    }
  }
}

static void op_collect(struct ctx *c, int what) {
  intptr_t work;
  switch (what) {
  case 0:
    TR(c, "minor");
    mgc_minor_collection();
    check_called(c);
    compare_all(c, 1);
    break;
  case 1:
    work = (rd(c) & 1) ? 0 : (intptr_t)rd(c) * 64;
    TR(c, "major slice %ld", (long)work);
    mgc_major_slice(work);
    check_called(c);
    compare_all(c, 0);
    break;
  case 2:
    TR(c, "major collection");
    mgc_major_collection();
    check_called(c);
    compare_all(c, 0);
    break;
  case 3:
    TR(c, "full major");
    collect_and_check(c, 0);
    break;
  case 4:
    TR(c, "compact");
    collect_and_check(c, 1);
    break;
  case 5:
    TR(c, "verify");
    if (mgc_verify_heap() != 0)
      fail("mgc_verify_heap failed");
    break;
  case 6: {
    unsigned b = rd(c);
    size_t w = (b & 0x80) ? MINOR_WORDS : 257 + (size_t)b * 97;
    TR(c, "set minor heap size %zu", w);
    mgc_set_minor_heap_size(w);
    c->minor_changed = 1;
    check_called(c);
    compare_all(c, 1);
    break;
  }
  default:
    TR(c, "poll");
    mgc_poll();
    break;
  }
}

/* Ephemerons and weak arrays. */
static void op_ephe_create(struct ctx *c, int weak) {
  int dst = root_ix(c);
  size_t n = 1 + rd(c) % (weak ? 6 : 4), i;
  if (FUZZ_DOMAINS > 1 && !FUZZ_TWO_DOMAIN_EPHEMERONS)
    return;
  struct obj *o = new_obj(c, weak ? K_WEAK : K_EPHE, n);
  TR(c, "%s create n=%zu id=%ld -> root %d", weak ? "weak" : "ephe", n, o->id,
     dst);
  mgc_value v = weak ? mgc_weak_create(n) : mgc_ephe_create(n);
  if (mgc_is_young(v))
    fail("ephemeron is young");
  set_root(c, dst, v, sv_obj(o));
  v = *c->rp[dst];
  check_same(v, o, "fresh ephemeron");
  for (i = 0; i < n; i++)
    if (mgc_ephe_check_key(v, i))
      fail("fresh ephemeron has key %zu", i);
  if (mgc_ephe_check_data(v))
    fail("fresh ephemeron has data");
}

#define EPHE_MASK ((1u << K_EPHE) | (1u << K_WEAK))

/* Slot i of e gets s (kset: 1 = full): the old value, if it may have died,
   may have emptied the data. */
static void model_set_key(struct ctx *c, struct obj *e, size_t i, int full,
                          struct sval s) {
  if (e->kset[i] && !definitely_alive(c, e->f[i]))
    e->data_certain = 0;
  e->kset[i] = (unsigned char)full;
  e->f[i] = full ? s : sv_int(0);
}

static void op_key(struct ctx *c, int what) {
  mgc_value e, w = 0;
  struct sval s = sv_int(0);
  struct obj *o = pick_kind(c, EPHE_MASK, &e);
  unsigned b = rd(c);
  if (what == 0)
    get_value(c, &w, &s);
  int dst = root_ix(c);
  if (!o)
    return;
  size_t i = b % o->n;
  int weak_call = o->kind == K_WEAK ? !(b & 0x80) : 0;
  switch (what) {
  case 0: /* set */
    TR(c, "key set %s %ld [%zu] <- %s %ld", kind_names[o->kind], o->id, i,
       s.o ? "obj" : "int", s.o ? s.o->id : s.i);
    if (weak_call)
      mgc_weak_set(e, i, w);
    else
      mgc_ephe_set_key(e, i, w);
    model_set_key(c, o, i, 1, s);
    break;
  case 1: /* unset */
    TR(c, "key unset %s %ld [%zu]", kind_names[o->kind], o->id, i);
    if (weak_call)
      mgc_weak_unset(e, i);
    else if (b & 0x40)
      mgc_ephe_set_key(e, i, MGC_EPHE_NONE);
    else
      mgc_ephe_unset_key(e, i);
    model_set_key(c, o, i, 0, s);
    break;
  default: { /* get (2) or check (3) */
    mgc_value out = 0;
    int full;
    if (what == 2)
      full =
          weak_call ? mgc_weak_get(e, i, &out) : mgc_ephe_get_key(e, i, &out);
    else
      full = weak_call ? mgc_weak_check(e, i) : mgc_ephe_check_key(e, i);
    TR(c, "key %s %s %ld [%zu] -> %d", what == 2 ? "get" : "check",
       kind_names[o->kind], o->id, i, full);
    if (!o->kset[i]) {
      if (full)
        fail("empty key %zu of %s %ld reads full", i, kind_names[o->kind],
             o->id);
    } else if (!full) {
      if (definitely_alive(c, o->f[i]))
        fail("key %zu of %s %ld (live %s %ld) reads empty", i,
             kind_names[o->kind], o->id, o->f[i].o ? "obj" : "int",
             o->f[i].o ? o->f[i].o->id : o->f[i].i);
      o->kset[i] = 0;
      o->data_certain = 0;
    } else if (what == 2) {
      check_sval(out, o->f[i], "key read");
      if (o->f[i].o)
        resurrect(c, o->f[i].o);
      if (b & 0x20)
        set_root(c, dst, out, o->f[i]);
    }
    break;
  }
  }
}

static void op_data(struct ctx *c, int what) {
  mgc_value e, w = 0;
  struct sval s = sv_int(0);
  struct obj *o = pick_kind(c, 1u << K_EPHE, &e);
  unsigned b = rd(c);
  if (what == 0)
    get_value(c, &w, &s);
  int dst = root_ix(c);
  if (!o)
    return;
  switch (what) {
  case 0:
    TR(c, "data set ephe %ld <- %s %ld", o->id, s.o ? "obj" : "int",
       s.o ? s.o->id : s.i);
    o->data_doubt = (unsigned char)key_doubt(c, o);
    mgc_ephe_set_data(e, w);
    o->data_set = 1;
    o->data = s;
    o->data_certain = 1;
    break;
  case 1:
    TR(c, "data unset ephe %ld", o->id);
    mgc_ephe_unset_data(e);
    o->data_set = 0;
    o->data_certain = 1;
    break;
  default: {
    mgc_value out = 0;
    int full = what == 2 ? mgc_ephe_get_data(e, &out) : mgc_ephe_check_data(e);
    TR(c, "data %s ephe %ld -> %d", what == 2 ? "get" : "check", o->id, full);
    if (!o->data_set) {
      if (full)
        fail("empty data of ephemeron %ld reads full", o->id);
    } else if (!full) {
      if (data_definitely_present(c, o))
        fail("data of ephemeron %ld reads empty while its keys live", o->id);
      o->data_set = 0;
      o->data_certain = 1;
    } else if (what == 2) {
      check_sval(out, o->data, "data read");
      if (o->data.o)
        resurrect(c, o->data.o);
      if (b & 1)
        set_root(c, dst, out, o->data);
    }
    break;
  }
  }
}

static void op_blit(struct ctx *c, int data) {
  mgc_value a, d;
  unsigned mask = data ? 1u << K_EPHE : EPHE_MASK;
  struct obj *src = pick_kind(c, mask, &a);
  struct obj *dst = pick_kind(c, mask, &d);
  unsigned b1 = rd(c), b2 = rd(c), b3 = rd(c);
  if (!src || !dst)
    return;
  if (data) {
    TR(c, "blit data %ld -> %ld", src->id, dst->id);
    int present = data_definitely_present(c, src);
    struct sval s = src->data;
    int set = src->data_set;
    dst->data_doubt = (unsigned char)key_doubt(c, dst);
    mgc_ephe_blit_data(a, d);
    dst->data_set = (unsigned char)set;
    dst->data = s;
    dst->data_certain = (unsigned char)(set ? present : 1);
    return;
  }
  size_t si = b1 % (src->n + 1), di = b2 % (dst->n + 1);
  size_t max = src->n - si < dst->n - di ? src->n - si : dst->n - di;
  size_t len = max ? b3 % (max + 1) : 0, k;
  struct sval tmp[8];
  unsigned char full[8];
  TR(c, "blit keys %ld[%zu..] -> %ld[%zu..] len %zu", src->id, si, dst->id, di,
     len);
  for (k = 0; k < len; k++) {
    tmp[k] = src->f[si + k];
    full[k] = src->kset[si + k];
  }
  mgc_ephe_blit_keys(a, si, d, di, len);
  for (k = 0; k < len; k++) {
    /* A key copied may have been emptied in src already: then dst's data
       does not die with it. */
    if (full[k] && !definitely_alive(c, tmp[k]))
      dst->data_doubt = 1;
    model_set_key(c, dst, di + k, full[k], tmp[k]);
  }
}

static void op_finalise(struct ctx *c, int last) {
  mgc_value v;
  struct obj *o = pick(c, &v);
  if (!o)
    return;
  if (last && !FUZZ_CROSS_DOMAIN_LAST && o->id % 2 != c->dom && mgc_is_young(v))
    return;
  struct freg *r = xcalloc(1, sizeof *r);
  r->owner = c;
  r->obj = o;
  r->last = last;
  atomic_init(&r->calls, 0);
  r->next = c->regs;
  c->regs = r;
  TR(c, "finalise%s %s %ld", last ? "_last" : "", kind_names[o->kind], o->id);
  if (last)
    mgc_finalise_last(v, fin_last, r);
  else
    mgc_finalise(v, fin_first, r);
}

/* Fibers and continuations. */
static void op_fiber(struct ctx *c, int what) {
  unsigned b = rd(c);
  int k = (int)(b % NFIB);
  struct mfiber *mf = c->held[k];
  mgc_value v;
  struct sval s;
  switch (what) {
  case 0: { /* new */
    if (mf)
      return;
    size_t cap = (b & 0x30) ? (b >> 4) % 8 : 0;
    TR(c, "fiber new %d cap %zu", k, cap);
    mf = xcalloc(1, sizeof *mf);
    mf->f = mgc_fiber_new(cap);
    if (!mf->f)
      fail("mgc_fiber_new(%zu) failed: %d", cap, mgc_last_error());
    c->held[k] = mf;
    if (mgc_fiber_depth(mf->f) != 0)
      fail("fresh fiber not empty");
    break;
  }
  case 1: /* push */
    get_value(c, &v, &s);
    if (!mf || mf->depth >= FIB_MAX_DEPTH)
      return;
    TR(c, "fiber push %d <- %s %ld", k, s.o ? "obj" : "int",
       s.o ? s.o->id : s.i);
    mgc_fiber_push(mf->f, v);
    mf->v[mf->depth++] = s;
    c->dirty = 1;
    break;
  case 2: { /* pop */
    int dst = root_ix(c);
    if (!mf || mf->depth == 0)
      return;
    TR(c, "fiber pop %d -> root %d", k, dst);
    v = mgc_fiber_pop(mf->f);
    s = mf->v[--mf->depth];
    check_sval(v, s, "popped value");
    c->dirty = 1;
    if (b & 0x80)
      set_root(c, dst, v, s);
    break;
  }
  case 3: { /* slot write */
    unsigned bi = rd(c);
    get_value(c, &v, &s);
    if (!mf || mf->depth == 0)
      return;
    size_t i = bi % mf->depth;
    TR(c, "fiber slot %d[%zu] <- %s %ld", k, i, s.o ? "obj" : "int",
       s.o ? s.o->id : s.i);
    MGC_FIBER_SLOT(mf->f, i) = v;
    mf->v[i] = s;
    c->dirty = 1;
    break;
  }
  case 4: { /* slot read */
    unsigned bi = rd(c);
    int dst = root_ix(c);
    if (!mf || mf->depth == 0)
      return;
    size_t i = bi % mf->depth;
    TR(c, "fiber slot %d[%zu] -> root %d", k, i, dst);
    v = MGC_FIBER_SLOT(mf->f, i);
    check_sval(v, mf->v[i], "fiber slot read");
    set_root(c, dst, v, mf->v[i]);
    break;
  }
  case 5: /* free */
    if (!mf)
      return;
    TR(c, "fiber free %d", k);
    mgc_fiber_free(mf->f);
    free(mf);
    c->held[k] = NULL;
    c->dirty = 1;
    break;
  case 6: { /* cont_new */
    int dst = root_ix(c);
    if (!mf)
      return;
    struct obj *o = new_obj(c, K_CONT, 2);
    TR(c, "cont new from fiber %d id=%ld -> root %d", k, o->id, dst);
    v = mgc_cont_new(mf->f);
    if (MGC_TAG_VAL(v) != MGC_TAG_CONT || MGC_WOSIZE_VAL(v) != 2 ||
        MGC_FIELD(v, 1) != MGC_UNIT)
      fail("fresh continuation: header %#lx field 1 %#lx",
           (unsigned long)MGC_HD_VAL(v), (unsigned long)MGC_FIELD(v, 1));
    MGC_FIELD(v, 1) = MGC_VAL_INT(o->id);
    o->fib = mf;
    c->held[k] = NULL;
    set_root(c, dst, v, sv_obj(o));
    break;
  }
  default: { /* cont_take */
    struct obj *o = pick_kind(c, 1u << K_CONT, &v);
    if (!o)
      return;
    TR(c, "cont take %ld -> fiber %d", o->id, k);
    mgc_fiber *f = mgc_cont_take(v);
    if (!o->fib) {
      if (f)
        fail("second take of continuation %ld gave a fiber", o->id);
      return;
    }
    if (f != o->fib->f)
      fail("take of continuation %ld gave %p, expected %p", o->id, (void *)f,
           (void *)o->fib->f);
    mf = o->fib;
    o->fib = NULL;
    if (mgc_fiber_depth(f) != mf->depth)
      fail("taken fiber depth %zu, model %zu", mgc_fiber_depth(f), mf->depth);
    for (size_t i = 0; i < mf->depth; i++)
      check_sval(MGC_FIBER_SLOT(f, i), mf->v[i], "taken fiber slot");
    if (c->held[k]) {
      mgc_fiber_free(f);
      free(mf);
    } else {
      c->held[k] = mf;
    }
    c->dirty = 1;
    break;
  }
  }
}

/* ------------------------------------------------------------------------ */
/* Two domains: messages through the shared block                           */
/* ------------------------------------------------------------------------ */

static long msg_pat(long id, size_t i) { return id * 31 + (long)i * 7 + 1; }

/* A fresh immutable message block; its model object is frozen. */
static mgc_value make_msg(struct ctx *c, struct obj **out) {
  struct obj *o = new_obj(c, K_BLOCK, 0);
  size_t n = msg_size(o->id), i;
  o->n = n;
  free(o->f);
  o->f = xcalloc(n, sizeof *o->f);
  o->tag = MSG_TAG;
  o->frozen = 1;
  for (i = 1; i < n; i++)
    o->f[i] = sv_int(msg_pat(o->id, i));
  mgc_value v = mgc_alloc_small(n, MSG_TAG);
  MGC_FIELD(v, 0) = MGC_VAL_INT(o->id);
  for (i = 1; i < n; i++)
    MGC_FIELD(v, i) = MGC_VAL_INT(msg_pat(o->id, i));
  *out = o;
  return v;
}

static int msg_ok(mgc_value v, int dom) {
  if (!MGC_IS_BLOCK(v) || v == 0 || MGC_TAG_VAL(v) != MSG_TAG ||
      !MGC_IS_INT(MGC_FIELD(v, 0)))
    return 0;
  long id = MGC_INT_VAL(MGC_FIELD(v, 0));
  if (id % 2 != dom || MGC_WOSIZE_VAL(v) != msg_size(id))
    return 0;
  for (size_t i = 1; i < msg_size(id); i++)
    if (MGC_FIELD(v, i) != MGC_VAL_INT(msg_pat(id, i)))
      return 0;
  return 1;
}

static void op_publish(struct ctx *c) {
  unsigned b = rd(c);
  int dst = root_ix(c);
  if (!c->shared)
    return;
  struct obj *o;
  mgc_value v = make_msg(c, &o);
  size_t slot = (c->dom ? 0 : NSH / 2) + b % (NSH / 2);
  TR(c, "publish %ld in slot %zu, root %d", o->id, slot, dst);
  set_root(c, dst, v, sv_obj(o));
  mgc_modify(&MGC_FIELD(*c->shared, slot), *c->rp[dst]);
}

static void op_consume(struct ctx *c) {
  unsigned b = rd(c);
  int dst = root_ix(c);
  if (!c->shared)
    return;
  size_t slot = (c->dom ? NSH / 2 : 0) + b % (NSH / 2);
  mgc_value v = (mgc_value)__atomic_load_n(&MGC_FIELD(*c->shared, slot),
                                           __ATOMIC_ACQUIRE);
  if (MGC_IS_INT(v))
    return;
  if (!msg_ok(v, !c->dom))
    fail("shared slot %zu holds a broken message %#lx (header %#lx)", slot,
         (unsigned long)v, (unsigned long)MGC_HD_VAL(v));
  long id = MGC_INT_VAL(MGC_FIELD(v, 0));
  struct obj *o = NULL;
  for (size_t k = 0; k < c->nforeign; k++)
    if (c->foreign[k]->id == id)
      o = c->foreign[k];
  if (!o) {
    o = xcalloc(1, sizeof *o);
    o->id = id;
    o->kind = K_BLOCK;
    o->tag = MSG_TAG;
    o->frozen = 1;
    o->n = msg_size(id);
    o->f = xcalloc(o->n, sizeof *o->f);
    for (size_t i = 1; i < o->n; i++)
      o->f[i] = sv_int(msg_pat(id, i));
    o->next = c->all;
    c->all = o;
    grow((void **)&c->foreign, &c->capforeign, c->nforeign + 1,
         sizeof *c->foreign);
    c->foreign[c->nforeign++] = o;
  } else if (!o->resurrected) {
    /* It was in the shared block all along: never dead. */
    for (struct freg *r = c->regs; r; r = r->next)
      if (r->obj == o && atomic_load(&r->calls) != 0)
        fail("finaliser of message %ld ran while it was shared", id);
  }
  TR(c, "consume %ld from slot %zu -> root %d", id, slot, dst);
  set_root(c, dst, v, sv_obj(o));
}

/* ------------------------------------------------------------------------ */
/* The interpreter                                                          */
/* ------------------------------------------------------------------------ */

enum {
  OP_ALLOC_SMALL,
  OP_ALLOC_SMALL2,
  OP_ALLOC,
  OP_ALLOC_LARGE,
  OP_ALLOC_SHR,
  OP_ALLOC_RESERVED,
  OP_ALLOC_STRING,
  OP_ALLOC_DOUBLE,
  OP_ALLOC_DARRAY,
  OP_STORE,
  OP_STORE2,
  OP_LOAD,
  OP_DROP,
  OP_FRAME_PUSH,
  OP_FRAME_POP,
  OP_GARBAGE,
  OP_MINOR,
  OP_SLICE,
  OP_MAJOR,
  OP_FULL,
  OP_COMPACT,
  OP_VERIFY,
  OP_SET_MINOR,
  OP_POLL,
  OP_CHECK,
  OP_EPHE_CREATE,
  OP_WEAK_CREATE,
  OP_KEY_SET,
  OP_KEY_UNSET,
  OP_KEY_GET,
  OP_KEY_CHECK,
  OP_DATA_SET,
  OP_DATA_UNSET,
  OP_DATA_GET,
  OP_DATA_CHECK,
  OP_BLIT_KEYS,
  OP_BLIT_DATA,
  OP_FINALISE,
  OP_FINALISE_LAST,
  OP_RUN_FINALISERS,
  OP_FIBER_NEW,
  OP_FIBER_PUSH,
  OP_FIBER_POP,
  OP_FIBER_SET,
  OP_FIBER_GET,
  OP_FIBER_FREE,
  OP_CONT_NEW,
  OP_CONT_TAKE,
  OP_PUBLISH,
  OP_CONSUME,
  NOPS
};

static void run(struct ctx *c, int depth);

/* A frame of three local roots around a nested run. */
static void frame(struct ctx *c, int depth) {
  MGC_PARAM0;
  MGC_LOCAL3(a, b, d);
  int base = c->nroots;
  c->rp[base] = &a;
  c->rp[base + 1] = &b;
  c->rp[base + 2] = &d;
  for (int j = 0; j < NLOC; j++)
    c->mr[base + j] = sv_int(0);
  c->nroots += NLOC;
  TR(c, "frame push (depth %d)", depth);
  run(c, depth);
  TR(c, "frame pop (depth %d)", depth);
  c->nroots = base;
  c->dirty = 1;
  MGC_DROP;
}

static void run(struct ctx *c, int depth) {
  while (c->p < c->end && c->ops < MAX_OPS) {
    int op = (int)(rd(c) % NOPS);
    c->ops++;
    c->last_op = op;
    int collected = 0;
    switch (op) {
    case OP_ALLOC_SMALL:
    case OP_ALLOC_SMALL2:
      op_alloc(c, A_SMALL);
      break;
    case OP_ALLOC:
      op_alloc(c, A_ALLOC);
      break;
    case OP_ALLOC_LARGE:
      op_alloc(c, A_LARGE);
      break;
    case OP_ALLOC_SHR:
      op_alloc(c, A_SHR);
      break;
    case OP_ALLOC_RESERVED:
      op_alloc(c, A_RESERVED);
      break;
    case OP_ALLOC_STRING:
      op_alloc_string(c);
      break;
    case OP_ALLOC_DOUBLE:
      op_alloc_double(c, 0);
      break;
    case OP_ALLOC_DARRAY:
      op_alloc_double(c, 1);
      break;
    case OP_STORE:
    case OP_STORE2:
      op_store(c);
      break;
    case OP_LOAD:
      op_load(c);
      break;
    case OP_DROP:
      op_drop(c);
      break;
    case OP_FRAME_PUSH:
      if (depth < MAXDEPTH)
        frame(c, depth + 1);
      break;
    case OP_FRAME_POP:
      if (depth > 0)
        return;
      break;
    case OP_GARBAGE:
      op_garbage(c);
      break;
    case OP_MINOR:
    case OP_SLICE:
    case OP_MAJOR:
    case OP_FULL:
    case OP_COMPACT:
    case OP_VERIFY:
    case OP_SET_MINOR:
    case OP_POLL:
      op_collect(c, op - OP_MINOR);
      collected = 1;
      break;
    case OP_CHECK:
      TR(c, "check");
      compare_all(c, 0);
      break;
    case OP_EPHE_CREATE:
      op_ephe_create(c, 0);
      break;
    case OP_WEAK_CREATE:
      op_ephe_create(c, 1);
      break;
    case OP_KEY_SET:
    case OP_KEY_UNSET:
    case OP_KEY_GET:
    case OP_KEY_CHECK:
      op_key(c, op - OP_KEY_SET);
      break;
    case OP_DATA_SET:
    case OP_DATA_UNSET:
    case OP_DATA_GET:
    case OP_DATA_CHECK:
      op_data(c, op - OP_DATA_SET);
      break;
    case OP_BLIT_KEYS:
      op_blit(c, 0);
      break;
    case OP_BLIT_DATA:
      op_blit(c, 1);
      break;
    case OP_FINALISE:
      op_finalise(c, 0);
      break;
    case OP_FINALISE_LAST:
      op_finalise(c, 1);
      break;
    case OP_RUN_FINALISERS:
      TR(c, "run finalisers");
      mgc_run_finalisers();
      if (mgc_finalisers_pending())
        fail("finalisers pending after mgc_run_finalisers");
      break;
    case OP_FIBER_NEW:
    case OP_FIBER_PUSH:
    case OP_FIBER_POP:
    case OP_FIBER_SET:
    case OP_FIBER_GET:
    case OP_FIBER_FREE:
    case OP_CONT_NEW:
    case OP_CONT_TAKE:
      op_fiber(c, op - OP_FIBER_NEW);
      break;
    case OP_PUBLISH:
      op_publish(c);
      break;
    case OP_CONSUME:
      op_consume(c);
      break;
    }
    check_called(c);
    light_check(c);
    if (!collected && c->ops % 128 == 0)
      compare_all(c, 0);
  }
}

/* ------------------------------------------------------------------------ */
/* Contexts and inputs                                                      */
/* ------------------------------------------------------------------------ */

static void ctx_register(struct ctx *c) {
  for (int j = 0; j < NG + NGEN; j++) {
    c->groots[j] = MGC_VAL_INT(0);
    c->rp[j] = &c->groots[j];
    c->mr[j] = sv_int(0);
    if (j < NG)
      mgc_register_global_root(&c->groots[j]);
    else
      mgc_register_generational_global_root(&c->groots[j]);
  }
  c->nroots = NG + NGEN;
}

#if FUZZ_DOMAINS > 1
static void ctx_unregister(struct ctx *c) {
  for (int j = 0; j < NG + NGEN; j++) {
    if (j < NG)
      mgc_remove_global_root(&c->groots[j]);
    else
      mgc_remove_generational_global_root(&c->groots[j]);
  }
}
#endif

static void ctx_start(struct ctx *c, const uint8_t *p, const uint8_t *end) {
  c->p = p;
  c->end = end;
  c->ops = 0;
  c->counter = 0;
  c->dirty = 1;
  c->nroots = NG + NGEN;
  atomic_store(&c->terminated, 0);
}

/* Drops every root; frees the held fibers (keep: leave every other one
   held, for a terminating domain to free). */
static void ctx_drop_all(struct ctx *c, int keep) {
  for (int j = 0; j < NG + NGEN; j++)
    set_root(c, j, MGC_VAL_INT(0), sv_int(0));
  for (int k = 0; k < NFIB; k++) {
    if (!c->held[k])
      continue;
    if (!keep || k % 2 == 0)
      mgc_fiber_free(c->held[k]->f);
    free(c->held[k]);
    c->held[k] = NULL;
  }
  c->dirty = 1;
}

/* After the last collections: every finaliser has run exactly once. */
static void ctx_check_finalisers(struct ctx *c, int last) {
  for (struct freg *r = c->regs; r; r = r->next)
    if (r->last == last && atomic_load(&r->calls) != 1)
      fail("domain %d: %s-kind finaliser of %s %ld ran %d times at the end",
           c->dom, last ? "last" : "first", kind_names[r->obj->kind],
           r->obj->id, atomic_load(&r->calls));
}

static void ctx_free(struct ctx *c) {
  while (c->all) {
    struct obj *o = c->all;
    c->all = o->next;
    if (o->kind == K_CONT && o->fib)
      free(o->fib);
    free(o->f);
    free(o->kset);
    free(o);
  }
  while (c->regs) {
    struct freg *r = c->regs;
    c->regs = r->next;
    free(r);
  }
  c->nforeign = 0;
  c->ncalled = 0;
}

/* The end of an input on domain 0: everything is garbage. */
static long total_calls(struct ctx *c) {
  long n = 0;
  for (struct freg *r = c->regs; r; r = r->next)
    n += atomic_load(&r->calls);
  return n;
}

static void finish_input(void) {
  cur = &ctx0;
  /* Everything is garbage: one checked mgc_full_major (with
     FUZZ_STRICT_FULL_MAJOR, every finaliser of this domain has run after
     it).  Then collect until no more finalisers run (the values pending
     finalisers kept; adopted finalisers of the terminated domain 1, which
     run at domain 0's safepoints), and check that every finaliser has run
     exactly once. */
  collect_and_check(&ctx0, 0);
#if FUZZ_STRICT_FULL_MAJOR
  ctx_check_finalisers(&ctx0, 0);
  ctx_check_finalisers(&ctx0, 1);
#endif
  for (int k = 0; k < 100; k++) {
    long before = total_calls(&ctx0);
#if FUZZ_DOMAINS > 1
    before += total_calls(&ctx1);
#endif
    mgc_full_major();
    long after = total_calls(&ctx0);
#if FUZZ_DOMAINS > 1
    after += total_calls(&ctx1);
#endif
    if (after == before)
      break;
  }
  mgc_run_finalisers();
  ctx_check_finalisers(&ctx0, 0);
  ctx_check_finalisers(&ctx0, 1);
#if FUZZ_DOMAINS > 1
  ctx_check_finalisers(&ctx1, 0);
  ctx_check_finalisers(&ctx1, 1);
#endif
  if (mgc_verify_heap() != 0)
    fail("mgc_verify_heap failed at the end of the input");
  ctx0.ncalled = 0;
  ctx_free(&ctx0);
#if FUZZ_DOMAINS > 1
  ctx_free(&ctx1);
#endif
}

#if FUZZ_DOMAINS > 1
static mgc_value shared0 = MGC_UNIT;
static const uint8_t *d1_begin, *d1_end;

static mgc_value domain1_body(mgc_value arg) {
  struct ctx *c = &ctx1;
  cur = c;
  MGC_PARAM1(arg);
  c->dom = 1;
  ctx_register(c);
  ctx_start(c, d1_begin, d1_end);
  c->shared = &arg;
  if (!MGC_IS_BLOCK(arg) || MGC_WOSIZE_VAL(arg) != NSH)
    fail("domain 1 got a bad shared block");
  run(c, 0);
  int keep = c->p < c->end ? (int)(rd(c) & 1) : 1;
  ctx_drop_all(c, keep);
  if (c->minor_changed) {
    mgc_set_minor_heap_size(MINOR_WORDS);
    c->minor_changed = 0;
  }
  ctx_unregister(c);
  c->shared = NULL;
  struct obj *o;
  MGC_LOCAL1(res);
  res = make_msg(c, &o);
  if (keep)
    mgc_minor_collection();
  atomic_store(&c->terminated, 1);
  MGC_RETURN(res);
}
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mgc_params p;
  const char *t = getenv("FUZZ_TRACE");
  trace_on = t && t[0] && t[0] != '0';
  mgc_params_default(&p);
  if (mgc_params_parse(&p, "s=4k,o=80") != 0)
    abort();
  if (mgc_init(&p) != MGC_OK)
    abort();
  mgc_set_fatal_handler(fatal_handler);
  ctx0.dom = 0;
  cur = &ctx0;
  ctx_register(&ctx0);
#if FUZZ_DOMAINS > 1
  mgc_register_global_root(&shared0);
#endif
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ctx *c = &ctx0;
  cur = c;
#if FUZZ_DOMAINS > 1
  if (size < 2)
    return 0;
  size_t mid = 1 + (size - 1) / 2;
  ctx_start(c, data + 1, data + mid);
  d1_begin = data + mid;
  d1_end = data + size;
  shared0 = mgc_alloc(NSH, 0);
  c->shared = &shared0;
  if (data[0] & 1)
    mgc_minor_collection(); /* else the shared block starts young */
  mgc_domain *d = mgc_domain_spawn(domain1_body, shared0);
  if (!d)
    fail("mgc_domain_spawn: %s", mgc_strerror(mgc_last_error()));
  run(c, 0);
  ctx_drop_all(c, 0);
  if (c->minor_changed) {
    mgc_set_minor_heap_size(MINOR_WORDS);
    c->minor_changed = 0;
  }
  mgc_value res = mgc_domain_join(d);
  if (!msg_ok(res, 1))
    fail("domain 1's result is not a message");
  c->shared = NULL;
  shared0 = MGC_UNIT;
#else
  ctx_start(c, data, data + size);
  run(c, 0);
  ctx_drop_all(c, 0);
  if (c->minor_changed) {
    mgc_set_minor_heap_size(MINOR_WORDS);
    c->minor_changed = 0;
  }
#endif
  check_called(c);
  finish_input();
  return 0;
}
