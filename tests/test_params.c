/* test_params: parameters and the runtime's life cycle.
 *
 * mgc_params_default values, mgc_params_parse of good specs (k/M/G suffixes
 * as powers of 1024, decimal and 0x hex, the empty spec, trace=path) and of
 * bad ones (unknown keys, bad numbers, a missing '=', out-of-range values),
 * MGC_PARAMS applied by mgc_init on top of the embedder's parameters, a bad
 * MGC_PARAMS making mgc_init fail, mgc_init twice, init/shutdown cycles with
 * real work in each, and mgc_strerror of every code.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char *saved_env;

static void save_env(void) {
  const char *e = getenv("MGC_PARAMS");
  saved_env = e != NULL ? strdup(e) : NULL;
}

static void restore_env(void) {
  if (saved_env != NULL)
    setenv("MGC_PARAMS", saved_env, 1);
  else
    unsetenv("MGC_PARAMS");
}

static void test_defaults(void) {
  mgc_params p;
  memset(&p, 0xA5, sizeof p);
  mgc_params_default(&p);
  CHECK(p.minor_heap_words == 262144, "s default %zu", p.minor_heap_words);
  CHECK(p.space_overhead == 120, "o default %u", p.space_overhead);
  CHECK(p.max_domains == 128, "d default %u", p.max_domains);
  CHECK(p.verbose == 0, "v default %u", p.verbose);
  CHECK(p.torture_every == 0, "t default %zu", p.torture_every);
  CHECK(p.verify == 0, "V default %d", p.verify);
  CHECK(p.trace_path[0] == '\0', "trace default \"%.20s\"", p.trace_path);
  CHECK(p.custom_major_ratio == 44, "M default %u", p.custom_major_ratio);
  CHECK(p.custom_minor_ratio == 100, "m default %u", p.custom_minor_ratio);
  CHECK(p.custom_minor_max_size == 70000, "n default %zu",
        p.custom_minor_max_size);
  CHECK(p.minor_pause_goal_us == 600, "P default %u", p.minor_pause_goal_us);
}

static void test_parse_good(void) {
  mgc_params p, d;
  int r;

  mgc_params_default(&d);
  mgc_params_default(&p);
  r = mgc_params_parse(&p, "");
  CHECK(r == 0, "empty spec accepted (%d)", r);
  CHECK(memcmp(&p, &d, sizeof p) == 0, "empty spec changes nothing");

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "s=256k");
  CHECK(r == 0 && p.minor_heap_words == 262144, "s=256k -> %zu (%d)",
        p.minor_heap_words, r);
  CHECK(p.space_overhead == 120 && p.max_domains == 128,
        "other fields untouched by s=");

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "s=1M");
  CHECK(r == 0 && p.minor_heap_words == 1048576, "s=1M -> %zu (%d)",
        p.minor_heap_words, r);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "t=3G");
  CHECK(r == 0 && p.torture_every == (size_t)3 << 30, "t=3G -> %zu (%d)",
        p.torture_every, r);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "t=5k");
  CHECK(r == 0 && p.torture_every == 5120, "t=5k -> %zu (%d)", p.torture_every,
        r);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "s=0x1000");
  CHECK(r == 0 && p.minor_heap_words == 4096, "s=0x1000 -> %zu (%d)",
        p.minor_heap_words, r);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "s=257");
  CHECK(r == 0 && p.minor_heap_words == 257, "s=257 (the minimum) -> %zu",
        p.minor_heap_words);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "v=0x400");
  CHECK(r == 0 && p.verbose == 0x400, "v=0x400 -> %#x (%d)", p.verbose, r);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "s=32k,o=80,d=4,v=5,t=100,V=1,M=30,m=50,n=1000");
  CHECK(r == 0, "full spec accepted (%d)", r);
  CHECK(p.minor_heap_words == 32768, "s=32k -> %zu", p.minor_heap_words);
  CHECK(p.space_overhead == 80, "o=80 -> %u", p.space_overhead);
  CHECK(p.max_domains == 4, "d=4 -> %u", p.max_domains);
  CHECK(p.verbose == 5, "v=5 -> %u", p.verbose);
  CHECK(p.torture_every == 100, "t=100 -> %zu", p.torture_every);
  CHECK(p.verify == 1, "V=1 -> %d", p.verify);
  CHECK(p.custom_major_ratio == 30, "M=30 -> %u", p.custom_major_ratio);
  CHECK(p.custom_minor_ratio == 50, "m=50 -> %u", p.custom_minor_ratio);
  CHECK(p.custom_minor_max_size == 1000, "n=1000 -> %zu",
        p.custom_minor_max_size);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "o=90,trace=/tmp/mgc-trace.json");
  CHECK(r == 0, "trace= accepted (%d)", r);
  CHECK(strcmp(p.trace_path, "/tmp/mgc-trace.json") == 0, "trace -> \"%s\"",
        p.trace_path);
  CHECK(p.space_overhead == 90, "o=90 before trace -> %u", p.space_overhead);

  /* Parsing applies on top of what is already there. */
  mgc_params_default(&p);
  p.space_overhead = 77;
  r = mgc_params_parse(&p, "d=9");
  CHECK(r == 0 && p.space_overhead == 77 && p.max_domains == 9,
        "parse on top keeps o=%u, d=%u", p.space_overhead, p.max_domains);

  mgc_params_default(&p);
  r = mgc_params_parse(&p, "P=0");
  CHECK(r == 0 && p.minor_pause_goal_us == 0, "P=0 -> %u (%d)",
        p.minor_pause_goal_us, r);
  r = mgc_params_parse(&p, "P=10000000");
  CHECK(r == 0 && p.minor_pause_goal_us == 10000000, "P=10000000 -> %u (%d)",
        p.minor_pause_goal_us, r);

  /* A later key overrides an earlier one. */
  mgc_params_default(&p);
  r = mgc_params_parse(&p, "o=50,o=60");
  CHECK(r == 0 && p.space_overhead == 60, "o=50,o=60 -> %u", p.space_overhead);
}

