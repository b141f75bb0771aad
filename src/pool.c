/* The shared (major) heap: size-classed pools and large blocks.
 *
 * Each domain allocates from, and sweeps, only its own pools (invariant 29).
 * A pool is 32 KiB, aligned on its size, holding slots of one size class;
 * a free slot has header 0 and its first field links the pool's free list
 * (invariant 30), which sweeping rebuilds in address order.  Blocks of more
 * than 128 words with header are malloc'd with a small prefix.
 *
 * Lists per domain and class: avail (swept, has room), full (swept, no
 * room), unswept (moved there at each cycle start).  Empty pools go to a
 * global cache of free pools (pool_lock); those unused there for the
 * release delay are given back to the OS at cycle ends.  Terminating
 * domains hand their pools to global orphan lists; the next cycle start
 * adopts them.
 *
 * Phases: allocation and sweeping run on the owner (mutator, slice, or its
 * own part of a STW section); cycle start, adoption and release run in STW.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Whole-slot sizes (header included) of the 32 classes (DESIGN §6.1). */
const uint16_t mgc_class_whsize[NUM_SIZE_CLASSES] = {
    1,  2,  3,  4,  5,  6,  7,  8,  10, 12, 14, 16, 17, 19,  22,  25,
    28, 32, 33, 37, 42, 47, 53, 59, 65, 73, 81, 89, 99, 108, 118, 128};

/* Filled at start-up from the class sizes. */
uint8_t mgc_class_of[MAX_POOL_WHSIZE + 1];

#define CHUNK_POOLS 16

/* A pool in the cache: the next one, and when it entered the cache. */
struct free_pool {
  struct free_pool *next;
  uint64_t idle_since; /* mgc_now_ns */
};

/* Global state under pool_lock.  The cache is two lists: pools that were
   in use, taken first (most recently freed first), and spare pools mapped
   and faulted in ahead of need (mgc_heap_prefault_pools), taken when the
   first list is empty, as a fresh chunk would be; free_pool_count counts
   both.  Each list is a stack, pushed and popped at its head, so its
   pools' idle_since never increases from the head down: the pools idle
   for longest are its tail.  Each list keeps its tail's idle_since beside
   it (oldest, meaningless while the list is empty), so that a cycle end
   with no pool idle for the release delay does not walk the list (a walk
   over every pool header of the cache, thousands of cache misses under
   pool_lock, was 0.9 % of binarytrees 20's time).
   Raw pools, raw_left of them from raw_next on, are the rest of the last
   chunk mapped, as it was mapped: no page of them touched.  A pause that
   finds the cache empty (pool_acquire) takes one, mapping a chunk when
   none is left; linking the chunk's pools into a list would fault in a
   page of each inside the pause, and once counted in the cache as
   faulted in they would let mgc_heap_prefault_pools skip them, so that
   the next pause faulted in all their other pages.  The prefault takes
   raw pools, faults them in and moves them to spare_pools, and maps a
   chunk only when none is left.  free_pool_count counts the two lists
   only. */
struct cache_list {
  struct free_pool *head;
  uint64_t oldest; /* the tail's idle_since */
};
static struct cache_list free_pools, spare_pools;
static size_t free_pool_count;
static char *raw_next;
static size_t raw_left;
/* How long a pool stays in the cache, unused, before a cycle end gives
   it back to the OS (mgc_heap_release_free_pools). */
static uint64_t release_delay_ns = MGC_POOL_RELEASE_DELAY_NS;
/* Orphans by size class, each list with its last link, so that adoption
   at a cycle start (in the pause) splices whole lists: an adopted pool
   takes its owner when it is first swept. */
static struct pool *orphan_pools[NUM_SIZE_CLASSES];
static struct pool **orphan_pools_end[NUM_SIZE_CLASSES];
static struct large *orphan_large;
static struct large **orphan_large_end;
static size_t orphan_large_words;

static void init_class_table(void) {
  unsigned c = 1;
  for (unsigned wh = 0; wh <= MAX_POOL_WHSIZE; wh++) {
    while (mgc_class_whsize[c] < wh)
      c++;
    mgc_class_of[wh] = (uint8_t)(wh <= 1 ? 1 : c);
  }
}

static inline word *pool_first_slot(struct pool *p) {
  size_t wh = mgc_class_whsize[p->cls];
  size_t waste = (POOL_WORDS - POOL_HEADER_WORDS) % wh;
  return (word *)p + POOL_HEADER_WORDS + waste;
}

/* The slots that have been used: [start, end). */
void mgc_pool_bounds(struct pool *p, word **start, word **end, size_t *wh) {
  *start = pool_first_slot(p);
  *end = p->bump;
  *wh = mgc_class_whsize[p->cls];
}

