/* survive-malloc.c: the promotion workload with manual memory: the list a
 * round replaces is freed, as in survive.c otherwise.  Built with
 * -DUSE_MIMALLOC it is the mimalloc peer.
 * Usage: survive-malloc [ROUNDS]  (default 4000000)
 */
#include "bench_util.h"
#include "malloc_peer.h"

enum { QUEUE = 100000, CELLS = 10 };

struct cell {
  long long value;
  struct cell *next;
};

static struct cell *make_list(long long g) {
  struct cell *head = NULL;
  for (int k = 0; k < CELLS; k++) {
    struct cell *c = bench_check_alloc(peer_malloc(sizeof *c));
    c->value = 10 * g + k;
    c->next = head;
    head = c;
  }
  return head;
}

static void release(struct cell *c) {
  while (c != NULL) {
    struct cell *next = c->next;
    peer_free(c);
    c = next;
  }
}

int main(int argc, char **argv) {
  long long rounds = bench_arg(argc, argv, 1, 4000000), sum = 0;
  struct cell **queue;
  queue = bench_check_alloc(peer_malloc(QUEUE * sizeof *queue));
  for (long g = 0; g < QUEUE; g++)
    queue[g] = make_list(g);
  for (long long r = 0; r < rounds; r++) {
    long long g = QUEUE + r;
    release(queue[g % QUEUE]);
    queue[g % QUEUE] = make_list(g);
  }
  for (long s = 0; s < QUEUE; s++) {
    for (struct cell *c = queue[s]; c != NULL; c = c->next)
      sum += c->value;
    release(queue[s]);
  }
  peer_free(queue);
  printf("checksum: %lld\n", sum);
  return 0;
}
