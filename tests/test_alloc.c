/* test_alloc: every allocation function and the statistics it moves.
 *
 * mgc_alloc_small, mgc_alloc (atoms, small, large), mgc_alloc_shr with
 * mgc_initialize, mgc_alloc_reserved (reserved bits through minor, major and
 * full collections), strings of many lengths, boxed doubles, double arrays,
 * custom blocks and their finalisers (young dead, young live, major dead),
 * mgc_is_young before and after promotion, the counters of mgc_get_stats
 * and the minor/major hooks.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "check.h"

static mgc_value keep[8]; /* classic global roots */

static void collect_all(void) {
  mgc_minor_collection();
  mgc_major_slice(0);
  mgc_full_major();
}

static void test_small_and_atoms(void) {
  mgc_value v, a, b;
  size_t i;

  v = mgc_alloc_small(3, 7);
  MGC_FIELD(v, 0) = MGC_VAL_INT(1);
  MGC_FIELD(v, 1) = MGC_VAL_INT(2);
  MGC_FIELD(v, 2) = MGC_VAL_INT(3);
  CHECK(MGC_IS_BLOCK(v) && v != 0, "alloc_small returns a block");
  CHECK(mgc_is_young(v), "alloc_small block is young");
  CHECK(MGC_WOSIZE_VAL(v) == 3 && MGC_TAG_VAL(v) == 7 &&
            MGC_RESERVED_HD(MGC_HD_VAL(v)) == 0,
        "alloc_small header: wosize %zu tag %u", (size_t)MGC_WOSIZE_VAL(v),
        MGC_TAG_VAL(v));
  keep[0] = v;
  mgc_minor_collection();
  v = keep[0];
  CHECK(!mgc_is_young(v), "promoted copy is not young");
  CHECK(MGC_WOSIZE_VAL(v) == 3 && MGC_TAG_VAL(v) == 7, "promoted header kept");
  CHECK(MGC_FIELD(v, 0) == MGC_VAL_INT(1) && MGC_FIELD(v, 2) == MGC_VAL_INT(3),
        "promoted fields kept");

  /* Largest small block. */
  v = mgc_alloc_small(MGC_MAX_YOUNG_WOSIZE, 0);
  for (i = 0; i < MGC_MAX_YOUNG_WOSIZE; i++)
    MGC_FIELD(v, i) = MGC_VAL_INT(i * 3);
  CHECK(mgc_is_young(v) && MGC_WOSIZE_VAL(v) == MGC_MAX_YOUNG_WOSIZE,
        "256-word alloc_small is young");
  keep[1] = v;
  collect_all();
  v = keep[1];
  for (i = 0; i < MGC_MAX_YOUNG_WOSIZE; i++)
    if (MGC_FIELD(v, i) != MGC_VAL_INT(i * 3))
      break;
  CHECK(i == MGC_MAX_YOUNG_WOSIZE, "256-word block intact (first bad %zu)", i);

  /* Atoms. */
  a = mgc_alloc(0, 0);
  b = mgc_alloc(0, 5);
  CHECK(MGC_IS_BLOCK(a) && a != 0, "atom 0 is a block");
  CHECK(MGC_WOSIZE_VAL(a) == 0 && MGC_TAG_VAL(a) == 0, "atom 0 header");
  CHECK(MGC_WOSIZE_VAL(b) == 0 && MGC_TAG_VAL(b) == 5, "atom 5 header");
  CHECK(!mgc_is_young(a) && !mgc_is_young(b), "atoms are not young");
  CHECK(mgc_alloc(0, 5) == b, "atoms are shared per tag");
  CHECK(a != b, "atoms of different tags differ");
  keep[2] = b;
  collect_all();
  CHECK(keep[2] == b, "root to atom unchanged by collections");
  CHECK(MGC_TAG_VAL(keep[2]) == 5, "atom header unchanged");

  /* mgc_alloc: small is young and unit-filled, large is major. */
  v = mgc_alloc(10, 3);
  CHECK(mgc_is_young(v), "mgc_alloc(10) is young");
  for (i = 0; i < 10; i++)
    if (MGC_FIELD(v, i) != MGC_UNIT)
      break;
  CHECK(i == 10, "mgc_alloc(10) fields start as MGC_UNIT");
  v = mgc_alloc(300, 4);
  CHECK(!mgc_is_young(v), "mgc_alloc(300) is in the major heap");
  CHECK(MGC_WOSIZE_VAL(v) == 300 && MGC_TAG_VAL(v) == 4, "large header");
  for (i = 0; i < 300; i++)
    if (MGC_FIELD(v, i) != MGC_UNIT)
      break;
  CHECK(i == 300, "mgc_alloc(300) fields start as MGC_UNIT");
  keep[3] = v;
  /* A young value stored into the large block must survive via remset. */
  {
    mgc_value y = mgc_alloc_small(1, 0);
    MGC_FIELD(y, 0) = MGC_VAL_INT(4242);
    mgc_modify(&MGC_FIELD(keep[3], 299), y);
  }
  mgc_minor_collection();
  v = keep[3];
  CHECK(MGC_IS_BLOCK(MGC_FIELD(v, 299)) && !mgc_is_young(MGC_FIELD(v, 299)),
        "young value in large block promoted");
  CHECK(MGC_FIELD(MGC_FIELD(v, 299), 0) == MGC_VAL_INT(4242),
        "young value in large block intact");
  mgc_full_major();
  CHECK(MGC_FIELD(MGC_FIELD(keep[3], 299), 0) == MGC_VAL_INT(4242),
        "large block child intact after full major");

  v = mgc_alloc(5, MGC_TAG_ABSTRACT);
  for (i = 0; i < 5; i++)
    if (MGC_FIELD(v, i) != 0)
      break;
  CHECK(i == 5, "mgc_alloc(5, Abstract) is zero-filled");
  keep[0] = keep[1] = keep[2] = keep[3] = MGC_UNIT;
  CHECK_VERIFY("after small and atoms");
}