static void raise_to(_Atomic size_t *max, size_t now) {
  size_t top = LOAD_RELAXED(max);
  while (now > top &&
         !atomic_compare_exchange_weak_explicit(
             max, &top, now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

static void heap_words_add(intptr_t delta) {
  /* Relaxed: statistics and pacing inputs, which tolerate a stale value
     (major.c, work_per_word); the two maxima are updated with a CAS loop
     so that concurrent growers do not lose one. */
  size_t now = atomic_fetch_add_explicit(&mgc_rt.heap_words, (size_t)delta,
                                         memory_order_relaxed) +
               (size_t)delta;
  if (delta > 0) {
    raise_to(&mgc_rt.top_heap_words, now);
    /* Only the model's growth counts as held: growth allowed by a scaled
       rate would otherwise raise its own target. */
    if (LOAD_RELAXED(&mgc_rt.held_frozen) == 0)
      raise_to(&mgc_rt.held_heap_words, now);
  }
}

/* Called at a compaction's release, in its single section: what it gave
   back is not held any more. */
void mgc_heap_reset_held(void) {
  STORE_RELAXED(&mgc_rt.held_heap_words, LOAD_RELAXED(&mgc_rt.heap_words));
}

/* Maps and commits a chunk of CHUNK_POOLS pools; NULL when the OS has no
   more memory.  Takes no lock. */
static char *map_chunk(void) {
  char *chunk = mgc_os_reserve(CHUNK_POOLS * POOL_BYTES, POOL_BYTES);
  if (chunk && mgc_os_commit(chunk, CHUNK_POOLS * POOL_BYTES) != 0) {
    mgc_os_release(chunk, CHUNK_POOLS * POOL_BYTES);
    chunk = NULL;
  }
  return chunk;
}

/* Under pool_lock: pushes f onto a list of the cache, idle since now
   (on an empty list, f is the tail too). */
static void cache_push(struct cache_list *list, struct free_pool *f,
                       uint64_t now) {
  if (!list->head)
    list->oldest = now;
  f->idle_since = now;
  f->next = list->head;
  list->head = f;
  free_pool_count++;
}

/* Under pool_lock: n adjacent mapped pools onto a list of the cache. */
static void cache_pools(struct cache_list *list, char *first, size_t n) {
  uint64_t now = mgc_now_ns();
  for (size_t i = n; i-- > 0;)
    cache_push(list, (struct free_pool *)(first + i * POOL_BYTES), now);
}

/* Under pool_lock: the first of up to n raw pools (at least one), mapping
   a chunk when none is left (`ahead`: for the prefault); *got is how many
   were taken.  NULL when the OS has no more memory. */
static char *take_raw(size_t n, size_t *got, bool ahead) {
  if (raw_left == 0) {
    raw_next = map_chunk();
    if (!raw_next)
      return NULL;
    raw_left = CHUNK_POOLS;
    mgc_log(MGC_VERBOSE_HEAP,
            ahead ? "mapped %d pools ahead" : "mapped %d pools", CHUNK_POOLS);
  }
  if (n > raw_left)
    n = raw_left;
  char *first = raw_next;
  raw_next += n * POOL_BYTES;
  raw_left -= n;
  *got = n;
  return first;
}

/* Under pool_lock, the cache not empty: its next pool. */
static struct free_pool *cache_take(void) {
  struct free_pool **list =
      free_pools.head ? &free_pools.head : &spare_pools.head;
  struct free_pool *f = *list;
  *list = f->next;
  free_pool_count--;
  return f;
}

/* Takes a pool from the cache or maps a new chunk.  NULL when the OS has
   no more memory. */
static struct pool *pool_acquire(void) {
  pthread_mutex_lock(&mgc_rt.pool_lock);
  size_t got;
  struct free_pool *f = free_pool_count > 0
                            ? cache_take()
                            : (struct free_pool *)take_raw(1, &got, false);
  pthread_mutex_unlock(&mgc_rt.pool_lock);
  if (!f)
    return NULL;
  heap_words_add(POOL_WORDS);
  return (struct pool *)f;
}

/* Mutator context, outside any pause: adds raw pools to the cache until
   it holds at least `want` pools (at most 1024 a call), mapping chunks
   when no raw pool is left, and faults in every page of each pool first,
   outside the lock, so that the page faults of fresh memory are taken
   here and not by the next minor collection's promotion, which would
   take them inside its pause (about 4 us a page on a VM, DESIGN §6.1).
   One madvise(MADV_POPULATE_WRITE) call maps the run of pools without a
   trap per page (binarytrees 20 spent 10 % of its samples in those traps,
   0.25 s of system time a run), and a byte is then written in every
   page all the same: on this VM the first write to a page populated but
   never written still cost 5-14 us (10-27 ns a word promoted in the
   pause after a cycle end on survive, against 2-3 without).  Where the
   kernel lacks the call (before Linux 5.14) the writes alone fault the
   pages in.  The pools of a chunk not wanted yet stay raw: untouched, they
   cost no memory.  Gives up quietly when the OS has no more memory: the
   pause then maps, and reports the failure, as before.
   d (NULL: none) is the calling domain: the prefault stops between two
   runs of pools once a stop-the-world section asks for d, which the
   section would otherwise wait for, and a run is at most
   PREFAULT_RUN_POOLS pools (32 pages of 4 KiB).  A whole prefault can be
   hundreds of pools (every domain's share, after a cycle end gave pools
   back; about 60 pools took 2.7 ms at D=2 on a 2-core VM), and the
   domains that left a minor collection all prefault at once.  At 16
   domains, traces showed sections whose other 15 domains all arrived
   5-9 ms late, most having left the previous section microseconds
   before the request and recorded nothing since (docs/PERFORMANCE.md,
   "Sixteen cores").  What is left is faulted in by the next prefault,
   after the section, or by the pause that needs it. */
#define PREFAULT_RUN_POOLS 4
void mgc_heap_prefault_pools(struct mgc_dom *d, size_t want) {
  size_t page = mgc_page_size();
  for (size_t budget = 64 * CHUNK_POOLS; budget > 0;) {
    /* Relaxed: a hint to stop early, nothing read under it; the domain's
       limit reset that follows (mgc_reset_young_limit) reads the flag
       seq_cst and sends it into the section. */
    if (d && atomic_load_explicit(&d->interrupt_pending, memory_order_relaxed))
      return;
    pthread_mutex_lock(&mgc_rt.pool_lock);
    if (free_pool_count >= want)
      break;
    /* The raw pools wanted, taken out under the lock: this caller's until
       cached.  The rest of the chunk stays untouched. */
    size_t n = want - free_pool_count;
    if (n > PREFAULT_RUN_POOLS)
      n = PREFAULT_RUN_POOLS;
    char *first = take_raw(n < budget ? n : budget, &n, true);
    if (!first)
      break;
    budget -= n;
    pthread_mutex_unlock(&mgc_rt.pool_lock);
    (void)mgc_os_populate(first, n * POOL_BYTES); /* else the writes */
    for (size_t off = 0; off < n * POOL_BYTES; off += page)
      *(volatile char *)(first + off) = 0;
    pthread_mutex_lock(&mgc_rt.pool_lock);
    cache_pools(&spare_pools, first, n);
    pthread_mutex_unlock(&mgc_rt.pool_lock);
    if (budget == 0)
      return;
  }
  pthread_mutex_unlock(&mgc_rt.pool_lock);
}

static void pool_release(struct pool *p) {
#if MGC_DEBUG >= 2
  memset(p, 0xD5, POOL_BYTES);
#endif
  uint64_t now = mgc_now_ns();
  pthread_mutex_lock(&mgc_rt.pool_lock);
  cache_push(&free_pools, (struct free_pool *)p, now);
  pthread_mutex_unlock(&mgc_rt.pool_lock);
  heap_words_add(-(intptr_t)POOL_WORDS);
}

/* A fresh pool: no free list, every slot in the bump region, so that
   allocation from it is sequential and nothing is written in advance.  The
   pool is private to d until it is linked into d's lists. */
static void pool_init(struct pool *p, unsigned cls, struct mgc_dom *d) {
  p->owner = d;
  p->cls = cls;
  p->whsize = mgc_class_whsize[cls];
  p->live = 0;
  p->free = NULL;
  p->bump = pool_first_slot(p);
  /* The cycle number changes only inside a STW section, between barriers
     that order it with this read (as the colours).  marked_cycle is set
     by push_avail, which follows.  Before the mark start blocks are born
     UNMARKED, and may be GARBAGE for the next sweep: it reads the pool. */
  p->born = mgc_colours.alloc == mgc_colours.marked ? mgc_colours.cycle + 1 : 0;
  p->finalisable = 0;
}

/* Allocation takes from avail only, and every pool there was put there
   during the cycle under way (the cycle start empties avail): stamping the
   pool here, as if marked, covers every block born in it this cycle
   (MARKED, or UNMARKED before the mark start: the next sweep reads the
   pool and frees those that marking did not reach).  A full pool gets no
   allocation until its next sweep. */
static inline void push_avail(struct mgc_dom *d, struct pool *p) {
  atomic_store_explicit(&p->marked_cycle, mgc_colours.cycle,
                        memory_order_relaxed);
  mgc_pool_push(&d->heap.avail[p->cls], p);
}

/* A swept pool (or a kept one, after compaction) goes to avail if it has
   room, else to full. */
static inline void push_swept(struct mgc_dom *d, struct pool *p) {
  if (mgc_pool_has_room(p))
    push_avail(d, p);
  else
    mgc_pool_push(&d->heap.full[p->cls], p);
}

/* Sweeps one pool (DESIGN §6.6): GARBAGE slots are freed (custom blocks
   finalised first, continuations' stacks freed), every other colour is
   live.  Headers are read with
   relaxed loads: another domain may be marking a live block right now
   (ocaml #12916); it can only turn UNMARKED into MARKED, which we treat
   alike.  The pool then goes to avail, full, or back to the cache. */
static intptr_t sweep_pool(struct mgc_dom *d, struct pool *p) {
  size_t wh = mgc_class_whsize[p->cls];
  p->owner = d;
  word *s = pool_first_slot(p), *end = p->bump;
  /* Sweeping is a sequential scan: a quarter of the cost of marking a
     word, in the units of the pacing. */
  intptr_t work = (intptr_t)(end - s) / 4 + 16;
  /* Taken fresh during the last cycle's marking: its blocks were all
     born MARKED then, so none is GARBAGE now and there is nothing to
     free.  The work counts as done, so that the pacing stays that of a
     heap swept slot by slot (unpaid, the cycles come sooner and the
     saving turns into a smaller heap instead of time). */
  if (p->born == mgc_colours.cycle) {
    p->born = 0;
    d->heap.sweeps_skipped++;
    push_swept(d, p);
    return work;
  }
  p->born = 0;
  /* Nothing in it was marked or allocated during the last cycle: every
     used slot is GARBAGE or free, and nothing needs finalising.  The
     work counts as done, so that the pacing stays that of a heap swept
     slot by slot.  No marker can stamp it now: only reachable blocks are
     marked, and a reachable block was marked last cycle too. */
  if (!p->finalisable &&
      atomic_load_explicit(&p->marked_cycle, memory_order_relaxed) + 1 <
          mgc_colours.cycle) {
    d->heap.pools_dead++;
    pool_release(p);
    return work;
  }
  word garbage = mgc_colours.garbage;
  word *head = NULL, **tail = &head;
  unsigned live = 0;
  for (; s < end; s += wh) {
    word hd = LOAD_RELAXED(AWORD(s));
    if (hd != 0) {
      if (COLOUR_HD(hd) != garbage) {
        live++;
        continue;
      }
      if (MGC_TAG_HD(hd) == MGC_TAG_CUSTOM) {
        const mgc_custom_ops *ops = (const mgc_custom_ops *)s[1];
        if (ops && ops->finalize)
          ops->finalize((mgc_value)(s + 1));
      } else if (MGC_TAG_HD(hd) == MGC_TAG_CONT) {
        mgc_cont_dead((mgc_value)(s + 1));
      }
      STORE_RELAXED(AWORD(s), 0);
#if MGC_DEBUG >= 2
      for (size_t i = 2; i < wh; i++)
        s[i] = 0xD5D5D5D5D5D5D5D5u;
#endif
    }
    *tail = s;
    tail = (word **)&s[1];
  }
  *tail = NULL;
  p->free = head;
  p->live = live;
  if (live == 0)
    pool_release(p);
  else
    push_swept(d, p);
  return work;
}

static word *large_alloc(struct mgc_dom *d, size_t wosize) {
  size_t wh = WHSIZE(wosize);
  if (wosize > MGC_MAX_WOSIZE || wh > (SIZE_MAX - sizeof(struct large)) / WORD)
    return NULL;
  struct large *l = malloc(sizeof(struct large) + wh * WORD);
  if (!l)
    return NULL;
  l->whsize = wh;
  l->next = d->heap.large;
  d->heap.large = l;
  d->heap.large_words += wh;
  heap_words_add((intptr_t)wh);
  return (word *)(l + 1);
}

/* The cases mgc_heap_alloc leaves out: large blocks, custom blocks and
   continuations (their pool is marked for finalisation), and a class with
   no pool on avail. */
word *mgc_heap_alloc_slow(struct mgc_dom *d, size_t wosize, unsigned tag,
                          unsigned reserved) {
  size_t wh = WHSIZE(wosize);
  word *hp;
  if (wh > MAX_POOL_WHSIZE) {
    hp = large_alloc(d, wosize);
    if (!hp)
      return NULL;
  } else {
    unsigned cls = mgc_class_of[wh];
    struct pool *p = d->heap.avail[cls];
    if (!p) {
      /* Sweep a few of this class's unswept pools until one has room
         (the work counts as paid), else take a fresh
         pool.  Promotion sweeps at most a few pools per collection, to
         keep the pause short; the next slice sweeps the rest. */
      struct pool *u;
      for (int tries = 0;
           !d->heap.avail[cls] && tries < 16 && d->promote_sweeps != 0;
           tries++) {
        struct pool **list = d->heap.unswept_avail[cls]
                                 ? &d->heap.unswept_avail[cls]
                                 : &d->heap.unswept_full[cls];
        if (!(u = *list))
          break;
        *list = u->next;
        mgc_pay_work(sweep_pool(d, u));
        if (d->promote_sweeps > 0)
          d->promote_sweeps--;
      }
      p = d->heap.avail[cls];
      if (!p) {
        p = pool_acquire();
        if (!p)
          return NULL;
        if (d->promote_sweeps < 0)
          d->direct_pools++;
        pool_init(p, cls, d);
        push_avail(d, p);
      }
    }
    hp = mgc_pool_take(d, p);
    /* The pool was stamped when it became one to allocate from in this
       cycle (push_avail): a block born MARKED needs no more. */
    if (tag == MGC_TAG_CUSTOM || tag == MGC_TAG_CONT)
      p->finalisable = 1;
  }
  /* Born in the allocation colour (invariant 19), as in mgc_heap_alloc. */
  STORE_RELAXED(AWORD(hp),
                MGC_MAKE_HEADER(wosize, tag, reserved) | mgc_colours.alloc);
  return hp;
}

static intptr_t sweep_large(struct mgc_dom *d, intptr_t budget) {
  intptr_t work = 0;
  word garbage = mgc_colours.garbage;
  struct large *l;
  while (work < budget && (l = d->heap.unswept_large)) {
    d->heap.unswept_large = l->next;
    word *hp = (word *)(l + 1);
    word hd = LOAD_RELAXED(AWORD(hp));
    work += 16;
    if (COLOUR_HD(hd) == garbage) {
      if (MGC_TAG_HD(hd) == MGC_TAG_CUSTOM) {
        const mgc_custom_ops *ops = (const mgc_custom_ops *)hp[1];
        if (ops && ops->finalize)
          ops->finalize((mgc_value)(hp + 1));
      }
      d->heap.large_words -= l->whsize;
      heap_words_add(-(intptr_t)l->whsize);
      free(l);
    } else {
      l->next = d->heap.large;
      d->heap.large = l;
    }
  }
  return work;
}

intptr_t mgc_heap_sweep(struct mgc_dom *d, intptr_t budget) {
  intptr_t work = 0;
  while (work < budget) {
    int c = d->heap.sweep_cls;
    while (c < NUM_SIZE_CLASSES && !d->heap.unswept_avail[c] &&
           !d->heap.unswept_full[c])
      c++;
    d->heap.sweep_cls = c;
    if (c == NUM_SIZE_CLASSES)
      break;
    struct pool **list = d->heap.unswept_avail[c] ? &d->heap.unswept_avail[c]
                                                  : &d->heap.unswept_full[c];
    struct pool *p = *list;
    *list = p->next;
    work += sweep_pool(d, p);
  }
  if (work < budget)
    work += sweep_large(d, budget - work);
  return work;
}

bool mgc_heap_sweep_done(struct mgc_dom *d) {
  if (d->heap.unswept_large)
    return false;
  for (int c = d->heap.sweep_cls; c < NUM_SIZE_CLASSES; c++)
    if (d->heap.unswept_avail[c] || d->heap.unswept_full[c])
      return false;
  return true;
}

/* STW, own domain, after the colours rotated: everything must be swept
   again (invariant 26 held just before the rotation).  Only list heads
   move here: the pause does not grow with the heap. */
void mgc_heap_cycle_start(struct mgc_dom *d) {
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    MGC_ASSERT(!d->heap.unswept_avail[c] && !d->heap.unswept_full[c]);
    d->heap.unswept_avail[c] = d->heap.avail[c];
    d->heap.unswept_full[c] = d->heap.full[c];
    d->heap.avail[c] = d->heap.full[c] = NULL;
  }
  MGC_ASSERT(d->heap.unswept_large == NULL);
  d->heap.unswept_large = d->heap.large;
  d->heap.large = NULL;
  d->heap.sweep_cls = 0;
}

/* A terminating domain, fully swept, hands its pools and large blocks to
   the global orphan lists (under pool_lock). */
void mgc_heap_orphan(struct mgc_dom *d) {
  MGC_ASSERT(mgc_heap_sweep_done(d));
  pthread_mutex_lock(&mgc_rt.pool_lock);
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    struct pool *lists[2] = {d->heap.avail[c], d->heap.full[c]};
    for (int k = 0; k < 2; k++) {
      struct pool *p = lists[k];
      while (p) {
        struct pool *n = p->next;
        p->owner = NULL;
        if (!orphan_pools[c])
          orphan_pools_end[c] = &p->next;
        mgc_pool_push(&orphan_pools[c], p);
        p = n;
      }
    }
    d->heap.avail[c] = d->heap.full[c] = NULL;
  }
  while (d->heap.large) {
    struct large *l = d->heap.large;
    d->heap.large = l->next;
    if (!orphan_large)
      orphan_large_end = &l->next;
    l->next = orphan_large;
    orphan_large = l;
    orphan_large_words += l->whsize;
  }
  pthread_mutex_unlock(&mgc_rt.pool_lock);
  d->heap.large_words = 0;
}

/* STW (single domain, right after the colour rotation): d takes every
   orphan into its unswept lists, a list per class at a time (a walk over
   thousands of pools would lengthen the pause by a millisecond). */
void mgc_heap_adopt_orphans(struct mgc_dom *d) {
  pthread_mutex_lock(&mgc_rt.pool_lock);
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    if (!orphan_pools[c])
      continue;
    *orphan_pools_end[c] = d->heap.unswept_full[c];
    d->heap.unswept_full[c] = orphan_pools[c];
    orphan_pools[c] = NULL;
  }
  if (orphan_large) {
    *orphan_large_end = d->heap.unswept_large;
    d->heap.unswept_large = orphan_large;
    orphan_large = NULL;
  }
  d->heap.large_words += orphan_large_words;
  orphan_large_words = 0;
  pthread_mutex_unlock(&mgc_rt.pool_lock);
  d->heap.sweep_cls = 0;
}

