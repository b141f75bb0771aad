/* mgc-report: a summary and an SVG timeline of an mgc trace (trace=FILE).
 *
 *   mgc-report TRACE.json [-o timeline.svg] [-n] [-a] [-w PX]
 *
 * Prints, per domain (the trace's tid) and in total:
 *   - count, p50, p90, p99 and max of the pause spans "minor",
 *     "major_slice", "cycle_end", "phase_change", "compact" and "stw"
 *     (microseconds, from B/E pairs; exact nearest-rank percentiles);
 *     -a: of every span name;
 *   - the time spent in each span name (a nested span counts in its own
 *     name), and the wall time the trace covers;
 *   - the 10 longest spans;
 *   - the minor pauses at or above the p99, each cut into its promotion,
 *     its barrier waits and the rest, and counted by the largest part
 *     (see print_long_minors);
 *   - counters (ph "C"), lost events (otherData.lost_events and the
 *     "lost_events" counters) and B/E events left unmatched;
 * and writes an SVG timeline (default: TRACE.svg beside the trace, -o to
 * choose, -n for none): one track per domain, spans as rectangles colored
 * by name, nested spans thinner inside their parent, a strip under each
 * track with the share of time inside outermost spans, x axis in ms.
 * Spans narrower than 0.2 px are not drawn (counted in the legend; the
 * strip still shows them); -w sets the width of the time axis in pixels
 * (default: enough for the median outermost span to be about 0.5 px wide,
 * 1200 to 16000 px).
 *
 * The trace is Chrome trace-event JSON as mgc writes it (docs/API.md,
 * "Runtime events"; docs/DESIGN.md §7.1), from its first version (spans
 * only) to the full one (metadata, counters, otherData).  The parser is
 * hand-written for that flat format and reads event objects one by one, so
 * that a file cut short (a program that died) or with a damaged line still
 * yields every event before and after the damage.  Unknown names and
 * phases are ignored; "X" events (with "dur") are spans too; a bare array
 * of events is accepted.  Spans are matched per tid as mgc nests them (see
 * build_spans), tolerating B or E events that the library lost.
 *
 * C11, libc and libm only.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Utilities                                                                */
/* ------------------------------------------------------------------------ */

static const char *prog = "mgc-report";

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q)
    die("out of memory (%zu bytes)", n);
  return q;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    die("out of memory");
  return p;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = xrealloc(NULL, n);
  memcpy(p, s, n);
  return p;
}

/* A growable array of elements of a fixed size. */
struct vec {
  void *data;
  size_t len, cap, elt;
};

static void *vec_push(struct vec *v) {
  if (v->len == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 64;
    v->data = xrealloc(v->data, v->cap * v->elt);
  }
  return (char *)v->data + v->elt * v->len++;
}

#define VEC(T)                                                                 \
  { NULL, 0, 0, sizeof(T) }
#define VEC_AT(v, T, i) (((T *)(v).data)[i])

/* ------------------------------------------------------------------------ */
/* Names                                                                    */
/* ------------------------------------------------------------------------ */

#define MAX_NAME 128

static char **names;
static size_t n_names, cap_names;
static int *name_hash; /* open addressing, -1 = empty */
static size_t hash_cap;

static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static int intern(const char *s) {
  if (2 * (n_names + 1) > hash_cap) {
    size_t nc = hash_cap ? 2 * hash_cap : 256;
    int *nh = xrealloc(NULL, nc * sizeof *nh);
    for (size_t i = 0; i < nc; i++)
      nh[i] = -1;
    for (size_t i = 0; i < n_names; i++) {
      size_t j = str_hash(names[i]) & (nc - 1);
      while (nh[j] >= 0)
        j = (j + 1) & (nc - 1);
      nh[j] = (int)i;
    }
    free(name_hash);
    name_hash = nh;
    hash_cap = nc;
  }
  size_t j = str_hash(s) & (hash_cap - 1);
  while (name_hash[j] >= 0) {
    if (strcmp(names[name_hash[j]], s) == 0)
      return name_hash[j];
    j = (j + 1) & (hash_cap - 1);
  }
  if (n_names == cap_names) {
    cap_names = cap_names ? 2 * cap_names : 64;
    names = xrealloc(names, cap_names * sizeof *names);
  }
  names[n_names] = xstrdup(s);
  name_hash[j] = (int)n_names;
  return (int)n_names++;
}

static int find_name(const char *s) {
  if (!hash_cap)
    return -1;
  size_t j = str_hash(s) & (hash_cap - 1);
  while (name_hash[j] >= 0) {
    if (strcmp(names[name_hash[j]], s) == 0)
      return name_hash[j];
    j = (j + 1) & (hash_cap - 1);
  }
  return -1;
}

/* ------------------------------------------------------------------------ */
/* The JSON reader                                                          */
/* ------------------------------------------------------------------------ */

struct lex {
  const char *p, *end;
  int eof; /* ran into the end of the input */
};

enum { MAX_DEPTH = 64 };

static void skip_ws(struct lex *L) {
  while (L->p < L->end &&
         (*L->p == ' ' || *L->p == '\t' || *L->p == '\n' || *L->p == '\r'))
    L->p++;
}

/* Peeks at the next non-blank character; 0 at the end. */
static int peek(struct lex *L) {
  skip_ws(L);
  if (L->p >= L->end) {
    L->eof = 1;
    return 0;
  }
  return (unsigned char)*L->p;
}

static int expect(struct lex *L, char c) {
  if (peek(L) != c)
    return 0;
  L->p++;
  return 1;
}

static void put_utf8(char *out, size_t cap, size_t *n, unsigned cp) {
  char b[4];
  size_t k;
  if (cp < 0x80) {
    b[0] = (char)cp;
    k = 1;
  } else if (cp < 0x800) {
    b[0] = (char)(0xC0 | cp >> 6);
    b[1] = (char)(0x80 | (cp & 0x3F));
    k = 2;
  } else if (cp < 0x10000) {
    b[0] = (char)(0xE0 | cp >> 12);
    b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    b[2] = (char)(0x80 | (cp & 0x3F));
    k = 3;
  } else {
    b[0] = (char)(0xF0 | cp >> 18);
    b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (char)(0x80 | (cp & 0x3F));
    k = 4;
  }
  if (*n + k < cap) {
    memcpy(out + *n, b, k);
    *n += k;
  }
}

static int hex4(const char *p, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    int c = (unsigned char)p[i], d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return 0;
    *v = *v << 4 | (unsigned)d;
  }
  return 1;
}

/* A string into out (cut to cap - 1 bytes; out may be NULL to skip it). */
static int parse_string(struct lex *L, char *out, size_t cap) {
  size_t n = 0;
  if (!expect(L, '"'))
    return 0;
  for (;;) {
    if (L->p >= L->end) {
      L->eof = 1;
      return 0;
    }
    unsigned char c = (unsigned char)*L->p++;
    if (c == '"')
      break;
    if (c < 0x20 && c != '\t')
      return 0; /* raw control character: a damaged line */
    if (c == '\\') {
      if (L->p >= L->end) {
        L->eof = 1;
        return 0;
      }
      char e = *L->p++;
      unsigned cp;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        cp = (unsigned char)e;
        break;
      case 'b':
        cp = '\b';
        break;
      case 'f':
        cp = '\f';
        break;
      case 'n':
        cp = '\n';
        break;
      case 'r':
        cp = '\r';
        break;
      case 't':
        cp = '\t';
        break;
      case 'u':
        if (L->end - L->p < 4) {
          L->eof = 1;
          return 0;
        }
        if (!hex4(L->p, &cp))
          return 0;
        L->p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && L->end - L->p >= 6 &&
            L->p[0] == '\\' && L->p[1] == 'u') {
          unsigned lo;
          if (hex4(L->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            L->p += 6;
          }
        }
        if (cp >= 0xD800 && cp < 0xE000)
          cp = 0xFFFD;
        break;
      default:
        return 0;
      }
      if (out)
        put_utf8(out, cap, &n, cp);
      continue;
    }
    if (out && n + 1 < cap)
      out[n++] = (char)c;
  }
  if (out && cap)
    out[n] = 0;
  return 1;
}

