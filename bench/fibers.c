/* fibers.c: the lightweight threads workload on mgc.
 *
 * A scheduler runs T threads, each a fiber suspended in a continuation
 * between its steps, resumed round-robin.  Thread i's state lives in its
 * fiber: slot 0 its id i (an integer), slot 1 an accumulator block
 * {sum, count} (2 fields), slot 2 a history block {h0, h1, h2, h3} (the
 * last 4 values produced, h0 the latest).
 *   Start: for i = 0 .. T-1, a fiber with slots {i, {0, 0}, {0, 0, 0, 0}}
 *   is suspended (mgc_cont_new) and its continuation put in slot i of the
 *   queue: an old block of T slots (mgc_alloc_shr, written with
 *   mgc_modify) used as a ring, continuations taken at its head and put
 *   back at its tail.
 *   A step: take the continuation at the head (mgc_cont_take); i = slot 0,
 *   r = count (the thread's step, 0-based), v = (i * 31 + r * 7) mod 1000.
 *   Push a fresh young block {v} on the fiber (a call frame; it stays there
 *   during the step's allocations), allocate a new accumulator
 *   {sum + v, count + 1} and a new history {v, h0, h1, h2}, store them into
 *   slots 1 and 2 (MGC_FIBER_SLOT), pop the frame.  Then, when the thread
 *   has done fewer than S steps, suspend it: mgc_cont_new, the new
 *   continuation at the tail of the queue.  Otherwise it finishes: add
 *   sum + count + h0 + h1 + h2 to the checksum and mgc_fiber_free its fiber.
 *   Steps run until the queue is empty: S rounds, each resuming threads
 *   0 .. T-1 in order.
 * Per step: 13 words allocated (frame 2, accumulator 3, history 5,
 * continuation 3), one continuation taken and one made, one old-to-young
 * store into the queue.
 * Output: "threads: T steps: S", then "checksum: C".
 * Usage: fibers [T S]  (defaults 10000 1000)
 */
#include "mgc_bench.h"

/* Slots of a thread's fiber; FRAME is the step's call frame. */
enum { ID, ACC, HIST, FRAME };

static void die(const char *msg) {
  fprintf(stderr, "fibers: %s\n", msg);
  exit(3);
}

/* A new thread: its fiber with slots {id, {0, 0}, {0, 0, 0, 0}},
   suspended. */
static mgc_value spawn(long long id) {
  mgc_fiber *f = mgc_fiber_new(4);
  mgc_value b;
  if (f == NULL)
    die("mgc_fiber_new failed");
  mgc_fiber_push(f, MGC_VAL_INT(id));
  b = mgc_alloc_small(2, 0);
  MGC_FIELD(b, 0) = MGC_VAL_INT(0);
  MGC_FIELD(b, 1) = MGC_VAL_INT(0);
  mgc_fiber_push(f, b);
  b = mgc_alloc_small(4, 0);
  for (int j = 0; j < 4; j++)
    MGC_FIELD(b, j) = MGC_VAL_INT(0);
  mgc_fiber_push(f, b);
  return mgc_cont_new(f);
}

/* One step of the thread held in f (see above).  The fiber's slots are
   roots while it is held: values are read back from them after each
   allocation. */
static void step(mgc_fiber *f) {
  mgc_value acc = MGC_FIBER_SLOT(f, ACC), frame, a, h, old;
  long long id = MGC_INT_VAL(MGC_FIBER_SLOT(f, ID));
  long long r = MGC_INT_VAL(MGC_FIELD(acc, 1));
  long long v = (id * 31 + r * 7) % 1000;
  frame = mgc_alloc_small(1, 0);
  MGC_FIELD(frame, 0) = MGC_VAL_INT(v);
  mgc_fiber_push(f, frame);
  a = mgc_alloc_small(2, 0);
  acc = MGC_FIBER_SLOT(f, ACC);
  v = MGC_INT_VAL(MGC_FIELD(MGC_FIBER_SLOT(f, FRAME), 0));
  MGC_FIELD(a, 0) = MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(acc, 0)) + v);
  MGC_FIELD(a, 1) = MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(acc, 1)) + 1);
  MGC_FIBER_SLOT(f, ACC) = a;
  h = mgc_alloc_small(4, 0);
  old = MGC_FIBER_SLOT(f, HIST);
  MGC_FIELD(h, 0) = MGC_FIELD(MGC_FIBER_SLOT(f, FRAME), 0);
  MGC_FIELD(h, 1) = MGC_FIELD(old, 0);
  MGC_FIELD(h, 2) = MGC_FIELD(old, 1);
  MGC_FIELD(h, 3) = MGC_FIELD(old, 2);
  MGC_FIBER_SLOT(f, HIST) = h;
  (void)mgc_fiber_pop(f);
}

/* What a finished thread adds to the checksum. */
static long long result(mgc_fiber *f) {
  mgc_value acc = MGC_FIBER_SLOT(f, ACC), h = MGC_FIBER_SLOT(f, HIST);
  long long s = MGC_INT_VAL(MGC_FIELD(acc, 0)) + MGC_INT_VAL(MGC_FIELD(acc, 1));
  for (int j = 0; j < 3; j++)
    s += MGC_INT_VAL(MGC_FIELD(h, j));
  return s;
}

int main(int argc, char **argv) {
  long long t = bench_arg(argc, argv, 1, 10000);
  long long s = bench_arg(argc, argv, 2, 1000);
  long long sum = 0, head = 0, len = 0;
  mgc_bench_init();
  {
    MGC_PARAM0;
    MGC_LOCAL2(queue, k);
    queue = mgc_alloc_shr((size_t)t, 0);
    for (long long i = 0; i < t; i++) {
      k = spawn(i);
      mgc_modify(&MGC_FIELD(queue, i), k);
      len++;
    }
    while (len > 0) {
      mgc_fiber *f = mgc_cont_take(MGC_FIELD(queue, head));
      if (f == NULL)
        die("a continuation in the queue was taken already");
      head = (head + 1) % t;
      len--;
      step(f);
      if (MGC_INT_VAL(MGC_FIELD(MGC_FIBER_SLOT(f, ACC), 1)) < s) {
        k = mgc_cont_new(f);
        mgc_modify(&MGC_FIELD(queue, (head + len) % t), k);
        len++;
      } else {
        sum += result(f);
        mgc_fiber_free(f);
      }
    }
    MGC_DROP;
  }
  printf("threads: %lld steps: %lld\n", t, s);
  printf("checksum: %lld\n", sum);
  mgc_bench_finish();
  return 0;
}