/* Pools to unmap, gathered so that neighbours go back in one system call:
   each munmap costs a TLB shootdown, about 40 us on a VM, and a heap of
   150 MB is 4,800 pools (binarytrees 20 spent 4 % of its time unmapping
   them one by one, most of it at shutdown). */
struct unmap_batch {
  void **v;
  size_t n, cap;
};

static void batch_add(struct unmap_batch *b, void *pool) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    void **v = realloc(b->v, cap * sizeof *v);
    if (!v) {
      /* No memory for the list: this one goes back alone. */
      mgc_os_release(pool, POOL_BYTES);
      return;
    }
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = pool;
}

static int address_order(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (void *const *)a;
  uintptr_t y = (uintptr_t) * (void *const *)b;
  return (x > y) - (x < y);
}

/* Unmaps the batch's pools, a run of adjacent ones at a time (a range
   over several mappings is unmapped as one), and empties it. */
static void batch_unmap(struct unmap_batch *b) {
  if (b->n > 1)
    qsort(b->v, b->n, sizeof *b->v, address_order);
  for (size_t i = 0; i < b->n;) {
    size_t j = i + 1;
    while (j < b->n && (char *)b->v[j] == (char *)b->v[j - 1] + POOL_BYTES)
      j++;
    mgc_os_release(b->v[i], (j - i) * POOL_BYTES);
    i = j;
  }
  free(b->v);
  b->v = NULL;
  b->n = b->cap = 0;
}