/* The input is NUL-terminated, so strtod stops at the end of it. */
static int parse_number(struct lex *L, double *v) {
  skip_ws(L);
  if (L->p >= L->end) {
    L->eof = 1;
    return 0;
  }
  char c = *L->p;
  if (c != '-' && !(c >= '0' && c <= '9'))
    return 0;
  char *q;
  errno = 0;
  double d = strtod(L->p, &q);
  if (q == L->p)
    return 0;
  if (q >= L->end) {
    /* A number running into the end of the input may be cut short. */
    L->p = L->end;
    L->eof = 1;
    return 0;
  }
  L->p = q;
  *v = d;
  return 1;
}

static int skip_value(struct lex *L, int depth);

static int skip_container(struct lex *L, int depth, char open, char close) {
  if (depth > MAX_DEPTH || !expect(L, open))
    return 0;
  if (peek(L) == close) {
    L->p++;
    return 1;
  }
  for (;;) {
    if (open == '{') {
      if (!parse_string(L, NULL, 0) || !expect(L, ':'))
        return 0;
    }
    if (!skip_value(L, depth + 1))
      return 0;
    int c = peek(L);
    L->p += c != 0;
    if (c == close)
      return 1;
    if (c != ',')
      return 0;
  }
}

static int skip_value(struct lex *L, int depth) {
  int c = peek(L);
  double d;
  switch (c) {
  case 0:
    return 0;
  case '"':
    return parse_string(L, NULL, 0);
  case '{':
    return skip_container(L, depth, '{', '}');
  case '[':
    return skip_container(L, depth, '[', ']');
  case 't':
  case 'f':
  case 'n': {
    const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
    size_t k = strlen(w);
    if ((size_t)(L->end - L->p) < k) {
      L->eof = 1;
      return 0;
    }
    if (memcmp(L->p, w, k) != 0)
      return 0;
    L->p += k;
    return 1;
  }
  default:
    return parse_number(L, &d);
  }
}

/* ------------------------------------------------------------------------ */
/* Events                                                                   */
/* ------------------------------------------------------------------------ */

struct event {
  double ts, dur, value;
  long tid;
  size_t seq; /* position in the file */
  int name;   /* -1: none */
  char ph;
  unsigned char has_ts, has_dur, has_value, has_tid;
};

/* Everything read from the file. */
static struct vec events = VEC(struct event);
static double other_lost = -1; /* otherData.lost_events; -1: absent */
static size_t n_malformed;     /* damaged events skipped */
static size_t n_unknown_ph;    /* phases other than B E X C M */
static int truncated;          /* the array or the object is not closed */
static int events_array_seen;
static int events_array_closed;

/* thread_name metadata: tid -> label. */
struct label {
  long tid;
  char *name;
};
static struct vec labels = VEC(struct label);

static void set_label(long tid, const char *s) {
  for (size_t i = 0; i < labels.len; i++) {
    struct label *l = &VEC_AT(labels, struct label, i);
    if (l->tid == tid) {
      free(l->name);
      l->name = xstrdup(s);
      return;
    }
  }
  struct label *l = vec_push(&labels);
  l->tid = tid;
  l->name = xstrdup(s);
}

static const char *get_label(long tid) {
  for (size_t i = 0; i < labels.len; i++)
    if (VEC_AT(labels, struct label, i).tid == tid)
      return VEC_AT(labels, struct label, i).name;
  return NULL;
}

/* "args": {"value": N} for counters ({"name": S} for metadata); a counter
   with another argument name gives its first number. */
static int parse_args(struct lex *L, struct event *e, char *argname,
                      size_t cap) {
  char key[MAX_NAME];
  if (!expect(L, '{'))
    return 0;
  if (peek(L) == '}') {
    L->p++;
    return 1;
  }
  for (;;) {
    if (!parse_string(L, key, sizeof key) || !expect(L, ':'))
      return 0;
    int c = peek(L);
    if (c == '"' && strcmp(key, "name") == 0) {
      if (!parse_string(L, argname, cap))
        return 0;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      double v;
      if (!parse_number(L, &v))
        return 0;
      if (strcmp(key, "value") == 0 || !e->has_value) {
        e->value = v;
        e->has_value = 1;
      }
    } else if (!skip_value(L, 2)) {
      return 0;
    }
    c = peek(L);
    L->p += c != 0;
    if (c == '}')
      return 1;
    if (c != ',')
      return 0;
  }
}

/* One event object; 1 when it parsed (kept or ignored), 0 when damaged. */
static int parse_event(struct lex *L) {
  char key[MAX_NAME], name[MAX_NAME] = "", ph[8] = "", argname[MAX_NAME] = "";
  int has_name = 0;
  struct event e;
  memset(&e, 0, sizeof e);
  e.name = -1;
  if (!expect(L, '{'))
    return 0;
  if (peek(L) == '}') {
    L->p++;
    return 1;
  }
  for (;;) {
    if (!parse_string(L, key, sizeof key) || !expect(L, ':'))
      return 0;
    int c = peek(L);
    if (strcmp(key, "name") == 0 && c == '"') {
      if (!parse_string(L, name, sizeof name))
        return 0;
      has_name = 1;
    } else if (strcmp(key, "ph") == 0 && c == '"') {
      if (!parse_string(L, ph, sizeof ph))
        return 0;
    } else if (strcmp(key, "ts") == 0 || strcmp(key, "dur") == 0 ||
               strcmp(key, "tid") == 0) {
      double v;
      if (c == '"') { /* some writers quote numbers */
        char s[64];
        if (!parse_string(L, s, sizeof s))
          return 0;
        char *q;
        v = strtod(s, &q);
        if (q == s)
          return 0;
      } else if (!parse_number(L, &v)) {
        return 0;
      }
      if (key[0] == 't' && key[1] == 's') {
        e.ts = v;
        e.has_ts = 1;
      } else if (key[0] == 'd') {
        e.dur = v;
        e.has_dur = 1;
      } else {
        if (!(v > -1e9 && v < 1e9))
          return 0;
        e.tid = (long)v;
        e.has_tid = 1;
      }
    } else if (strcmp(key, "args") == 0 && c == '{') {
      if (!parse_args(L, &e, argname, sizeof argname))
        return 0;
    } else if (!skip_value(L, 1)) {
      return 0;
    }
    c = peek(L);
    L->p += c != 0;
    if (c == '}')
      break;
    if (c != ',')
      return 0;
  }
  e.ph = ph[0] && !ph[1] ? ph[0] : '?';
  if (!isfinite(e.ts) || !isfinite(e.dur) || !isfinite(e.value))
    return 0;
  switch (e.ph) {
  case 'M':
    if (has_name && strcmp(name, "thread_name") == 0 && argname[0])
      set_label(e.tid, argname);
    return 1;
  case 'B':
  case 'E':
  case 'X':
  case 'C':
    if (!e.has_ts || (e.ph != 'E' && !has_name) || (e.ph == 'X' && !e.has_dur))
      return 0;
    if (has_name)
      e.name = intern(name);
    e.seq = events.len;
    *(struct event *)vec_push(&events) = e;
    return 1;
  default:
    n_unknown_ph++;
    return 1;
  }
}

/* After a damaged event: on to the next line, where mgc starts the next. */
static void resync(struct lex *L) {
  while (L->p < L->end && *L->p != '\n')
    L->p++;
  L->eof = 0;
}

/* The events array, from its '['.  Returns when it is closed, or at the end
   of the input. */
