# bench/bench.mk: the benchmark suite of BENCH.md, included by the top-level
# Makefile (which defines CC, BUILD and the rule for $(BUILD)/libmgc.a).
#   make bench-build   build/bench/NAME (mgc) and NAME-PEER for each peer
#                      installed (boehm, malloc, mimalloc, ocaml), all -O2;
#                      the OCaml peers with make peers' OCaml 5.3.0 when
#                      it is built, else OCAMLOPT (default: ocamlopt)
#   make bench         bench-build, then 5 runs of each at BENCH.md sizes
#   make bench-smoke   small sizes, one run each, checksums only (CI)
# BENCH_ARGS adds harness options and workloads, e.g.
#   make bench BENCH_ARGS='-n 3 binarytrees mt-binarytrees:"20 2"'

BENCH_OUT := $(BUILD)/bench
BENCH_CFLAGS := -std=c11 -O2 -Wall -Wextra -Wpedantic
BENCH_WORKLOADS := binarytrees gcbench remset mt-binarytrees alloc survive
# Collector features without a malloc equivalent: mgc, Boehm and OCaml only.
BENCH_GC_WORKLOADS := ephemerons finalisers fragment
BENCH_OCAML_WORKLOADS := binarytrees gcbench remset alloc survive \
  $(BENCH_GC_WORKLOADS)
# Stack switching, which C has no portable way to do: mgc and OCaml only,
# and the OCaml peer needs OCaml 5 (effects).
BENCH_FIBER_WORKLOADS := fibers
# OCaml peers that need OCaml 5: domains (OCaml 4 has none) and effects.
BENCH_OCAML5_WORKLOADS := mt-binarytrees $(BENCH_FIBER_WORKLOADS)
# The OCaml peers' compiler: OCAMLOPT when given, else make peers' OCaml
# 5.3.0 ($(PEER_OCAML), from the top-level Makefile) once it is built,
# else the ocamlopt on PATH.  Another OCaml:
#   make bench-build OCAMLOPT=/opt/ocaml-5.2.0/bin/ocamlopt
# (with BENCH_OUT=build/bench-ocaml5 to keep both builds).
ifeq ($(origin OCAMLOPT),undefined)
OCAMLOPT := $(or $(wildcard $(abspath $(PEER_OCAML))/bin/ocamlopt),ocamlopt)
endif

BENCH_HAVE_BOEHM := $(shell $(CC) -E -include gc.h -x c /dev/null \
  >/dev/null 2>&1 && echo yes)
BENCH_HAVE_MIMALLOC := $(shell $(CC) -E -include mimalloc.h -x c /dev/null \
  >/dev/null 2>&1 && echo yes)
BENCH_HAVE_OCAML := $(shell command -v $(OCAMLOPT) >/dev/null 2>&1 && \
  echo yes)
ifeq ($(BENCH_HAVE_OCAML),yes)
BENCH_OCAML_VERSION := $(shell $(OCAMLOPT) -version 2>/dev/null)
BENCH_OCAML_MAJOR := $(firstword $(subst ., ,$(BENCH_OCAML_VERSION)))
BENCH_HAVE_OCAML5 := $(shell [ "$(BENCH_OCAML_MAJOR)" -ge 5 ] 2>/dev/null \
  && echo yes)
ifeq ($(BENCH_HAVE_OCAML5),yes)
BENCH_OCAML_WORKLOADS += $(BENCH_OCAML5_WORKLOADS)
endif
endif

BENCH_MALLOC_BASE := $(addprefix $(BENCH_OUT)/,$(BENCH_WORKLOADS))
BENCH_MGC := $(BENCH_MALLOC_BASE) \
  $(addprefix $(BENCH_OUT)/,$(BENCH_GC_WORKLOADS))
BENCH_BOEHM := $(addsuffix -boehm,$(BENCH_MGC))
BENCH_MGC += $(addprefix $(BENCH_OUT)/,$(BENCH_FIBER_WORKLOADS))
BENCH_MALLOC := $(addsuffix -malloc,$(BENCH_MALLOC_BASE))
BENCH_MIMALLOC := $(addsuffix -mimalloc,$(BENCH_MALLOC_BASE))
BENCH_OCAML := $(addprefix $(BENCH_OUT)/,\
  $(addsuffix -ocaml,$(BENCH_OCAML_WORKLOADS)))