/* Under pool_lock: moves the pools of a cache list that entered it at or
   before `cutoff` (its tail) onto *out while the cache holds more than
   `floor`; returns how many. */
static size_t take_idle(struct cache_list *cache, uint64_t cutoff, size_t floor,
                        struct free_pool **out) {
  struct free_pool **list = &cache->head;
  if (!*list || cache->oldest > cutoff || free_pool_count <= floor)
    return 0;
  struct free_pool *kept = NULL; /* the last pool left in the list */
  while (*list && (*list)->idle_since > cutoff) {
    kept = *list;
    list = &kept->next;
  }
  size_t n = 0;
  while (*list && free_pool_count > floor) {
    struct free_pool *f = *list;
    *list = f->next;
    f->next = *out;
    *out = f;
    free_pool_count--;
    n++;
  }
  /* Taken up to the end: the last pool left is the tail now. */
  if (!*list && kept)
    cache->oldest = kept->idle_since;
  return n;
}

/* Any domain, after a cycle end, outside its pause: gives cached pools
   back to the OS.  With all set (compaction, shutdown), every one; else
   those that stayed in the cache, unused, for the release delay (10 s),
   down to 64.  A heap that breathes takes its pools back from the cache
   before that; unmapping them earlier (half the pools in use were kept
   before) cost a fault a page when they were mapped again: binarytrees
   20 faulted 50,000-59,000 pages a run instead of 37,000-41,000.  Pools kept
   mapped do not raise the peak RSS: they were in use before, and a pool is
   mapped only when the cache runs short.  The pools leave the cache under
   pool_lock and are unmapped after it. */
