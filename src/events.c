/* Event tracing (trace= parameter): begin/end spans of collections written
 * as a JSON trace (Chrome trace-event format: open it in a trace viewer).
 *
 * A first version: events are appended to the file under a mutex, which is
 * cheap next to the collections they describe.  The per-domain lossy rings
 * of DESIGN §7.1 are a later step.
 */
#include "internal.h"

#include <stdio.h>

bool mgc_trace_on;
static FILE *trace_file;
static bool trace_first;
static uint64_t trace_t0;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;

void mgc_trace_open(const char *path) {
  trace_file = fopen(path, "w");
  if (!trace_file) {
    fprintf(stderr, "mgc: cannot open trace file '%s'; tracing is off\n", path);
    return;
  }
  fputs("{\"traceEvents\":[\n", trace_file);
  trace_first = true;
  trace_t0 = mgc_now_ns();
  mgc_trace_on = true;
}

static void trace_event(struct mgc_dom *d, const char *name, char phase) {
  if (!mgc_trace_on)
    return;
  uint64_t t = mgc_now_ns() - trace_t0;
  pthread_mutex_lock(&trace_lock);
  fprintf(trace_file,
          "%s{\"name\":\"%s\",\"ph\":\"%c\",\"ts\":%llu.%03u,\"pid\":1,"
          "\"tid\":%d}",
          trace_first ? "" : ",\n", name, phase, (unsigned long long)(t / 1000),
          (unsigned)(t % 1000), d->id);
  trace_first = false;
  pthread_mutex_unlock(&trace_lock);
}

void mgc_trace_begin(struct mgc_dom *d, const char *name) {
  trace_event(d, name, 'B');
}

void mgc_trace_end(struct mgc_dom *d, const char *name) {
  trace_event(d, name, 'E');
}

void mgc_trace_close(void) {
  if (!trace_file)
    return;
  fputs("\n]}\n", trace_file);
  fclose(trace_file);
  trace_file = NULL;
  mgc_trace_on = false;
}