BENCH_PROGRAMS := $(BENCH_MGC) $(BENCH_MALLOC) $(BENCH_OUT)/harness \
  $(BENCH_OUT)/stw-latency
ifeq ($(BENCH_HAVE_MIMALLOC),yes)
BENCH_PROGRAMS += $(BENCH_MIMALLOC)
endif
ifeq ($(BENCH_HAVE_BOEHM),yes)
BENCH_PROGRAMS += $(BENCH_BOEHM)
endif
ifeq ($(BENCH_HAVE_OCAML),yes)
BENCH_PROGRAMS += $(BENCH_OCAML) $(BENCH_OUT)/ocaml-version
endif

BENCH_HEADERS := bench/bench_util.h
BENCH_LIBS_mt-binarytrees := -pthread
# fragment-ocaml times Gc.compact with Unix.gettimeofday: the unix library
# of the standard distribution (in the stdlib directory in 4.13, +unix in 5).
BENCH_OCAMLLIBS_fragment := -I +unix unix.cmxa

$(BENCH_OUT) $(BENCH_OUT)/ocaml:
	mkdir -p $@

$(BENCH_MGC): $(BENCH_OUT)/%: bench/%.c bench/mgc_bench.h $(BENCH_HEADERS) \
    include/mgc.h $(BUILD)/libmgc.a | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -Iinclude -pthread -o $@ $< $(BUILD)/libmgc.a -lm

$(BENCH_MALLOC): $(BENCH_OUT)/%-malloc: bench/%-malloc.c \
    bench/malloc_peer.h $(BENCH_HEADERS) | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_LIBS_$*)

$(BENCH_MIMALLOC): $(BENCH_OUT)/%-mimalloc: bench/%-malloc.c \
    bench/malloc_peer.h $(BENCH_HEADERS) | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -DUSE_MIMALLOC -o $@ $< -lmimalloc $(BENCH_LIBS_$*)

$(BENCH_BOEHM): $(BENCH_OUT)/%-boehm: bench/%-boehm.c $(BENCH_HEADERS) \
    | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ $< -lgc $(BENCH_LIBS_$*)

