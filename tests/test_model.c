/* test_model: model-based random test of the whole single-domain collector.
 *
 * A shadow copy of the object graph lives in malloc'd structs.  A pool of
 * root slots (half classic global roots, half generational global roots)
 * holds integers or objects.  Random operations allocate blocks (small,
 * reserved-bit, mgc_alloc_shr, large), strings and doubles, store integers
 * or references with mgc_modify (old-to-young stores are frequent because
 * objects near the roots get promoted), copy and drop roots, and run minor
 * collections, major slices and full majors.  Each step checks what it
 * touched; after every collection the whole graph reachable from the roots
 * is compared with the model: same shape, tags, sizes, reserved bits,
 * integers, bytes, and identity (two paths to one model object reach one
 * mgc block, and every block carries its model id so two model objects
 * never share one block).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "check.h"

#define NROOTS 64
#define GRAPH_LIMIT 6000 /* drop roots when more objects are reachable */

enum kind { KIND_BLOCK, KIND_STRING, KIND_DOUBLE };

struct obj;
struct sval {
  struct obj *o; /* NULL: the integer i */
  long i;
};

struct obj {
  uint64_t id;
  unsigned char kind;
  unsigned char tag;
  unsigned char res;
  size_t n;         /* blocks: wosize (field 0 is the id); strings: length */
  struct sval *f;   /* blocks: n entries, f[0] unused */
  unsigned char *s; /* strings: n bytes */
  mgc_value addr;   /* the mgc block, valid while stamp == epoch */
  unsigned long stamp;
};

static struct sval model_roots[NROOTS];
static mgc_value roots[NROOTS]; /* [0, NROOTS/2) classic, rest generational */

static struct obj **all_objs;
static size_t nobjs, cap_objs;
static uint64_t next_id = 1;
static unsigned long epoch = 1;
static int natural_minor;
static long failures;
static long step_no;

static void on_minor_end(void) { natural_minor = 1; }

static void fail(const char *what, uint64_t id) {
  failures++;
  if (failures <= 10)
    printf("model mismatch at step %ld: %s (object %llu)\n", step_no, what,
           (unsigned long long)id);
}

static struct obj *new_obj(unsigned char kind, size_t n) {
  struct obj *o = calloc(1, sizeof *o);
  if (o == NULL)
    abort();
  o->id = next_id++;
  o->kind = kind;
  o->n = n;
  if (kind == KIND_BLOCK)
    o->f = calloc(n, sizeof *o->f);
  else if (kind == KIND_STRING)
    o->s = malloc(n + 1);
  if (nobjs == cap_objs) {
    cap_objs = cap_objs ? cap_objs * 2 : 1024;
    all_objs = realloc(all_objs, cap_objs * sizeof *all_objs);
    if (all_objs == NULL)
      abort();
  }
  all_objs[nobjs++] = o;
  return o;
}

static void free_obj(struct obj *o) {
  free(o->f);
  free(o->s);
  free(o);
}

static void set_root(int j, mgc_value v) {
  if (j < NROOTS / 2)
    roots[j] = v;
  else
    mgc_modify_generational_global_root(&roots[j], v);
}

static long rand_int(void) {
  return (long)(test_rand() >> 3) - ((long)1 << 60);
}

static mgc_value sval_value(struct sval s, mgc_value v) {
  return s.o == NULL ? MGC_VAL_INT(s.i) : v;
}

/* Quick identity check of one block against its model object. */
static int same_obj(mgc_value v, const struct obj *o) {
  if (!MGC_IS_BLOCK(v))
    return 0;
  switch (o->kind) {
  case KIND_BLOCK:
    return MGC_TAG_VAL(v) == o->tag && MGC_WOSIZE_VAL(v) == o->n &&
           MGC_FIELD(v, 0) == MGC_VAL_INT((long)o->id);
  case KIND_STRING:
    return MGC_TAG_VAL(v) == MGC_TAG_STRING && mgc_string_length(v) == o->n &&
           memcmp(MGC_STRING_VAL(v), o->s, 8) == 0;
  default:
    return MGC_TAG_VAL(v) == MGC_TAG_DOUBLE &&
           MGC_DOUBLE_VAL(v) == (double)o->id;
  }
}