static void test_shr(void) {
  mgc_value s, y;
  size_t i;
  s = mgc_alloc_shr(6, 2);
  CHECK(!mgc_is_young(s), "alloc_shr block is not young");
  CHECK(MGC_WOSIZE_VAL(s) == 6 && MGC_TAG_VAL(s) == 2, "alloc_shr header");
  for (i = 0; i < 6; i++)
    if (MGC_FIELD(s, i) != MGC_UNIT)
      break;
  CHECK(i == 6, "alloc_shr scanned fields start as MGC_UNIT");
  keep[0] = s;
  y = mgc_alloc_small(2, 0);
  MGC_FIELD(y, 0) = MGC_VAL_INT(77);
  MGC_FIELD(y, 1) = MGC_VAL_INT(78);
  s = keep[0];
  mgc_initialize(&MGC_FIELD(s, 0), y);
  for (i = 1; i < 6; i++)
    mgc_initialize(&MGC_FIELD(s, i), MGC_VAL_INT(i));
  mgc_minor_collection();
  s = keep[0];
  y = MGC_FIELD(s, 0);
  CHECK(MGC_IS_BLOCK(y) && !mgc_is_young(y),
        "young value set by mgc_initialize promoted");
  CHECK(MGC_FIELD(y, 0) == MGC_VAL_INT(77) &&
            MGC_FIELD(y, 1) == MGC_VAL_INT(78),
        "mgc_initialize'd child intact");
  mgc_full_major();
  s = keep[0];
  CHECK(MGC_FIELD(MGC_FIELD(s, 0), 1) == MGC_VAL_INT(78) &&
            MGC_FIELD(s, 5) == MGC_VAL_INT(5),
        "alloc_shr block intact after full major");
  keep[0] = MGC_UNIT;
}

