/* Parameters and error codes.
 *
 * The spec syntax is OCAMLRUNPARAM's: comma-separated key=value, numbers in
 * decimal or 0x hex with k/M/G suffixes (powers of 1024).  Unlike OCaml,
 * unknown keys and bad values are rejected with a message naming them.
 * Runs in mutator context only (before mgc_init, or from any thread).
 *
 * mgc_set_params changes the parameters in force while domains run: the
 * fields that may change are written inside a STW section by the last
 * domain to arrive at its barrier, so that every participant (whose
 * mutator reads them without a lock) sees them change between two of its
 * safepoints, and under params_lock, which mgc_get_params takes, so that
 * a thread that is not a participant reads a consistent block.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_MINOR_WORDS (MGC_MAX_YOUNG_WOSIZE + 1)
#define MAX_MINOR_WORDS ((size_t)1 << 32) /* 32 GiB per domain */
#define MAX_DOMAINS 4096
#define MIN_FIBER_WORDS 16
#define MAX_FIBER_WORDS ((size_t)1 << 40)

static _Thread_local int last_error;

void mgc_set_last_error(int err) { last_error = err; }
int mgc_last_error(void) { return last_error; }

const char *mgc_strerror(int err) {
  switch (err) {
  case MGC_OK:
    return "success";
  case MGC_ENOMEM:
    return "out of memory";
  case MGC_EINVAL:
    return "invalid argument or parameter";
  case MGC_ETOOMANYDOMAINS:
    return "too many domains (max_domains reached)";
  case MGC_ESTATE:
    return "runtime not initialised, or already initialised";
  case MGC_ETHREAD:
    return "could not create a thread";
  default:
    return "unknown error";
  }
}

void mgc_params_default(mgc_params *p) {
  memset(p, 0, sizeof *p);
  p->minor_heap_words = 256 * 1024;
  p->space_overhead = 120;
  p->max_domains = 128;
  p->custom_major_ratio = 44;
  p->custom_minor_ratio = 100;
  p->custom_minor_max_size = 70000;
  p->fiber_max_words = (size_t)128 << 20;
  p->event_ring_size = 8192;
  p->minor_pause_goal_us = 600;
}

/* Parses a number with an optional k/M/G suffix; the whole text must be
   used.  Returns false on syntax error or overflow. */
static bool parse_size(const char *s, size_t len, uint64_t *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return false;
  memcpy(buf, s, len);
  buf[len] = 0;
  if (buf[0] == '-' || buf[0] == '+' || isspace((unsigned char)buf[0]))
    return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 0);
  if (errno || end == buf)
    return false;
  unsigned shift = 0;
  if (*end == 'k' || *end == 'K')
    shift = 10;
  else if (*end == 'M')
    shift = 20;
  else if (*end == 'G')
    shift = 30;
  if (shift)
    end++;
  if (*end)
    return false;
  if (shift && v > (UINT64_MAX >> shift))
    return false;
  *out = (uint64_t)v << shift;
  return true;
}

static int bad(const char *key, size_t klen, const char *why) {
  fprintf(stderr, "mgc: bad parameter '%.*s': %s\n", (int)klen, key, why);
  return MGC_EINVAL;
}

static int check_range(const char *key, size_t klen, uint64_t v, uint64_t lo,
                       uint64_t hi) {
  if (v < lo || v > hi) {
    fprintf(stderr,
            "mgc: bad parameter '%.*s': %llu is out of range [%llu, %llu]\n",
            (int)klen, key, (unsigned long long)v, (unsigned long long)lo,
            (unsigned long long)hi);
    return MGC_EINVAL;
  }
  return 0;
}

/* 0, or the power of two at or above n (at least 64). */
static size_t round_pow2(size_t n) {
  if (n == 0)
    return 0;
  size_t p = 64;
  while (p < n)
    p <<= 1;
  return p;
}