static void parse_events_array(struct lex *L) {
  events_array_seen = 1;
  L->p++; /* '[' */
  for (;;) {
    int c = peek(L);
    if (c == 0)
      return;
    if (c == ']') {
      L->p++;
      events_array_closed = 1;
      return;
    }
    if (c == ',') { /* a separator, or an empty slot after damage */
      L->p++;
      continue;
    }
    const char *start = L->p;
    int ok = c == '{' ? parse_event(L) : skip_value(L, 1);
    if (!ok) {
      if (L->eof && L->p >= L->end)
        return; /* cut in the middle of an event: dropped */
      n_malformed++;
      if (L->p == start)
        L->p++;
      resync(L);
      continue;
    }
    if (c != '{')
      n_malformed++;
    c = peek(L);
    if (c == ',' || c == ']')
      continue;
    if (c == 0)
      return;
    n_malformed++;
    resync(L);
  }
}

static void parse_other_data(struct lex *L) {
  char key[MAX_NAME];
  if (!expect(L, '{'))
    return;
  if (peek(L) == '}') {
    L->p++;
    return;
  }
  for (;;) {
    if (!parse_string(L, key, sizeof key) || !expect(L, ':'))
      return;
    int c = peek(L);
    if (strcmp(key, "lost_events") == 0 && (c == '-' || isdigit(c))) {
      double v;
      if (!parse_number(L, &v))
        return;
      other_lost = v;
    } else if (!skip_value(L, 1)) {
      return;
    }
    c = peek(L);
    L->p += c != 0;
    if (c != ',')
      return;
  }
}

