/* test_events.c: runtime events, the trace file, statistics printing and
 * the log file.
 *
 * - mgc_events_read returns, for domain slot 0, well-formed events in
 *   time order: a minor collection is a "minor" span holding its three
 *   phases and its two counters; spans nest; the cursor never returns an
 *   event twice;
 * - with a tiny ring (e=64) events are lost, counted, and never torn;
 * - trace= writes a file that is a complete JSON object (ends with the
 *   otherData member) after mgc_shutdown, and also when the program ends
 *   in the fatal handler (forked child);
 * - mgc_print_stats and mgc_get_domain_stats; log= receives the v= log.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char tmpdir[] = "/tmp/mgc-events-XXXXXX";

static void churn(long n) {
  for (long i = 0; i < n; i++) {
    mgc_value b = mgc_alloc_small(3, 0);
    MGC_FIELD(b, 0) = MGC_VAL_INT(i);
    MGC_FIELD(b, 1) = MGC_VAL_INT(i);
    MGC_FIELD(b, 2) = MGC_VAL_INT(i);
  }
}

static int init_with(const char *spec) {
  mgc_params p;
  mgc_params_default(&p);
  if (spec && mgc_params_parse(&p, spec) != 0)
    return -1;
  int r = mgc_init(&p);
  if (r == 0)
    mgc_set_fatal_handler(check_fatal_handler);
  return r;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Ends with the otherData member and the closing brace. */
static int json_closed(const char *s) {
  if (!s)
    return 0;
  const char *o = strstr(s, "\"otherData\":{\"lost_events\":");
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
    n--;
  return o != NULL && n > 0 && s[n - 1] == '}' &&
         strncmp(s, "{\"traceEvents\":[", 16) == 0;
}

static void test_read(void) {
  printf("events of a minor collection\n");
  CHECK(init_with(NULL) == 0, "init");
  uint64_t cursor = 0, lost = 0;
  mgc_event buf[4096];
  (void)mgc_events_read(0, &cursor, buf, 4096, &lost); /* start fresh */
  churn(test_scale(1000));
  mgc_minor_collection();
  size_t n = mgc_events_read(0, &cursor, buf, 4096, &lost);
  CHECK(n > 0 && lost == 0, "read %zu events, %llu lost", n,
        (unsigned long long)lost);
  int depth = 0, bad_nest = 0, minor_b = 0, minor_e = 0, phases = 0,
      counters = 0, bad = 0;
  uint64_t last_t = 0;
  int open[64];
  for (size_t i = 0; i < n; i++) {
    mgc_event *e = &buf[i];
    bad += e->domain != 0 || e->name >= MGC_EVN_COUNT || e->kind < 1 ||
           e->kind > 3 || e->time_ns < last_t;
    last_t = e->time_ns;
    if (e->kind == MGC_EV_BEGIN) {
      if (depth < 64)
        open[depth] = (int)e->name;
      depth++;
      minor_b += e->name == MGC_EVN_MINOR;
      phases += depth >= 2 && (e->name == MGC_EVN_MINOR_ROOTS ||
                               e->name == MGC_EVN_MINOR_REMSET ||
                               e->name == MGC_EVN_MINOR_MOPUP);
    } else if (e->kind == MGC_EV_END) {
      depth--;
      bad_nest += depth < 0 || (depth < 64 && open[depth] != (int)e->name);
      minor_e += e->name == MGC_EVN_MINOR;
    } else {
      counters +=
          e->name == MGC_EVN_PROMOTED_WORDS || e->name == MGC_EVN_REMEMBERED;
    }
  }
  CHECK(bad == 0, "%d malformed or unordered events", bad);
  CHECK(bad_nest == 0 && depth == 0, "spans nest (%d bad, depth %d)", bad_nest,
        depth);
  CHECK(minor_b >= 1 && minor_b == minor_e, "minor spans %d/%d", minor_b,
        minor_e);
  CHECK(phases >= 3 * minor_b, "%d phase spans inside the minor ones", phases);
  CHECK(counters >= 2 * minor_b, "%d counters", counters);
  CHECK(strcmp(mgc_event_name(MGC_EVN_MINOR), "minor") == 0 &&
            strcmp(mgc_event_name(MGC_EVN_COMPACT), "compact") == 0 &&
            strcmp(mgc_event_name(9999), "unknown") == 0,
        "event names");
  size_t again = mgc_events_read(0, &cursor, buf, 4096, &lost);
  CHECK(again == 0, "nothing read twice (%zu)", again);
  mgc_value keep = mgc_alloc(1000, 0); /* a major block: heap_words > 0 */
  mgc_register_global_root(&keep);
  mgc_major_collection();
  mgc_compact();
  mgc_remove_global_root(&keep);
  n = mgc_events_read(0, &cursor, buf, 4096, &lost);
  int seen_cycle = 0, seen_compact = 0, seen_heap = 0;
  for (size_t i = 0; i < n; i++) {
    seen_cycle += buf[i].name == MGC_EVN_CYCLE_END;
    seen_compact += buf[i].name == MGC_EVN_COMPACT;
    seen_heap += buf[i].name == MGC_EVN_HEAP_WORDS && buf[i].value > 0;
  }
  CHECK(seen_cycle >= 2 && seen_compact >= 2 && seen_compact % 2 == 0 &&
            seen_heap >= 1,
        "cycle ends %d, compaction %d, heap counters %d", seen_cycle,
        seen_compact, seen_heap);
  CHECK(mgc_events_read(7, &cursor, buf, 10, &lost) == 0 &&
            mgc_events_read(-1, &cursor, buf, 10, &lost) == 0 &&
            mgc_events_read(100000, &cursor, buf, 10, &lost) == 0,
        "no events for slots without a domain or out of range");
  /* Statistics. */
  mgc_stats st, ds;
  mgc_get_stats(&st);
  CHECK(mgc_get_domain_stats(0, &ds) == 0 && ds.minor_words > 0 &&
            ds.minor_words <= st.minor_words && ds.heap_words == st.heap_words,
        "domain 0's figures");
  CHECK(mgc_get_domain_stats(5, &ds) == -1 && mgc_last_error() == MGC_EINVAL,
        "no domain in slot 5");
  char path[128];
  snprintf(path, sizeof path, "%s/stats.txt", tmpdir);
  FILE *f = fopen(path, "w");
  mgc_print_stats(f);
  fclose(f);
  char *s = slurp(path);
  CHECK(s && strstr(s, "minor_collections:") && strstr(s, "compactions:") &&
            strstr(s, "domain 0: minor_words"),
        "mgc_print_stats output:\n%s", s ? s : "(none)");
  free(s);
  mgc_shutdown();
}