/* One key=value item. */
static int parse_item(mgc_params *p, const char *item, size_t len) {
  const char *eq = memchr(item, '=', len);
  if (!eq)
    return bad(item, len, "expected key=value");
  size_t klen = (size_t)(eq - item);
  const char *val = eq + 1;
  size_t vlen = len - klen - 1;
  if (klen == 3 && memcmp(item, "log", 3) == 0) {
    if (vlen >= sizeof p->log_path)
      return bad(item, klen, "path too long");
    memcpy(p->log_path, val, vlen);
    p->log_path[vlen] = 0;
    return 0;
  }
  if (klen == 5 && memcmp(item, "trace", 5) == 0) {
    if (vlen >= sizeof p->trace_path)
      return bad(item, klen, "path too long");
    memcpy(p->trace_path, val, vlen);
    p->trace_path[vlen] = 0;
    return 0;
  }
  if (klen != 1)
    return bad(item, klen,
               "unknown key (known: s o d v t V M m n F l O C e P trace log)");
  uint64_t v;
  if (!parse_size(val, vlen, &v))
    return bad(item, klen, "not a number (decimal or 0x hex, k/M/G)");
  int r;
  switch (item[0]) {
  case 's':
    if ((r = check_range(item, klen, v, MIN_MINOR_WORDS, MAX_MINOR_WORDS)))
      return r;
    p->minor_heap_words = (size_t)v;
    return 0;
  case 'o':
    if ((r = check_range(item, klen, v, 1, 1000000)))
      return r;
    p->space_overhead = (unsigned)v;
    return 0;
  case 'd':
    if ((r = check_range(item, klen, v, 1, MAX_DOMAINS)))
      return r;
    p->max_domains = (unsigned)v;
    return 0;
  case 'v':
    if ((r = check_range(item, klen, v, 0, 0xFFFFFFFFu)))
      return r;
    p->verbose = (unsigned)v;
    return 0;
  case 't':
    p->torture_every = (size_t)v;
    return 0;
  case 'V':
    if ((r = check_range(item, klen, v, 0, 1)))
      return r;
    p->verify = (int)v;
    return 0;
  case 'M':
    if ((r = check_range(item, klen, v, 1, 1000000)))
      return r;
    p->custom_major_ratio = (unsigned)v;
    return 0;
  case 'm':
    if ((r = check_range(item, klen, v, 1, 1000000)))
      return r;
    p->custom_minor_ratio = (unsigned)v;
    return 0;
  case 'n':
    p->custom_minor_max_size = (size_t)v;
    return 0;
  case 'F':
    if ((r = check_range(item, klen, v, 0, 1)))
      return r;
    p->manual_finalisers = (int)v;
    return 0;
  case 'O':
    if ((r = check_range(item, klen, v, 0, 1000000)))
      return r;
    p->compact_overhead = (unsigned)v;
    return 0;
  case 'e':
    if ((r = check_range(item, klen, v, 0, (uint64_t)1 << 24)))
      return r;
    p->event_ring_size = round_pow2((size_t)v);
    return 0;
  case 'C':
    p->compact_every = (size_t)v;
    return 0;
  case 'P':
    if ((r = check_range(item, klen, v, 0, 10000000)))
      return r;
    p->minor_pause_goal_us = (unsigned)v;
    return 0;
  case 'l':
    if ((r = check_range(item, klen, v, MIN_FIBER_WORDS, MAX_FIBER_WORDS)))
      return r;
    p->fiber_max_words = (size_t)v;
    return 0;
  default:
    return bad(item, klen,
               "unknown key (known: s o d v t V M m n F l O C e P trace log)");
  }
}

int mgc_params_parse(mgc_params *p, const char *spec) {
  if (!p)
    return MGC_EINVAL;
  if (!spec)
    return 0;
  mgc_params tmp = *p; /* all or nothing */
  const char *s = spec;
  while (*s) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len > 0) {
      int r = parse_item(&tmp, s, len);
      if (r)
        return r;
    }
    s += len;
    if (*s == ',')
      s++;
  }
  *p = tmp;
  return 0;
}