static void parse_trace(const char *buf, size_t len) {
  struct lex L = {buf, buf + len, 0};
  int c = peek(&L);
  if (c == '[') {
    parse_events_array(&L);
    truncated = !events_array_closed;
    return;
  }
  if (c != '{')
    die("not a JSON trace (starts with neither '{' nor '[')");
  L.p++;
  int closed = 0;
  for (;;) {
    char key[MAX_NAME];
    c = peek(&L);
    if (c == '}') {
      closed = 1;
      break;
    }
    if (c != '"' || !parse_string(&L, key, sizeof key) || !expect(&L, ':'))
      break;
    c = peek(&L);
    if (strcmp(key, "traceEvents") == 0 && c == '[') {
      parse_events_array(&L);
      if (!events_array_closed)
        break;
    } else if (strcmp(key, "otherData") == 0 && c == '{') {
      const char *start = L.p;
      parse_other_data(&L);
      L.p = start; /* then skip it as a whole */
      if (!skip_value(&L, 1))
        break;
    } else if (!skip_value(&L, 1)) {
      break;
    }
    c = peek(&L);
    if (c == ',') {
      L.p++;
      continue;
    }
    if (c == '}')
      closed = 1;
    break;
  }
  if (!events_array_seen)
    die("no \"traceEvents\" array in the trace");
  truncated = !events_array_closed || !closed;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    die("cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 20, n = 0;
  char *b = xrealloc(NULL, cap);
  for (;;) {
    if (cap - n < 2) {
      cap *= 2;
      b = xrealloc(b, cap);
    }
    size_t k = fread(b + n, 1, cap - n - 1, f);
    n += k;
    if (k == 0)
      break;
  }
  if (ferror(f))
    die("cannot read %s", path);
  if (f != stdin)
    fclose(f);
  b[n] = 0;
  *len = n;
  return b;
}

/* ------------------------------------------------------------------------ */
/* Spans                                                                    */
/* ------------------------------------------------------------------------ */

struct span {
  double ts, dur;
  int track, name, depth;
};

static struct vec spans = VEC(struct span);

/* Tracks: the tids that have spans, ascending. */
static long *track_tid;
static size_t n_tracks;
static double *track_first, *track_last; /* ts of a track's first, last event */
static int *track_max_depth;

/* Unmatched B / E per name and track. */
static size_t *unmatched_b, *unmatched_e,
    *open_at_end; /* [name * n_tracks + track] */
static size_t n_unmatched_b, n_unmatched_e, n_open_at_end;
static size_t n_unmatched_e_unnamed; /* an E without a name and no B open */

static double t_min = INFINITY, t_max = -INFINITY;

static int cmp_event(const void *a, const void *b) {
  const struct event *x = a, *y = b;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int track_of(long tid) {
  size_t lo = 0, hi = n_tracks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (track_tid[mid] < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n_tracks && track_tid[lo] == tid ? (int)lo : -1;
}

static void add_span(int track, int name, double ts, double dur, int depth) {
  struct span *s = vec_push(&spans);
  s->ts = ts;
  s->dur = dur < 0 ? 0 : dur;
  s->track = track;
  s->name = name;
  s->depth = depth;
  if (depth > track_max_depth[track])
    track_max_depth[track] = depth;
}

struct open_span {
  int name;
  int gap; /* events were lost while it was open */
  double ts;
};

/* Spans whose B and E were both seen with events lost in between: their
   E may belong to a later span of the same name, so their length is
   unknown and they are left out. */
static size_t *gap_dropped; /* [name * n_tracks + track] */
static size_t n_gap_dropped;

/* Drops stack entries [from, *depth) as having lost their E. */
static void drop_open(struct open_span *stack, size_t from, size_t *depth,
                      int track, int at_end) {
  for (size_t j = from; j < *depth; j++) {
    unmatched_b[stack[j].name * n_tracks + track]++;
    n_unmatched_b++;
    if (at_end) {
      open_at_end[stack[j].name * n_tracks + track]++;
      n_open_at_end++;
    }
  }
  *depth = from;
}

static void build_spans(void) {
  struct event *ev = events.data;
  size_t n = events.len;
  qsort(ev, n, sizeof *ev, cmp_event);
  /* Tracks: tids with span events. */
  track_tid = xcalloc(n + 1, sizeof *track_tid);
  for (size_t i = 0; i < n; i++) {
    if (ev[i].has_ts) {
      if (ev[i].ts < t_min)
        t_min = ev[i].ts;
      double end = ev[i].ph == 'X' ? ev[i].ts + ev[i].dur : ev[i].ts;
      if (end > t_max)
        t_max = end;
    }
    if (ev[i].ph == 'C')
      continue;
    if (n_tracks == 0 || track_tid[n_tracks - 1] != ev[i].tid)
      track_tid[n_tracks++] = ev[i].tid;
  }
  track_first = xcalloc(n_tracks, sizeof(double));
  track_last = xcalloc(n_tracks, sizeof(double));
  track_max_depth = xcalloc(n_tracks, sizeof(int));
  size_t nn = n_names ? n_names : 1;
  unmatched_b = xcalloc(nn * n_tracks, sizeof(size_t));
  unmatched_e = xcalloc(nn * n_tracks, sizeof(size_t));
  open_at_end = xcalloc(nn * n_tracks, sizeof(size_t));
  for (size_t i = 0; i < n_tracks; i++) {
    track_first[i] = INFINITY;
    track_last[i] = -INFINITY;
  }

  gap_dropped = xcalloc(nn * n_tracks, sizeof(size_t));

  /* Per tid, in time order: a stack of open spans.  mgc's spans nest
     properly and a name never nests inside itself, so
       - an E closes the innermost open span of its name; spans open inside
         that one lost their E; an E with no open span of its name lost
         its B;
       - a B of a name already open means that span lost its E;
       - a rise of the tid's "lost_events" counter marks the open spans:
         events were lost while they were open. */
  int lost_id = find_name("lost_events");
  struct open_span *stack = NULL;
  size_t depth = 0, stack_cap = 0;
  long cur_tid = 0;
  int have_tid = 0, cur = -1;
  double lost_seen = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || !have_tid || ev[i].tid != cur_tid) {
      if (cur >= 0)
        drop_open(stack, 0, &depth, cur, 1);
      depth = 0;
      if (i == n)
        break;
      cur_tid = ev[i].tid;
      have_tid = 1;
      cur = track_of(cur_tid); /* -1: a tid with counters only */
      lost_seen = 0;
    }
    struct event *e = &ev[i];
    if (e->ph == 'C') {
      if (e->name == lost_id && lost_id >= 0 && e->has_value &&
          e->value > lost_seen) {
        lost_seen = e->value;
        for (size_t k = 0; k < depth; k++)
          stack[k].gap = 1;
      }
      continue;
    }
    if (e->ts < track_first[cur])
      track_first[cur] = e->ts;
    double last = e->ph == 'X' ? e->ts + e->dur : e->ts;
    if (last > track_last[cur])
      track_last[cur] = last;
    if (e->ph == 'B') {
      size_t k = depth;
      while (k > 0 && stack[k - 1].name != e->name)
        k--;
      if (k > 0)
        drop_open(stack, k - 1, &depth, cur, 0);
      if (depth == stack_cap) {
        stack_cap = stack_cap ? 2 * stack_cap : 16;
        stack = xrealloc(stack, stack_cap * sizeof *stack);
      }
      stack[depth].name = e->name;
      stack[depth].gap = 0;
      stack[depth].ts = e->ts;
      depth++;
    } else if (e->ph == 'X') {
      add_span(cur, e->name, e->ts, e->dur, (int)depth);
    } else { /* 'E' */
      size_t k = depth;
      if (e->name < 0) { /* an E without a name closes the innermost */
        k = depth ? depth - 1 : depth;
      } else {
        while (k > 0 && stack[k - 1].name != e->name)
          k--;
        k = k ? k - 1 : depth;
      }
      if (k == depth) {
        if (e->name >= 0) {
          unmatched_e[e->name * n_tracks + cur]++;
          n_unmatched_e++;
        } else {
          n_unmatched_e_unnamed++;
        }
        continue;
      }
      drop_open(stack, k + 1, &depth, cur, 0);
      if (stack[k].gap) {
        gap_dropped[stack[k].name * n_tracks + cur]++;
        n_gap_dropped++;
      } else {
        add_span(cur, stack[k].name, stack[k].ts, e->ts - stack[k].ts, (int)k);
      }
      depth = k;
    }
  }
  free(stack);
  if (!isfinite(t_min)) {
    t_min = 0;
    t_max = 0;
  }
}

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */
/* ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least pct % of them at or below
   it. */
static double percentile(const double *sorted, size_t n, unsigned pct) {
  size_t rank = (size_t)(((uint64_t)pct * n + 99) / 100);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return sorted[rank - 1];
}

/* Names in the order of the trace format, then the others as first seen. */
static const char *const known_names[] = {
    "minor",        "minor_roots",    "minor_remset", "minor_mopup",
    "major_slice",  "mark",           "sweep",        "cycle_end",
    "phase_change", "major_finish",   "compact",      "stw",
    "barrier",      "promoted_words", "heap_words",   "remembered",
    "lost_events"};
static int *name_order; /* n_names ids */

static void order_names(void) {
  name_order = xcalloc(n_names + 1, sizeof *name_order);
  char *done = xcalloc(n_names + 1, 1);
  size_t k = 0;
  for (size_t i = 0; i < sizeof known_names / sizeof known_names[0]; i++) {
    int id = find_name(known_names[i]);
    if (id >= 0) {
      name_order[k++] = id;
      done[id] = 1;
    }
  }
  for (size_t id = 0; id < n_names; id++)
    if (!done[id])
      name_order[k++] = (int)id;
  free(done);
}

static const char *const pause_names[] = {
    "minor", "major_slice", "cycle_end", "phase_change", "compact", "stw"};
enum { N_PAUSE_NAMES = sizeof pause_names / sizeof pause_names[0] };

static char track_label_buf[32];
static const char *track_short(int t) {
  snprintf(track_label_buf, sizeof track_label_buf, "%ld", track_tid[t]);
  return track_label_buf;
}

/* Span counts and time per name and track. */
static size_t *cnt; /* [name * n_tracks + track] */
static double *sum;

/* Span indices sorted by (name, track, duration) for the pause table, by
   (name, track, start) for the long minor pauses, and by (track, depth,
   name, start) for the SVG. */
static int cmp_name_track(const struct span *x, const struct span *y) {
  if (x->name != y->name)
    return x->name < y->name ? -1 : 1;
  if (x->track != y->track)
    return x->track < y->track ? -1 : 1;
  return 0;
}

static int cmp_by_name(const void *a, const void *b) {
  const struct span *x = &VEC_AT(spans, struct span, *(const size_t *)a);
  const struct span *y = &VEC_AT(spans, struct span, *(const size_t *)b);
  int c = cmp_name_track(x, y);
  return c ? c : x->dur < y->dur ? -1 : x->dur > y->dur;
}

static int cmp_by_start(const void *a, const void *b) {
  const struct span *x = &VEC_AT(spans, struct span, *(const size_t *)a);
  const struct span *y = &VEC_AT(spans, struct span, *(const size_t *)b);
  int c = cmp_name_track(x, y);
  return c ? c : x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_by_track(const void *a, const void *b) {
  const struct span *x = &VEC_AT(spans, struct span, *(const size_t *)a);
  const struct span *y = &VEC_AT(spans, struct span, *(const size_t *)b);
  if (x->track != y->track)
    return x->track < y->track ? -1 : 1;
  if (x->depth != y->depth)
    return x->depth < y->depth ? -1 : 1;
  if (x->name != y->name)
    return x->name < y->name ? -1 : 1;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static size_t *sorted_spans(int (*cmp)(const void *, const void *)) {
  size_t *ix = xcalloc(spans.len + 1, sizeof *ix);
  for (size_t i = 0; i < spans.len; i++)
    ix[i] = i;
  qsort(ix, spans.len, sizeof *ix, cmp);
  return ix;
}

/* d: n durations, ascending. */
static void print_pause_row(const char *name, const char *dom, const double *d,
                            size_t n) {
  printf("%-14s %-7s %8zu %10.1f %10.1f %10.1f %10.1f\n", name, dom, n,
         percentile(d, n, 50), percentile(d, n, 90), percentile(d, n, 99),
         d[n - 1]);
}

static void print_pauses(int all_names) {
  int *order = xcalloc(n_names + N_PAUSE_NAMES, sizeof(int));
  size_t no = 0;
  for (size_t i = 0; i < N_PAUSE_NAMES; i++) {
    int id = find_name(pause_names[i]);
    if (id >= 0)
      order[no++] = id;
  }
  if (all_names) {
    for (size_t o = 0; o < n_names; o++) {
      int id = name_order[o];
      size_t k = 0;
      while (k < no && order[k] != id)
        k++;
      if (k == no)
        order[no++] = id;
    }
  }
  printf("\nPauses (us; nearest-rank percentiles; domain = tid)\n");
  printf("%-14s %-7s %8s %10s %10s %10s %10s\n", "span", "domain", "count",
         "p50", "p90", "p99", "max");
  size_t *ix = sorted_spans(cmp_by_name);
  double *d = xcalloc(spans.len + 1, sizeof(double));
  for (size_t i = 0; i < spans.len; i++)
    d[i] = VEC_AT(spans, struct span, ix[i]).dur;
  /* start[id]: where name id's spans begin in ix. */
  size_t *start = xcalloc(n_names + 1, sizeof *start);
  for (size_t i = 0, id = 0; id <= n_names; id++) {
    while (i < spans.len && VEC_AT(spans, struct span, ix[i]).name < (int)id)
      i++;
    start[id] = i;
  }
  double *all = xcalloc(spans.len + 1, sizeof(double));
  size_t printed = 0;
  for (size_t k = 0; k < no; k++) {
    int id = order[k];
    size_t a = start[id], b = start[id + 1];
    if (a == b)
      continue;
    for (size_t i = a; i < b;) {
      int t = VEC_AT(spans, struct span, ix[i]).track;
      size_t j = i;
      while (j < b && VEC_AT(spans, struct span, ix[j]).track == t)
        j++;
      print_pause_row(names[id], track_short(t), d + i, j - i);
      i = j;
    }
    memcpy(all, d + a, (b - a) * sizeof *all);
    qsort(all, b - a, sizeof *all, cmp_double);
    print_pause_row(names[id], "all", all, b - a);
    printed++;
  }
  if (!printed)
    printf("(no pause spans)\n");
  free(all);
  free(start);
  free(d);
  free(ix);
  free(order);
}

static void print_times(void) {
  double wall = t_max - t_min;
  printf("\nTime in spans (ms; %% of the trace's wall time, for all: of wall "
         "x %zu domains)\n",
         n_tracks);
  if (!n_names || !spans.len) {
    printf("(no spans)\n");
    return;
  }
  size_t per = 5; /* domain columns per table */
  for (size_t t0 = 0; t0 < n_tracks || t0 == 0; t0 += per) {
    printf("%-14s %20s", "span", t0 == 0 ? "all" : "");
    for (size_t t = t0; t < t0 + per && t < n_tracks; t++)
      printf(" %20s", track_short((int)t));
    printf("\n");
    for (size_t o = 0; o < n_names; o++) {
      size_t id = (size_t)name_order[o];
      size_t total = 0;
      double tsum = 0;
      for (size_t t = 0; t < n_tracks; t++) {
        total += cnt[id * n_tracks + t];
        tsum += sum[id * n_tracks + t];
      }
      if (!total)
        continue;
      printf("%-14s", names[id]);
      if (t0 == 0)
        printf(" %11.3f (%5.1f%%)", tsum / 1000,
               wall > 0 ? 100 * tsum / (wall * (double)n_tracks) : 0.0);
      else
        printf(" %20s", "");
      for (size_t t = t0; t < t0 + per && t < n_tracks; t++) {
        double v = sum[id * n_tracks + t];
        printf(" %11.3f (%5.1f%%)", v / 1000, wall > 0 ? 100 * v / wall : 0.0);
      }
      printf("\n");
    }
    if (n_tracks == 0)
      break;
  }
}

static void print_longest(void) {
  enum { TOP = 10 };
  size_t top[TOP], nt = 0;
  for (size_t i = 0; i < spans.len; i++) {
    double d = VEC_AT(spans, struct span, i).dur;
    size_t k = nt;
    while (k > 0 && VEC_AT(spans, struct span, top[k - 1]).dur < d)
      k--;
    if (k >= TOP)
      continue;
    if (nt < TOP)
      nt++;
    memmove(top + k + 1, top + k, (nt - 1 - k) * sizeof *top);
    top[k] = i;
  }
  printf("\nLongest spans\n");
  printf("%3s %-14s %-7s %14s %14s\n", "#", "span", "domain", "start (ms)",
         "duration (us)");
  for (size_t k = 0; k < nt; k++) {
    struct span *s = &VEC_AT(spans, struct span, top[k]);
    printf("%3zu %-14s %-7s %14.3f %14.1f\n", k + 1, names[s->name],
           track_short(s->track), s->ts / 1000, s->dur);
  }
  if (!nt)
    printf("(no spans)\n");
}

/* The long minor pauses taken apart.  Each minor span at or above the p99
   of all minor spans is cut into its promotion (the minor_roots,
   minor_remset and minor_mopup spans nested in it), its waits for the
   other domains (the barrier spans nested in it) and the rest: code that
   records no span (around the promotion, and the last arriver's release
   of the barrier, which it does not wait at) and time off the processor
   outside a barrier; it counts for the largest of the three.  A pause that is
   mostly a barrier wait is also counted as woken late when it left its last
   barrier more than LATE_US after every other domain's overlapping minor span
   had ended: it did not wait for their work then, but to run again itself
   (docs/PERFORMANCE.md, "Four domains on two cores"). */
#define LATE_US 500.0

/* In ix (sorted by cmp_by_start), the first position whose span is at or
   after (name, track, ts). */
static size_t lower_bound(const size_t *ix, int name, int track, double ts) {
  struct span key = {.ts = ts, .track = track, .name = name};
  size_t lo = 0, hi = spans.len;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const struct span *s = &VEC_AT(spans, struct span, ix[mid]);
    int c = cmp_name_track(s, &key);
    if (c < 0 || (c == 0 && s->ts < ts))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The time in spans of `name` nested in m; *last_end: the latest end of
   one of them, if later. */
static double nested_time(const size_t *ix, int name, const struct span *m,
                          double *last_end) {
  double t = 0, end = m->ts + m->dur;
  if (name < 0)
    return 0;
  for (size_t k = lower_bound(ix, name, m->track, m->ts); k < spans.len; k++) {
    const struct span *s = &VEC_AT(spans, struct span, ix[k]);
    if (s->name != name || s->track != m->track || s->ts >= end)
      break;
    if (s->depth > m->depth && s->ts + s->dur <= end) {
      t += s->dur;
      if (s->ts + s->dur > *last_end)
        *last_end = s->ts + s->dur;
    }
  }
  return t;
}

static void print_long_minors(void) {
  int minor = find_name("minor"), barrier = find_name("barrier");
  int promotion[] = {find_name("minor_roots"), find_name("minor_remset"),
                     find_name("minor_mopup")};
  if (minor < 0)
    return;
  size_t n = 0;
  double *d = xcalloc(spans.len + 1, sizeof *d);
  for (size_t i = 0; i < spans.len; i++)
    if (VEC_AT(spans, struct span, i).name == minor)
      d[n++] = VEC_AT(spans, struct span, i).dur;
  if (!n) {
    free(d);
    return;
  }
  qsort(d, n, sizeof *d, cmp_double);
  double p99 = percentile(d, n, 99);
  free(d);
  size_t *ix = sorted_spans(cmp_by_start);
  enum { PROMOTE, WAIT, OTHER, PARTS };
  size_t count[PARTS] = {0}, total = 0, late = 0;
  double part_sum[PARTS] = {0}, big_sum[PARTS] = {0};
  for (size_t i = 0; i < spans.len; i++) {
    const struct span *m = &VEC_AT(spans, struct span, i);
    if (m->name != minor || m->dur < p99)
      continue;
    double part[PARTS] = {0}, last_end = -INFINITY, unused = -INFINITY;
    for (size_t k = 0; k < sizeof promotion / sizeof promotion[0]; k++)
      part[PROMOTE] += nested_time(ix, promotion[k], m, &unused);
    part[WAIT] = nested_time(ix, barrier, m, &last_end);
    part[OTHER] = m->dur - part[PROMOTE] - part[WAIT];
    if (part[OTHER] < 0)
      part[OTHER] = 0;
    int big = PROMOTE;
    for (int k = 1; k < PARTS; k++)
      if (part[k] > part[big])
        big = k;
    total++;
    count[big]++;
    big_sum[big] += part[big];
    for (int k = 0; k < PARTS; k++)
      part_sum[k] += part[k];
    if (big != WAIT)
      continue;
    /* The other domains' parts of the same collection: their minor spans
       that overlap this one (a domain's minor spans never overlap). */
    double others_end = -INFINITY;
    for (size_t t = 0; t < n_tracks; t++) {
      if ((int)t == m->track)
        continue;
      size_t k = lower_bound(ix, minor, (int)t, m->ts + m->dur);
      while (k > 0) {
        const struct span *o = &VEC_AT(spans, struct span, ix[--k]);
        if (o->name != minor || o->track != (int)t || o->ts + o->dur <= m->ts)
          break;
        if (o->ts + o->dur > others_end)
          others_end = o->ts + o->dur;
      }
    }
    if (others_end > -INFINITY && last_end - others_end > LATE_US)
      late++;
  }
  free(ix);
  static const char *const what[PARTS] = {"promotion", "barrier waits",
                                          "other time"};
  printf("\nMinor pauses at or above the p99 (%.1f us): %zu; means: "
         "promotion %.1f us, barrier waits %.1f us, other time %.1f us\n",
         p99, total, part_sum[PROMOTE] / (double)total,
         part_sum[WAIT] / (double)total, part_sum[OTHER] / (double)total);
  for (int k = 0; k < PARTS; k++) {
    printf("  mostly %s: %zu", what[k], count[k]);
    if (count[k])
      printf(" (their mean %s: %.1f us)", what[k],
             big_sum[k] / (double)count[k]);
    if (k == WAIT)
      printf("; woken late (left the barrier over %.0f us after every "
             "other domain's part had ended): %zu",
             LATE_US, late);
    printf("\n");
  }
}

/* Counters: per name and tid, samples, min, max, last value. */
struct counter {
  int name;
  long tid;
  size_t samples;
  double min, max, last, last_ts;
};
static struct vec counters = VEC(struct counter);

/* After build_spans: the events are sorted by tid. */
static void collect_counters(void) {
  size_t tid_start = 0; /* the current tid's counters begin there */
  for (size_t i = 0; i < events.len; i++) {
    struct event *e = &VEC_AT(events, struct event, i);
    if (e->ph != 'C' || !e->has_value)
      continue;
    if (counters.len > tid_start &&
        VEC_AT(counters, struct counter, tid_start).tid != e->tid)
      tid_start = counters.len;
    struct counter *c = NULL;
    for (size_t k = tid_start; k < counters.len; k++) {
      struct counter *x = &VEC_AT(counters, struct counter, k);
      if (x->name == e->name && x->tid == e->tid) {
        c = x;
        break;
      }
    }
    if (!c) {
      c = vec_push(&counters);
      c->name = e->name;
      c->tid = e->tid;
      c->samples = 0;
      c->min = INFINITY;
      c->max = -INFINITY;
      c->last_ts = -INFINITY;
    }
    c->samples++;
    if (e->value < c->min)
      c->min = e->value;
    if (e->value > c->max)
      c->max = e->value;
    if (e->ts >= c->last_ts) {
      c->last_ts = e->ts;
      c->last = e->value;
    }
  }
}

static void print_counters(void) {
  if (!counters.len)
    return;
  printf("\nCounters (all: samples, min and max over domains, sum of each "
         "domain's last value)\n");
  printf("%-16s %-7s %8s %14s %14s %14s\n", "counter", "domain", "samples",
         "min", "max", "last");
  for (size_t o = 0; o < n_names; o++) {
    size_t id = (size_t)name_order[o];
    size_t samples = 0, doms = 0;
    double mn = INFINITY, mx = -INFINITY, last = 0;
    for (size_t k = 0; k < counters.len; k++) {
      struct counter *c = &VEC_AT(counters, struct counter, k);
      if (c->name != (int)id)
        continue;
      printf("%-16s %-7ld %8zu %14.0f %14.0f %14.0f\n", names[id], c->tid,
             c->samples, c->min, c->max, c->last);
      samples += c->samples;
      doms++;
      if (c->min < mn)
        mn = c->min;
      if (c->max > mx)
        mx = c->max;
      last += c->last;
    }
    if (doms)
      printf("%-16s %-7s %8zu %14.0f %14.0f %14.0f\n", names[id], "all",
             samples, mn, mx, last);
  }
}

static void print_unmatched(const char *what, const size_t *per, size_t total,
                            const size_t *open) {
  printf("  %s: %zu", what, total);
  if (!total) {
    printf("\n");
    return;
  }
  printf(" (");
  int first = 1;
  for (size_t on = 0; on < n_names; on++) {
    size_t id = (size_t)name_order[on];
    size_t k = 0, o = 0;
    for (size_t t = 0; t < n_tracks; t++) {
      k += per[id * n_tracks + t];
      if (open)
        o += open[id * n_tracks + t];
    }
    if (!k)
      continue;
    printf("%s%s %zu", first ? "" : ", ", names[id], k);
    if (o)
      printf(" [%zu still open at the end]", o);
    first = 0;
    printf(" in");
    for (size_t t = 0; t < n_tracks; t++)
      if (per[id * n_tracks + t])
        printf(" %ld:%zu", track_tid[t], per[id * n_tracks + t]);
  }
  printf(")\n");
}

static void print_lost(void) {
  printf("\nLost events\n");
  if (other_lost >= 0)
    printf("  otherData.lost_events: %.0f\n", other_lost);
  else
    printf("  otherData.lost_events: absent\n");
  int id = find_name("lost_events");
  double total = 0;
  size_t doms = 0;
  for (size_t k = 0; k < counters.len; k++) {
    struct counter *c = &VEC_AT(counters, struct counter, k);
    if (c->name == id) {
      total += c->max; /* the count so far: its largest sample */
      doms++;
    }
  }
  if (doms) {
    printf("  lost_events counters: %.0f in all (", total);
    int first = 1;
    for (size_t k = 0; k < counters.len; k++) {
      struct counter *c = &VEC_AT(counters, struct counter, k);
      if (c->name == id) {
        printf("%s%ld:%.0f", first ? "" : " ", c->tid, c->max);
        first = 0;
      }
    }
    printf(")\n");
  } else {
    printf("  lost_events counters: none\n");
  }
  print_unmatched("unmatched B (E missing)", unmatched_b, n_unmatched_b,
                  open_at_end);
  print_unmatched("unmatched E (B missing)", unmatched_e, n_unmatched_e, NULL);
  if (n_unmatched_e_unnamed)
    printf("  unmatched E without a name: %zu\n", n_unmatched_e_unnamed);
  print_unmatched("spans left out, open while events were lost", gap_dropped,
                  n_gap_dropped, NULL);
  if (n_malformed)
    printf("  damaged events skipped: %zu\n", n_malformed);
}

/* ------------------------------------------------------------------------ */
/* SVG                                                                      */
/* ------------------------------------------------------------------------ */

static void xml_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&apos;", f);
      break;
    default:
      /* XML 1.0 allows no control characters but tab, LF and CR. */
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
        fputc('?', f);
      else
        fputc(c, f);
    }
  }
}

static void name_color(const char *name, char out[8]) {
  static const struct {
    const char *name, *color;
  } known[] = {
      {"minor", "#4e79a7"},        {"minor_roots", "#a0cbe8"},
      {"minor_remset", "#76b7b2"}, {"minor_mopup", "#8cd17d"},
      {"major_slice", "#f28e2b"},  {"mark", "#ffbe7d"},
      {"sweep", "#f1ce63"},        {"cycle_end", "#e15759"},
      {"phase_change", "#b07aa1"}, {"major_finish", "#9d7660"},
      {"compact", "#59a14f"},      {"stw", "#d7d0cb"},
      {"barrier", "#a8a19e"},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(name, known[i].name) == 0) {
      memcpy(out, known[i].color, 8);
      return;
    }
  /* Others: a hue from the name, saturation 0.55, lightness 0.55. */
  double h = (double)(str_hash(name) % 360), s = 0.55, l = 0.55;
  double c = (1 - fabs(2 * l - 1)) * s, hp = h / 60;
  double x = c * (1 - fabs(fmod(hp, 2) - 1)), r = 0, g = 0, b = 0;
  if (hp < 1) {
    r = c;
    g = x;
  } else if (hp < 2) {
    r = x;
    g = c;
  } else if (hp < 3) {
    g = c;
    b = x;
  } else if (hp < 4) {
    g = x;
    b = c;
  } else if (hp < 5) {
    r = x;
    b = c;
  } else {
    r = c;
    b = x;
  }
  double m = l - c / 2;
  snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround((r + m) * 255),
           (unsigned)lround((g + m) * 255), (unsigned)lround((b + m) * 255));
}