static void test_parse_bad(void) {
  static const char *const bad[] = {
      "x=1",   "zz=3",  "s=abc",   "s=12q",      "s",   "o",
      "=5",    "o=",    "s=-1",    "o=0",        "d=0", "s=10",
      "s=256", "s=0",   "o=1,q=2", "s=1k,o=zz",  "V=x", "d=1x",
      "t=0x",  "trace", "P=x",     "P=10000001", "P=-1"};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mgc_params p;
    int r;
    mgc_params_default(&p);
    r = mgc_params_parse(&p, bad[i]);
    CHECK(r == MGC_EINVAL, "bad spec \"%s\" rejected with MGC_EINVAL (%d)",
          bad[i], r);
  }
}

static void work_and_check(const char *where) {
  long i, n = test_scale(20000);
  long sum = 0, expect = 0;
  mgc_value list = MGC_UNIT;
  mgc_value cur;
  mgc_register_global_root(&list);
  for (i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = list;
    list = c;
    expect += i;
  }
  mgc_minor_collection();
  mgc_full_major();
  for (cur = list; MGC_IS_BLOCK(cur); cur = MGC_FIELD(cur, 1))
    sum += MGC_INT_VAL(MGC_FIELD(cur, 0));
  CHECK(sum == expect, "%s: list sum %ld, expected %ld", where, sum, expect);
  CHECK(!mgc_is_young(list), "%s: list promoted", where);
  CHECK_VERIFY(where);
  mgc_remove_global_root(&list);
}