static void test_reserved(void) {
  static const size_t sizes[] = {1, 4, 256, 257, 600};
  size_t k;
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k], i;
    unsigned r = (unsigned)(0x81 + k * 13) & 0xFF;
    mgc_value v = mgc_alloc_reserved(n, 9, r);
    CHECK(MGC_RESERVED_HD(MGC_HD_VAL(v)) == r && MGC_WOSIZE_VAL(v) == n &&
              MGC_TAG_VAL(v) == 9,
          "alloc_reserved(%zu, 9, %#x) header", n, r);
    CHECK((n <= MGC_MAX_YOUNG_WOSIZE) == (mgc_is_young(v) != 0),
          "alloc_reserved(%zu) young iff small", n);
    for (i = 0; i < n; i++)
      mgc_modify(&MGC_FIELD(v, i), MGC_VAL_INT(i + n));
    keep[0] = v;
    mgc_minor_collection();
    v = keep[0];
    CHECK(MGC_RESERVED_HD(MGC_HD_VAL(v)) == r, "reserved %#x after minor: %#x",
          r, MGC_RESERVED_HD(MGC_HD_VAL(v)));
    mgc_major_collection();
    mgc_full_major();
    v = keep[0];
    CHECK(MGC_RESERVED_HD(MGC_HD_VAL(v)) == r && MGC_WOSIZE_VAL(v) == n &&
              MGC_TAG_VAL(v) == 9,
          "reserved %#x and header after majors", r);
    for (i = 0; i < n; i++)
      if (MGC_FIELD(v, i) != MGC_VAL_INT(i + n))
        break;
    CHECK(i == n, "alloc_reserved(%zu) fields intact", n);
  }
  keep[0] = MGC_UNIT;
}

static void fill_string(mgc_value s, size_t len, unsigned seed) {
  size_t i;
  for (i = 0; i < len; i++)
    MGC_STRING_VAL(s)[i] = (char)('a' + (i * 7 + seed) % 26);
}

static int string_ok(mgc_value s, size_t len, unsigned seed) {
  size_t i;
  if (MGC_TAG_VAL(s) != MGC_TAG_STRING || mgc_string_length(s) != len)
    return 0;
  for (i = 0; i < len; i++)
    if (MGC_STRING_VAL(s)[i] != (char)('a' + (i * 7 + seed) % 26))
      return 0;
  return MGC_STRING_VAL(s)[len] == '\0';
}

static void test_strings(void) {
  static const size_t big[] = {2047, 2048, 2049, 5000, 100000};
  size_t len, k;
  mgc_value s;
  int all_ok = 1, hdr_ok = 1;

  keep[0] = mgc_alloc(41 + 5, 0);
  for (len = 0; len <= 40; len++) {
    s = mgc_alloc_string(len);
    if (!(mgc_is_young(s) && MGC_TAG_VAL(s) == MGC_TAG_STRING &&
          MGC_WOSIZE_VAL(s) == len / sizeof(mgc_value) + 1 &&
          mgc_string_length(s) == len && MGC_STRING_VAL(s)[len] == '\0'))
      hdr_ok = 0;
    fill_string(s, len, (unsigned)len);
    mgc_modify(&MGC_FIELD(keep[0], len), s);
  }
  CHECK(hdr_ok, "alloc_string(0..40): young, tag, padded wosize, length, NUL");
  for (k = 0; k < sizeof big / sizeof big[0]; k++) {
    s = mgc_alloc_string(big[k]);
    CHECK(mgc_string_length(s) == big[k] && MGC_STRING_VAL(s)[big[k]] == 0,
          "alloc_string(%zu) length and NUL", big[k]);
    CHECK((big[k] / 8 + 1 > MGC_MAX_YOUNG_WOSIZE) == !mgc_is_young(s),
          "alloc_string(%zu) young iff small", big[k]);
    fill_string(s, big[k], (unsigned)k);
    mgc_modify(&MGC_FIELD(keep[0], 41 + k), s);
  }
  s = mgc_copy_string("hello, world");
  CHECK(mgc_string_length(s) == 12 &&
            strcmp(MGC_STRING_VAL(s), "hello, world") == 0,
        "copy_string contents");
  s = mgc_copy_string("");
  CHECK(mgc_string_length(s) == 0 && MGC_STRING_VAL(s)[0] == 0,
        "copy_string(\"\")");

  mgc_minor_collection();
  for (len = 0; len <= 40; len++)
    if (!string_ok(MGC_FIELD(keep[0], len), len, (unsigned)len))
      all_ok = 0;
  CHECK(all_ok, "strings 0..40 intact after minor");
  mgc_full_major();
  all_ok = 1;
  for (len = 0; len <= 40; len++) {
    s = MGC_FIELD(keep[0], len);
    if (mgc_is_young(s) || !string_ok(s, len, (unsigned)len))
      all_ok = 0;
  }
  CHECK(all_ok, "strings 0..40 intact after full major");
  for (k = 0; k < sizeof big / sizeof big[0]; k++)
    CHECK(string_ok(MGC_FIELD(keep[0], 41 + k), big[k], (unsigned)k),
          "big string %zu intact", big[k]);
  keep[0] = MGC_UNIT;
}

