/* ephemerons-boehm.c: the weak memo table workload on the Boehm-Demers-
 * Weiser collector, the algorithm of ephemerons.c.  Boehm has no
 * ephemerons: an entry is one GC_MALLOC'ed cell holding the key as a hidden
 * pointer registered with GC_general_register_disappearing_link (cleared to
 * 0 when the key becomes unreachable), the key's hash (its id), the memo
 * value (a strong pointer: it
 * lives until the cell is unlinked, where mgc and OCaml drop it with the
 * key) and the next cell.  Keys and values are pointer-free blocks
 * (GC_MALLOC_ATOMIC).  Single-threaded and not incremental, so a key read
 * through its hidden pointer cannot be collected before the next
 * allocation.
 * Usage: ephemerons-boehm [N]  (default 1000000)
 */
#include "bench_util.h"
#include <gc.h>
#include <stdint.h>

enum { B = 4096, W = 10000 };

/* Found probes: timing-dependent, never printed (volatile: kept). */
static volatile long long probes_found;

struct key {
  long long id;
};

struct value {
  long long v;
};

struct cell {
  long long hash;        /* the key's id */
  GC_hidden_pointer key; /* 0 once the key is dead */
  struct value *data;
  struct cell *next;
};

static long long memo_f(long long id) { return id * id % 1000003; }

static struct key *make_key(long long id) {
  struct key *k = bench_check_alloc(GC_MALLOC_ATOMIC(sizeof *k));
  k->id = id;
  return k;
}

static long long find(struct cell **table, long long id) {
  for (struct cell *c = table[id % B]; c != NULL; c = c->next)
    if (c->hash == id && c->key != 0) {
      struct key *k = GC_REVEAL_POINTER(c->key);
      if (k->id == id)
        return c->data->v;
    }
  return -1;
}

static struct cell *skip_dead(struct cell *c) {
  while (c != NULL && c->key == 0)
    c = c->next;
  return c;
}

static void insert(struct cell **table, struct key *key, long long id,
                   long long v) {
  long b = (long)(id % B);
  struct cell *first = skip_dead(table[b]), *c;
  struct value *val;
  if (first != table[b])
    table[b] = first;
  for (struct cell *p = first; p != NULL; p = p->next) {
    struct cell *n = skip_dead(p->next);
    if (n != p->next)
      p->next = n;
  }
  val = bench_check_alloc(GC_MALLOC_ATOMIC(sizeof *val));
  val->v = v;
  c = bench_check_alloc(GC_MALLOC(sizeof *c));
  c->hash = id;
  c->key = GC_HIDE_POINTER(key);
  c->data = val;
  c->next = table[b];
  if (GC_general_register_disappearing_link((void **)&c->key, key) !=
      GC_SUCCESS) {
    fputs("GC_general_register_disappearing_link failed\n", stderr);
    exit(3);
  }
  table[b] = c;
}

int main(int argc, char **argv) {
  long long n = bench_arg(argc, argv, 1, 1000000);
  long long lookups = 0, hits = 0, sum = 0;
  uint64_t x = 20240601;
  struct key **ring;
  struct cell **table;
  GC_INIT();
  ring = bench_check_alloc(GC_MALLOC(W * sizeof *ring));
  table = bench_check_alloc(GC_MALLOC(B * sizeof *table));
  for (long j = 0; j < W; j++)
    ring[j] = make_key(j);
  for (long long i = 0; i < n; i++) {
    uint64_t r;
    ring[i % W] = make_key(W + i);
    x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    r = x >> 16;
    if (r % 8 == 0) {
      long long d = i - (long long)((r >> 3) % W);
      if (d >= 0)
        probes_found += find(table, d) >= 0;
    } else {
      long long k = i + 1 + (long long)((r >> 3) % W);
      long long v = find(table, k);
      lookups++;
      if (v >= 0)
        hits++;
      else {
        v = memo_f(k);
        insert(table, ring[k % W], k, v);
      }
      sum += v;
    }
  }
  printf("lookups: %lld hits: %lld\n", lookups, hits);
  printf("checksum: %lld\n", sum);
  return 0;
}
