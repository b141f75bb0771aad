/* survive-boehm.c: the promotion workload on the Boehm-Demers-Weiser
 * collector: a queue of 100000 lists of 10 GC_MALLOC cells, round r
 * replacing the oldest list, as in survive.c.
 * Usage: survive-boehm [ROUNDS]  (default 4000000)
 */
#include "bench_util.h"
#include <gc.h>

enum { QUEUE = 100000, CELLS = 10 };

struct cell {
  long long value;
  struct cell *next;
};

static struct cell *make_list(long long g) {
  struct cell *head = NULL;
  for (int k = 0; k < CELLS; k++) {
    struct cell *c = bench_check_alloc(GC_MALLOC(sizeof *c));
    c->value = 10 * g + k;
    c->next = head;
    head = c;
  }
  return head;
}

int main(int argc, char **argv) {
  long long rounds = bench_arg(argc, argv, 1, 4000000), sum = 0;
  struct cell **queue;
  GC_INIT();
  queue = bench_check_alloc(GC_MALLOC(QUEUE * sizeof *queue));
  for (long g = 0; g < QUEUE; g++)
    queue[g] = make_list(g);
  for (long long r = 0; r < rounds; r++) {
    long long g = QUEUE + r;
    queue[g % QUEUE] = make_list(g);
  }
  for (long s = 0; s < QUEUE; s++)
    for (struct cell *c = queue[s]; c != NULL; c = c->next)
      sum += c->value;
  printf("checksum: %lld\n", sum);
  return 0;
}
