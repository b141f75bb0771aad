/* harness.c: runs the benchmark programs of bench/ side by side and prints
 * one table per workload.  Each implementation (mgc and every peer built in
 * the program directory) runs N times under fork/exec, in N rounds that run
 * each implementation once (a slow stretch of a shared machine then falls
 * on all of them, not on one's runs); wall time comes from
 * clock_gettime, user+sys time and peak RSS from wait4.  Every run's stdout
 * must equal the first implementation's, and its checksum the value this
 * program computes for the workload (and BENCH.md's reference where there
 * is one): a mismatch makes the exit status non-zero.  The last stderr line
 * of an mgc program ("mgc-stats: key=value ...") gives the collector's
 * figures.  Writes results.json and pauses.svg (mgc's minor pauses, log
 * scale) to the output directory.  The OCaml peer is labelled with its
 * version (ocaml-5.3.0) when BINDIR has the file ocaml-version that
 * bench/bench.mk writes (the version on its first line).
 *
 * Usage: harness [-n RUNS] [-s] [-t SECONDS] [-d BINDIR] [-o OUTDIR]
 *                [WORKLOAD[:ARGS]]...
 * WORKLOAD is a name of the table below or a program in BINDIR; ARGS (one
 * string) replaces its default sizes.  -s: smoke sizes, one run unless -n.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Workloads and implementations                                            */
/* ------------------------------------------------------------------------ */

struct workload_def {
  const char *name;
  const char *prog;
  const char *args;
  const char *smoke_args;
};

static const struct workload_def defaults[] = {
    {"binarytrees", "binarytrees", "20", "16"},
    {"gcbench", "gcbench", "10", "1"},
    {"remset", "remset", "10000000", "1000000"},
    {"mt-binarytrees-1", "mt-binarytrees", "20 1", "16 1"},
    {"mt-binarytrees-2", "mt-binarytrees", "20 2", "16 2"},
    {"mt-binarytrees-4", "mt-binarytrees", "20 4", "16 4"},
    {"alloc", "alloc", "1000000000", "40000000"},
    {"survive", "survive", "4000000", "200000"},
    {"ephemerons", "ephemerons", "1000000", "100000"},
    {"finalisers", "finalisers", "10000000", "500000"},
    {"fibers", "fibers", "10000 1000", "2000 250"},
    {"fragment", "fragment", "2000000", "200000"},
};
#define NDEFAULTS (sizeof defaults / sizeof defaults[0])

static const struct {
  const char *label;
  const char *suffix;
} impls[] = {
    {"mgc", ""},           {"ocaml", "-ocaml"}, {"mimalloc", "-mimalloc"},
    {"malloc", "-malloc"}, {"boehm", "-boehm"},
};
#define NIMPLS (sizeof impls / sizeof impls[0])

/* The OCaml peer's label, "ocaml" and the version read_ocaml_version
   finds, in the table and in results.json. */
static char ocaml_label[48] = "ocaml";