static void test_doubles(void) {
  static const size_t lens[] = {1, 5, 256, 257, 1000};
  mgc_value d, a;
  size_t k, i;

  d = mgc_copy_double(3.25);
  CHECK(mgc_is_young(d) && MGC_TAG_VAL(d) == MGC_TAG_DOUBLE &&
            MGC_WOSIZE_VAL(d) == 1 && MGC_DOUBLE_VAL(d) == 3.25,
        "copy_double");
  keep[0] = d;
  keep[1] = mgc_alloc(5, 0);
  for (k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    a = mgc_alloc_double_array(lens[k]);
    CHECK(MGC_TAG_VAL(a) == MGC_TAG_DOUBLE_ARRAY &&
              MGC_WOSIZE_VAL(a) == lens[k],
          "double array %zu header", lens[k]);
    CHECK((lens[k] <= MGC_MAX_YOUNG_WOSIZE) == (mgc_is_young(a) != 0),
          "double array %zu young iff small", lens[k]);
    for (i = 0; i < lens[k]; i++)
      mgc_store_double_field(a, i, (double)i * 0.5 - (double)k);
    CHECK(MGC_DOUBLE_FIELD(a, lens[k] - 1) ==
              (double)(lens[k] - 1) * 0.5 - (double)k,
          "double array %zu read back", lens[k]);
    mgc_modify(&MGC_FIELD(keep[1], k), a);
  }
  mgc_minor_collection();
  CHECK(MGC_DOUBLE_VAL(keep[0]) == 3.25 && !mgc_is_young(keep[0]),
        "double promoted intact");
  mgc_full_major();
  CHECK(MGC_DOUBLE_VAL(keep[0]) == 3.25, "double intact after full major");
  for (k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    a = MGC_FIELD(keep[1], k);
    for (i = 0; i < lens[k]; i++)
      if (MGC_DOUBLE_FIELD(a, i) != (double)i * 0.5 - (double)k)
        break;
    CHECK(i == lens[k] && !mgc_is_young(a), "double array %zu intact", lens[k]);
  }
  keep[0] = keep[1] = MGC_UNIT;
}

static long finalised;
static long finalised_bad_data;

static void count_finalize(mgc_value v) {
  const unsigned char *p = MGC_CUSTOM_DATA(v);
  size_t i;
  finalised++;
  for (i = 0; i < 24; i++)
    if (p[i] != (unsigned char)(0x30 + i))
      finalised_bad_data++;
}

static const mgc_custom_ops count_ops = {"test.alloc.count", count_finalize};

static mgc_value new_custom(size_t bytes) {
  mgc_value c = mgc_alloc_custom(&count_ops, bytes, 0, 0);
  unsigned char *p = MGC_CUSTOM_DATA(c);
  size_t i;
  for (i = 0; i < bytes; i++)
    p[i] = (unsigned char)(0x30 + i);
  return c;
}