static double nice_step(double raw) {
  if (!(raw > 0))
    return 1;
  double p = pow(10, floor(log10(raw)));
  double f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

enum {
  SVG_LEFT = 120, /* labels */
  SVG_RIGHT = 30,
  SPAN_H = 40, /* a track's span area */
  INSET = 5,   /* per nesting level, top and bottom */
  MIN_H = 3,
  BUSY_GAP = 3,
  BUSY_H = 10, /* the busy strip */
  TRACK_GAP = 16,
  LEGEND_H = 18,
  BUSY_BIN_PX = 2,
  TITLE_LIMIT = 50000, /* tooltips on every rect up to this many */
};

static const double MIN_PX = 0.2;

struct svg_result {
  size_t drawn, skipped;
  double width;
};

/* Plot width: grows so that the median outermost span is about half a
   pixel wide, within [1200, 16000]. */
static double auto_width(double wall) {
  double w = 1200;
  size_t n = 0;
  for (size_t i = 0; i < spans.len; i++)
    n += VEC_AT(spans, struct span, i).depth == 0;
  if (!n || !(wall > 0))
    return w;
  double *d = xcalloc(n, sizeof(double));
  size_t m = 0;
  for (size_t i = 0; i < spans.len; i++)
    if (VEC_AT(spans, struct span, i).depth == 0)
      d[m++] = VEC_AT(spans, struct span, i).dur;
  qsort(d, m, sizeof *d, cmp_double);
  double med = d[m / 2];
  free(d);
  if (med > 0) {
    double want = 0.5 * wall / med;
    if (want > w)
      w = want;
  }
  return w > 16000 ? 16000 : w;
}

static struct svg_result write_svg(const char *path, const char *title,
                                   double plot_w) {
  struct svg_result res = {0, 0, 0};
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
    exit(2);
  }
  double wall = t_max - t_min;
  if (!(plot_w > 0))
    plot_w = auto_width(wall);
  res.width = plot_w;
  double scale = wall > 0 ? plot_w / wall : 0; /* px per us */

  /* Which spans are drawn. */
  size_t *skipped_by_name = xcalloc(n_names + 1, sizeof(size_t));
  for (size_t i = 0; i < spans.len; i++) {
    struct span *s = &VEC_AT(spans, struct span, i);
    if (s->dur * scale < MIN_PX) {
      res.skipped++;
      skipped_by_name[s->name]++;
    } else {
      res.drawn++;
    }
  }
  int titles = res.drawn <= TITLE_LIMIT;

  /* Legend: names that have spans, laid out in rows. */
  int total_w = (int)ceil(plot_w) + SVG_LEFT + SVG_RIGHT;
  if (total_w < 700)
    total_w = 700;
  struct legend_item {
    int id, x, y;
    char text[200];
  } *items = xcalloc(n_names + 1, sizeof *items);
  size_t n_items = 0;
  int lx = 10, ly = 50, legend_rows = 0;
  int legend_w = total_w < 1500 ? total_w : 1500; /* visible unscrolled */
  for (size_t o = 0; o < n_names; o++) {
    int id = name_order[o];
    size_t k = 0;
    double tsum = 0;
    for (size_t t = 0; t < n_tracks; t++) {
      k += cnt[(size_t)id * n_tracks + t];
      tsum += sum[(size_t)id * n_tracks + t];
    }
    if (!k)
      continue;
    struct legend_item *it = &items[n_items++];
    it->id = id;
    int len = snprintf(it->text, sizeof it->text, "%s %zu, %.1f ms", names[id],
                       k, tsum / 1000);
    if (skipped_by_name[id] && len >= 0 && (size_t)len < sizeof it->text)
      len += snprintf(it->text + len, sizeof it->text - (size_t)len,
                      " (%zu not drawn)", skipped_by_name[id]);
    if (len < 0 || (size_t)len >= sizeof it->text)
      len = (int)sizeof it->text - 1;
    int w = 16 + len * 7 + 24; /* about 7 px a character at 12 px */
    if (lx > 10 && lx + w > legend_w - 10) {
      lx = 10;
      ly += LEGEND_H;
    }
    legend_rows = (ly - 50) / LEGEND_H + 1;
    it->x = lx;
    it->y = ly;
    lx += w;
  }
  int top = 50 + legend_rows * LEGEND_H + 10;
  int track_h = SPAN_H + BUSY_GAP + BUSY_H + TRACK_GAP;
  int tracks_h = (int)n_tracks * track_h;
  int axis_y = top + tracks_h;
  int total_h = axis_y + 40;

  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n",
          total_w, total_h, total_w, total_h);
  fprintf(f,
          "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
          "fill=\"#ffffff\"/>\n",
          total_w, total_h);
  fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">");
  xml_escape(f, title);
  fprintf(f,
          "</text>\n<text x=\"10\" y=\"38\" fill=\"#555555\">wall %.3f ms, "
          "%zu spans: %zu drawn, %zu narrower than %.1f px not drawn; "
          "strip under each track: share of time in outermost spans"
          "%s</text>\n",
          wall / 1000, spans.len, res.drawn, res.skipped, MIN_PX,
          truncated ? " (trace truncated)" : "");

  /* Legend. */
  for (size_t i = 0; i < n_items; i++) {
    char col[8];
    name_color(names[items[i].id], col);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
            "fill=\"%s\"/><text x=\"%d\" y=\"%d\">",
            items[i].x, items[i].y, col, items[i].x + 16, items[i].y + 11);
    xml_escape(f, items[i].text);
    fprintf(f, "</text>\n");
  }
  free(items);

  /* Grid and axis. */
  double step = nice_step(wall / 1000 * 110 / plot_w); /* ms, ~110 px */
  fprintf(f, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
  double first = ceil(t_min / 1000 / step) * step;
  int n_ticks = 0;
  while (wall > 0 && n_ticks < 10000 &&
         (first + n_ticks * step) * 1000 <= t_max + 1e-9)
    n_ticks++;
  for (int k = 0; k < n_ticks; k++) {
    double x = SVG_LEFT + ((first + k * step) * 1000 - t_min) * scale;
    fprintf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n", x,
            top - 4, x, axis_y);
  }
  fprintf(f, "</g>\n<g fill=\"#333333\" text-anchor=\"middle\">\n");
  for (int k = 0; k < n_ticks; k++) {
    double ms = first + k * step;
    double x = SVG_LEFT + (ms * 1000 - t_min) * scale;
    double v = fabs(ms) < step * 1e-6 ? 0 : ms;
    fprintf(f, "<text x=\"%.2f\" y=\"%d\">%.*f</text>\n", x, axis_y + 16,
            step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9), v);
  }
  fprintf(f,
          "</g>\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
          "fill=\"#333333\">ms</text>\n",
          SVG_LEFT - 14, axis_y + 16);
  fprintf(f,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
          "stroke=\"#333333\"/>\n",
          SVG_LEFT, axis_y, SVG_LEFT + plot_w, axis_y);

  /* Tracks. */
  size_t nb = (size_t)ceil(plot_w / BUSY_BIN_PX) + 1;
  double *busy = xcalloc(nb, sizeof(double));
  double bin_us = scale > 0 ? BUSY_BIN_PX / scale : 0;
  size_t *ix = sorted_spans(cmp_by_track), pos = 0;
  for (size_t t = 0; t < n_tracks; t++) {
    int y0 = top + (int)t * track_h;
    const char *lab = get_label(track_tid[t]);
    char buf[48];
    if (!lab) {
      snprintf(buf, sizeof buf, "domain %ld", track_tid[t]);
      lab = buf;
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", SVG_LEFT - 8,
            y0 + SPAN_H / 2 + 4);
    xml_escape(f, lab);
    fprintf(f,
            "</text>\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
            "font-size=\"9\" fill=\"#777777\">busy</text>\n",
            SVG_LEFT - 8, y0 + SPAN_H + BUSY_GAP + BUSY_H);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
            "fill=\"#f7f7f7\"/>\n",
            SVG_LEFT, y0, plot_w, SPAN_H);
    /* Spans, outermost first so that nested ones lie on top; one group
       per depth and name.  ix is sorted by track, depth, name, start. */
    size_t tb = pos;
    while (pos < spans.len &&
           VEC_AT(spans, struct span, ix[pos]).track == (int)t)
      pos++;
    for (size_t i = tb; i < pos;) {
      struct span *g = &VEC_AT(spans, struct span, ix[i]);
      int depth = g->depth, id = g->name;
      int inset = depth * INSET;
      int h = SPAN_H - 2 * inset;
      if (h < MIN_H) {
        h = MIN_H;
        inset = (SPAN_H - h) / 2;
      }
      int open = 0;
      for (; i < pos; i++) {
        struct span *s = &VEC_AT(spans, struct span, ix[i]);
        if (s->depth != depth || s->name != id)
          break;
        double w = s->dur * scale;
        if (w < MIN_PX)
          continue;
        if (!open) {
          char col[8];
          name_color(names[id], col);
          fprintf(f, "<g fill=\"%s\">\n", col);
          open = 1;
        }
        fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"",
                SVG_LEFT + (s->ts - t_min) * scale, y0 + inset, w, h);
        if (titles) {
          fprintf(f, "><title>");
          xml_escape(f, names[id]);
          fprintf(f, " %ld: %.1f us at %.3f ms</title></rect>\n", track_tid[t],
                  s->dur, s->ts / 1000);
        } else {
          fprintf(f, "/>\n");
        }
      }
      if (open)
        fprintf(f, "</g>\n");
    }
    /* The busy strip: the share of each 2 px bin inside outermost spans,
       drawn ones or not. */
    memset(busy, 0, nb * sizeof *busy);
    for (size_t i = tb; bin_us > 0 && i < pos; i++) {
      struct span *s = &VEC_AT(spans, struct span, ix[i]);
      if (s->depth != 0)
        break;
      double a = s->ts - t_min, b = a + s->dur;
      size_t ba = (size_t)(a / bin_us), bb = (size_t)(b / bin_us);
      if (bb >= nb)
        bb = nb - 1;
      if (ba >= nb)
        ba = nb - 1;
      for (size_t k = ba; k <= bb; k++) {
        double lo = (double)k * bin_us, hi = lo + bin_us;
        double ov = (b < hi ? b : hi) - (a > lo ? a : lo);
        if (ov > 0)
          busy[k] += ov / bin_us;
      }
    }
    int yb = y0 + SPAN_H + BUSY_GAP;
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
            "fill=\"#f7f7f7\"/>\n<g fill=\"#555555\">\n",
            SVG_LEFT, yb, plot_w, BUSY_H);
    for (size_t k = 0; k < nb; k++) {
      double v = busy[k] > 1 ? 1 : busy[k];
      if (v < 0.005)
        continue;
      double h = v * BUSY_H;
      fprintf(f, "<rect x=\"%.1f\" y=\"%.2f\" width=\"%d\" height=\"%.2f\"/>\n",
              SVG_LEFT + (double)k * BUSY_BIN_PX, yb + BUSY_H - h, BUSY_BIN_PX,
              h);
    }
    fprintf(f, "</g>\n");
  }
  if (!n_tracks)
    fprintf(f, "<text x=\"%d\" y=\"%d\">no spans in this trace</text>\n",
            SVG_LEFT, top + 20);
  fprintf(f, "</svg>\n");
  free(ix);
  free(busy);
  free(skipped_by_name);
  if (fclose(f) != 0) {
    fprintf(stderr, "%s: cannot write %s\n", prog, path);
    exit(2);
  }
  return res;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s TRACE.json [-o timeline.svg] [-n] [-a] [-w PX]\n"
          "  pause percentiles, time per span, longest spans, the longest\n"
          "  minor pauses taken apart and lost events of an mgc trace\n"
          "  (MGC_PARAMS=trace=FILE), and an SVG timeline\n"
          "  -o FILE  where the SVG goes (default: TRACE.svg beside TRACE)\n"
          "  -n       no SVG\n"
          "  -a       pause table for every span name, not only minor,\n"
          "           major_slice, cycle_end, phase_change, compact, stw\n"
          "  -w PX    width of the SVG's time axis (default: automatic)\n",
          prog);
}

