/* test_errors_weak: misuse of the finaliser and ephemeron calls is
 * reported, never silent.
 *
 * The header's "Finalisers" section says v must be a block of the heap
 * (not an immediate, an atom or a static block), not a Lazy, Forcing or
 * Forward block (the collector may short-circuit them), with a non-NULL
 * function; its "Weak values" section says that a call given something
 * that is not an ephemeron, an index out of range, or a size of 0 or
 * beyond MGC_EPHE_MAX_KEYS goes to the fatal handler with a message naming
 * the call.
 *
 * Each case runs in a forked child (the pattern of tests/test_errors.c)
 * that initialises mgc, installs a fatal handler writing the message to a
 * file, then commits the misuse.  The parent checks that the child died
 * by SIGABRT (the library aborts after the handler returns), never by
 * SIGSEGV or another crash, never returned from the misuse, and that the
 * message names the call and the problem.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define EXIT_RETURNED 3 /* the misuse returned: silent */
#define EXIT_SETUP 90   /* the child could not get ready */

static int msg_fd = -1;

static void write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR)
        continue;
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

static void fatal_to_file(const char *msg) {
  if (msg != NULL)
    write_all(msg_fd, msg, strlen(msg));
  write_all(msg_fd, "\n", 1);
}

/* ------------------------------------------------------------------------ */
/* Values to misuse                                                         */
/* ------------------------------------------------------------------------ */

static mgc_value root, root2; /* classic global roots */

static void ignore_first(mgc_value v, void *data) {
  (void)v;
  (void)data;
}

static void ignore_last(void *data) { (void)data; }

/* A young block (tag 0) of 2 fields. */
static mgc_value young_block(void) {
  mgc_value v = mgc_alloc_small(2, 0);
  MGC_FIELD(v, 0) = MGC_VAL_INT(1);
  MGC_FIELD(v, 1) = MGC_VAL_INT(2);
  return v;
}

/* An ordinary block in the major heap (promoted). */
static mgc_value old_block(void) {
  root = young_block();
  mgc_minor_collection();
  if (mgc_is_young(root))
    _exit(EXIT_SETUP);
  return root;
}

static mgc_value young_tagged(unsigned tag) {
  mgc_value v = mgc_alloc_small(1, tag);
  MGC_FIELD(v, 0) = MGC_VAL_INT(7);
  return v;
}

static mgc_value old_tagged(unsigned tag) {
  root = young_tagged(tag);
  mgc_minor_collection();
  if (mgc_is_young(root) || MGC_TAG_VAL(root) != tag)
    _exit(EXIT_SETUP);
  return root;
}

/* An old Forward block: a Lazy moved to Forcing, then Forward. */
static mgc_value old_forward(void) {
  mgc_value v = old_tagged(MGC_TAG_LAZY);
  if (!mgc_obj_update_tag(v, MGC_TAG_LAZY, MGC_TAG_FORCING) ||
      !mgc_obj_update_tag(v, MGC_TAG_FORCING, MGC_TAG_FORWARD))
    _exit(EXIT_SETUP);
  return v;
}

/* The ephemeron and weak array of the out-of-range cases, rooted. */
static mgc_value ephe2(void) {
  root = mgc_ephe_create(2);
  if (mgc_ephe_num_keys(root) != 2)
    _exit(EXIT_SETUP);
  return root;
}

static mgc_value weak3(void) {
  root = mgc_weak_create(3);
  if (mgc_weak_length(root) != 3)
    _exit(EXIT_SETUP);
  return root;
}

/* ------------------------------------------------------------------------ */
/* The misuses.  Each returns only if the library stayed silent.            */
/* ------------------------------------------------------------------------ */

