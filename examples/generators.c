/* generators.c: generators built on fibers and continuations.
 *
 * A generator yields the values of a binary tree in order.  Its state is a
 * fiber used as the traversal stack: the nodes whose value is still to
 * come, the next one on top.  Between two calls the fiber sleeps inside a
 * continuation, an ordinary heap block: the generator is a value that can
 * be stored, passed around or dropped (the collector frees the fiber of a
 * continuation found dead).  A continuation is one-shot: each step takes
 * the fiber out of it and suspends it into a new one.
 *
 * The program walks two differently shaped trees side by side (the "same
 * fringe" problem), sums a tree's values, and allocates garbage between
 * steps with a small minor heap, so that collections move the nodes and
 * continuations while the generators are suspended.  Exits 0 when every
 * answer is right.
 */
#include <mgc.h>
#include <stdio.h>

enum { N = 1000 };

/* A node is {left, value, right}; a leaf is 0. */
static mgc_value node(mgc_value left, long value, mgc_value right) {
  MGC_PARAM2(left, right); /* held across the allocation */
  mgc_value n = mgc_alloc_small(3, 0);
  MGC_FIELD(n, 0) = left;
  MGC_FIELD(n, 1) = MGC_VAL_INT(value);
  MGC_FIELD(n, 2) = right;
  MGC_RETURN(n);
}

/* A balanced tree of the values lo .. hi. */
static mgc_value balanced(long lo, long hi) {
  if (lo > hi)
    return MGC_VAL_INT(0);
  long mid = lo + (hi - lo) / 2;
  MGC_PARAM0;
  MGC_LOCAL2(left, right);
  left = balanced(lo, mid - 1);
  right = balanced(mid + 1, hi);
  MGC_RETURN(node(left, mid, right));
}

/* A tree of 1 .. n that is all left spine: ((0 1 0) 2 0) 3 0 ... */
static mgc_value comb(long n) {
  MGC_PARAM0;
  MGC_LOCAL1(t);
  t = MGC_VAL_INT(0);
  for (long v = 1; v <= n; v++)
    t = node(t, v, MGC_VAL_INT(0));
  MGC_RETURN(t);
}

/* Pushes n and its left children, down to the leftmost node. */
static void push_left_spine(mgc_fiber *f, mgc_value n) {
  for (; MGC_IS_BLOCK(n); n = MGC_FIELD(n, 0))
    mgc_fiber_push(f, n);
}

/* A generator over tree: a continuation holding its traversal stack.
   Creating, pushing and popping a fiber allocate no heap block: tree needs
   no root until it is on the fiber, which is a root while held. */
static mgc_value generator(mgc_value tree) {
  mgc_fiber *f = mgc_fiber_new(0);
  push_left_spine(f, tree);
  return mgc_cont_new(f); /* allocates: the fiber keeps the nodes alive */
}

/* One step of generator k: the next node's value in *value, and the
   generator to call for the one after.  MGC_UNIT when the tree is done
   (the fiber is then freed). */
static mgc_value next(mgc_value k, long *value) {
  mgc_fiber *f = mgc_cont_take(k); /* k is spent: a second take gets NULL */
  if (mgc_fiber_depth(f) == 0) {
    mgc_fiber_free(f);
    return MGC_UNIT;
  }
  mgc_value n = mgc_fiber_pop(f);
  *value = MGC_INT_VAL(MGC_FIELD(n, 1));
  push_left_spine(f, MGC_FIELD(n, 2));
  return mgc_cont_new(f); /* allocates: n is not used past this point */
}

/* Some garbage, so that collections happen between the steps. */
static void churn(void) {
  for (int i = 0; i < 20; i++)
    (void)mgc_alloc_small(10, 0);
}

/* 0 when a and b have the same fringe; else the 1-based position of the
   first difference. */
static long same_fringe(mgc_value a, mgc_value b) {
  MGC_PARAM2(a, b); /* b is used after an allocation */
  MGC_LOCAL2(ga, gb);
  ga = generator(a);
  gb = generator(b);
  for (long pos = 1;; pos++) {
    long va = 0, vb = 0;
    ga = next(ga, &va);
    gb = next(gb, &vb);
    churn();
    if (ga == MGC_UNIT || gb == MGC_UNIT || va != vb) {
      /* A generator left unfinished is garbage: its fiber goes with it. */
      MGC_RETURN(ga == gb ? 0 : pos);
    }
  }
}

static long sum(mgc_value tree) {
  long s = 0, v;
  MGC_PARAM0;
  MGC_LOCAL1(g);
  for (g = generator(tree); (g = next(g, &v)) != MGC_UNIT; churn())
    s += v;
  MGC_DROP;
  return s;
}

int main(void) {
  mgc_params p;
  mgc_stats st;
  mgc_params_default(&p);
  p.minor_heap_words = 4096; /* small: many collections */
  if (mgc_init(&p) != MGC_OK)
    return 1;
  MGC_PARAM0;
  MGC_LOCAL3(a, b, c);
  a = balanced(1, N);
  b = comb(N);
  c = balanced(1, N + 1);
  long ab = same_fringe(a, b), ac = same_fringe(a, c);
  mgc_full_major(); /* the unfinished generator's fiber is freed by now */
  long s = sum(b);
  MGC_DROP;
  mgc_get_stats(&st);
  printf("balanced 1..%d vs comb 1..%d: %s\n", N, N,
         ab == 0 ? "same fringe" : "differ");
  printf("balanced 1..%d vs balanced 1..%d: differ at %ld\n", N, N + 1, ac);
  printf("sum of 1..%d: %ld\n", N, s);
  printf("%llu minor collections\n", (unsigned long long)st.minor_collections);
  int ok = ab == 0 && ac == N + 1 && s == (long)N * (N + 1) / 2 &&
           st.minor_collections > 0;
  mgc_shutdown();
  return ok ? 0 : 1;
}
