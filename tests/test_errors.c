/* test_errors: every detectable misuse is reported, never silent.
 *
 * Each case runs in a forked child that initialises mgc, installs a fatal
 * handler (and for out-of-memory an OOM handler) writing to a file, then
 * commits the misuse.  The parent checks that the child died by SIGABRT or
 * exited non-zero, never by SIGSEGV or SIGBUS, never returned normally from
 * the misuse, and that the message names the problem.  Also: bad
 * parameters give MGC_EINVAL with the key named on stderr, and the default
 * OOM handler prints a message and aborts.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Under AddressSanitizer a huge malloc must return NULL, as it does
   without it, so that the library's OOM path is what is tested. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}

#define EXIT_RETURNED 3 /* the misuse returned: silent */
#define EXIT_OOM_HANDLER 42
#define EXIT_EXPECTED_OK 0 /* for cases that return an error code */

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

static void oom_to_file(size_t bytes) {
  char buf[64];
  int n = snprintf(buf, sizeof buf, "OOM %llu\n", (unsigned long long)bytes);
  write_all(msg_fd, buf, (size_t)n);
  _exit(EXIT_OOM_HANDLER);
}

static mgc_value small_block(void) {
  mgc_value v = mgc_alloc_small(2, 0);
  MGC_FIELD(v, 0) = MGC_UNIT;
  MGC_FIELD(v, 1) = MGC_UNIT;
  return v;
}

static void *thread_alloc(void *arg) {
  (void)arg;
  (void)small_block();
  return NULL;
}

static void *thread_alloc_big(void *arg) {
  (void)arg;
  (void)mgc_alloc(10, 0);
  return NULL;
}

/* The misuses.  Each returns only if the library stayed silent. */
static void case_small_0(void) { (void)mgc_alloc_small(0, 0); }
static void case_small_257(void) { (void)mgc_alloc_small(257, 0); }
static void case_alloc_huge(void) { (void)mgc_alloc(MGC_MAX_WOSIZE + 1, 0); }
static void case_alloc_tag256(void) { (void)mgc_alloc(2, 256); }
static void case_alloc_infix(void) { (void)mgc_alloc(2, MGC_TAG_INFIX); }
static void case_alloc_custom(void) { (void)mgc_alloc(2, MGC_TAG_CUSTOM); }
static void case_small_custom(void) {
  (void)mgc_alloc_small(2, MGC_TAG_CUSTOM);
}
static void case_strlen_int(void) { (void)mgc_string_length(MGC_VAL_INT(3)); }
static void case_double_range(void) {
  mgc_value a = mgc_alloc_double_array(3);
  mgc_store_double_field(a, 3, 1.0);
}
static void case_double_not_array(void) {
  mgc_value a = small_block();
  mgc_store_double_field(a, 0, 1.0);
}
static void case_update_tag_int(void) {
  (void)mgc_obj_update_tag(MGC_VAL_INT(1), MGC_TAG_LAZY, MGC_TAG_FORCING);
}
static void case_modify_null(void) { mgc_modify(NULL, MGC_UNIT); }
static void case_register_null(void) { mgc_register_global_root(NULL); }
static void case_register_gen_null(void) {
  mgc_register_generational_global_root(NULL);
}
static void case_thread_small(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, thread_alloc, NULL) == 0)
    pthread_join(t, NULL);
}
static void case_thread_alloc(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, thread_alloc_big, NULL) == 0)
    pthread_join(t, NULL);
}
static void case_oom(void) {
  mgc_set_oom_handler(oom_to_file);
  (void)mgc_alloc((size_t)1 << 44, 0);
}
static void case_oom_default(void) {
  mgc_set_oom_handler(NULL);
  (void)mgc_alloc((size_t)1 << 44, 0);
}
static void case_oom_string(void) {
  mgc_set_oom_handler(oom_to_file);
  (void)mgc_alloc_string((size_t)1 << 47);
}

struct misuse {
  const char *name;
  void (*run)(void);
  const char *keywords; /* '|'-separated, case-insensitive, one must match */
  int expect_oom;       /* 1: our OOM handler; 2: the default one */
};

static const struct misuse misuses[] = {
    {"mgc_alloc_small(0, 0)", case_small_0, "size", 0},
    {"mgc_alloc_small(257, 0)", case_small_257, "size", 0},
    {"mgc_alloc(MAX_WOSIZE + 1)", case_alloc_huge, "size|large|big", 0},
    {"mgc_alloc(2, 256)", case_alloc_tag256, "tag", 0},
    {"mgc_alloc(2, Infix)", case_alloc_infix, "tag|infix", 0},
    {"mgc_alloc(2, Custom)", case_alloc_custom, "tag|custom", 0},
    {"mgc_alloc_small(2, Custom)", case_small_custom, "tag|custom", 0},
    {"mgc_string_length(int)", case_strlen_int, "string|block|immediate|int",
     0},
    {"mgc_store_double_field out of range", case_double_range,
     "range|index|bound", 0},
    {"mgc_store_double_field on a non-double-array", case_double_not_array,
     "double|tag", 0},
    {"mgc_obj_update_tag(int)", case_update_tag_int, "block|immediate|int|tag",
     0},
    {"mgc_modify(NULL)", case_modify_null, "null|field|modify", 0},
    {"mgc_register_global_root(NULL)", case_register_null, "null|root", 0},
    {"mgc_register_generational_global_root(NULL)", case_register_gen_null,
     "null|root", 0},
    {"alloc_small from a non-domain thread", case_thread_small, "domain|thread",
     0},
    {"mgc_alloc from a non-domain thread", case_thread_alloc, "domain|thread",
     0},
    {"huge mgc_alloc with an OOM handler", case_oom, "OOM", 1},
    {"huge mgc_alloc_string with an OOM handler", case_oom_string, "OOM", 1},
    {"huge mgc_alloc, default OOM handler", case_oom_default, "memory|oom", 2},
};

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
  char path[] = "/tmp/mgc-test-errors-XXXXXX";
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