static void fin_int(void) { mgc_finalise(MGC_VAL_INT(3), ignore_first, NULL); }
static void fin_atom(void) {
  mgc_finalise(mgc_alloc(0, 0), ignore_first, NULL);
}
static void fin_lazy(void) {
  mgc_finalise(young_tagged(MGC_TAG_LAZY), ignore_first, NULL);
}
static void fin_old_lazy(void) {
  mgc_finalise(old_tagged(MGC_TAG_LAZY), ignore_first, NULL);
}
static void fin_forcing(void) {
  mgc_finalise(young_tagged(MGC_TAG_FORCING), ignore_first, NULL);
}
static void fin_forward(void) {
  mgc_finalise(young_tagged(MGC_TAG_FORWARD), ignore_first, NULL);
}
static void fin_old_forward(void) {
  mgc_finalise(old_forward(), ignore_first, NULL);
}
static void fin_null(void) { mgc_finalise(young_block(), NULL, NULL); }
static void fin_null_old(void) { mgc_finalise(old_block(), NULL, NULL); }

static void last_int(void) {
  mgc_finalise_last(MGC_VAL_INT(3), ignore_last, NULL);
}
static void last_atom(void) {
  mgc_finalise_last(mgc_alloc(0, 0), ignore_last, NULL);
}
static void last_lazy(void) {
  mgc_finalise_last(young_tagged(MGC_TAG_LAZY), ignore_last, NULL);
}
static void last_old_lazy(void) {
  mgc_finalise_last(old_tagged(MGC_TAG_LAZY), ignore_last, NULL);
}
static void last_forcing(void) {
  mgc_finalise_last(young_tagged(MGC_TAG_FORCING), ignore_last, NULL);
}
static void last_forward(void) {
  mgc_finalise_last(young_tagged(MGC_TAG_FORWARD), ignore_last, NULL);
}
static void last_old_forward(void) {
  mgc_finalise_last(old_forward(), ignore_last, NULL);
}
static void last_null(void) { mgc_finalise_last(young_block(), NULL, NULL); }

static void get_key_int(void) {
  (void)mgc_ephe_get_key(MGC_VAL_INT(5), 0, NULL);
}
static void get_key_young(void) {
  (void)mgc_ephe_get_key(young_block(), 0, NULL);
}
static void get_key_old(void) { (void)mgc_ephe_get_key(old_block(), 0, NULL); }
static void get_key_string(void) {
  root = mgc_copy_string("not an ephemeron");
  (void)mgc_ephe_get_key(root, 0, NULL);
}
static void weak_get_int(void) { (void)mgc_weak_get(MGC_VAL_INT(5), 0, NULL); }
static void weak_length_block(void) { (void)mgc_weak_length(old_block()); }

static void set_key_range(void) {
  mgc_value e = ephe2();
  mgc_ephe_set_key(e, 2, MGC_VAL_INT(1));
}
static void get_key_range(void) { (void)mgc_ephe_get_key(ephe2(), 2, NULL); }
static void get_key_huge(void) {
  (void)mgc_ephe_get_key(ephe2(), (size_t)-1, NULL);
}
static void check_key_range(void) { (void)mgc_ephe_check_key(ephe2(), 2); }
static void unset_key_range(void) { mgc_ephe_unset_key(ephe2(), 2); }
static void weak_get_range(void) { (void)mgc_weak_get(weak3(), 3, NULL); }
static void weak_set_range(void) {
  mgc_value w = weak3();
  mgc_weak_set(w, 3, MGC_VAL_INT(1));
}
static void weak_check_range(void) { (void)mgc_weak_check(weak3(), 3); }
static void weak_unset_range(void) { mgc_weak_unset(weak3(), 7); }

static void ephe_create_0(void) { (void)mgc_ephe_create(0); }
static void weak_create_0(void) { (void)mgc_weak_create(0); }
static void ephe_create_max(void) {
  (void)mgc_ephe_create((size_t)MGC_EPHE_MAX_KEYS + 1);
}
static void weak_create_max(void) {
  (void)mgc_weak_create((size_t)MGC_EPHE_MAX_KEYS + 1);
}