static void test_env_params(void) {
  mgc_params p, got;
  int r;

  /* Defaults through mgc_init(NULL), without MGC_PARAMS. */
  unsetenv("MGC_PARAMS");
  r = mgc_init(NULL);
  CHECK(r == 0, "mgc_init(NULL) -> %d", r);
  if (r == 0) {
    mgc_get_params(&got);
    CHECK(got.minor_heap_words == 262144, "init(NULL) s %zu",
          got.minor_heap_words);
    CHECK(got.space_overhead == 120, "init(NULL) o %u", got.space_overhead);
    CHECK(got.max_domains == 128, "init(NULL) d %u", got.max_domains);
    CHECK(got.torture_every == 0 && got.verify == 0, "init(NULL) t/V off");
    mgc_shutdown();
  }

  /* MGC_PARAMS on top of the embedder's parameters. */
  mgc_params_default(&p);
  p.space_overhead = 80;
  p.max_domains = 8;
  p.minor_heap_words = 8192;
  setenv("MGC_PARAMS", "o=200,s=16k", 1);
  r = mgc_init(&p);
  CHECK(r == 0, "mgc_init with MGC_PARAMS -> %d", r);
  if (r == 0) {
    mgc_get_params(&got);
    CHECK(got.space_overhead == 200, "MGC_PARAMS o wins: %u",
          got.space_overhead);
    CHECK(got.minor_heap_words == 16384, "MGC_PARAMS s wins: %zu",
          got.minor_heap_words);
    CHECK(got.max_domains == 8, "embedder's d kept: %u", got.max_domains);
    work_and_check("init with MGC_PARAMS");
    mgc_shutdown();
  }

  /* A bad MGC_PARAMS makes mgc_init fail; a good one then works again. */
  setenv("MGC_PARAMS", "o=100,bogus=1", 1);
  r = mgc_init(NULL);
  CHECK(r == MGC_EINVAL, "bad MGC_PARAMS -> mgc_init %d (want %d)", r,
        MGC_EINVAL);
  if (r == 0)
    mgc_shutdown();
  setenv("MGC_PARAMS", "s=abc", 1);
  r = mgc_init(NULL);
  CHECK(r == MGC_EINVAL, "MGC_PARAMS s=abc -> mgc_init %d", r);
  if (r == 0)
    mgc_shutdown();
  restore_env();

  /* Invalid parameters given by the embedder are refused too. */
  mgc_params_default(&p);
  p.minor_heap_words = 10;
  unsetenv("MGC_PARAMS");
  r = mgc_init(&p);
  CHECK(r == MGC_EINVAL, "init with s=10 words -> %d", r);
  if (r == 0)
    mgc_shutdown();
  mgc_params_default(&p);
  p.max_domains = 0;
  r = mgc_init(&p);
  CHECK(r == MGC_EINVAL, "init with d=0 -> %d", r);
  if (r == 0)
    mgc_shutdown();
  restore_env();
}

static void test_cycles(void) {
  int round;
  int r;
  for (round = 0; round < 3; round++) {
    char where[64];
    mgc_params p;
    mgc_params_default(&p);
    p.minor_heap_words = round == 1 ? 4096 : 262144;
    r = mgc_init(&p);
    CHECK(r == 0, "cycle %d: mgc_init -> %d", round, r);
    if (r != 0)
      continue;
    mgc_set_fatal_handler(check_fatal_handler);
    r = mgc_init(NULL);
    CHECK(r == MGC_ESTATE, "cycle %d: second mgc_init -> %d (want %d)", round,
          r, MGC_ESTATE);
    snprintf(where, sizeof where, "cycle %d", round);
    work_and_check(where);
    mgc_shutdown();
  }
}

static void test_strerror(void) {
  static const int codes[] = {MGC_OK,     MGC_ENOMEM,
                              MGC_EINVAL, MGC_ETOOMANYDOMAINS,
                              MGC_ESTATE, MGC_ETHREAD};
  size_t i, j;
  for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    const char *s = mgc_strerror(codes[i]);
    CHECK(s != NULL && s[0] != '\0', "mgc_strerror(%d) non-empty", codes[i]);
    for (j = 0; j < i && s != NULL; j++) {
      const char *t = mgc_strerror(codes[j]);
      CHECK(t == NULL || strcmp(s, t) != 0,
            "mgc_strerror(%d) differs from mgc_strerror(%d)", codes[i],
            codes[j]);
    }
  }
  {
    const char *s = mgc_strerror(-12345);
    CHECK(s != NULL && s[0] != '\0', "mgc_strerror(unknown) non-empty");
  }
}

int main(void) {
  save_env();
  test_defaults();
  test_parse_good();
  test_parse_bad();
  test_strerror();
  test_env_params();
  test_cycles();
  free(saved_env);
  return check_done();
}