void mgc_heap_release_free_pools(bool all) {
  uint64_t now = mgc_now_ns();
  size_t floor = all ? 0 : 64;
  struct free_pool *out = NULL;
  size_t released = 0;
  pthread_mutex_lock(&mgc_rt.pool_lock);
  if (all || now > release_delay_ns) {
    uint64_t cutoff = all ? UINT64_MAX : now - release_delay_ns;
    released += take_idle(&free_pools, cutoff, floor, &out);
    released += take_idle(&spare_pools, cutoff, floor, &out);
  }
  char *raw = all ? raw_next : NULL;
  size_t raw_n = all ? raw_left : 0;
  if (all)
    raw_left = 0;
  pthread_mutex_unlock(&mgc_rt.pool_lock);
  struct unmap_batch b = {0};
  for (size_t i = 0; i < raw_n; i++)
    batch_add(&b, raw + i * POOL_BYTES);
  released += raw_n;
  while (out) {
    struct free_pool *n = out->next;
    batch_add(&b, out);
    out = n;
  }
  batch_unmap(&b);
  if (released)
    mgc_log(MGC_VERBOSE_HEAP, "released %zu free pools to the OS", released);
}

/* Tests: the release delay (0 restores the default). */
void mgc_heap_set_release_delay(uint64_t ns) {
  pthread_mutex_lock(&mgc_rt.pool_lock);
  release_delay_ns = ns ? ns : MGC_POOL_RELEASE_DELAY_NS;
  pthread_mutex_unlock(&mgc_rt.pool_lock);
}

