/* Platform layer: fatal errors and the embedder's handlers, logging, OS
 * memory (reserve / commit / release), the monotonic clock, spinning and
 * futex sleeping.
 *
 * Runs in any phase.  mgc_fatal never returns: it prints what broke and on
 * which domain, calls the embedder's fatal handler, then aborts.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic(void (*)(const char *)) fatal_handler;
static _Atomic(void (*)(size_t)) oom_handler;

void mgc_set_fatal_handler(void (*handler)(const char *msg)) {
  /* Release: a handler installed by one thread is seen by others. */
  atomic_store_explicit(&fatal_handler, handler, memory_order_release);
}

void mgc_set_oom_handler(void (*handler)(size_t bytes)) {
  atomic_store_explicit(&oom_handler, handler, memory_order_release);
}

static int self_id(void) {
  struct mgc_dom *d = mgc_self();
  return (struct mgc_fast_state *)d == &mgc_no_domain_state ? -1 : d->id;
}

_Noreturn void mgc_fatal(const char *fmt, ...) {
  char msg[512];
  int n =
      snprintf(msg, sizeof msg, "mgc: fatal error (domain %d): ", self_id());
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof msg)
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  /* The trace stays valid JSON even when the program ends here. */
  mgc_trace_emergency_close();
  void (*h)(const char *) =
      atomic_load_explicit(&fatal_handler, memory_order_acquire);
  if (h)
    h(msg);
  else
    fprintf(stderr, "%s\n", msg);
  abort();
}

/* Calls the OOM handler if one is set; returns if it does. */
void mgc_call_oom_handler(size_t bytes) {
  void (*h)(size_t) = atomic_load_explicit(&oom_handler, memory_order_acquire);
  if (h)
    h(bytes);
}

_Noreturn void mgc_out_of_memory(size_t bytes, const char *what) {
  void (*h)(size_t) = atomic_load_explicit(&oom_handler, memory_order_acquire);
  if (h)
    h(bytes);
  else
    fprintf(stderr,
            "mgc: out of memory (domain %d): could not allocate %zu bytes "
            "for %s\n",
            self_id(), bytes, what);
  abort();
}

/* The log= file, or NULL for stderr; opened by mgc_init, closed by
   mgc_shutdown.  A line is one fprintf with the stream locked, so lines of
   different domains do not mix. */
static FILE *log_file;

FILE *mgc_log_stream(void) { return log_file ? log_file : stderr; }

void mgc_log_open(const char *path) {
  if (path[0] && !(log_file = fopen(path, "a")))
    fprintf(stderr, "mgc: cannot open log file '%s'; logging to stderr\n",
            path);
}

void mgc_log_close(void) {
  if (log_file)
    fclose(log_file);
  log_file = NULL;
}

void mgc_log(unsigned mask, const char *fmt, ...) {
  if (!(mgc_rt.params.verbose & mask))
    return;
  FILE *f = mgc_log_stream();
  va_list ap;
  va_start(ap, fmt);
  flockfile(f);
  fprintf(f, "mgc[%d]: ", self_id());
  vfprintf(f, fmt, ap);
  fputc('\n', f);
  funlockfile(f);
  va_end(ap);
}

void *mgc_xmalloc(size_t bytes, const char *what) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    mgc_out_of_memory(bytes, what);
  return p;
}

void *mgc_xcalloc(size_t n, size_t size, const char *what) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    mgc_out_of_memory(n * size, what);
  return p;
}

void *mgc_xrealloc(void *old, size_t bytes, const char *what) {
  void *p = realloc(old, bytes ? bytes : 1);
  if (!p)
    mgc_out_of_memory(bytes, what);
  return p;
}

/* A block that a pause will read, grown by realloc: a large block moves
   by having its page-table entries moved (mremap), and on a host that
   shadows the guest's page tables the first access to each moved page
   then costs a host fault of several microseconds, measured at up to
   12 us a page: 2.3 ms inside a minor collection for a finaliser table
   of 2 MB moved just before it.  So when the block moved (from the
   address `was`, compared as a number: the old pointer is dead), one
   word of each page of its first `used` bytes is rewritten here, in the
   owner's thread, outside any pause (the owner is the block's only user:
   a plain read and write of its own value).  Elsewhere this costs a
   store per page. */