static void read_ocaml_version(const char *bindir) {
  char path[4096], line[64];
  FILE *f;
  size_t len;
  snprintf(path, sizeof path, "%s/ocaml-version", bindir);
  f = fopen(path, "r");
  if (f == NULL)
    return;
  if (fgets(line, sizeof line, f) != NULL) {
    len = strspn(line, "0123456789abcdefghijklmnopqrstuvwxyz"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ.+~-_");
    if (len > 0)
      snprintf(ocaml_label, sizeof ocaml_label, "ocaml-%.*s", (int)len, line);
  }
  fclose(f);
}

static const char *impl_label(size_t k) {
  return strcmp(impls[k].suffix, "-ocaml") == 0 ? ocaml_label : impls[k].label;
}

/* BENCH.md's reference answers; mt-binarytrees matches on N alone. */
static const struct {
  const char *prog;
  const char *args;
  long long checksum;
} references[] = {
    {"binarytrees", "20", 306883246LL},
    {"mt-binarytrees", "20", 306883246LL},
    {"gcbench", "10", 147440398LL},
    {"remset", "10000000", 10499974437123LL},
};

enum { MAX_RUNS = 101, MAX_ARGS = 16, MAX_STATS = 32 };

struct stat_kv {
  char key[48];
  double value;
};

struct impl_result {
  const char *label;
  int present, failed;
  double wall[MAX_RUNS], cpu[MAX_RUNS];
  long rss_kib[MAX_RUNS];
  double median_wall, median_cpu, peak_rss_mib, ratio;
  struct stat_kv stats[MAX_STATS];
  int nstats;
};

struct workload {
  char name[64];
  char prog[64];
  char args[128];
  long long expected; /* computed checksum; valid when has_expected */
  int has_expected;
  long long reference; /* BENCH.md's; valid when has_reference */
  int has_reference;
  long long checksum; /* what the programs printed */
  int has_checksum;
  struct impl_result res[NIMPLS];
};

/* ------------------------------------------------------------------------ */
/* Expected checksums, computed from the workload definitions in BENCH.md   */
/* ------------------------------------------------------------------------ */

static long long tree_nodes(int depth) { return (1LL << (depth + 1)) - 1; }

static long long expect_binarytrees(long long n) {
  int max = n < 6 ? 6 : (int)n;
  long long s = tree_nodes(max + 1) + tree_nodes(max);
  for (int d = 4; d <= max; d += 2)
    s += (1LL << (max - d + 4)) * tree_nodes(d);
  return s;
}

static long long expect_gcbench(long long reps) {
  long long s = tree_nodes(18) + tree_nodes(16), per_rep = 0;
  for (int d = 4; d <= 16; d += 2)
    per_rep += 2 * (2 * tree_nodes(18) / tree_nodes(d)) * tree_nodes(d);
  return s + reps * per_rep;
}

static long long expect_remset(long long rounds) {
  enum { SLOTS = 1000000 };
  long long *a = calloc(SLOTS, sizeof *a), *b = calloc(SLOTS, sizeof *b);
  long long filled = 0, sa = 0, sb = 0;
  uint64_t x = 20240601;
  if (a == NULL || b == NULL) {
    fputs("harness: out of memory\n", stderr);
    exit(2);
  }
  for (long long r = 1; r <= rounds; r++) {
    long i;
    x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    i = (long)((x >> 16) % SLOTS);
    a[i] = r;
    b[i] = i;
  }
  for (long i = 0; i < SLOTS; i++) {
    filled += a[i] != 0;
    sa += a[i];
    sb += b[i];
  }
  free(a);
  free(b);
  return sa + 3 * sb + filled;
}

static long long expect_survive(long long rounds) {
  const long long q = 100000;
  long long s = 0;
  for (long long slot = 0; slot < q; slot++) {
    long long g = slot + q * ((q + rounds - 1 - slot) / q);
    s += 100 * g + 45;
  }
  return s;
}

/* The sum of the memo values f(k) over the lookups of live keys: which
   lookups hit does not change the value returned (ephemerons.c). */
static long long expect_ephemerons(long long steps) {
  const long long w = 10000;
  long long s = 0;
  uint64_t x = 20240601;
  for (long long i = 0; i < steps; i++) {
    uint64_t r;
    x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    r = x >> 16;
    if (r % 8 != 0) {
      long long k = i + 1 + (long long)((r >> 3) % (uint64_t)w);
      s += k * k % 1000003;
    }
  }
  return s;
}

/* Every finaliser runs once and adds its object's id, 0 .. n-1. */
static long long expect_finalisers(long long n) { return n * (n - 1) / 2; }

/* Thread i's step r produces v = (i * 31 + r * 7) mod 1000; a thread
   that has done its s steps adds sum + count + its last three values
   (fibers.c). */
static long long expect_fibers(long long t, long long s) {
  long long sum = 0;
  for (long long i = 0; i < t; i++) {
    long long h0 = 0, h1 = 0, h2 = 0;
    for (long long r = 0; r < s; r++) {
      long long v = (i * 31 + r * 7) % 1000;
      sum += v;
      h2 = h1;
      h1 = h0;
      h0 = v;
    }
    sum += s + h0 + h1 + h2;
  }
  return sum;
}

static uint64_t fragment_next(uint64_t *x) {
  *x = (*x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
  return *x >> 16;
}

static long long fragment_size(uint64_t r) {
  return r % 4 != 0 ? 2 + (long long)((r / 4) % 6)
                    : 8 + (long long)((r / 4) % 57);
}

/* fragment.c's steps replayed on block ids: slot[i] is the id of the block
   in slot i (-1 when empty), link[d] and size[d] those of block d; the
   checksum adds d + 2 link(d) + 3 link(link(d)) + sum of (d + j) for
   2 <= j < size(d) over the non-empty slots. */
static long long expect_fragment(long long n) {
  enum { ROUNDS = 5 };
  long long cap = n + n / 4 + 16, fresh = 0, s = 0;
  long long *slot = malloc((size_t)n * sizeof *slot);
  long long *link = malloc((size_t)cap * sizeof *link);
  long long *size = malloc((size_t)cap * sizeof *size);
  uint64_t x = 20240601;
  if (slot == NULL || link == NULL || size == NULL) {
    fputs("harness: out of memory\n", stderr);
    exit(2);
  }
  for (long long i = 0; i < n; i++) {
    long long t;
    size[i] = fragment_size(fragment_next(&x));
    slot[i] = fragment_next(&x) % 10 == 0 || i == 0 ? i : -1;
    t = (long long)(fragment_next(&x) % (uint64_t)(i + 1));
    while (slot[t] < 0)
      t--;
    link[i] = t; /* slot t holds block t, kept */
  }
  for (int round = 0; round < ROUNDS; round++)
    for (long long i = 0; i < n; i++) {
      long long t, d;
      if (slot[i] < 0 || fragment_next(&x) % 10 != 0)
        continue;
      d = n + fresh++;
      if (d >= cap) {
        cap *= 2;
        link = realloc(link, (size_t)cap * sizeof *link);
        size = realloc(size, (size_t)cap * sizeof *size);
        if (link == NULL || size == NULL) {
          fputs("harness: out of memory\n", stderr);
          exit(2);
        }
      }
      size[d] = fragment_size(fragment_next(&x));
      t = (long long)(fragment_next(&x) % (uint64_t)n);
      while (slot[t] < 0)
        t--;
      link[d] = slot[t];
      slot[i] = d;
    }
  for (long long i = 0; i < n; i++) {
    long long d = slot[i];
    if (d < 0)
      continue;
    s += d + 2 * link[d] + 3 * link[link[d]];
    for (long long j = 2; j < size[d]; j++)
      s += d + j;
  }
  free(slot);
  free(link);
  free(size);
  return s;
}

/* The first of the args, or dflt. */
static long long first_arg(const char *args, long long dflt) {
  char *end;
  long long v = strtoll(args, &end, 0);
  return end == args ? dflt : v;
}

/* The second of the args, or dflt. */
static long long second_arg(const char *args, long long dflt) {
  char *end;
  const char *p = args + strspn(args, " ");
  long long v;
  p += strcspn(p, " ");
  v = strtoll(p, &end, 0);
  return end == p ? dflt : v;
}

static void set_expected(struct workload *w) {
  const char *p = w->prog;
  char first[64];
  size_t len = strcspn(w->args, " ");
  w->has_expected = 1;
  if (strcmp(p, "binarytrees") == 0 || strcmp(p, "mt-binarytrees") == 0)
    w->expected = expect_binarytrees(first_arg(w->args, 20));
  else if (strcmp(p, "gcbench") == 0)
    w->expected = expect_gcbench(first_arg(w->args, 10));
  else if (strcmp(p, "remset") == 0)
    w->expected = expect_remset(first_arg(w->args, 10000000));
  else if (strcmp(p, "alloc") == 0)
    w->expected = first_arg(w->args, 1000000000) / 4;
  else if (strcmp(p, "survive") == 0)
    w->expected = expect_survive(first_arg(w->args, 4000000));
  else if (strcmp(p, "ephemerons") == 0)
    w->expected = expect_ephemerons(first_arg(w->args, 1000000));
  else if (strcmp(p, "finalisers") == 0)
    w->expected = expect_finalisers(first_arg(w->args, 10000000));
  else if (strcmp(p, "fibers") == 0)
    w->expected =
        expect_fibers(first_arg(w->args, 10000), second_arg(w->args, 1000));
  else if (strcmp(p, "fragment") == 0)
    w->expected = expect_fragment(first_arg(w->args, 2000000));
  else
    w->has_expected = 0;
  if (len >= sizeof first)
    len = sizeof first - 1;
  memcpy(first, w->args, len);
  first[len] = '\0';
  for (size_t i = 0; i < sizeof references / sizeof references[0]; i++)
    if (strcmp(references[i].prog, p) == 0 &&
        strcmp(references[i].args, first) == 0) {
      w->has_reference = 1;
      w->reference = references[i].checksum;
    }
}

/* ------------------------------------------------------------------------ */
/* Running one program                                                      */
/* ------------------------------------------------------------------------ */

struct run {
  int ok;
  double wall, cpu;
  long rss_kib;
  char *out, *err;
};

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (f == NULL)
    return strdup("");
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (buf == NULL) {
    fclose(f);
    return strdup("");
  }
  n = (long)fread(buf, 1, (size_t)n, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

/* Runs path with the space-separated args; stdout and stderr go to files
   in outdir.  timeout > 0 arms an alarm that execve keeps. */
static struct run run_program(const char *path, const char *args,
                              const char *outdir, unsigned timeout) {
  struct run r = {0, 0, 0, 0, NULL, NULL};
  char out_path[4096], err_path[4096], argbuf[128], *argv[MAX_ARGS + 2];
  int argc = 0, status;
  struct rusage ru;
  double t0;
  pid_t pid;
  snprintf(out_path, sizeof out_path, "%s/run.out", outdir);
  snprintf(err_path, sizeof err_path, "%s/run.err", outdir);
  snprintf(argbuf, sizeof argbuf, "%s", args);
  argv[argc++] = (char *)path;
  for (char *tok = strtok(argbuf, " "); tok != NULL && argc <= MAX_ARGS;
       tok = strtok(NULL, " "))
    argv[argc++] = tok;
  argv[argc] = NULL;
  fflush(NULL);
  t0 = now_s();
  pid = fork();
  if (pid < 0) {
    perror("harness: fork");
    exit(2);
  }
  if (pid == 0) {
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
      _exit(126);
    close(fo);
    close(fe);
    if (timeout > 0)
      alarm(timeout);
    execv(path, argv);
    fprintf(stderr, "harness: cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
  }
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) {
      perror("harness: wait4");
      exit(2);
    }
  r.wall = now_s() - t0;
  r.cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
  r.rss_kib = ru.ru_maxrss;
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    r.ok = 1;
  else if (WIFSIGNALED(status))
    fprintf(stderr, "harness: %s %s killed by signal %d%s\n", path, args,
            WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
  else
    fprintf(stderr, "harness: %s %s exited with status %d\n", path, args,
            WEXITSTATUS(status));
  return r;
}

/* The value of the last "checksum: N" line of out; 0 when none. */
static int parse_checksum(const char *out, long long *v) {
  const char *p = out, *last = NULL;
  while ((p = strstr(p, "checksum: ")) != NULL) {
    if (p == out || p[-1] == '\n')
      last = p;
    p++;
  }
  if (last == NULL)
    return 0;
  *v = strtoll(last + strlen("checksum: "), NULL, 10);
  return 1;
}

/* Parses the last line of err when it is an mgc-stats line. */
static int parse_stats(const char *err, struct impl_result *res) {
  size_t n = strlen(err);
  const char *line;
  char buf[2048], *save = NULL;
  while (n > 0 && err[n - 1] == '\n')
    n--;
  line = err + n;
  while (line > err && line[-1] != '\n')
    line--;
  if (strncmp(line, "mgc-stats:", 10) != 0)
    return 0;
  n = (size_t)(err + n - line);
  if (n >= sizeof buf)
    n = sizeof buf - 1;
  memcpy(buf, line + 10, n - 10);
  buf[n - 10] = '\0';
  res->nstats = 0;
  for (char *tok = strtok_r(buf, " ", &save); tok != NULL;
       tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    struct stat_kv *kv;
    if (eq == NULL || res->nstats == MAX_STATS)
      continue;
    *eq = '\0';
    kv = &res->stats[res->nstats++];
    snprintf(kv->key, sizeof kv->key, "%s", tok);
    kv->value = strtod(eq + 1, NULL);
  }
  return 1;
}

static double stat_get(const struct impl_result *res, const char *key) {
  for (int i = 0; i < res->nstats; i++)
    if (strcmp(res->stats[i].key, key) == 0)
      return res->stats[i].value;
  return NAN;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  double s[MAX_RUNS];
  memcpy(s, v, (size_t)n * sizeof *v);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ------------------------------------------------------------------------ */
/* One workload                                                             */
/* ------------------------------------------------------------------------ */

static int failures;

static void fail(const struct workload *w, const char *impl, const char *msg,
                 const struct run *r) {
  const char *tail = r->err + strlen(r->err);
  int lines = 0;
  while (tail > r->err && lines < 6)
    if (*--tail == '\n')
      lines++;
  fprintf(stderr, "FAIL %s %s (%s): %s\n%s", w->name, impl, w->args, msg, tail);
  if (*tail != '\0' && tail[strlen(tail) - 1] != '\n')
    fputc('\n', stderr);
  failures++;
}

/* The runs go in rounds, each implementation once per round, so that a
   slow stretch of a shared machine falls on every implementation alike
   rather than on the runs of one. */
static void run_workload(struct workload *w, const char *bindir,
                         const char *outdir, int runs, unsigned timeout) {
  char *first_out = NULL;
  int first = 1;
  static char paths[NIMPLS][4096];
  static char *errs[NIMPLS][MAX_RUNS];
  for (size_t k = 0; k < NIMPLS; k++) {
    struct impl_result *res = &w->res[k];
    res->label = impl_label(k);
    snprintf(paths[k], sizeof paths[k], "%s/%s%s", bindir, w->prog,
             impls[k].suffix);
    res->present = access(paths[k], X_OK) == 0;
    if (!res->present && k == 0) {
      fprintf(stderr, "FAIL %s: no mgc program %s\n", w->name, paths[k]);
      failures++;
    }
    for (int i = 0; i < runs; i++)
      errs[k][i] = NULL;
  }
  for (int i = 0; i < runs; i++)
    for (size_t k = 0; k < NIMPLS; k++) {
      struct impl_result *res = &w->res[k];
      if (!res->present)
        continue;
      struct run r = run_program(paths[k], w->args, outdir, timeout);
      long long sum;
      res->wall[i] = r.wall;
      res->cpu[i] = r.cpu;
      res->rss_kib[i] = r.rss_kib;
      if (!r.ok) {
        fail(w, res->label, "run failed", &r);
        res->failed = 1;
      } else if (!parse_checksum(r.out, &sum)) {
        fail(w, res->label, "no checksum line", &r);
        res->failed = 1;
      } else {
        char msg[256];
        if (first) {
          first = 0;
          first_out = strdup(r.out);
          w->checksum = sum;
          w->has_checksum = 1;
        } else if (strcmp(first_out, r.out) != 0) {
          snprintf(msg, sizeof msg,
                   "stdout differs from the first implementation's"
                   " (checksum %lld vs %lld)",
                   sum, w->checksum);
          fail(w, res->label, msg, &r);
          res->failed = 1;
        }
        if (w->has_expected && sum != w->expected) {
          snprintf(msg, sizeof msg, "checksum %lld, expected %lld", sum,
                   w->expected);
          fail(w, res->label, msg, &r);
          res->failed = 1;
        }
        if (w->has_reference && sum != w->reference) {
          snprintf(msg, sizeof msg, "checksum %lld, BENCH.md says %lld", sum,
                   w->reference);
          fail(w, res->label, msg, &r);
          res->failed = 1;
        }
      }
      if (k == 0 && r.ok && !parse_stats(r.err, res)) {
        fail(w, res->label, "no mgc-stats line last on stderr", &r);
        res->failed = 1;
      }
      free(r.out);
      errs[k][i] = r.err;
    }
  for (size_t k = 0; k < NIMPLS; k++) {
    struct impl_result *res = &w->res[k];
    if (!res->present)
      continue;
    int mid = 0;
    res->median_wall = median(res->wall, runs);
    /* mgc figures: those of the run whose wall time is nearest the median. */
    for (int i = 1; i < runs; i++)
      if (fabs(res->wall[i] - res->median_wall) <
          fabs(res->wall[mid] - res->median_wall))
        mid = i;
    if (k == 0)
      parse_stats(errs[k][mid], res);
    for (int i = 0; i < runs; i++)
      free(errs[k][i]);
    res->median_cpu = median(res->cpu, runs);
    res->peak_rss_mib = 0;
    for (int i = 0; i < runs; i++)
      if (res->rss_kib[i] / 1024.0 > res->peak_rss_mib)
        res->peak_rss_mib = res->rss_kib[i] / 1024.0;
  }
  free(first_out);
}

/* Ratio of each implementation's median to the fastest peer's. */
static void set_ratios(struct workload *w) {
  double best = 0;
  for (size_t k = 1; k < NIMPLS; k++)
    if (w->res[k].present && !w->res[k].failed &&
        (best == 0 || w->res[k].median_wall < best))
      best = w->res[k].median_wall;
  for (size_t k = 0; k < NIMPLS; k++)
    w->res[k].ratio = best > 0 ? w->res[k].median_wall / best : NAN;
}

static void print_table(const struct workload *w) {
  printf("\n== %s: %s %s", w->name, w->prog, w->args);
  if (w->has_checksum)
    printf("  (checksum %lld%s)", w->checksum,
           w->has_reference ? ", = BENCH.md reference" : "");
  printf(" ==\n");
  printf("%-12s %8s %9s %8s %9s\n", "impl", "wall s", "user+sys", "RSS MiB",
         "vs peer");
  for (size_t k = 0; k < NIMPLS; k++) {
    const struct impl_result *res = &w->res[k];
    if (!res->present)
      continue;
    printf("%-12s %8.3f %9.3f %8.1f ", res->label, res->median_wall,
           res->median_cpu, res->peak_rss_mib);
    if (isnan(res->ratio))
      printf("%9s", "-");
    else
      printf("%8.2fx", res->ratio);
    printf("%s\n", res->failed ? "  FAILED" : "");
  }
  if (w->res[0].present && w->res[0].nstats > 0) {
    const struct impl_result *m = &w->res[0];
    printf("mgc: minor %.0f, major %.0f, promoted %.0f words;"
           " minor pause p50 %.1f us, p99 %.1f us, max %.1f us;"
           " STW latency p99 %.1f us\n",
           stat_get(m, "minor_collections"), stat_get(m, "major_collections"),
           stat_get(m, "promoted_words"), stat_get(m, "minor_pause_p50_us"),
           stat_get(m, "minor_pause_p99_us"), stat_get(m, "minor_pause_max_us"),
           stat_get(m, "stw_latency_p99_us"));
  }
  fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* Machine, JSON and SVG                                                    */
/* ------------------------------------------------------------------------ */

static char cpu_model[256] = "unknown";
static int cpu_count;

static void read_machine(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  int found = 0;
  cpu_count = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f) != NULL)
    if (!found && strncmp(line, "model name", 10) == 0) {
      char *p = strchr(line, ':');
      if (p != NULL) {
        p += 1 + strspn(p + 1, " \t");
        p[strcspn(p, "\n")] = '\0';
        snprintf(cpu_model, sizeof cpu_model, "%s", p);
        found = 1;
      }
    }
  fclose(f);
}

/* The machine's own stalls: a thread that only reads the clock, alone on
   an otherwise idle machine, sees a gap wherever it was not running (the
   hypervisor ran another guest on this vCPU, or the kernel ran something
   else).  A collector pause that meets such a gap is longer by as much, so
   the longest minor pauses in the tables cannot be read below these. */
static double stall_max_ms, stall_seconds;
static int stall_count;

static void probe_stalls(double seconds) {
  double start = now_s(), last = start, t;
  stall_seconds = seconds;
  while ((t = now_s()) - start < seconds) {
    double gap = t - last;
    if (gap > 1e-3)
      stall_count++;
    if (gap * 1e3 > stall_max_ms)
      stall_max_ms = gap * 1e3;
    last = t;
  }
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void json_number(FILE *f, double v) {
  if (isnan(v) || isinf(v))
    fputs("null", f);
  else
    fprintf(f, "%.6g", v);
}

static void write_json(const char *path, struct workload *ws, int nw, int runs,
                       int smoke) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    failures++;
    return;
  }
  fprintf(f, "{\n  \"machine\": {\"cpu\": ");
  json_string(f, cpu_model);
  fprintf(f, ", \"cores\": %d, \"stall_probe_s\": ", cpu_count);
  json_number(f, stall_seconds);
  fprintf(f, ", \"stalls_over_1ms\": %d, \"stall_max_ms\": ", stall_count);
  json_number(f, stall_max_ms);
  fprintf(f, "},\n  \"runs\": %d,\n  \"smoke\": %s,\n", runs,
          smoke ? "true" : "false");
  fprintf(f, "  \"workloads\": [\n");
  for (int i = 0; i < nw; i++) {
    struct workload *w = &ws[i];
    int firstimpl = 1;
    fprintf(f, "    {\"name\": ");
    json_string(f, w->name);
    fprintf(f, ", \"program\": ");
    json_string(f, w->prog);
    fprintf(f, ", \"args\": ");
    json_string(f, w->args);
    fprintf(f, ", \"checksum\": ");
    if (w->has_checksum)
      fprintf(f, "%lld", w->checksum);
    else
      fputs("null", f);
    fprintf(f, ",\n     \"implementations\": [\n");
    for (size_t k = 0; k < NIMPLS; k++) {
      struct impl_result *r = &w->res[k];
      if (!r->present)
        continue;
      fprintf(f, "%s      {\"name\": ", firstimpl ? "" : ",\n");
      firstimpl = 0;
      json_string(f, r->label);
      fprintf(
          f, ", \"ok\": %s, \"median_wall_s\": ", r->failed ? "false" : "true");
      json_number(f, r->median_wall);
      fprintf(f, ", \"median_user_sys_s\": ");
      json_number(f, r->median_cpu);
      fprintf(f, ", \"peak_rss_mib\": ");
      json_number(f, r->peak_rss_mib);
      fprintf(f, ", \"ratio_to_fastest_peer\": ");
      json_number(f, r->ratio);
      fprintf(f, ",\n       \"wall_s\": [");
      for (int j = 0; j < runs; j++) {
        fprintf(f, "%s", j ? ", " : "");
        json_number(f, r->wall[j]);
      }
      fprintf(f, "], \"user_sys_s\": [");
      for (int j = 0; j < runs; j++) {
        fprintf(f, "%s", j ? ", " : "");
        json_number(f, r->cpu[j]);
      }
      fprintf(f, "], \"rss_kib\": [");
      for (int j = 0; j < runs; j++)
        fprintf(f, "%s%ld", j ? ", " : "", r->rss_kib[j]);
      fprintf(f, "]");
      if (r->nstats > 0) {
        fprintf(f, ",\n       \"mgc_stats\": {");
        for (int j = 0; j < r->nstats; j++) {
          fprintf(f, "%s", j ? ", " : "");
          json_string(f, r->stats[j].key);
          fputs(": ", f);
          json_number(f, r->stats[j].value);
        }
        fprintf(f, "}");
      }
      fprintf(f, "}");
    }
    fprintf(f, "\n     ]}%s\n", i + 1 < nw ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
}

/* A grouped bar chart, one group per workload with mgc figures: minor pause
   p50, p99 and max, on a log scale in microseconds. */
static void write_svg(const char *path, struct workload *ws, int nw) {
  static const char *keys[3] = {"minor_pause_p50_us", "minor_pause_p99_us",
                                "minor_pause_max_us"};
  static const char *names[3] = {"p50", "p99", "max"};
  static const char *colours[3] = {"#4e79a7", "#f28e2b", "#e15759"};
  const int left = 70, top = 50, plot_h = 300, group_w = 120, bar_w = 28;
  int groups = 0, width, decades;
  double hi = 1;
  FILE *f;
  for (int i = 0; i < nw; i++)
    if (ws[i].res[0].nstats > 0) {
      groups++;
      for (int j = 0; j < 3; j++) {
        double v = stat_get(&ws[i].res[0], keys[j]);
        if (!isnan(v) && v > hi)
          hi = v;
      }
    }
  decades = (int)ceil(log10(hi));
  if (decades < 1)
    decades = 1;
  width = left + (groups > 0 ? groups : 1) * group_w + 30;
  f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    failures++;
    return;
  }
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n",
          width, top + plot_h + 90);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f,
          "<text x=\"%d\" y=\"22\" font-size=\"14\">mgc minor collection "
          "pauses (microseconds, log scale)</text>\n",
          left);
  fprintf(f, "<text x=\"%d\" y=\"38\" fill=\"#555\">%s, %d cores</text>\n",
          left, cpu_model, cpu_count);
  /* Decade grid lines from 10^-1 us (0.1 us) up. */
  for (int d = -1; d <= decades; d++) {
    double y = top + plot_h - (d + 1) * (double)plot_h / (decades + 1);
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/>\n",
            left, y, width - 20, y);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
            left - 6, y + 4, pow(10, d));
  }
  for (int i = 0, g = 0; i < nw; i++) {
    const struct impl_result *m = &ws[i].res[0];
    int x0;
    if (m->nstats == 0)
      continue;
    x0 = left + g++ * group_w + 12;
    for (int j = 0; j < 3; j++) {
      double v = stat_get(m, keys[j]), h;
      if (isnan(v))
        continue;
      h = v > 0.1 ? (log10(v) + 1) * plot_h / (decades + 1) : 0;
      fprintf(f,
              "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
              "fill=\"%s\"><title>%s %s: %.1f us</title></rect>\n",
              x0 + j * (bar_w + 4), top + plot_h - h, bar_w, h, colours[j],
              ws[i].name, names[j], v);
      fprintf(f,
              "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\" "
              "font-size=\"9\">%.3g</text>\n",
              x0 + j * (bar_w + 4) + bar_w / 2, top + plot_h - h - 3, v);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
            x0 + (3 * bar_w + 8) / 2, top + plot_h + 16, ws[i].name);
  }
  fprintf(f,
          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
          left, top + plot_h, width - 20, top + plot_h);
  for (int j = 0; j < 3; j++) {
    int x = left + j * 90;
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
            "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
            x, top + plot_h + 40, colours[j], x + 16, top + plot_h + 50,
            names[j]);
  }
  if (groups == 0)
    fprintf(f, "<text x=\"%d\" y=\"%d\">no mgc figures</text>\n", left,
            top + plot_h / 2);
  fprintf(f, "</svg>\n");
  fclose(f);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [-n RUNS] [-s] [-t SECONDS] [-d BINDIR] [-o OUTDIR]"
          " [WORKLOAD[:ARGS]]...\n  -n runs per implementation (default 5,"
          " 1 with -s)\n  -s smoke sizes\n  -t kill a run after SECONDS\n"
          "  -d where the programs are (default build/bench)\n"
          "  -o where results.json and pauses.svg go (default: BINDIR)\n"
          "workloads:",
          argv0);
  for (size_t i = 0; i < NDEFAULTS; i++)
    fprintf(stderr, " %s", defaults[i].name);
  fprintf(stderr, "\n");
  exit(2);
}

