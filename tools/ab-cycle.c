/* ab-cycle: two builds of mgc side by side in one process, timing full
 * major cycles in turn, for changes to marking and sweeping whose effect
 * the noise of separate runs hides (on a shared VM the same binary's best
 * of 10 cycles moved by up to 2x from one run to the next).
 *
 * The ratio depends on more than the code: with a redundant pass of
 * mgc_initialize over the queue before it is filled, the same two builds
 * gave 0.86-0.96 where this heap gives 0.66-0.72, run after run (the
 * commit that added this tool says more).  Compare builds on one heap, and
 * check the effect on the programs of bench/.
 *
 * Built twice with -DAB_SIDE=a and -DAB_SIDE=b, each time into a shared
 * object linked with its own libmgc.a and -Wl,--exclude-libs,ALL, so that
 * each side has its own copy of the library and its own heap; built once
 * more without AB_SIDE as the program that loads both.  Each side builds
 * the same heap: "lists", survive's queue of 100000 lists of 10 cells after
 * a million replacements, "tree D", a promoted binary tree of depth D, or
 * "scatter", an old array of a million slots filled by 3 million stores of
 * fresh blocks at random slots, each linked to the block of another random
 * slot (remset's pattern, with fragment's links).
 * Then each pair runs one cycle (mgc_major_collection after the cycle under
 * way was finished) on each side, the order alternating, and the program
 * prints each side's median and the median of the b/a ratios of the pairs,
 * with its quartiles.
 *
 * tools/ab-cycle.sh builds and runs it against a git revision. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef AB_SIDE
#include "mgc.h"

#define AB_CAT2(a, b) a##b
#define AB_CAT(a, b) AB_CAT2(a, b)

enum { QUEUE = 100000, CELLS = 10, ROUNDS = 1000000 };
enum { SLOTS = 1000000, SCATTER = 3000000 };

/* The benchmarks' generator: x = (x * 0x5DEECE66D + 0xB) mod 2^48, a draw
   x >> 16; here taken modulo n. */
static long draw(uint64_t *x, long n) {
  *x = (*x * 0x5DEECE66Dull + 0xB) & ((1ull << 48) - 1);
  return (long)((*x >> 16) % (uint64_t)n);
}

static mgc_value root = MGC_UNIT;

static mgc_value make_list(long g) {
  MGC_PARAM0;
  MGC_LOCAL1(head);
  for (int k = 0; k < CELLS; k++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(10 * g + k);
    MGC_FIELD(c, 1) = head;
    head = c;
  }
  MGC_RETURN(head);
}

/* Right subtree, left subtree, node: the order of bench/binarytrees.c. */
static mgc_value make_tree(int depth) {
  mgc_value node;
  if (depth == 0) {
    node = mgc_alloc_small(2, 0);
    MGC_FIELD(node, 0) = MGC_VAL_INT(0);
    MGC_FIELD(node, 1) = MGC_VAL_INT(0);
    return node;
  }
  MGC_PARAM0;
  MGC_LOCAL2(left, right);
  right = make_tree(depth - 1);
  left = make_tree(depth - 1);
  node = mgc_alloc_small(2, 0);
  MGC_FIELD(node, 0) = left;
  MGC_FIELD(node, 1) = right;
  MGC_RETURN(node);
}

__attribute__((visibility("default"))) void AB_CAT(AB_SIDE,
                                                   _build)(int tree_depth) {
  if (mgc_init(NULL) != 0) {
    fprintf(stderr, "ab-cycle: mgc_init failed\n");
    exit(1);
  }
  mgc_register_global_root(&root);
  if (tree_depth > 0) {
    root = make_tree(tree_depth);
  } else if (tree_depth < 0) {
    /* scatter: remset's pattern, and fragment's links.  Each of SCATTER
       rounds stores a fresh block {r, link, 0} into a random slot of an old
       array, its link the block of another random slot: both the array's
       fields and the links point all over the heap. */
    MGC_PARAM0;
    MGC_LOCAL1(cell);
    uint64_t x = 20240601;
    root = mgc_alloc_shr(SLOTS, 0);
    for (long r = 0; r < SCATTER; r++) {
      long i = draw(&x, SLOTS);
      long j = draw(&x, SLOTS);
      cell = mgc_alloc_small(3, 0);
      MGC_FIELD(cell, 0) = MGC_VAL_INT(r);
      MGC_FIELD(cell, 1) = MGC_FIELD(root, j);
      MGC_FIELD(cell, 2) = MGC_VAL_INT(0);
      mgc_modify(&MGC_FIELD(root, i), cell);
    }
    MGC_DROP;
  } else {
    MGC_PARAM0;
    MGC_LOCAL1(list);
    root = mgc_alloc_shr(QUEUE, 0); /* fields MGC_UNIT, as in survive.c */
    for (long r = 0; r < QUEUE + ROUNDS; r++) {
      list = make_list(r);
      mgc_modify(&MGC_FIELD(root, r % QUEUE), list);
    }
    MGC_DROP;
  }
  mgc_minor_collection();
  mgc_major_collection();
}

__attribute__((visibility("default"))) void AB_CAT(AB_SIDE, _cycle)(void) {
  mgc_major_collection();
}

#else /* the program */

void a_build(int tree_depth);
void a_cycle(void);
void b_build(int tree_depth);
void b_cycle(void);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double timed(void (*cycle)(void)) {
  double t0 = now();
  cycle();
  return now() - t0;
}

int main(int argc, char **argv) {
  int pairs = argc > 1 ? atoi(argv[1]) : 40;
  int depth = 0; /* lists; tree DEPTH: DEPTH >= 1; scatter: -1 */
  bool bad = pairs < 4;
  if (argc > 2 && strcmp(argv[2], "tree") == 0) {
    depth = argc > 3 ? atoi(argv[3]) : 0;
    bad = bad || depth < 1;
  } else if (argc > 2 && strcmp(argv[2], "scatter") == 0) {
    depth = -1;
  } else if (argc > 2 && strcmp(argv[2], "lists") != 0) {
    bad = true;
  }
  if (bad) {
    fprintf(stderr,
            "usage: ab-cycle [PAIRS >= 4] [lists | tree DEPTH | scatter]\n");
    return 2;
  }
  a_build(depth);
  b_build(depth);
  double *ta = malloc((size_t)pairs * sizeof(double));
  double *tb = malloc((size_t)pairs * sizeof(double));
  double *ratio = malloc((size_t)pairs * sizeof(double));
  if (!ta || !tb || !ratio)
    return 1;
  for (int i = 0; i < pairs; i++) {
    if (i % 2) {
      tb[i] = timed(b_cycle);
      ta[i] = timed(a_cycle);
    } else {
      ta[i] = timed(a_cycle);
      tb[i] = timed(b_cycle);
    }
    ratio[i] = tb[i] / ta[i];
  }
  qsort(ta, (size_t)pairs, sizeof(double), by_value);
  qsort(tb, (size_t)pairs, sizeof(double), by_value);
  qsort(ratio, (size_t)pairs, sizeof(double), by_value);
  const char *heap = depth > 0 ? "tree" : depth < 0 ? "scatter" : "lists";
  printf("%s: a %.2f ms, b %.2f ms (medians of %d cycles); b/a %.3f "
         "(quartiles %.3f-%.3f)\n",
         heap, ta[pairs / 2] * 1e3, tb[pairs / 2] * 1e3, pairs,
         ratio[pairs / 2], ratio[pairs / 4], ratio[3 * pairs / 4]);
  return 0;
}
#endif