/* A random object reachable from the roots: a root, then up to 3 random
   reference fields.  Returns 0 when the chosen root holds an integer. */
static int pick(mgc_value *v, struct obj **o) {
  int j = (int)test_rand_below(NROOTS), d, depth;
  struct obj *cur = model_roots[j].o;
  mgc_value cv = roots[j];
  if (cur == NULL)
    return 0;
  if (!same_obj(cv, cur)) {
    fail("root does not match its model object", cur->id);
    return 0;
  }
  depth = (int)test_rand_below(4);
  for (d = 0; d < depth && cur->kind == KIND_BLOCK; d++) {
    size_t i = 1 + (size_t)test_rand_below(cur->n - 1);
    if (cur->f[i].o == NULL)
      break;
    cv = MGC_FIELD(cv, i);
    cur = cur->f[i].o;
    if (!same_obj(cv, cur)) {
      fail("field does not match its model object", cur->id);
      return 0;
    }
  }
  *v = cv;
  *o = cur;
  return 1;
}

/* Choose the content of a field: an integer or a reference.  Model only;
   the mgc value is fetched by field_value after any allocation. */
struct choice {
  struct sval s;
  int root; /* the root whose value s.o is, or -1 */
};

static struct choice choose(void) {
  struct choice c;
  int j = (int)test_rand_below(NROOTS);
  if (test_rand_below(3) != 0 || model_roots[j].o == NULL) {
    c.s.o = NULL;
    c.s.i = rand_int();
    c.root = -1;
  } else {
    c.s = model_roots[j];
    c.root = j;
  }
  return c;
}

static mgc_value field_value(struct choice c) {
  return c.root < 0 ? MGC_VAL_INT(c.s.i) : roots[c.root];
}

static const unsigned char tags[] = {
    0, 1, 2, 3, 5, 77, 200, 243, MGC_TAG_OBJECT};

#define MAXF 300

static void op_alloc_block(void) {
  struct choice ch[MAXF];
  unsigned way = (unsigned)test_rand_below(100);
  size_t n, i;
  struct obj *o;
  mgc_value v;
  int dst = (int)test_rand_below(NROOTS);

  if (way < 1)
    n = 257 + (size_t)test_rand_below(MAXF - 257);
  else
    n = 2 + (size_t)test_rand_below(8);
  for (i = 1; i < n; i++)
    ch[i] = choose();
  o = new_obj(KIND_BLOCK, n);
  o->tag = tags[test_rand_below(sizeof tags)];
  for (i = 1; i < n; i++)
    o->f[i] = ch[i].s;
  if (way < 1) {
    v = mgc_alloc(n, o->tag);
    if (mgc_is_young(v))
      fail("large block is young", o->id);
    mgc_modify(&MGC_FIELD(v, 0), MGC_VAL_INT((long)o->id));
    for (i = 1; i < n; i++)
      mgc_modify(&MGC_FIELD(v, i), field_value(ch[i]));
  } else if (way < 6) {
    v = mgc_alloc_shr(n, o->tag);
    mgc_initialize(&MGC_FIELD(v, 0), MGC_VAL_INT((long)o->id));
    for (i = 1; i < n; i++)
      mgc_initialize(&MGC_FIELD(v, i), field_value(ch[i]));
  } else if (way < 16) {
    o->res = (unsigned char)(o->id * 37);
    v = mgc_alloc_reserved(n, o->tag, o->res);
    MGC_FIELD(v, 0) = MGC_VAL_INT((long)o->id);
    for (i = 1; i < n; i++)
      MGC_FIELD(v, i) = field_value(ch[i]);
  } else {
    v = mgc_alloc_small(n, o->tag);
    MGC_FIELD(v, 0) = MGC_VAL_INT((long)o->id);
    for (i = 1; i < n; i++)
      MGC_FIELD(v, i) = field_value(ch[i]);
    if (!mgc_is_young(v))
      fail("fresh small block not young", o->id);
  }
  set_root(dst, v);
  model_roots[dst].o = o;
  if (!same_obj(roots[dst], o) ||
      MGC_RESERVED_HD(MGC_HD_VAL(roots[dst])) != o->res)
    fail("fresh block reads back wrong", o->id);
}

