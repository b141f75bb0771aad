/* domains.c: domains and blocking sections, for embedders.
 *
 * Domain 0 (the thread that called mgc_init) spawns three domains.  Two
 * workers build binary trees and return a summary block; the third, the
 * reader, holds young values, then blocks in read() on a pipe inside a
 * blocking section while domain 0 runs collections.  Each join returns the
 * domain's result.  Exits 0 when every result is right.
 *
 * Rules for a domain's body:
 *   - it is a domain like domain 0: root what it holds across an
 *     allocation, with MGC_PARAM/MGC_LOCAL or a global root;
 *   - its argument is kept alive only until the body starts: root it first
 *     (MGC_PARAM1(arg));
 *   - its result is kept alive until mgc_domain_join returns it; the joiner
 *     roots it at once;
 *   - a domain that waits for a long time without allocating must either
 *     call mgc_poll() in its loop or wait inside a blocking section, or the
 *     other domains' collections wait for it.
 *
 * Rules for a blocking section (between mgc_enter_blocking_section and
 * mgc_leave_blocking_section), where collections go on without the domain:
 *   - no heap access: no MGC_FIELD, MGC_STRING_VAL or other read or write
 *     of a block, since a collection may move or free it meanwhile;
 *   - no mgc_ call at all (allocation, write barrier, roots, collections);
 *   - no change to the domain's roots (no MGC_PARAM/MGC_LOCAL/MGC_RETURN,
 *     no store into a rooted variable);
 *   - values needed afterwards are rooted before entering, and read back
 *     from their roots after leaving: they may have moved (a domain's young
 *     values are promoted by its backup thread while it is blocked).  A
 *     char * from MGC_STRING_VAL does not survive the section; copy the
 *     bytes into C memory first, or work on C buffers, as read() does here.
 * C data (locals, malloc'ed buffers, atomics) may be used freely inside.
 */
#define _POSIX_C_SOURCE 200809L

#include <mgc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIST_LEN 1000
#define ROUNDS 20

static int pipe_fds[2];
static atomic_int reader_blocked; /* C data: fine inside a section */

/* ------------------------------------------------------------------------ */
/* Workers                                                                  */
/* ------------------------------------------------------------------------ */

/* A complete binary tree: a node is [left, right], a leaf MGC_UNIT. */
static mgc_value make_tree(long depth) {
  MGC_PARAM0;
  MGC_LOCAL2(left, right);
  if (depth == 0)
    MGC_RETURN(MGC_UNIT);
  left = make_tree(depth - 1);
  right = make_tree(depth - 1);
  mgc_value node = mgc_alloc_small(2, 0);
  MGC_FIELD(node, 0) = left;
  MGC_FIELD(node, 1) = right;
  MGC_RETURN(node);
}

/* Does not allocate, so needs no roots. */
static long tree_nodes(mgc_value t) {
  if (t == MGC_UNIT)
    return 0;
  return 1 + tree_nodes(MGC_FIELD(t, 0)) + tree_nodes(MGC_FIELD(t, 1));
}

/* arg = the tree depth.  Builds ROUNDS trees, keeping only the last one, so
   that its own minor heap fills and collections happen while the reader is
   blocked.  Returns [total nodes built, last tree]. */
static mgc_value worker(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(tree, result);
  long total = 0;
  for (int i = 0; i < ROUNDS; i++) {
    tree = make_tree(MGC_INT_VAL(arg));
    total += tree_nodes(tree);
  }
  result = mgc_alloc_small(2, 0);
  MGC_FIELD(result, 0) = MGC_VAL_INT(total);
  MGC_FIELD(result, 1) = tree;
  MGC_RETURN(result);
}

/* ------------------------------------------------------------------------ */
/* The reader                                                               */
/* ------------------------------------------------------------------------ */

/* arg = a prefix string.  Builds the list 1..LIST_LEN (young), blocks in
   read(), then returns [prefix ^ the bytes read, sum of the list, 1 when
   the list was young before the section and old after it]. */