static int custom_ok(mgc_value c, size_t bytes) {
  const unsigned char *p = MGC_CUSTOM_DATA(c);
  size_t i;
  if (MGC_TAG_VAL(c) != MGC_TAG_CUSTOM || MGC_CUSTOM_OPS(c) != &count_ops)
    return 0;
  for (i = 0; i < bytes; i++)
    if (p[i] != (unsigned char)(0x30 + i))
      return 0;
  return 1;
}

static void test_custom(void) {
  mgc_value c;
  long before;

  /* Drain anything pending first. */
  mgc_full_major();
  finalised = 0;
  c = new_custom(24);
  CHECK(mgc_is_young(c), "small custom block is young");
  CHECK(custom_ok(c, 24), "custom ops and data");
  c = MGC_UNIT; /* dead */
  before = finalised;
  mgc_minor_collection();
  CHECK(finalised == before + 1,
        "dead young custom finalised after the minor GC (%ld)",
        finalised - before);
  CHECK(finalised_bad_data == 0, "finaliser saw the custom data intact");

  keep[0] = new_custom(40);
  before = finalised;
  mgc_minor_collection();
  CHECK(finalised == before, "live young custom not finalised");
  CHECK(!mgc_is_young(keep[0]) && custom_ok(keep[0], 40),
        "promoted custom data intact");
  mgc_full_major();
  CHECK(finalised == before && custom_ok(keep[0], 40),
        "live major custom survives full major");
  keep[0] = MGC_UNIT;
  mgc_full_major();
  CHECK(finalised == before + 1, "dead major custom finalised (%ld)",
        finalised - before);
  CHECK(finalised_bad_data == 0, "finaliser saw promoted data intact");

  /* A large custom block (more than 256 words) starts in the major heap. */
  keep[0] = new_custom(300 * sizeof(mgc_value));
  CHECK(!mgc_is_young(keep[0]), "large custom in major heap");
  before = finalised;
  mgc_minor_collection();
  mgc_full_major();
  CHECK(finalised == before && custom_ok(keep[0], 300 * sizeof(mgc_value)),
        "large custom intact");
  keep[0] = MGC_UNIT;
  mgc_full_major();
  CHECK(finalised == before + 1, "dead large custom finalised");
  CHECK_VERIFY("after custom");
}

static long minor_begin, minor_end, slice_begin, slice_end;
static void on_minor_begin(void) { minor_begin++; }
static void on_minor_end(void) { minor_end++; }
static void on_slice_begin(void) { slice_begin++; }
static void on_slice_end(void) { slice_end++; }