/* Checks a whole parameter block (given by an embedder, not parsed). */
int mgc_params_validate(const mgc_params *p) {
  if (p->minor_heap_words < MIN_MINOR_WORDS ||
      p->minor_heap_words > MAX_MINOR_WORDS)
    return bad("s", 1, "minor heap size out of range [257, 2^32] words");
  if (p->space_overhead < 1)
    return bad("o", 1, "space_overhead must be at least 1");
  if (p->max_domains < 1 || p->max_domains > MAX_DOMAINS)
    return bad("d", 1, "max_domains out of range [1, 4096]");
  if (p->verify < 0 || p->verify > 1)
    return bad("V", 1, "verify must be 0 or 1");
  if (p->minor_pause_goal_us > 10000000)
    return bad("P", 1, "minor pause goal out of range [0, 10^7] us");
  if (memchr(p->trace_path, 0, sizeof p->trace_path) == NULL)
    return bad("trace", 5, "path not NUL-terminated");
  if (p->custom_major_ratio < 1 || p->custom_minor_ratio < 1)
    return bad("M", 1, "custom ratios must be at least 1");
  if (p->manual_finalisers < 0 || p->manual_finalisers > 1)
    return bad("F", 1, "manual_finalisers must be 0 or 1");
  if (p->fiber_max_words < MIN_FIBER_WORDS ||
      p->fiber_max_words > MAX_FIBER_WORDS)
    return bad("l", 1, "fiber_max_words out of range [16, 2^40]");
  if (p->event_ring_size > ((size_t)1 << 24) ||
      (p->event_ring_size & (p->event_ring_size - 1)) != 0)
    return bad("e", 1, "event_ring_size must be 0 or a power of two <= 2^24");
  if (memchr(p->log_path, 0, sizeof p->log_path) == NULL)
    return bad("log", 3, "path not NUL-terminated");
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Parameters in force                                                      */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;

void mgc_get_params(mgc_params *out) {
  pthread_mutex_lock(&params_lock);
  *out = mgc_rt.params;
  pthread_mutex_unlock(&params_lock);
}

/* A field that only mgc_init may set. */
static int frozen(const char *key, bool same) {
  if (same)
    return 0;
  fprintf(stderr, "mgc: bad parameter '%s': cannot change at run time\n", key);
  return MGC_EINVAL;
}

static void stw_set_params(struct mgc_dom *d, void *data, int idx, int n,
                           struct mgc_dom **parts) {
  (void)d;
  (void)idx;
  (void)parts;
  const mgc_params *p = data;
  /* Everybody else waits in the barrier: no mutator reads the fields. */
  if (mgc_stw_barrier_begin(n)) {
    pthread_mutex_lock(&params_lock);
    mgc_params *q = &mgc_rt.params;
    q->minor_heap_words = p->minor_heap_words;
    q->space_overhead = p->space_overhead;
    q->verbose = p->verbose;
    q->verify = p->verify;
    q->custom_major_ratio = p->custom_major_ratio;
    q->custom_minor_ratio = p->custom_minor_ratio;
    q->custom_minor_max_size = p->custom_minor_max_size;
    q->fiber_max_words = p->fiber_max_words;
    q->compact_overhead = p->compact_overhead;
    q->compact_every = p->compact_every;
    q->minor_pause_goal_us = p->minor_pause_goal_us;
    pthread_mutex_unlock(&params_lock);
    mgc_stw_barrier_release();
  }
}

int mgc_set_params(const mgc_params *p) {
  if (!mgc_rt.initialised) {
    mgc_set_last_error(MGC_ESTATE);
    return MGC_ESTATE;
  }
  struct mgc_dom *d = mgc_self_or_fatal("mgc_set_params");
  if (!p) {
    mgc_set_last_error(MGC_EINVAL);
    return MGC_EINVAL;
  }
  /* Only this domain's thread and sections write the block: no lock. */
  const mgc_params *c = &mgc_rt.params;
  int r = mgc_params_validate(p);
  if (!r)
    r = frozen("d", p->max_domains == c->max_domains);
  if (!r)
    r = frozen("t", p->torture_every == c->torture_every);
  if (!r)
    r = frozen("F", p->manual_finalisers == c->manual_finalisers);
  if (!r)
    r = frozen("e", p->event_ring_size == c->event_ring_size);
  if (!r)
    r = frozen("trace", strcmp(p->trace_path, c->trace_path) == 0);
  if (!r)
    r = frozen("log", strcmp(p->log_path, c->log_path) == 0);
  if (r) {
    mgc_set_last_error(r);
    return r;
  }
  size_t old_minor = c->minor_heap_words;
  mgc_params copy = *p; /* read by every participant in the section */
  while (!mgc_try_run_on_all_domains(d, stw_set_params, &copy, NULL)) {
  }
  mgc_log(MGC_VERBOSE_PARAMS,
          "parameters set: s=%zu o=%u v=%#x V=%d M=%u m=%u n=%zu l=%zu O=%u "
          "C=%zu P=%u",
          p->minor_heap_words, p->space_overhead, p->verbose, p->verify,
          p->custom_major_ratio, p->custom_minor_ratio,
          p->custom_minor_max_size, p->fiber_max_words, p->compact_overhead,
          p->compact_every, p->minor_pause_goal_us);
  if (p->minor_heap_words != old_minor)
    mgc_set_minor_heap_size(p->minor_heap_words);
  return MGC_OK;
}