static void op_alloc_string(void) {
  size_t n = 8 + (size_t)test_rand_below(41), i;
  struct obj *o = new_obj(KIND_STRING, n);
  int dst = (int)test_rand_below(NROOTS);
  mgc_value v;
  for (i = 0; i < 8; i++)
    o->s[i] = (unsigned char)(o->id >> (8 * i));
  for (i = 8; i < n; i++)
    o->s[i] = (unsigned char)test_rand();
  v = mgc_alloc_string(n);
  memcpy(MGC_STRING_VAL(v), o->s, n);
  set_root(dst, v);
  model_roots[dst].o = o;
}

static void op_alloc_double(void) {
  struct obj *o = new_obj(KIND_DOUBLE, 1);
  int dst = (int)test_rand_below(NROOTS);
  set_root(dst, mgc_copy_double((double)o->id));
  model_roots[dst].o = o;
}

static void op_store(void) {
  mgc_value v, w = MGC_UNIT;
  struct obj *o, *t = NULL;
  size_t i;
  int ref = test_rand_below(2) == 0;
  long x = rand_int();
  if (!pick(&v, &o) || o->kind != KIND_BLOCK)
    return;
  if (ref && !pick(&w, &t))
    ref = 0;
  if (failures)
    return;
  i = 1 + (size_t)test_rand_below(o->n - 1);
  if (ref) {
    mgc_modify(&MGC_FIELD(v, i), w);
    o->f[i].o = t;
  } else {
    mgc_modify(&MGC_FIELD(v, i), MGC_VAL_INT(x));
    o->f[i].o = NULL;
    o->f[i].i = x;
  }
  if (MGC_FIELD(v, i) != sval_value(o->f[i], w))
    fail("stored field reads back wrong", o->id);
}

static void op_root_copy(void) {
  int a = (int)test_rand_below(NROOTS), b = (int)test_rand_below(NROOTS);
  set_root(a, roots[b]);
  model_roots[a] = model_roots[b];
}

static void op_root_drop(void) {
  int a = (int)test_rand_below(NROOTS);
  long x = rand_int();
  set_root(a, MGC_VAL_INT(x));
  model_roots[a].o = NULL;
  model_roots[a].i = x;
}

/* Full comparison; marks reachable model objects with the new epoch. */
struct pair {
  mgc_value v;
  struct obj *o;
};
static struct pair *stack;
static size_t stack_cap;

static void push(mgc_value v, struct obj *o, size_t *sp) {
  if (*sp == stack_cap) {
    stack_cap = stack_cap ? stack_cap * 2 : 4096;
    stack = realloc(stack, stack_cap * sizeof *stack);
    if (stack == NULL)
      abort();
  }
  stack[*sp].v = v;
  stack[*sp].o = o;
  (*sp)++;
}

static size_t compare_all(int none_young) {
  size_t sp = 0, count = 0, i;
  int j;
  epoch++;
  for (j = 0; j < NROOTS; j++) {
    if (model_roots[j].o == NULL) {
      if (roots[j] != MGC_VAL_INT(model_roots[j].i))
        fail("root integer differs", 0);
    } else {
      push(roots[j], model_roots[j].o, &sp);
    }
  }
  while (sp > 0) {
    mgc_value v;
    struct obj *o;
    sp--;
    v = stack[sp].v;
    o = stack[sp].o;
    if (o->stamp == epoch) {
      if (v != o->addr)
        fail("shared object reached at two addresses", o->id);
      continue;
    }
    o->stamp = epoch;
    o->addr = v;
    count++;
    if (!same_obj(v, o)) {
      fail("block differs from its model object", o->id);
      continue;
    }
    if (none_young && mgc_is_young(v))
      fail("reachable block still young after a minor GC", o->id);
    if (o->kind == KIND_STRING) {
      if (memcmp(MGC_STRING_VAL(v), o->s, o->n) != 0 ||
          MGC_STRING_VAL(v)[o->n] != '\0')
        fail("string bytes differ", o->id);
    } else if (o->kind == KIND_BLOCK) {
      if (MGC_RESERVED_HD(MGC_HD_VAL(v)) != o->res)
        fail("reserved bits differ", o->id);
      for (i = 1; i < o->n; i++) {
        mgc_value f = MGC_FIELD(v, i);
        if (o->f[i].o == NULL) {
          if (f != MGC_VAL_INT(o->f[i].i))
            fail("integer field differs", o->id);
        } else {
          push(f, o->f[i].o, &sp);
        }
      }
    }
  }
  return count;
}