int main(int argc, char **argv) {
  const char *trace = NULL, *out = NULL;
  int no_svg = 0, all_names = 0;
  double width = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
      char *q;
      width = strtod(argv[++i], &q);
      if (*q || !(width >= 10 && width <= 1e6))
        die("-w wants a width in pixels (10 to 1000000)");
    } else if (strcmp(argv[i], "-n") == 0) {
      no_svg = 1;
    } else if (strcmp(argv[i], "-a") == 0) {
      all_names = 1;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      usage(stderr);
      return 2;
    } else if (!trace) {
      trace = argv[i];
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!trace) {
    usage(stderr);
    return 2;
  }
  char *svg_path = NULL;
  if (!no_svg) {
    if (out) {
      svg_path = xstrdup(out);
    } else if (strcmp(trace, "-") == 0) {
      svg_path = xstrdup("trace.svg");
    } else {
      size_t n = strlen(trace);
      svg_path = xrealloc(NULL, n + 5);
      memcpy(svg_path, trace, n + 1);
      if (n > 5 && strcmp(trace + n - 5, ".json") == 0)
        n -= 5;
      memcpy(svg_path + n, ".svg", 5);
    }
  }

  size_t len;
  char *buf = read_file(trace, &len);
  parse_trace(buf, len);
  free(buf);

  size_t n_span_ev = 0, n_counter_ev = 0;
  for (size_t i = 0; i < events.len; i++)
    *(VEC_AT(events, struct event, i).ph == 'C' ? &n_counter_ev : &n_span_ev) +=
        1;
  build_spans();
  collect_counters();
  order_names();
  cnt = xcalloc((n_names ? n_names : 1) * (n_tracks ? n_tracks : 1),
                sizeof(size_t));
  sum = xcalloc((n_names ? n_names : 1) * (n_tracks ? n_tracks : 1),
                sizeof(double));
  for (size_t i = 0; i < spans.len; i++) {
    struct span *s = &VEC_AT(spans, struct span, i);
    cnt[s->name * n_tracks + s->track]++;
    sum[s->name * n_tracks + s->track] += s->dur;
  }

  printf("mgc-report: %s\n", trace);
  printf("  %zu events: %zu begin/end, %zu counter samples, %zu spans; "
         "%zu domains (tids",
         events.len, n_span_ev, n_counter_ev, spans.len, n_tracks);
  for (size_t t = 0; t < n_tracks; t++)
    printf(" %ld", track_tid[t]);
  printf(")\n");
  printf("  wall time covered: %.3f ms (%.3f .. %.3f ms)\n",
         (t_max - t_min) / 1000, t_min / 1000, t_max / 1000);
  for (size_t t = 0; t < n_tracks; t++)
    printf("    domain %ld: %.3f ms (%.3f .. %.3f ms)\n", track_tid[t],
           (track_last[t] - track_first[t]) / 1000, track_first[t] / 1000,
           track_last[t] / 1000);
  if (truncated)
    printf("  TRUNCATED: the trace does not end with \"]}\" (the program "
           "died?); events up to the cut are reported\n");
  if (n_unknown_ph)
    printf("  %zu events of other phases ignored\n", n_unknown_ph);

  print_pauses(all_names);
  print_times();
  print_longest();
  print_long_minors();
  print_counters();
  print_lost();

  if (svg_path) {
    const char *base = strrchr(trace, '/');
    char title[512];
    snprintf(title, sizeof title, "mgc trace %s", base ? base + 1 : trace);
    struct svg_result r = write_svg(svg_path, title, width);
    printf("\nSVG timeline: %s (%zu spans drawn, %zu narrower than %.1f px "
           "not drawn, %.0f px wide)\n",
           svg_path, r.drawn, r.skipped, MIN_PX, r.width);
  }
  free(svg_path);
  return 0;
}