static void blit_src_range(void) {
  mgc_value e3 = mgc_ephe_create(3);
  root2 = e3;
  /* 3 keys from index 1 of a 2-key ephemeron. */
  mgc_ephe_blit_keys(ephe2(), 1, root2, 0, 3);
}
static void blit_dst_range(void) {
  mgc_value e3 = mgc_ephe_create(3);
  root2 = e3;
  /* 2 keys to index 2 of a 3-key ephemeron. */
  mgc_ephe_blit_keys(ephe2(), 0, root2, 2, 2);
}
static void blit_start_beyond(void) {
  mgc_value e = ephe2();
  mgc_ephe_blit_keys(e, 3, e, 0, 0);
}
static void blit_len_wrap(void) {
  mgc_value e = ephe2();
  /* si + len wraps around: must not pass as in bounds. */
  mgc_ephe_blit_keys(e, 1, e, 0, (size_t)-1);
}

struct misuse {
  const char *name;
  void (*run)(void);
  const char *call;     /* the call the message must name */
  const char *keywords; /* '|'-separated, case-insensitive, one must match */
};

#define FIN_INT "integer|immediate|block"
#define FIN_ATOM "atom|static"
#define FIN_LAZY "lazy|forcing|forward|tag"
#define FIN_NULL "null"
#define NOT_EPHE "ephemeron|weak"
#define RANGE "range|index|bound"
#define SIZE "range|keys|size"

static const struct misuse misuses[] = {
    {"mgc_finalise(integer)", fin_int, "mgc_finalise", FIN_INT},
    {"mgc_finalise(atom)", fin_atom, "mgc_finalise", FIN_ATOM},
    {"mgc_finalise(young Lazy)", fin_lazy, "mgc_finalise", FIN_LAZY},
    {"mgc_finalise(old Lazy)", fin_old_lazy, "mgc_finalise", FIN_LAZY},
    {"mgc_finalise(Forcing)", fin_forcing, "mgc_finalise", FIN_LAZY},
    {"mgc_finalise(young Forward)", fin_forward, "mgc_finalise", FIN_LAZY},
    {"mgc_finalise(old Forward)", fin_old_forward, "mgc_finalise", FIN_LAZY},
    {"mgc_finalise(v, NULL)", fin_null, "mgc_finalise", FIN_NULL},
    {"mgc_finalise(old v, NULL)", fin_null_old, "mgc_finalise", FIN_NULL},
    {"mgc_finalise_last(integer)", last_int, "mgc_finalise_last", FIN_INT},
    {"mgc_finalise_last(atom)", last_atom, "mgc_finalise_last", FIN_ATOM},
    {"mgc_finalise_last(young Lazy)", last_lazy, "mgc_finalise_last", FIN_LAZY},
    {"mgc_finalise_last(old Lazy)", last_old_lazy, "mgc_finalise_last",
     FIN_LAZY},
    {"mgc_finalise_last(Forcing)", last_forcing, "mgc_finalise_last", FIN_LAZY},
    {"mgc_finalise_last(young Forward)", last_forward, "mgc_finalise_last",
     FIN_LAZY},
    {"mgc_finalise_last(old Forward)", last_old_forward, "mgc_finalise_last",
     FIN_LAZY},
    {"mgc_finalise_last(v, NULL)", last_null, "mgc_finalise_last", FIN_NULL},
    {"mgc_ephe_get_key(integer)", get_key_int, "mgc_ephe_get_key", NOT_EPHE},
    {"mgc_ephe_get_key(young block)", get_key_young, "mgc_ephe_get_key",
     NOT_EPHE},
    {"mgc_ephe_get_key(old block)", get_key_old, "mgc_ephe_get_key", NOT_EPHE},
    {"mgc_ephe_get_key(string)", get_key_string, "mgc_ephe_get_key", NOT_EPHE},
    {"mgc_weak_get(integer)", weak_get_int, "mgc_weak_get", NOT_EPHE},
    {"mgc_weak_length(old block)", weak_length_block, "mgc_weak_length",
     NOT_EPHE},
    {"mgc_ephe_set_key(e, 2) of 2 keys", set_key_range, "mgc_ephe_set_key",
     RANGE},
    {"mgc_ephe_get_key(e, 2) of 2 keys", get_key_range, "mgc_ephe_get_key",
     RANGE},
    {"mgc_ephe_get_key(e, SIZE_MAX)", get_key_huge, "mgc_ephe_get_key", RANGE},
    {"mgc_ephe_check_key(e, 2) of 2 keys", check_key_range,
     "mgc_ephe_check_key", RANGE},
    {"mgc_ephe_unset_key(e, 2) of 2 keys", unset_key_range,
     "mgc_ephe_unset_key", RANGE},
    {"mgc_weak_get(w, 3) of 3", weak_get_range, "mgc_weak_get", RANGE},
    {"mgc_weak_set(w, 3) of 3", weak_set_range, "mgc_weak_set", RANGE},
    {"mgc_weak_check(w, 3) of 3", weak_check_range, "mgc_weak_check", RANGE},
    {"mgc_weak_unset(w, 7) of 3", weak_unset_range, "mgc_weak_unset", RANGE},
    {"mgc_ephe_create(0)", ephe_create_0, "mgc_ephe_create", SIZE},
    {"mgc_weak_create(0)", weak_create_0, "mgc_weak_create", SIZE},
    {"mgc_ephe_create(MAX_KEYS + 1)", ephe_create_max, "mgc_ephe_create", SIZE},
    {"mgc_weak_create(MAX_KEYS + 1)", weak_create_max, "mgc_weak_create", SIZE},
    {"mgc_ephe_blit_keys: source range", blit_src_range, "mgc_ephe_blit_keys",
     RANGE},
    {"mgc_ephe_blit_keys: destination range", blit_dst_range,
     "mgc_ephe_blit_keys", RANGE},
    {"mgc_ephe_blit_keys: start beyond the keys", blit_start_beyond,
     "mgc_ephe_blit_keys", RANGE},
    {"mgc_ephe_blit_keys: length wrapping around", blit_len_wrap,
     "mgc_ephe_blit_keys", RANGE},
};