/* Words in allocated slots and large blocks of d: exact right after a
   complete sweep (STW). */
size_t mgc_heap_live_words(struct mgc_dom *d) {
  size_t live = d->heap.large_words;
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    struct pool *lists[4] = {d->heap.avail[c], d->heap.full[c],
                             d->heap.unswept_avail[c], d->heap.unswept_full[c]};
    for (int k = 0; k < 4; k++)
      for (struct pool *p = lists[k]; p; p = p->next)
        live += (size_t)p->live * mgc_class_whsize[c];
  }
  return live;
}

size_t mgc_heap_free_pool_count(void) {
  pthread_mutex_lock(&mgc_rt.pool_lock);
  size_t n = free_pool_count + raw_left;
  pthread_mutex_unlock(&mgc_rt.pool_lock);
  return n;
}

static void batch_pool_list(struct unmap_batch *b, struct pool *p) {
  while (p) {
    struct pool *n = p->next;
    batch_add(b, p);
    p = n;
  }
}

static void free_large_list(struct large *l) {
  while (l) {
    struct large *n = l->next;
    free(l);
    l = n;
  }
}

/* Frees every pool and large block of a domain (shutdown). */
void mgc_heap_free_domain(struct mgc_dom *d) {
  struct unmap_batch b = {0};
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    batch_pool_list(&b, d->heap.avail[c]);
    batch_pool_list(&b, d->heap.full[c]);
    batch_pool_list(&b, d->heap.unswept_avail[c]);
    batch_pool_list(&b, d->heap.unswept_full[c]);
  }
  batch_unmap(&b);
  free_large_list(d->heap.large);
  free_large_list(d->heap.unswept_large);
  memset(&d->heap, 0, sizeof d->heap);
}