# The OCaml peers' compiler: its version, which the harness shows in the
# label of the OCaml column (ocaml-5.3.0), then its path.  Checked at every
# build and rewritten only when either changes; then the OCaml peers there
# are removed (those of an OCaml 5 too) and compiled again.
$(BENCH_OUT)/ocaml-version: bench-ocaml-check | $(BENCH_OUT)
	@printf '%s\n%s\n' '$(BENCH_OCAML_VERSION)' \
	  "$$(command -v $(OCAMLOPT))" >$@.new
	@if cmp -s $@.new $@; then rm $@.new; \
	else rm -f $(BENCH_OUT)/*-ocaml; mv $@.new $@; fi
bench-ocaml-check:
.PHONY: bench-ocaml-check

# ocamlopt leaves .cmi/.cmx/.o beside its source: compile a copy in build/,
# named as a module may be (mt-binarytrees.ml as mt_binarytrees.ml).
$(BENCH_OCAML): $(BENCH_OUT)/%-ocaml: bench/ocaml/%.ml \
    $(BENCH_OUT)/ocaml-version | $(BENCH_OUT)/ocaml
	cp $< $(BENCH_OUT)/ocaml/$(subst -,_,$*).ml
	$(OCAMLOPT) -unsafe -inline 200 -o $@ $(BENCH_OCAMLLIBS_$*) \
	  $(BENCH_OUT)/ocaml/$(subst -,_,$*).ml

# Collection request to all domains stopped, with domains blocked in read().
$(BENCH_OUT)/stw-latency: bench/stw-latency.c bench/mgc_bench.h \
    $(BENCH_HEADERS) include/mgc.h $(BUILD)/libmgc.a | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -Iinclude -pthread -o $@ $< $(BUILD)/libmgc.a -lm

$(BENCH_OUT)/harness: bench/harness.c | $(BENCH_OUT)
	$(CC) $(BENCH_CFLAGS) -o $@ $< -lm

bench-build: $(BENCH_PROGRAMS)
ifneq ($(BENCH_HAVE_BOEHM),yes)
	@echo "note: Boehm GC not found, -boehm peers skipped" \
	  "(Debian: apt-get install libgc-dev)"
endif
ifneq ($(BENCH_HAVE_MIMALLOC),yes)
	@echo "note: mimalloc not found, -mimalloc peers skipped" \
	  "(Debian: apt-get install libmimalloc-dev)"
endif
ifneq ($(BENCH_HAVE_OCAML),yes)
	@echo "note: ocamlopt not found, -ocaml peers skipped" \
	  "(Debian: apt-get install ocaml-nox)"
else ifneq ($(BENCH_HAVE_OCAML5),yes)
	@echo "note: $(OCAMLOPT) is OCaml $(BENCH_OCAML_VERSION)," \
	  "$(addsuffix -ocaml,$(BENCH_OCAML5_WORKLOADS)) skipped (need OCaml 5:" \
	  "make peers, or OCAMLOPT=/opt/ocaml-5.2.0/bin/ocamlopt)"
endif
	@:

bench: bench-build
	$(BENCH_OUT)/harness -d $(BENCH_OUT) $(BENCH_ARGS)
	@echo "== stop-the-world latency with domains blocked in a system call"
	@$(BENCH_OUT)/stw-latency 2000 2 2>/dev/null
	@$(BENCH_OUT)/stw-latency 2000 4 2>/dev/null
	$(BENCH_TIMELINE)
	$(BENCH_OCAML_PORT)

bench-smoke: bench-build
	$(BENCH_OUT)/harness -d $(BENCH_OUT) -s -t 120 $(BENCH_ARGS)
	@$(BENCH_OUT)/stw-latency 200 2 2>/dev/null
	tools/scaling.sh -n 1 -N 12 -d $(BENCH_OUT) -o $(BUILD)/scaling-smoke 1 2

.PHONY: bench bench-build bench-smoke

# The GC timeline of one mgc run, beside pauses.svg: mt-binarytrees 20 2
# traced (trace.json), tools/mgc-report's summary (trace-report.txt) and
# SVG timeline (timeline.svg).  Also on its own: make bench-timeline.
$(BENCH_OUT)/mgc-report: tools/mgc-report.c | $(BENCH_OUT)
	$(CC) -std=c11 -O2 -Wall -Wextra -o $@ $< -lm

define BENCH_TIMELINE
@echo "== GC timeline of one mgc run: mt-binarytrees 20 2"
@MGC_PARAMS=$${MGC_PARAMS:+$$MGC_PARAMS,}trace=$(BENCH_OUT)/trace.json \
  $(BENCH_OUT)/mt-binarytrees 20 2 >/dev/null
@$(BENCH_OUT)/mgc-report $(BENCH_OUT)/trace.json \
  -o $(BENCH_OUT)/timeline.svg >$(BENCH_OUT)/trace-report.txt
@awk '/^span +domain/ || ($$2 == "all" && NF == 7)' \
  $(BENCH_OUT)/trace-report.txt
@echo "timeline: $(BENCH_OUT)/timeline.svg" \
  "(summary: $(BENCH_OUT)/trace-report.txt)"
endef

bench bench-timeline: $(BENCH_OUT)/mgc-report $(BENCH_OUT)/mt-binarytrees
bench-timeline:
	$(BENCH_TIMELINE)

.PHONY: bench-timeline

# OCaml's bytecode compiler compiling the testsuite programs the port's test
# runner attempts, on ocamlrun-mgc and on the stock ocamlrun of the same
# tree (ports/ocaml/bench.sh, paired runs): only when the port is built
# (make ocaml-port).
define BENCH_OCAML_PORT
@if [ -x $(BUILD)/ocaml-port/ocamlrun-mgc ]; then \
  echo "== OCaml's compiler on ocamlrun-mgc and on stock ocamlrun"; \
  ports/ocaml/bench.sh --tree "$$(ports/ocaml/build.sh --print-tree)" \
    --ocamlrun-mgc $(BUILD)/ocaml-port/ocamlrun-mgc --runs 3; \
else \
  echo "note: ocamlrun-mgc not built (make ocaml-port): its benchmark" \
    "skipped"; \
fi
endef