/* ------------------------------------------------------------------------ */
/* The harness                                                              */
/* ------------------------------------------------------------------------ */

static char *read_file(int fd) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
    len += (size_t)n;
    if (cap - len < 2) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
  }
  buf[len] = '\0';
  return buf;
}

static int temp_file(void) {
  char path[] = "/tmp/mgc-test-errors-weak-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0)
    unlink(path);
  return fd;
}

static int contains_ci(const char *hay, const char *needle, size_t n) {
  size_t i, j;
  for (i = 0; hay[i] != '\0'; i++) {
    for (j = 0; j < n && hay[i + j] != '\0'; j++)
      if (tolower((unsigned char)hay[i + j]) !=
          tolower((unsigned char)needle[j]))
        break;
    if (j == n)
      return 1;
  }
  return 0;
}

static int any_keyword(const char *text, const char *keywords) {
  const char *k = keywords;
  while (*k != '\0') {
    const char *e = strchr(k, '|');
    size_t n = e != NULL ? (size_t)(e - k) : strlen(k);
    if (contains_ci(text, k, n))
      return 1;
    k += n + (e != NULL);
  }
  return 0;
}

/* The name as a whole identifier: "mgc_finalise" does not match inside
   "mgc_finalise_last". */
static int names_call(const char *text, const char *call) {
  size_t n = strlen(call);
  const char *p = text;
  while ((p = strstr(p, call)) != NULL) {
    int before = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    int after = !(isalnum((unsigned char)p[n]) || p[n] == '_');
    if (before && after)
      return 1;
    p++;
  }
  return 0;
}

struct outcome {
  int status;
  char *msg;
  char *err;
};

static struct outcome run_child(const struct misuse *m) {
  struct outcome out = {0, NULL, NULL};
  int mfd = temp_file(), efd = temp_file();
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    msg_fd = mfd;
    dup2(efd, 2);
    if (mgc_init(NULL) != 0)
      _exit(EXIT_SETUP);
    mgc_set_fatal_handler(fatal_to_file);
    root = root2 = MGC_UNIT;
    mgc_register_global_root(&root);
    mgc_register_global_root(&root2);
    m->run();
    _exit(EXIT_RETURNED);
  }
  if (pid < 0) {
    CHECK(0, "fork failed");
    return out;
  }
  while (waitpid(pid, &out.status, 0) < 0 && errno == EINTR)
    ;
  out.msg = read_file(mfd);
  out.err = read_file(efd);
  close(mfd);
  close(efd);
  return out;
}