static mgc_value reader(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(list, text);
  for (long i = LIST_LEN; i >= 1; i--) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = list;
    list = c;
  }
  int was_young = mgc_is_young(list);
  char buf[32]; /* C memory: the only thing read() may write to */
  ssize_t n;

  /* list and arg are rooted: collections promote them meanwhile. */
  mgc_enter_blocking_section();
  atomic_store_explicit(&reader_blocked, 1, memory_order_release);
  n = read(pipe_fds[0], buf, sizeof buf - 1);
  mgc_leave_blocking_section();
  /* From here on the heap may be used again, through the roots. */

  if (n < 0)
    n = 0;
  buf[n] = '\0';
  long sum = 0;
  for (mgc_value l = list; l != MGC_UNIT; l = MGC_FIELD(l, 1))
    sum += MGC_INT_VAL(MGC_FIELD(l, 0));
  int promoted = was_young && !mgc_is_young(list);
  size_t plen = mgc_string_length(arg);
  text = mgc_alloc_string(plen + (size_t)n);
  /* arg is read after the allocation, through its root. */
  memcpy(MGC_STRING_VAL(text), MGC_STRING_VAL(arg), plen);
  memcpy(MGC_STRING_VAL(text) + plen, buf, (size_t)n);
  mgc_value result = mgc_alloc_small(3, 0);
  MGC_FIELD(result, 0) = text;
  MGC_FIELD(result, 1) = MGC_VAL_INT(sum);
  MGC_FIELD(result, 2) = MGC_VAL_INT(promoted);
  MGC_RETURN(result);
}

/* ------------------------------------------------------------------------ */
/* Domain 0                                                                 */
/* ------------------------------------------------------------------------ */

static int check_worker(mgc_value r, long depth) {
  long nodes = (1L << depth) - 1;
  int ok = MGC_INT_VAL(MGC_FIELD(r, 0)) == ROUNDS * nodes &&
           tree_nodes(MGC_FIELD(r, 1)) == nodes;
  printf("worker(depth %ld): %ld nodes built (%s)\n", depth,
         (long)MGC_INT_VAL(MGC_FIELD(r, 0)), ok ? "ok" : "WRONG");
  return ok;
}

int main(void) {
  const struct timespec ms = {0, 1000000};
  const long depth[2] = {12, 14};
  mgc_domain *rd, *w[2];
  int ok = 1;
  if (mgc_init(NULL) != MGC_OK || pipe(pipe_fds) != 0)
    return 1;
  {
    MGC_PARAM0;
    MGC_LOCAL2(prefix, r);
    prefix = mgc_copy_string("reader got: ");
    rd = mgc_domain_spawn(reader, prefix);
    w[0] = mgc_domain_spawn(worker, MGC_VAL_INT(depth[0]));
    w[1] = mgc_domain_spawn(worker, MGC_VAL_INT(depth[1]));
    if (!rd || !w[0] || !w[1]) {
      fprintf(stderr, "spawn: %s\n", mgc_strerror(mgc_last_error()));
      return 1;
    }

    /* Domain 0 waits for the reader inside its own blocking section, so
       that the workers' collections need not wait for it. */
    mgc_enter_blocking_section();
    while (!atomic_load_explicit(&reader_blocked, memory_order_acquire))
      nanosleep(&ms, NULL);
    mgc_leave_blocking_section();

    /* The reader is now blocked in read(): its backup thread takes its part
       in these collections, promoting its young list. */
    for (int i = 0; i < 10; i++)
      mgc_minor_collection();
    mgc_full_major();
    if (write(pipe_fds[1], "hello", 5) != 5)
      return 1;

    r = mgc_domain_join(rd); /* r is rooted: the joins below may collect */
    ok = strcmp(MGC_STRING_VAL(MGC_FIELD(r, 0)), "reader got: hello") == 0 &&
         MGC_INT_VAL(MGC_FIELD(r, 1)) == (long)LIST_LEN * (LIST_LEN + 1) / 2 &&
         MGC_FIELD(r, 2) == MGC_VAL_INT(1);
    printf("%s, sum %ld, promoted meanwhile: %ld (%s)\n",
           MGC_STRING_VAL(MGC_FIELD(r, 0)), (long)MGC_INT_VAL(MGC_FIELD(r, 1)),
           (long)MGC_INT_VAL(MGC_FIELD(r, 2)), ok ? "ok" : "WRONG");
    for (int i = 0; i < 2; i++) {
      r = mgc_domain_join(w[i]);
      ok &= check_worker(r, depth[i]);
    }
    MGC_DROP;
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  mgc_shutdown();
  return ok ? 0 : 1;
}
