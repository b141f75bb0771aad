/* fuzz_params.c: libFuzzer target for mgc_params_parse on arbitrary bytes.
 *
 * The input, NUL-terminated, is parsed on top of the defaults.  Never a
 * crash; the result is MGC_OK or MGC_EINVAL; on failure the parameters are
 * untouched (all or nothing); on success every field is in its documented
 * range (params.c's limits, mgc.h's comments), the block passes the
 * library's own mgc_params_validate (what mgc_init checks), parsing the same
 * text again changes nothing, and the parameters printed back as a spec
 * parse to the same block.  mgc_init is not called: it may run once per
 * process only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgc.h"

/* Internal (src/internal.h); the target is linked with the
   library's sources. */
int mgc_params_validate(const mgc_params *p);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Field by field (not memcmp: padding, and the bytes after the trace
   path's NUL, which a shorter later trace= leaves behind, do not count). */
static int same(const mgc_params *a, const mgc_params *b) {
  return a->minor_heap_words == b->minor_heap_words &&
         a->space_overhead == b->space_overhead &&
         a->max_domains == b->max_domains && a->verbose == b->verbose &&
         a->torture_every == b->torture_every && a->verify == b->verify &&
         strcmp(a->trace_path, b->trace_path) == 0 &&
         a->custom_major_ratio == b->custom_major_ratio &&
         a->custom_minor_ratio == b->custom_minor_ratio &&
         a->custom_minor_max_size == b->custom_minor_max_size &&
         a->manual_finalisers == b->manual_finalisers &&
         a->fiber_max_words == b->fiber_max_words &&
         a->compact_overhead == b->compact_overhead &&
         a->compact_every == b->compact_every;
}

static void bad(const char *what, const char *spec) {
  fprintf(stderr, "fuzz_params: %s (spec \"%s\")\n", what, spec);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *spec = malloc(size + 1);
  mgc_params p, before, again, back;
  char text[512];
  if (!spec)
    abort();
  memcpy(spec, data, size);
  spec[size] = 0;
  mgc_params_default(&p);
  before = p;
  int r = mgc_params_parse(&p, spec);
  if (r != MGC_OK) {
    if (r != MGC_EINVAL)
      bad("error other than MGC_EINVAL", spec);
    if (!same(&p, &before))
      bad("a refused spec changed the parameters", spec);
    free(spec);
    return 0;
  }
  if (p.minor_heap_words < MGC_MAX_YOUNG_WOSIZE + 1 ||
      p.minor_heap_words > ((size_t)1 << 32))
    bad("s out of [257, 2^32]", spec);
  if (p.space_overhead < 1 || p.space_overhead > 1000000)
    bad("o out of [1, 10^6]", spec);
  if (p.max_domains < 1 || p.max_domains > 4096)
    bad("d out of [1, 4096]", spec);
  if (p.verify != 0 && p.verify != 1)
    bad("V not 0 or 1", spec);
  if (p.manual_finalisers != 0 && p.manual_finalisers != 1)
    bad("F not 0 or 1", spec);
  if (p.custom_major_ratio < 1 || p.custom_major_ratio > 1000000 ||
      p.custom_minor_ratio < 1 || p.custom_minor_ratio > 1000000)
    bad("M or m out of [1, 10^6]", spec);
  if (p.compact_overhead > 1000000)
    bad("O out of [0, 10^6]", spec);
  if (p.fiber_max_words < 16 || p.fiber_max_words > ((size_t)1 << 40))
    bad("l out of [16, 2^40]", spec);
  if (memchr(p.trace_path, 0, sizeof p.trace_path) == NULL)
    bad("trace path not NUL-terminated", spec);
  if (strchr(p.trace_path, ',') != NULL)
    bad("trace path holds a comma", spec);
  if (mgc_params_validate(&p) != 0)
    bad("accepted parameters fail mgc_params_validate", spec);
  /* Idempotent: the same assignments again. */
  again = p;
  if (mgc_params_parse(&again, spec) != MGC_OK || !same(&again, &p))
    bad("parsing the spec twice differs", spec);
  /* Printed back, parsed from the defaults: the same block. */
  snprintf(text, sizeof text,
           "s=%zu,o=%u,d=%u,v=%#x,t=%zu,V=%d,M=%u,m=%u,n=%zu,F=%d,l=%zu,"
           "O=%u,C=%zu",
           p.minor_heap_words, p.space_overhead, p.max_domains, p.verbose,
           p.torture_every, p.verify, p.custom_major_ratio,
           p.custom_minor_ratio, p.custom_minor_max_size, p.manual_finalisers,
           p.fiber_max_words, p.compact_overhead, p.compact_every);
  mgc_params_default(&back);
  if (mgc_params_parse(&back, text) != MGC_OK)
    bad("the printed parameters do not parse", text);
  /* trace= last: its value runs to the next comma. */
  if (p.trace_path[0] != 0) {
    size_t n = strlen(text);
    snprintf(text + n, sizeof text - n, ",trace=%s", p.trace_path);
    if (mgc_params_parse(&back, text + n + 1) != MGC_OK)
      bad("the printed trace path does not parse", text);
  }
  if (!same(&back, &p))
    bad("the printed parameters parse to another block", spec);
  free(spec);
  return 0;
}