static const char *describe(int status, char *buf, size_t n) {
  if (WIFSIGNALED(status))
    snprintf(buf, n, "signal %d", WTERMSIG(status));
  else if (WIFEXITED(status))
    snprintf(buf, n, "exit %d", WEXITSTATUS(status));
  else
    snprintf(buf, n, "status %#x", status);
  return buf;
}

static void test_misuses(void) {
  size_t i;
  for (i = 0; i < sizeof misuses / sizeof misuses[0]; i++) {
    const struct misuse *m = &misuses[i];
    struct outcome o = run_child(m);
    char d[64];
    int crashed, returned, setup, aborted;
    if (o.msg == NULL)
      continue;
    describe(o.status, d, sizeof d);
    crashed = WIFSIGNALED(o.status) && WTERMSIG(o.status) != SIGABRT;
    returned = WIFEXITED(o.status) && WEXITSTATUS(o.status) == EXIT_RETURNED;
    setup = WIFEXITED(o.status) && WEXITSTATUS(o.status) == EXIT_SETUP;
    aborted = WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT;
    CHECK(!setup, "%s: the child got ready (stderr \"%.200s\")", m->name,
          o.err);
    CHECK(!crashed, "%s: no crash (%s; stderr \"%.300s\")", m->name, d, o.err);
    CHECK(!returned, "%s: not silent (the call returned)", m->name);
    CHECK(aborted, "%s: ends in SIGABRT after the fatal handler (%s)", m->name,
          d);
    CHECK(o.msg[0] != '\0' && o.msg[0] != '\n',
          "%s: fatal handler called with a message (stderr \"%.200s\")",
          m->name, o.err);
    CHECK(names_call(o.msg, m->call), "%s: message names %s: \"%.200s\"",
          m->name, m->call, o.msg);
    CHECK(any_keyword(o.msg, m->keywords),
          "%s: message names the problem (want %s): \"%.200s\"", m->name,
          m->keywords, o.msg);
    if (check_verbose())
      printf("  %s -> %s: %s", m->name, d, o.msg);
    free(o.msg);
    free(o.err);
  }
}

/* The same calls used correctly do not end in the handler: the harness
   itself is not what kills the children. */
static void good_uses(void) {
  mgc_value v;
  mgc_value e = ephe2();
  mgc_ephe_set_key(e, 1, MGC_VAL_INT(4));
  if (!mgc_ephe_check_key(e, 1) || mgc_ephe_check_key(e, 0))
    _exit(10);
  mgc_ephe_blit_keys(e, 1, e, 0, 1);
  if (!mgc_ephe_get_key(e, 0, &v) || v != MGC_VAL_INT(4))
    _exit(11);
  mgc_ephe_blit_keys(e, 2, e, 0, 0);
  mgc_ephe_unset_key(e, 1);
  root = mgc_weak_create(1);
  mgc_weak_set(root, 0, MGC_VAL_INT(2));
  if (!mgc_weak_check(root, 0))
    _exit(12);
  mgc_finalise(young_block(), ignore_first, NULL);
  mgc_finalise_last(old_block(), ignore_last, NULL);
  mgc_full_major();
  _exit(0);
}

static void test_good_uses(void) {
  struct misuse m = {"correct uses", good_uses, "", ""};
  struct outcome o = run_child(&m);
  char d[64];
  if (o.msg == NULL)
    return;
  describe(o.status, d, sizeof d);
  CHECK(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 && o.msg[0] == '\0',
        "correct uses of the same calls pass (%s; msg \"%.200s\")", d, o.msg);
  free(o.msg);
  free(o.err);
}

int main(void) {
  test_good_uses();
  test_misuses();
  return check_done();
}