static void test_lost(void) {
  printf("a ring of 64 events loses, counts, never tears\n");
  CHECK(init_with("e=64") == 0, "init e=64");
  uint64_t cursor = 0, lost = 0, total_lost = 0;
  mgc_event buf[64];
  for (int i = 0; i < 50; i++)
    mgc_minor_collection();
  size_t n = mgc_events_read(0, &cursor, buf, 64, &lost);
  total_lost += lost;
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += buf[i].kind < 1 || buf[i].kind > 3 || buf[i].name >= MGC_EVN_COUNT ||
           (i > 0 && buf[i].time_ns < buf[i - 1].time_ns);
  CHECK(n == 64 && total_lost > 0 && bad == 0,
        "read %zu, lost %llu, %d malformed", n, (unsigned long long)total_lost,
        bad);
  /* Small reads: the cursor moves on by what was returned. */
  mgc_minor_collection();
  size_t a = mgc_events_read(0, &cursor, buf, 3, &lost);
  size_t b = mgc_events_read(0, &cursor, buf, 64, &lost);
  CHECK(a == 3 && b > 0 && lost == 0, "partial reads %zu then %zu", a, b);
  mgc_shutdown();
  CHECK(init_with("e=0") == 0, "init e=0");
  mgc_minor_collection();
  cursor = 0;
  CHECK(mgc_events_read(0, &cursor, buf, 64, &lost) == 0, "e=0: no events");
  mgc_shutdown();
}

static void test_trace_and_log(void) {
  printf("trace= and log= files\n");
  char spec[512], trace[128], log[128];
  snprintf(trace, sizeof trace, "%s/t.json", tmpdir);
  snprintf(log, sizeof log, "%s/log.txt", tmpdir);
  snprintf(spec, sizeof spec, "trace=%s,log=%s,v=0x401", trace, log);
  CHECK(init_with(spec) == 0, "init %s", spec);
  churn(test_scale(100000));
  mgc_full_major();
  mgc_shutdown();
  char *s = slurp(trace);
  CHECK(json_closed(s), "the trace is a closed JSON object");
  CHECK(s && strstr(s, "\"name\":\"minor\",\"ph\":\"B\"") &&
            strstr(s, "\"name\":\"thread_name\"") &&
            strstr(s, "\"name\":\"promoted_words\",\"ph\":\"C\""),
        "the trace has spans, counters and a track name");
  free(s);
  s = slurp(log);
  CHECK(s && strstr(s, "major cycle") && strstr(s, "minor_collections:"),
        "the log file has the cycles and the exit statistics");
  free(s);
}

static void test_trace_fatal(void) {
  printf("trace= stays valid JSON when the program dies in the fatal "
         "handler\n");
  char trace[128];
  snprintf(trace, sizeof trace, "%s/fatal.json", tmpdir);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    char spec[256];
    snprintf(spec, sizeof spec, "trace=%s", trace);
    mgc_params p;
    mgc_params_default(&p);
    if (mgc_params_parse(&p, spec) != 0 || mgc_init(&p) != 0)
      _exit(2);
    churn(test_scale(100000));
    mgc_minor_collection();
    (void)mgc_cont_take(MGC_VAL_INT(3)); /* fatal: not a continuation */
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status), "the child aborted (status %d)", status);
  char *s = slurp(trace);
  CHECK(json_closed(s), "the trace of the aborted child is closed JSON");
  CHECK(s && strstr(s, "\"name\":\"minor\""), "and has its events");
  free(s);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_trace_fatal(); /* forks: before this process initialises mgc */
  test_read();
  test_lost();
  test_trace_and_log();
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0)
    printf("note: could not remove %s\n", tmpdir);
  return check_done();
}
