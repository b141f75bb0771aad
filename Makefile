# mgc: one build for the library, tests, examples and benchmarks.
#   make            build/libmgc.a and build/libmgc.so
#   make test       the test suite (plain, torture t=1 V=1, compaction C=1 V=1,
#                   ASan+UBSan, TSan)
#   make bench      the benchmark suite with its report (bench/bench.mk)
#   make peers      a stock OCaml 5.3.0 with ocamlopt, built once into
#                   build/peers for make bench's OCaml peers (~7 min)
#   make install PREFIX=/usr/local DESTDIR=   (make uninstall: the same files)
#   make fuzz FUZZ_SECONDS=60   libFuzzer targets of fuzz/, each N seconds
#   make fuzz-regress           each fuzz target once over its seed corpus
#   make stress STRESS_SECONDS=1800   the tests again and again, new seeds

CC ?= cc
BUILD ?= build
PREFIX ?= /usr/local
DEBUG ?= 0
VERSION := 0.2.0
SOVERSION := 0

WARN := -Wall -Wextra -Wpedantic
CFLAGS ?= -O2 -g
LIBCFLAGS := -std=c11 $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden \
  -DMGC_DEBUG=$(DEBUG) -Iinclude
LDLIBS := -pthread -lm

SRCS := $(wildcard src/*.c)
OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS))
HDRS := include/mgc.h src/internal.h

.PHONY: all test test-plain test-torture test-compact test-asan \
  test-tsan \
  examples install clean bench bench-build bench-smoke stress format-check \
  uninstall fuzz fuzz-build fuzz-regress fuzz-prepare

all: $(BUILD)/libmgc.a $(BUILD)/libmgc.so

$(BUILD)/obj/%.o: src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBCFLAGS) -c $< -o $@

$(BUILD)/libmgc.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libmgc.so: $(OBJS)
	$(CC) -shared -Wl,-soname,libmgc.so.$(SOVERSION) -o $@ $^ $(LDLIBS)

# ---------------------------------------------------------------- tests --
# Each test program is built three ways: against the debug library (plain
# and torture runs), with ASan+UBSan, and with TSan.  The library's sources
# are compiled once per way into $(BUILD)/tests/obj-WAY and every test
# program of that way links those objects.
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_NAMES := $(patsubst tests/%.c,%,$(TEST_SRCS))
empty :=
space := $(empty) $(empty)
comma := ,
TFLAGS := -std=c11 $(WARN) -O1 -g -Iinclude -DMGC_DEBUG=2

test_objs = $(patsubst src/%.c,$(BUILD)/tests/obj-$(1)/%.o,$(SRCS))

define test_build
$(BUILD)/tests/obj-$(1)/%.o: src/%.c $(HDRS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(TFLAGS) $(2) -c $$< -o $$@
$(BUILD)/tests/$(1)/%: tests/%.c $(call test_objs,$(1)) $(HDRS) \
    $(wildcard tests/*.h)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(TFLAGS) $(2) $(call test_objs,$(1)) $$< -o $$@ $$(LDLIBS)
endef
# (The sanitizer flags go through variables: a comma inside $(call ...)
# would split the argument.)  The objects are kept (make would delete them
# as intermediate files of a pattern chain).
.SECONDARY: $(foreach w,plain asan tsan,$(call test_objs,$(w)))
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
  -fno-sanitize-recover=undefined
TSAN_FLAGS := -fsanitize=thread
$(eval $(call test_build,plain,))
$(eval $(call test_build,asan,$$(ASAN_FLAGS)))
$(eval $(call test_build,tsan,$$(TSAN_FLAGS)))

PACKAGE_CHECKS := test_symbols test_fuzz_regress test_install test_docs \
  test_report
test-plain: $(addprefix $(BUILD)/tests/plain/,$(TEST_NAMES) $(PACKAGE_CHECKS))
	@tests/run.sh plain $(BUILD)/tests/plain $(TEST_NAMES) $(PACKAGE_CHECKS)
test-torture: $(addprefix $(BUILD)/tests/plain/,$(TEST_NAMES))
	@tests/run.sh torture $(BUILD)/tests/plain $(TEST_NAMES)
# Blocks move at every major cycle end.  test_domains_race compares raw
# block addresses that different domains read at different moments, which
# only a heap that does not move can keep equal: it does not run here.
COMPACT_TESTS := $(filter-out test_domains_race,$(TEST_NAMES))
test-compact: $(addprefix $(BUILD)/tests/plain/,$(COMPACT_TESTS))
	@tests/run.sh compact $(BUILD)/tests/plain $(COMPACT_TESTS)
test-asan: $(addprefix $(BUILD)/tests/asan/,$(TEST_NAMES))
	@tests/run.sh asan $(BUILD)/tests/asan $(TEST_NAMES)
# ThreadSanitizer runs the programs with more than one domain.
TSAN_TESTS := $(filter test_domains%,$(TEST_NAMES))
test-tsan: $(addprefix $(BUILD)/tests/tsan/,$(TSAN_TESTS))
	@tests/run.sh tsan $(BUILD)/tests/tsan $(TSAN_TESTS)

# The symbol check and the examples are tests too.
$(BUILD)/tests/plain/test_symbols: tests/nm_check.sh all examples
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec %s %s\n' "$(CURDIR)/tests/nm_check.sh" "$(CURDIR)/$(BUILD)" > $@
	@chmod +x $@

# The installed package (tests/install_check.sh) and the fuzz targets run
# once over their seed corpora (fuzz/run.sh; skipped with a note when the
# compiler cannot build libFuzzer targets) are tests too.
$(BUILD)/tests/plain/test_install: tests/install_check.sh all examples
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec %s %s %s\n' "$(CURDIR)/tests/install_check.sh" "$(CURDIR)" "$(CURDIR)/$(BUILD)" > $@
	@chmod +x $@
# Every public name of mgc.h has an entry in docs/API.md; the trace report
# tool agrees with the statistics on a 2-domain run.
$(BUILD)/tests/plain/test_docs: tests/api_doc_check.sh include/mgc.h docs/API.md
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec %s %s\n' "$(CURDIR)/tests/api_doc_check.sh" "$(CURDIR)" > $@
	@chmod +x $@
$(BUILD)/tests/plain/test_report: tests/report_check.sh tools/mgc-report.c all
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec %s %s %s\n' "$(CURDIR)/tests/report_check.sh" "$(CURDIR)" "$(CURDIR)/$(BUILD)" > $@
	@chmod +x $@
$(BUILD)/tests/plain/test_fuzz_regress: fuzz/run.sh fuzz-prepare
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec %s regress %s %s\n' "$(CURDIR)/fuzz/run.sh" "$(CURDIR)/$(BUILD)" "$(FUZZ_CC)" > $@
	@chmod +x $@

# Long stress runs: every test program again and again, each run with a
# fresh seed, in every mode (or STRESS_MODES), for STRESS_SECONDS
# (tests/stress.sh).  CI runs two minutes of it after make test.  Each
# mode runs the test programs of its make test-MODE target (test-plain's
# package checks aside).
STRESS_SECONDS ?= 1800
STRESS_MODES ?= plain torture compact asan tsan
stress: $(addprefix $(BUILD)/tests/plain/,$(TEST_NAMES)) \
    $(addprefix $(BUILD)/tests/asan/,$(TEST_NAMES)) \
    $(addprefix $(BUILD)/tests/tsan/,$(TSAN_TESTS))
	@tests/stress.sh $(BUILD) $(STRESS_SECONDS) \
	  $(foreach m,$(STRESS_MODES),$(m)=$(subst $(space),$(comma),$(strip \
	    $(if $(filter compact,$(m)),$(COMPACT_TESTS), \
	    $(if $(filter tsan,$(m)),$(TSAN_TESTS),$(TEST_NAMES))))))

test: all examples
	@rm -f $(BUILD)/tests/results.txt
	@$(MAKE) --no-print-directory test-plain test-torture test-compact \
	  test-asan test-tsan
	@tests/summary.sh $(BUILD)/tests/results.txt

# ------------------------------------------------------------- examples --
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLES)
$(BUILD)/examples/%: examples/%.c $(BUILD)/libmgc.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) -O2 -Iinclude $< $(BUILD)/libmgc.a -o $@ $(LDLIBS)

# -------------------------------------------------------------- install --
install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/mgc.h $(DESTDIR)$(PREFIX)/include/mgc.h
	install -m 644 $(BUILD)/libmgc.a $(DESTDIR)$(PREFIX)/lib/libmgc.a
	install -m 755 $(BUILD)/libmgc.so \
	  $(DESTDIR)$(PREFIX)/lib/libmgc.so.$(VERSION)
	ln -sf libmgc.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libmgc.so.$(SOVERSION)
	ln -sf libmgc.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libmgc.so
	printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: mgc\nDescription: multicore generational garbage collector\nVersion: %s\nLibs: -L$${libdir} -lmgc -pthread\nCflags: -I$${includedir}\n' \
	  '$(PREFIX)' '$(VERSION)' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/mgc.pc

# Exactly the files install writes (the directories may hold others').
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/mgc.h \
	  $(DESTDIR)$(PREFIX)/lib/libmgc.a \
	  $(DESTDIR)$(PREFIX)/lib/libmgc.so.$(VERSION) \
	  $(DESTDIR)$(PREFIX)/lib/libmgc.so.$(SOVERSION) \
	  $(DESTDIR)$(PREFIX)/lib/libmgc.so \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/mgc.pc

# -------------------------------------------------------------- fuzzing --
# libFuzzer targets, one per fuzz/fuzz_*.c with a seed corpus in
# fuzz/corpus/NAME: built with clang, ASan+UBSan, against src/*.c at debug
# level 2 (objects in $(BUILD)/fuzz/obj, instrumented for coverage).
#   make fuzz FUZZ_SECONDS=N   each target N seconds (default 60) on
#                              $(BUILD)/fuzz/work/NAME (new inputs) with the
#                              corpus as read-only seeds; fails on a crash
#                              (the input goes to $(BUILD)/fuzz/artifacts)
#   make fuzz-regress          each target once over every corpus file
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_NAMES := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/,$(FUZZ_NAMES))
FUZZ_OBJS := $(patsubst src/%.c,$(BUILD)/fuzz/obj/%.o,$(SRCS))
FUZZ_CFLAGS := -std=c11 $(WARN) -O1 -g -Iinclude -DMGC_DEBUG=2 \
  -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_SAN := address,undefined

$(BUILD)/fuzz/obj/%.o: src/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c $< -o $@
# fuzz_ops2.c includes fuzz_ops.c.
$(BUILD)/fuzz/%: fuzz/%.c fuzz/fuzz_ops.c $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) $< $(FUZZ_OBJS) \
	  -o $@ $(LDLIBS)

fuzz-build: $(FUZZ_OBJS) $(FUZZ_BINS)
	@:
# Builds the targets when the compiler can (for make test's wrapper).
fuzz-prepare:
	@if fuzz/run.sh probe "$(FUZZ_CC)"; then \
	  $(MAKE) --no-print-directory fuzz-build; fi
fuzz:
	@fuzz/run.sh probe "$(FUZZ_CC)" || { echo "make fuzz: $(FUZZ_CC) cannot" \
	  "link -fsanitize=fuzzer programs (Debian: clang, libclang-rt-dev)"; \
	  exit 1; }
	@$(MAKE) --no-print-directory fuzz-build
	@fuzz/run.sh fuzz $(BUILD) $(FUZZ_SECONDS)
fuzz-regress: fuzz-prepare
	@fuzz/run.sh regress $(BUILD) "$(FUZZ_CC)"

clean:
	rm -rf $(BUILD)

# ------------------------------------------------------------ OCaml port --
# ports/ocaml: OCaml 5.3.0's bytecode runtime with mgc as its memory manager
# (ports/ocaml/README.md).  The OCaml tree is fetched and built once into a
# cache outside the repository (~/.cache/mgc, a few minutes the first
# time); ocaml-port-test runs the testsuite programs on both runtimes,
# plainly and under torture (PORT_TORTURE), with PORT_JOBS jobs.
# PORT_TORTURE_SAMPLE=K puts only every K-th test through the torture pass
# (the whole of make ocaml-port-test took 11 minutes on 2 cores on
# 2026-12-02, the torture pass 10 of them; .ci/run uses K=2).
PORT_JOBS ?= 2
PORT_TORTURE ?= t=1000,V=1
PORT_TORTURE_SAMPLE ?= 1
ocaml-port: $(BUILD)/libmgc.a
	@ports/ocaml/build.sh
ocaml-port-test: ocaml-port
	@ports/ocaml/test.sh --jobs $(PORT_JOBS) --torture "$(PORT_TORTURE)" \
	  --torture-sample $(PORT_TORTURE_SAMPLE)
ocaml-port-bench: ocaml-port
	@ports/ocaml/bench.sh --tree "$$(ports/ocaml/build.sh --print-tree)" \
	  --ocamlrun-mgc $(BUILD)/ocaml-port/ocamlrun-mgc
.PHONY: ocaml-port ocaml-port-test ocaml-port-bench

# ---------------------------------------------------------------- peers --
# A stock OCaml 5.3.0 with its native compiler, built once (6.5
# minutes on 2 cores, under nice, measured) into $(PEER_OCAML) by
# tools/build-ocaml-peer.sh: bench/bench.mk compiles the OCaml peers with
# its ocamlopt unless OCAMLOPT is given.
PEERS_JOBS ?= 2
PEER_OCAML := $(BUILD)/peers/ocaml-5.3.0
peers: $(PEER_OCAML)/.mgc-peer-built
$(PEER_OCAML)/.mgc-peer-built:
	@tools/build-ocaml-peer.sh --prefix $(abspath $(PEER_OCAML)) \
	  --jobs $(PEERS_JOBS)
.PHONY: peers

-include bench/bench.mk

FORMAT_FILES := $(wildcard include/*.h src/*.c src/*.h tests/*.c tests/*.h \
  examples/*.c ports/ocaml/glue/*.c ports/ocaml/glue/*.h)
format-check:
	@if command -v clang-format >/dev/null 2>&1; then \
	  clang-format --dry-run -Werror $(FORMAT_FILES) && echo "format ok"; \
	else echo "clang-format not installed: format check skipped"; fi
format:
	clang-format -i $(FORMAT_FILES)