/* Frees model objects not reached by the last compare_all. */
static void sweep_model(void) {
  size_t i, k = 0;
  for (i = 0; i < nobjs; i++) {
    if (all_objs[i]->stamp == epoch)
      all_objs[k++] = all_objs[i];
    else
      free_obj(all_objs[i]);
  }
  nobjs = k;
}

static void full_check(int none_young) {
  size_t reach = compare_all(none_young);
  sweep_model();
  if (reach > GRAPH_LIMIT) {
    int j;
    for (j = 0; j < NROOTS; j += 2) {
      set_root(j, MGC_VAL_INT(j));
      model_roots[j].o = NULL;
      model_roots[j].i = j;
    }
  }
}

int main(int argc, char **argv) {
  long steps, s, minors = 0, fulls = 0, compares = 0;
  int rc, j;
  uint64_t seed = test_seed(argc, argv, 20240601);

  rc = mgc_init(NULL);
  if (!CHECK(rc == 0, "mgc_init -> %d", rc))
    return check_done();
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_set_minor_gc_end_hook(on_minor_end);
  for (j = 0; j < NROOTS; j++) {
    roots[j] = MGC_VAL_INT(j);
    model_roots[j].o = NULL;
    model_roots[j].i = j;
    if (j < NROOTS / 2)
      mgc_register_global_root(&roots[j]);
    else
      mgc_register_generational_global_root(&roots[j]);
  }
  steps = test_scale(1000000);
  for (s = 0; s < steps && failures == 0; s++) {
    unsigned op = (unsigned)test_rand_below(10000);
    step_no = s;
    natural_minor = 0;
    if (op < 3000) {
      op_alloc_block();
    } else if (op < 3600) {
      op_alloc_string();
    } else if (op < 4000) {
      op_alloc_double();
    } else if (op < 8500) {
      op_store();
    } else if (op < 9200) {
      op_root_copy();
    } else if (op < 9970) {
      op_root_drop();
    } else if (op < 9985) {
      mgc_minor_collection();
      natural_minor = 0;
      minors++;
      full_check(1);
      compares++;
      if (minors % 64 == 0 && mgc_verify_heap() != 0)
        fail("mgc_verify_heap after minor", 0);
    } else if (op < 9999) {
      mgc_major_slice(test_rand_below(2) ? 0 : (intptr_t)test_rand_below(5000));
      full_check(0);
      compares++;
    } else {
      int full = test_rand_below(2) == 0;
      if (full)
        mgc_full_major();
      else
        mgc_major_collection();
      fulls++;
      full_check(full);
      compares++;
      if (mgc_verify_heap() != 0)
        fail("mgc_verify_heap after major", 0);
    }
    if (natural_minor) {
      full_check(0);
      compares++;
    } else if ((s & 15) == 0) {
      for (j = 0; j < NROOTS; j++)
        if (model_roots[j].o != NULL && !same_obj(roots[j], model_roots[j].o))
          fail("root differs (periodic check)", model_roots[j].o->id);
    }
  }
  mgc_minor_collection();
  full_check(1);
  mgc_full_major();
  full_check(1);
  CHECK(failures == 0,
        "model agrees with the heap: %ld mismatches in %ld "
        "steps (seed %llu)",
        failures, s, (unsigned long long)seed);
  CHECK_VERIFY("end of model run");
  printf("steps %ld, explicit minors %ld, majors %ld, full compares %ld, "
         "model objects %zu\n",
         s, minors, fulls, compares, nobjs);

  for (j = 0; j < NROOTS; j++) {
    if (j < NROOTS / 2)
      mgc_remove_global_root(&roots[j]);
    else
      mgc_remove_generational_global_root(&roots[j]);
  }
  mgc_shutdown();
  {
    size_t i;
    for (i = 0; i < nobjs; i++)
      free_obj(all_objs[i]);
    free(all_objs);
    free(stack);
  }
  return check_done();
}