/* Fills w from an operand NAME[:ARGS]. */
static void parse_operand(struct workload *w, const char *op, int smoke) {
  const char *colon = strchr(op, ':');
  size_t len = colon ? (size_t)(colon - op) : strlen(op);
  const struct workload_def *def = NULL;
  memset(w, 0, sizeof *w);
  snprintf(w->name, sizeof w->name, "%.*s", (int)len, op);
  for (size_t i = 0; i < NDEFAULTS; i++)
    if (strcmp(defaults[i].name, w->name) == 0)
      def = &defaults[i];
  if (def == NULL)
    for (size_t i = 0; i < NDEFAULTS; i++)
      if (strcmp(defaults[i].prog, w->name) == 0) {
        def = &defaults[i];
        break;
      }
  snprintf(w->prog, sizeof w->prog, "%s", def ? def->prog : w->name);
  snprintf(w->args, sizeof w->args, "%s",
           colon ? colon + 1
           : def ? (smoke ? def->smoke_args : def->args)
                 : "");
  set_expected(w);
}

int main(int argc, char **argv) {
  const char *bindir = "build/bench", *outdir = NULL;
  int runs = 0, smoke = 0, opt, nw;
  unsigned timeout = 0;
  struct workload *ws;
  char path[4096];
  while ((opt = getopt(argc, argv, "n:st:d:o:h")) != -1) {
    switch (opt) {
    case 'n':
      runs = atoi(optarg);
      break;
    case 's':
      smoke = 1;
      break;
    case 't':
      timeout = (unsigned)atoi(optarg);
      break;
    case 'd':
      bindir = optarg;
      break;
    case 'o':
      outdir = optarg;
      break;
    default:
      usage(argv[0]);
    }
  }
  if (runs == 0)
    runs = smoke ? 1 : 5;
  if (runs < 1 || runs > MAX_RUNS)
    usage(argv[0]);
  if (outdir == NULL)
    outdir = bindir;
  mkdir(outdir, 0755);
  nw = optind < argc ? argc - optind : (int)NDEFAULTS;
  ws = calloc((size_t)nw, sizeof *ws);
  if (ws == NULL)
    return 2;
  for (int i = 0; i < nw; i++)
    parse_operand(&ws[i], optind < argc ? argv[optind + i] : defaults[i].name,
                  smoke);
  read_machine();
  read_ocaml_version(bindir);
  printf("machine: %s, %d cores\n", cpu_model, cpu_count);
  probe_stalls(smoke ? 0.5 : 3.0);
  printf("machine stalls: a thread reading the clock for %.1f s saw %d gaps"
         " over 1 ms (%.1f/s), the longest %.2f ms\n",
         stall_seconds, stall_count, stall_count / stall_seconds, stall_max_ms);
  printf("runs: %d per implementation%s; wall and user+sys are medians,"
         " RSS the peak\n",
         runs, smoke ? " (smoke sizes)" : "");
  for (size_t k = 1; k < NIMPLS; k++) {
    int any = 0;
    for (int i = 0; i < nw && !any; i++) {
      snprintf(path, sizeof path, "%s/%s%s", bindir, ws[i].prog,
               impls[k].suffix);
      any = access(path, X_OK) == 0;
    }
    if (!any)
      printf("peer %s: not built (see make bench-build)\n", impl_label(k));
  }
  for (int i = 0; i < nw; i++) {
    run_workload(&ws[i], bindir, outdir, runs, timeout);
    set_ratios(&ws[i]);
    print_table(&ws[i]);
  }
  snprintf(path, sizeof path, "%s/run.out", outdir);
  unlink(path);
  snprintf(path, sizeof path, "%s/run.err", outdir);
  unlink(path);
  snprintf(path, sizeof path, "%s/results.json", outdir);
  write_json(path, ws, nw, runs, smoke);
  printf("\nwrote %s", path);
  snprintf(path, sizeof path, "%s/pauses.svg", outdir);
  write_svg(path, ws, nw);
  printf(" and %s\n", path);
  if (failures > 0)
    printf("%d FAILURES\n", failures);
  else
    printf("all checksums agree\n");
  free(ws);
  return failures > 0;
}