void mgc_heap_init(void) {
  init_class_table();
  free_pools.head = spare_pools.head = NULL;
  free_pool_count = 0;
  raw_next = NULL;
  raw_left = 0;
  memset(orphan_pools, 0, sizeof orphan_pools);
  orphan_large = NULL;
  orphan_large_words = 0;
  release_delay_ns = MGC_POOL_RELEASE_DELAY_NS;
}

void mgc_heap_teardown(void) {
  struct unmap_batch b = {0};
  for (int c = 0; c < NUM_SIZE_CLASSES; c++)
    batch_pool_list(&b, orphan_pools[c]);
  batch_unmap(&b);
  free_large_list(orphan_large);
  memset(orphan_pools, 0, sizeof orphan_pools);
  orphan_large = NULL;
  mgc_heap_release_free_pools(true);
}

/* ------------------------------------------------------------------------ */
/* Compaction: evacuation (DESIGN §6.11)                                    */
/* ------------------------------------------------------------------------ */

static int by_live_desc(const void *a, const void *b) {
  uint32_t la = (*(struct pool *const *)a)->live;
  uint32_t lb = (*(struct pool *const *)b)->live;
  return la < lb ? 1 : la > lb ? -1 : 0;
}

static size_t pool_slots(struct pool *p) {
  return (size_t)(mgc_pool_end(p) - pool_first_slot(p)) /
         mgc_class_whsize[p->cls];
}