static void test_stats_and_hooks(void) {
  mgc_stats s0, s1;
  long i, n;
  mgc_value cur;
  uint64_t live_with, live_without;

  mgc_get_stats(&s0);
  CHECK(s0.top_heap_words > 0, "top_heap_words %llu > 0 after earlier work",
        (unsigned long long)s0.top_heap_words);
  CHECK(s0.top_heap_words >= s0.heap_words, "top_heap_words >= heap_words");

  mgc_set_minor_gc_begin_hook(on_minor_begin);
  mgc_set_minor_gc_end_hook(on_minor_end);
  mgc_set_major_slice_begin_hook(on_slice_begin);
  mgc_set_major_slice_end_hook(on_slice_end);

  mgc_get_stats(&s0);
  mgc_minor_collection();
  mgc_get_stats(&s1);
  CHECK(s1.minor_collections == s0.minor_collections + 1,
        "one mgc_minor_collection counts one (%llu -> %llu)",
        (unsigned long long)s0.minor_collections,
        (unsigned long long)s1.minor_collections);
  CHECK(minor_begin == 1 && minor_end == 1, "minor hooks called (%ld, %ld)",
        minor_begin, minor_end);
  mgc_minor_collection();
  mgc_minor_collection();
  mgc_get_stats(&s1);
  CHECK(s1.minor_collections == s0.minor_collections + 3,
        "three calls count three");
  CHECK(minor_begin == 3 && minor_end == 3, "minor hooks called 3 times");

  mgc_major_slice(0);
  CHECK(slice_begin >= 1 && slice_end >= 1 && slice_begin == slice_end,
        "major slice hooks called (%ld, %ld)", slice_begin, slice_end);

  /* minor_words and promoted_words: a list of n 2-field cells. */
  n = test_scale(200000);
  mgc_get_stats(&s0);
  keep[0] = MGC_UNIT;
  for (i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);
    MGC_FIELD(c, 1) = keep[0];
    keep[0] = c;
  }
  mgc_minor_collection();
  mgc_get_stats(&s1);
  CHECK(s1.minor_words - s0.minor_words >= (uint64_t)(2 * n),
        "minor_words grew by %llu for %ld words",
        (unsigned long long)(s1.minor_words - s0.minor_words), 2 * n);
  CHECK(s1.promoted_words - s0.promoted_words >= (uint64_t)(2 * n) &&
            s1.promoted_words - s0.promoted_words <= (uint64_t)(6 * n + 4096),
        "promoted_words grew by %llu for %ld live words",
        (unsigned long long)(s1.promoted_words - s0.promoted_words), 2 * n);

  mgc_get_stats(&s0);
  mgc_full_major();
  mgc_get_stats(&s1);
  CHECK(s1.major_collections > s0.major_collections,
        "full major counted (%llu -> %llu)",
        (unsigned long long)s0.major_collections,
        (unsigned long long)s1.major_collections);
  CHECK(s1.top_heap_words >= s1.heap_words && s1.heap_words >= (uint64_t)2 * n,
        "heap_words %llu holds the list", (unsigned long long)s1.heap_words);
  live_with = s1.live_words;
  CHECK(live_with >= (uint64_t)(2 * n), "live_words %llu >= %ld",
        (unsigned long long)live_with, 2 * n);
  CHECK(live_with <= (uint64_t)(6 * n + 100000),
        "live_words %llu not far above %ld", (unsigned long long)live_with,
        3 * n);
  for (i = n - 1, cur = keep[0]; MGC_IS_BLOCK(cur); cur = MGC_FIELD(cur, 1))
    if (MGC_FIELD(cur, 0) != MGC_VAL_INT(i--))
      break;
  CHECK(i == -1 && !MGC_IS_BLOCK(cur), "list intact after full major");
  keep[0] = MGC_UNIT;
  mgc_full_major();
  mgc_get_stats(&s1);
  live_without = s1.live_words;
  CHECK(live_without + (uint64_t)(2 * n) <= live_with,
        "live_words drops by the list: %llu -> %llu",
        (unsigned long long)live_with, (unsigned long long)live_without);

  mgc_set_minor_gc_begin_hook(NULL);
  mgc_set_minor_gc_end_hook(NULL);
  mgc_set_major_slice_begin_hook(NULL);
  mgc_set_major_slice_end_hook(NULL);
  minor_begin = minor_end = slice_begin = slice_end = 0;
  mgc_minor_collection();
  mgc_major_slice(0);
  CHECK(minor_begin == 0 && minor_end == 0 && slice_begin == 0 &&
            slice_end == 0,
        "hooks removed with NULL");
}

int main(void) {
  int r = mgc_init(NULL);
  size_t i;
  if (!CHECK(r == 0, "mgc_init -> %d", r))
    return check_done();
  mgc_set_fatal_handler(check_fatal_handler);
  for (i = 0; i < sizeof keep / sizeof keep[0]; i++) {
    keep[i] = MGC_UNIT;
    mgc_register_global_root(&keep[i]);
  }
  test_small_and_atoms();
  test_shr();
  test_reserved();
  test_strings();
  test_doubles();
  test_custom();
  test_stats_and_hooks();
  CHECK_VERIFY("end");
  for (i = 0; i < sizeof keep / sizeof keep[0]; i++)
    mgc_remove_global_root(&keep[i]);
  mgc_shutdown();
  return check_done();
}