_Atomic uint64_t mgc_xgrow_calls, mgc_xgrow_touched;

void mgc_retouch_moved(void *p, uintptr_t was, size_t used) {
  /* Relaxed: counts for tests, read by the thread that made the calls. */
  atomic_fetch_add_explicit(&mgc_xgrow_calls, 1, memory_order_relaxed);
  if (!was || (uintptr_t)p == was)
    return;
  volatile word *w = p;
  size_t step = mgc_page_size() / sizeof(word), pages = 0;
  for (size_t i = 0; i < used / sizeof(word); i += step, pages++)
    w[i] = w[i];
  atomic_fetch_add_explicit(&mgc_xgrow_touched, pages, memory_order_relaxed);
}

void *mgc_xgrow(void *old, size_t bytes, size_t used, const char *what) {
  uintptr_t was = (uintptr_t)old;
  void *p = mgc_xrealloc(old, bytes, what);
  mgc_retouch_moved(p, was, used);
  return p;
}

size_t mgc_page_size(void) {
  static size_t ps;
  if (!ps) {
    long v = sysconf(_SC_PAGESIZE);
    ps = v > 0 ? (size_t)v : 4096;
  }
  return ps;
}

/* Reserves address space aligned to align (a power of two, at least a
   page); nothing is committed.  NULL on failure. */
void *mgc_os_reserve(size_t bytes, size_t align) {
  size_t span = bytes + (align > mgc_page_size() ? align : 0);
  char *p = mmap(NULL, span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  if (span == bytes)
    return p;
  char *aligned =
      (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
  if (aligned > p)
    munmap(p, (size_t)(aligned - p));
  char *end = aligned + bytes;
  if (p + span > end)
    munmap(end, (size_t)(p + span - end));
  return aligned;
}

int mgc_os_commit(void *p, size_t bytes) {
  return mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0 ? 0 : MGC_ENOMEM;
}

void mgc_os_decommit(void *p, size_t bytes) {
  /* Fresh zero pages on the next commit; the range stays reserved. */
  mmap(p, bytes, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

int mgc_os_populate(void *p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  return madvise(p, bytes, MADV_POPULATE_WRITE) == 0 ? 0 : -1;
#else
  (void)p;
  (void)bytes;
  return -1;
#endif
}

_Atomic uint64_t mgc_os_release_calls;

void mgc_os_release(void *p, size_t bytes) {
  /* Relaxed: a count for tests, read after the calls it counts by the
     thread that made them or after a join. */
  atomic_fetch_add_explicit(&mgc_os_release_calls, 1, memory_order_relaxed);
  munmap(p, bytes);
}

uint64_t mgc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void mgc_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

void mgc_futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL,
          0);
}

void mgc_futex_wake_all(_Atomic uint32_t *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL,
          NULL, 0);
}

/* Spin for a short while (a waiter usually gets its answer within a few
   microseconds), then yield the processor for up to 200 us (the domain we
   wait for may need it, and a futex sleep would add a wake-up of tens of
   microseconds to the latency of every stop-the-world section), then sleep
   on the futex word.  The acquire loads pair with the release store of
   whoever changes the word.  First, work(arg) (when given) runs between
   looks at the word for as long as it reports that it did something:
   opportunistic GC work while waiting at a barrier (DESIGN §4.2-4.3).
   With more domains running than processors (mgc_crowded), the domain we
   wait for is often off every processor, waiting for ours: the waiter
   neither works nor yields but sleeps after its spin, and gives the
   processor back at once. */
void mgc_wait_change_working(_Atomic uint32_t *addr, uint32_t old,
                             bool (*work)(void *), void *arg) {
  bool crowded = mgc_crowded();
  if (work && !crowded)
    while (LOAD_ACQUIRE(addr) == old && work(arg)) {
    }
  for (int i = 0; i < 1000; i++) {
    if (LOAD_ACQUIRE(addr) != old)
      return;
    mgc_cpu_relax();
  }
  uint64_t until = crowded ? 0 : mgc_now_ns() + 200000;
  while (LOAD_ACQUIRE(addr) == old) {
    if (crowded || mgc_now_ns() > until) {
      while (LOAD_ACQUIRE(addr) == old)
        mgc_futex_wait(addr, old);
      return;
    }
    sched_yield();
  }
}