/* One class: pools sorted by occupancy, the fullest kept while the free
   slots they have are fewer than the live blocks of the rest, the rest
   evacuated into them in order (two fingers).  Full pools take no part. */
static size_t evacuate_class(struct mgc_dom *d, int c) {
  size_t n = 0;
  for (struct pool *p = d->heap.avail[c]; p; p = p->next)
    n++;
  if (n < 2)
    return 0;
  struct pool **a = malloc(n * sizeof *a);
  if (!a)
    return 0; /* this class stays as it is */
  size_t i = 0, total_live = 0;
  for (struct pool *p = d->heap.avail[c]; p; p = p->next) {
    a[i++] = p;
    total_live += p->live;
  }
  qsort(a, n, sizeof *a, by_live_desc);
  size_t kept = 0, free_kept = 0, live_rest = total_live;
  while (kept < n && free_kept < live_rest) {
    free_kept += pool_slots(a[kept]) - a[kept]->live;
    live_rest -= a[kept]->live;
    kept++;
  }
  size_t moved = 0, t = 0;
  size_t wh = mgc_class_whsize[c];
  word marked = mgc_colours.marked;
  for (size_t e = kept; e < n; e++) {
    struct pool *from = a[e];
    for (word *s = pool_first_slot(from); s < from->bump; s += wh) {
      word hd = LOAD_RELAXED(AWORD(s));
      if (hd == 0)
        continue;
      MGC_ASSERT(COLOUR_HD(hd) == mgc_colours.unmarked);
      while (!mgc_pool_has_room(a[t]))
        t++;
      MGC_ASSERT(t < kept);
      struct pool *to = a[t];
      word *hp = to->free;
      if (hp)
        to->free = (word *)hp[1];
      else {
        hp = to->bump;
        to->bump += wh;
      }
      to->live++;
      to->finalisable |= from->finalisable;
      size_t whs = WHSIZE(MGC_WOSIZE_HD(hd));
      memcpy(hp, s, whs * WORD);
      s[1] = (word)(hp + 1);
      STORE_RELAXED(AWORD(s), WITH_COLOUR(hd, marked));
      moved += whs;
    }
    from->next = d->heap.evacuated;
    d->heap.evacuated = from;
  }
  d->heap.avail[c] = NULL;
  for (size_t k = 0; k < kept; k++)
    push_swept(d, a[k]);
  free(a);
  return moved;
}

size_t mgc_heap_evacuate(struct mgc_dom *d) {
  MGC_ASSERT(mgc_heap_sweep_done(d));
  size_t moved = 0;
  for (int c = 1; c < NUM_SIZE_CLASSES; c++)
    moved += evacuate_class(d, c);
  return moved;
}

size_t mgc_heap_release_evacuated(struct mgc_dom *d) {
  size_t k = 0;
  while (d->heap.evacuated) {
    struct pool *p = d->heap.evacuated;
    d->heap.evacuated = p->next;
    pool_release(p);
    k++;
  }
  return k;
}

/* Verifier iteration: every pool and large block of d (swept or not). */
void mgc_heap_for_each(struct mgc_dom *d,
                       void (*pool_f)(void *, struct pool *, bool swept),
                       void (*large_f)(void *, word *hp, bool swept),
                       void *data) {
  for (int c = 0; c < NUM_SIZE_CLASSES; c++) {
    for (struct pool *p = d->heap.avail[c]; p; p = p->next)
      pool_f(data, p, true);
    for (struct pool *p = d->heap.full[c]; p; p = p->next)
      pool_f(data, p, true);
    for (struct pool *p = d->heap.unswept_avail[c]; p; p = p->next)
      pool_f(data, p, false);
    for (struct pool *p = d->heap.unswept_full[c]; p; p = p->next)
      pool_f(data, p, false);
  }
  for (struct large *l = d->heap.large; l; l = l->next)
    large_f(data, (word *)(l + 1), true);
  for (struct large *l = d->heap.unswept_large; l; l = l->next)
    large_f(data, (word *)(l + 1), false);
}

void mgc_heap_for_each_orphan(void (*pool_f)(void *, struct pool *, bool),
                              void (*large_f)(void *, word *, bool),
                              void *data) {
  for (int c = 0; c < NUM_SIZE_CLASSES; c++)
    for (struct pool *p = orphan_pools[c]; p; p = p->next)
      pool_f(data, p, true);
  for (struct large *l = orphan_large; l; l = l->next)
    large_f(data, (word *)(l + 1), true);
}