/* Runs body in a child with its messages and stderr captured. */
struct outcome {
  int status;
  char *msg;
  char *err;
};

static struct outcome run_child(void (*body)(const void *), const void *arg) {
  struct outcome out = {0, NULL, NULL};
  int mfd = temp_file(), efd = temp_file();
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid == 0) {
    msg_fd = mfd;
    dup2(efd, 2);
    body(arg);
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

static void misuse_body(const void *arg) {
  const struct misuse *m = arg;
  if (mgc_init(NULL) != 0)
    _exit(90);
  mgc_set_fatal_handler(fatal_to_file);
  m->run();
  _exit(EXIT_RETURNED);
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
    struct outcome o = run_child(misuse_body, m);
    char d[64];
    int crashed, returned, died;
    if (o.msg == NULL)
      continue;
    describe(o.status, d, sizeof d);
    crashed = WIFSIGNALED(o.status) &&
              (WTERMSIG(o.status) == SIGSEGV || WTERMSIG(o.status) == SIGBUS ||
               WTERMSIG(o.status) == SIGFPE || WTERMSIG(o.status) == SIGILL);
    returned = WIFEXITED(o.status) && WEXITSTATUS(o.status) == EXIT_RETURNED;
    died = (WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT) ||
           (WIFEXITED(o.status) && WEXITSTATUS(o.status) != 0 && !returned);
    CHECK(!crashed, "%s: no crash (%s)", m->name, d);
    CHECK(!returned, "%s: not silent (the call returned)", m->name);
    if (m->expect_oom == 1) {
      unsigned long long bytes = 0;
      CHECK(WIFEXITED(o.status) && WEXITSTATUS(o.status) == EXIT_OOM_HANDLER,
            "%s: OOM handler called (%s; msg \"%s\")", m->name, d, o.msg);
      CHECK(sscanf(o.msg, "OOM %llu", &bytes) == 1 &&
                bytes >= ((unsigned long long)1 << 44),
            "%s: OOM handler given the byte count (%llu)", m->name, bytes);
    } else if (m->expect_oom == 2) {
      CHECK(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT,
            "%s: aborts (%s)", m->name, d);
      CHECK(o.err[0] != '\0' && any_keyword(o.err, m->keywords),
            "%s: message on stderr (\"%.200s\")", m->name, o.err);
    } else {
      CHECK(died, "%s: died by SIGABRT or non-zero exit (%s)", m->name, d);
      CHECK(o.msg[0] != '\0' && o.msg[0] != '\n',
            "%s: fatal handler called with a message (stderr \"%.200s\")",
            m->name, o.err);
      CHECK(any_keyword(o.msg, m->keywords),
            "%s: message names the problem (want %s): \"%.200s\"", m->name,
            m->keywords, o.msg);
    }
    if (check_verbose())
      printf("  %s -> %s: %s", m->name, d, o.msg);
    free(o.msg);
    free(o.err);
  }
}

/* Bad parameters: return codes, and the key named on stderr. */
static void params_body(const void *arg) {
  mgc_params p;
  int r;
  (void)arg;
  mgc_params_default(&p);
  r = mgc_params_parse(&p, "o=100,zzkey=1");
  if (r != MGC_EINVAL)
    _exit(10);
  fprintf(stderr, "\n--\n");
  fflush(stderr);
  setenv("MGC_PARAMS", "s=1k,qqkey=5", 1);
  r = mgc_init(NULL);
  if (r != MGC_EINVAL)
    _exit(11);
  fflush(stderr);
  _exit(EXIT_EXPECTED_OK);
}

static void test_bad_params(void) {
  struct outcome o = run_child(params_body, NULL);
  char d[64];
  char *sep;
  if (o.msg == NULL)
    return;
  describe(o.status, d, sizeof d);
  CHECK(WIFEXITED(o.status) && WEXITSTATUS(o.status) == EXIT_EXPECTED_OK,
        "bad parameters give MGC_EINVAL (%s)", d);
  sep = strstr(o.err, "\n--\n");
  CHECK(sep != NULL, "stderr captured");
  if (sep != NULL) {
    *sep = '\0';
    CHECK(strstr(o.err, "zzkey") != NULL,
          "mgc_params_parse names the bad key: \"%.200s\"", o.err);
    CHECK(strstr(sep + 4, "qqkey") != NULL,
          "mgc_init names the bad MGC_PARAMS key: \"%.200s\"", sep + 4);
  }
  free(o.msg);
  free(o.err);
}

int main(void) {
  test_misuses();
  test_bad_params();
  return check_done();
}
