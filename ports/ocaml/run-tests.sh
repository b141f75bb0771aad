#!/usr/bin/env bash
# run-tests.sh: run the single-file bytecode tests of OCaml's testsuite on
# the stock ocamlrun and on ocamlrun-mgc, with the compiler as oracle.
#
#   run-tests.sh --tree DIR --ocamlrun-mgc PATH [--jobs N] [--work DIR]
#                [--mgc-params STR] [--only REGEX] [--list] [--timeout S]
#                [--keep] [--no-reference-ok]
#
# See ports/ocaml/README.md, section "Test runner".  Needs bash >= 4.3,
# awk (mawk is enough), find, sort, cmp, diff, cksum, timeout.

set -u
export LC_ALL=C

usage() {
  cat >&2 <<'EOF'
usage: run-tests.sh --tree DIR --ocamlrun-mgc PATH [--jobs N] [--work DIR]
                    [--mgc-params STR] [--only REGEX] [--list] [--timeout S]
                    [--keep] [--no-reference-ok]
  --tree DIR          configured and built OCaml 5.3.0 source tree
  --ocamlrun-mgc PATH the runtime under test (the stock one works too)
  --jobs N            tests run in parallel (default 2)
  --work DIR          scratch directory (default: a fresh mktemp -d)
  --mgc-params STR    exported as MGC_PARAMS to every ocamlrun-mgc call
  --only REGEX        only test paths (relative to testsuite/tests) matching
                      this extended regular expression
  --list              print the attempted tests (path TAB flags TAB modules)
                      and exit
  --timeout S         limit for every compile and run (default 60 seconds)
  --keep              keep the work directories of passing tests too
  --no-reference-ok   also attempt tests without a .reference file (their
                      output must be empty, as in ocamltest)
  --exclude REGEX     tests otherwise attempted whose path matches are
                      skipped, printed with --exclude-reason TEXT
EOF
  exit 2
}

TREE= MGC= JOBS=2 WORK= MGC_PARAMS_SET=0 MGC_PARAMS_VAL= ONLY= LIST=0 TO=60 KEEP=0 NOREF_OK=0
EXCLUDE= EXCLUDE_REASON="excluded (--exclude)"
while [ $# -gt 0 ]; do
  case "$1" in
    --tree) TREE=${2-}; shift 2 || usage ;;
    --ocamlrun-mgc) MGC=${2-}; shift 2 || usage ;;
    --jobs) JOBS=${2-}; shift 2 || usage ;;
    --work) WORK=${2-}; shift 2 || usage ;;
    --mgc-params) MGC_PARAMS_SET=1; MGC_PARAMS_VAL=${2-}; shift 2 || usage ;;
    --only) ONLY=${2-}; shift 2 || usage ;;
    --list) LIST=1; shift ;;
    --timeout) TO=${2-}; shift 2 || usage ;;
    --keep) KEEP=1; shift ;;
    --no-reference-ok) NOREF_OK=1; shift ;;
    --exclude) EXCLUDE=${2-}; shift 2 || usage ;;
    --exclude-reason) EXCLUDE_REASON=${2-}; shift 2 || usage ;;
    -h|--help) usage ;;
    *) echo "run-tests.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$TREE" ] || usage
[ -n "$MGC" ] || [ "$LIST" = 1 ] || usage
case "$JOBS" in ''|*[!0-9]*|0) echo "run-tests.sh: bad --jobs" >&2; exit 2 ;; esac
case "$TO" in ''|*[!0-9]*|0) echo "run-tests.sh: bad --timeout" >&2; exit 2 ;; esac

TREE=$(cd "$TREE" 2>/dev/null && pwd) || { echo "run-tests.sh: no tree" >&2; exit 2; }
STOCK=$TREE/runtime/ocamlrun
OCAMLC=$TREE/ocamlc
TESTS=$TREE/testsuite/tests
for f in "$STOCK" "$OCAMLC" "$TREE/stdlib/stdlib.cma" "$TREE/Makefile.config"; do
  [ -f "$f" ] || { echo "run-tests.sh: missing $f (tree not built?)" >&2; exit 2; }
done
[ -d "$TESTS" ] || { echo "run-tests.sh: missing $TESTS" >&2; exit 2; }
if [ "$LIST" = 0 ]; then
  case "$MGC" in
    */*) MGC=$(cd "$(dirname "$MGC")" && pwd)/$(basename "$MGC") ;;
    *) MGC=$(command -v "$MGC") ;;
  esac
  [ -x "$MGC" ] || { echo "run-tests.sh: $MGC is not executable" >&2; exit 2; }
fi

if [ -z "$WORK" ]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/ocaml-mgc-tests.XXXXXX") || exit 2
else
  mkdir -p "$WORK" || exit 2
  WORK=$(cd "$WORK" && pwd)
  rm -rf "$WORK/spec" "$WORK/res" "$WORK/t"
fi
mkdir -p "$WORK/spec" "$WORK/res" "$WORK/t"

cfg() { sed -n "s/^$1=//p" "$TREE/Makefile.config" | head -n 1; }

# ---------------------------------------------------------------------------
# Classification: parse every test's TSL header (ocamltest's syntax), decide
# attempt or skip, and write the steps of attempted tests to spec files.
# ---------------------------------------------------------------------------
cat > "$WORK/classify.awk" <<'AWK'
# Input: the list of .ml test candidates (paths relative to the tests root),
# one per line.  Variables: files (list of all files under the tests root),
# specdir, srcroot (absolute tests root), base_orp, and the configuration.
BEGIN {
  while ((getline line < files) > 0) exists[line] = 1
  close(files)
  nspec = 0
  # words in the source that make a test out of scope for milestone 1
  nw = split("Weak. Ephemeron Gc.finalise Gc.Memprof Memprof Gc.create_alarm Gc.Alarm Effect Domain.spawn Thread Mutex Condition Semaphore", words, " ")
  # variables the runner implements (others: skip)
  split("flags ocamlc_flags compile_only ocamlc_byte_exit_status exit_status ocamlrunparam readonly_files compiler_reference reference arguments", a, " ")
  for (i in a) supported[a[i]] = 1
  # variables that only matter to things the runner never does (native
  # compilers, comments): ignored
  split("ocamlopt_flags compiler_directory_suffix reason ocamlopt_byte_exit_status ocamlopt_opt_exit_status ocamlc_opt_exit_status compare_programs", a, " ")
  for (i in a) ignored[a[i]] = 1
  # ocamltest variables with a value the runner does not model: a test
  # expanding one of them is skipped
  unmodeled = "test_build_directory test_build_directory_prefix ocamlrun ocamlc_byte ocamlopt_byte bytecc_libs nativecc_libs mkdll mkexe cpp cppflags cc cflags csc csc_flags shared_library_cflags objext libext asmext sharedobjext ocamlc_default_flags ocamlopt_default_flags MAKE promote timeout all_modules program program2 output compiler_output compiler_output2 compiler_reference2 ocamltest_response ocamltest_log"
}
{
  rel = $0
  text = ""; first = 1
  while ((getline line < rel) > 0) { text = first ? line : text "\n" line; first = 0 }
  close(rel)
  r = analyse(rel, text)
  if (r == "NOTTEST") next
  if (r ~ /^SKIP/) { print rel "\tSKIP\t" substr(r, 6); next }
  print rel "\tRUN\t" r
}

function fail(msg) { err = msg; return 0 }

function analyse(rel, s,    p, q, rest, n, i, w, d) {
  if (!match(s, /^[ \t\f\r\n]*\(\*[ \t\f]*TEST/)) return "NOTTEST"
  p = RLENGTH + 1
  if (substr(s, p, 6) == "_BELOW") {
    # ocamllex's longest match: the block starts at the last "(* TEST"
    rest = substr(s, p); q = 0; n = p - 1
    while (match(rest, /\(\*[ \t\f]*TEST/)) {
      q = n + RSTART + RLENGTH; n = q - 1; rest = substr(rest, RSTART + RLENGTH)
    }
    if (q == 0) return "SKIP TSL syntax error"
    p = q
  }
  dir = rel; sub(/\/[^\/]*$/, "", dir); if (dir == rel) dir = "."
  base = rel; sub(/^.*\//, "", base)
  prefix = base; sub(/\.ml$/, "", prefix)
  if (!tokenize(s, p)) return "SKIP TSL syntax error"
  tp = 1; nnodes = 0; nstmts = 0
  root = parse_node()
  if (!root || tok[tp] != "END") return "SKIP TSL syntax error (or old syntax)"

  # --- evaluation (ocamltest main.ml: run_test_tree) ---
  for (k in E) delete E[k]
  neid = 0; err = ""; out = ""; ncomp = 0; nrun = 0; inbuild = 0
  noref = 0; benchflags = ""; usedhook = ""
  delete knownvar; delete userexp
  e = ++neid
  E[e, "reference"] = srcroot "/" dir "/" prefix ".reference"; knownvar["reference"] = 1
  experr = ""
  E[e, "ocamlrunparam"] = base_orp; knownvar["ocamlrunparam"] = 1
  modules = (exists[dir "/" prefix ".mli"] ? prefix ".mli " : "") prefix ".ml"
  # root environment statements, then the default tests if nothing else
  nroot = 0
  while (nroot < nstmt[root] && skind[stmt[root, nroot + 1]] != "TEST") nroot++
  if (nroot == nstmt[root] && nchild[root] == 0) {
    for (i = 1; i <= nroot; i++) if (!env_stmt(stmt[root, i], e, 1)) return "SKIP " err
    # default tests: bytecode, then native (the native compiler is disabled
    # in a bytecode-only tree; with it enabled, native is still not run here)
    if (!run_named("bytecode", "", e)) return "SKIP " err
  } else {
    if (!eval_node(root, e, 1)) return "SKIP " err
  }
  if (experr != "") return "SKIP " experr
  if (ncomp == 0) return "SKIP no bytecode compilation to run"
  # out of scope for milestone 1: grep the source
  for (i = 1; i <= nw; i++) {
    w = words[i]
    if (index(s, w)) return "SKIP uses " w
  }
  # the same through "open Weak", "module W = Weak", "open Domain", "open Gc"
  if (s ~ /(open!? +|= *)(Stdlib\.)?Weak([^A-Za-z0-9_']|$)/) return "SKIP uses Weak."
  if (index(s, "Domain") && s ~ /(^|[^A-Za-z0-9_'.])spawn([^A-Za-z0-9_']|$)/) return "SKIP uses Domain.spawn"
  if (s ~ /open!? +Gc([^A-Za-z0-9_']|$)/ && s ~ /(^|[^A-Za-z0-9_'.])(finalise|create_alarm)([^A-Za-z0-9_']|$)/) return "SKIP uses Gc.finalise"
  if (noref && !noref_ok) return "SKIP no .reference file"
  # hooks: a file <prefix>.<action> replaces the action in ocamltest
  split("setup-ocamlc.byte-build-env ocamlc.byte check-ocamlc.byte-output run check-program-output", a, " ")
  for (i in a) if (exists[dir "/" prefix "." a[i]]) return "SKIP hook script (" a[i] ")"
  nspec++
  specf = specdir "/" nspec
  printf "%s", out > specf
  close(specf)
  return specf "\t" benchflags "\t" modules
}

# ---- tokenizer (ocamltest/tsl_lexer.mll) ----
function tokenize(s, p,    c, c2, L, acc, depth, rest) {
  ntok = 0; L = length(s)
  while (1) {
    if (p > L) return 0
    c = substr(s, p, 1); c2 = substr(s, p, 2)
    if (c == " " || c == "\t" || c == "\f" || c == "\n" || c == "\r") { p++; continue }
    if (c2 == "*)") { tok[++ntok] = "END"; return 1 }
    if (c2 == "(*") {
      depth = 1; p += 2
      while (depth > 0) {
        if (p > L) return 0
        c2 = substr(s, p, 2)
        if (c2 == "(*") { depth++; p += 2 } else if (c2 == "*)") { depth--; p += 2 } else p++
      }
      continue
    }
    if (c == ",") { tok[++ntok] = "COMMA"; p++; continue }
    if (c == "*") { tok[++ntok] = "DEPTH"; while (substr(s, p, 1) == "*") p++; continue }
    if (c2 == "+=") { tok[++ntok] = "PEQ"; p += 2; continue }
    if (c == "=") { tok[++ntok] = "EQ"; p++; continue }
    if (c == "{") { tok[++ntok] = "LB"; p++; continue }
    if (c == "}") { tok[++ntok] = "RB"; p++; continue }
    if (c == ";") { tok[++ntok] = "SEMI"; p++; continue }
    if (c == "\"") {
      acc = ""; p++
      while (1) {
        if (p > L) return 0
        c = substr(s, p, 1)
        if (c == "\"") { p++; break }
        if (c == "\\") {
          if (match(substr(s, p + 1), /^\r*\n[ \t\f]*(\\[ \t\f])?/)) {
            rest = substr(s, p + 1, RLENGTH)
            if (rest ~ /\\[ \t\f]$/) acc = acc substr(rest, length(rest), 1)
            p += 1 + RLENGTH; continue
          }
          acc = acc "\\"; p++; continue
        }
        acc = acc c; p++
      }
      tok[++ntok] = "STR"; tv[ntok] = acc; continue
    }
    if (match(substr(s, p), /^[A-Za-z_.'0-9-]+/)) {
      acc = substr(s, p, RLENGTH); p += RLENGTH
      if (acc == "include" || acc == "set" || acc == "unset" || acc == "with")
        tok[++ntok] = toupper(acc)
      else { tok[++ntok] = "ID"; tv[ntok] = acc }
      continue
    }
    return 0
  }
}

# ---- parser (ocamltest/tsl_parser.mly, tsl_script) ----
function parse_node(   n, s, c) {
  n = ++nnodes; nstmt[n] = 0; nchild[n] = 0
  while (tok[tp] == "ID" || tok[tp] == "SET" || tok[tp] == "UNSET" || tok[tp] == "INCLUDE") {
    s = parse_statement(); if (!s) return 0
    stmt[n, ++nstmt[n]] = s
  }
  while (tok[tp] == "LB") {
    tp++
    c = parse_node(); if (!c) return 0
    if (tok[tp] != "RB") return 0
    tp++
    child[n, ++nchild[n]] = c
  }
  return n
}

function parse_statement(   s) {
  s = ++nstmts; smods[s] = ""
  if (tok[tp] == "SET") {
    if (tok[tp+1] != "ID" || tok[tp+2] != "EQ" || tok[tp+3] != "STR" || tok[tp+4] != "SEMI") return 0
    skind[s] = "SET"; sname[s] = tv[tp+1]; sval[s] = tv[tp+3]; tp += 5; return s
  }
  if (tok[tp] == "UNSET" || tok[tp] == "INCLUDE") {
    if (tok[tp+1] != "ID" || tok[tp+2] != "SEMI") return 0
    skind[s] = tok[tp]; sname[s] = tv[tp+1]; tp += 3; return s
  }
  # ID
  sname[s] = tv[tp]
  if ((tok[tp+1] == "EQ" || tok[tp+1] == "PEQ") && tok[tp+2] == "STR" && tok[tp+3] == "SEMI") {
    skind[s] = (tok[tp+1] == "EQ") ? "ASSIGN" : "APPEND"; sval[s] = tv[tp+2]; tp += 4; return s
  }
  skind[s] = "TEST"; tp++
  if (tok[tp] == "WITH") {
    if (tok[tp+1] != "ID") return 0
    smods[s] = tv[tp+1]; tp += 2
    while (tok[tp] == "COMMA") {
      if (tok[tp+1] != "ID") return 0
      smods[s] = smods[s] "," tv[tp+1]; tp += 2
    }
  }
  if (tok[tp] != "SEMI") return 0
  tp++
  return s
}

# ---- evaluation ----
function env_copy(src,    d, v) {
  d = ++neid
  for (v in knownvar) if ((src, v) in E) E[d, v] = E[src, v]
  return d
}
function defined(e, v) { return ((e, v) in E) }
function raw(e, v) { return ((e, v) in E && E[e, v] != "\001") ? E[e, v] : "" }
# lookup with ocamltest's expansion (Environments.expand, which uses
# Buffer.add_substitute): $name, ${name}, $(name), \$ for a literal $.
function lookup(e, v) { return expand(e, raw(e, v), " " v " ") }
function varvalue(e, name, visiting) {
  if (index(visiting, " " name " ")) { experr = "recursive variable " name; return "" }
  if ((e, name) in E) return expand(e, raw(e, name), visiting name " ")
  if (name == "test_source_directory") return srcroot "/" dir
  if (name == "test_file") return base
  if (name == "ocamlsrcdir") return treeroot
  if (name == "TEST_PASS") return "0"
  if (name == "TEST_FAIL") return "1"
  if (name == "TEST_SKIP") return "125"
  if (name == "arch") return cfg_arch
  if (name == "os_type") return "Unix"
  if (index(" " unmodeled " ", " " name " ")) { experr = "uses ${" name "}"; return "" }
  return ""
}
function expand(e, s, visiting,    L, i, c, prev, o, j, k, op, cl, name, stop) {
  L = length(s); o = ""; prev = " "; i = 1
  while (i <= L) {
    c = substr(s, i, 1)
    if (c == "$" && prev == "\\") { o = o "$"; prev = " "; i++; continue }
    if (c == "$") {
      j = i + 1; name = ""; stop = 0
      if (j <= L) {
        op = substr(s, j, 1)
        if (op == "(" || op == "{") {
          cl = (op == "(") ? ")" : "}"; k = 0
          for (stop = j + 1; stop <= L; stop++) {
            if (substr(s, stop, 1) == op) k++
            else if (substr(s, stop, 1) == cl) { if (k == 0) break; k-- }
          }
          if (stop <= L) { name = substr(s, j + 1, stop - j - 1); stop++ } else stop = 0
        } else if (match(substr(s, j), /^[A-Za-z0-9_]+/)) {
          name = substr(s, j, RLENGTH); stop = j + RLENGTH
        }
      }
      if (stop) { o = o varvalue(e, name, visiting); prev = " "; i = stop }
      else { o = o "$"; prev = " "; i = j }
      continue
    }
    if (prev == "\\") o = o "\\"
    if (c != "\\") o = o c
    prev = c; i++
  }
  if (prev == "\\") o = o "\\"
  return o
}

function env_stmt(s, e, run,    k, v) {
  k = skind[s]; v = sname[s]
  if (k == "INCLUDE") { if (run) return fail("include " v); return 1 }
  if (k == "SET" || k == "UNSET") {
    if (run && v !~ /^[A-Za-z_][A-Za-z_0-9]*$/) return fail("unsupported environment variable name")
    if (run && (supported[v] || ignored[v])) return fail("unsupported set/unset of " v)
    userexp[v] = 1; knownvar[v] = 1
    E[e, v] = (k == "SET") ? sval[s] : "\001"
    return 1
  }
  if (run && !supported[v] && !ignored[v] && !userexp[v]) {
    if (v == "modules") return fail(sval[s] ~ /\.c( |$)/ ? "C stubs (modules with .c)" : "several modules")
    if (v == "all_modules" || v == "module" || v == "program" || v == "commandline" || v == "binary_modules")
      return fail("multi-step compilation (" v ")")
    return fail("unsupported variable " v)
  }
  knownvar[v] = 1
  if (k == "ASSIGN") E[e, v] = sval[s]
  else E[e, v] = lookup(e, v) sval[s]
  return 1
}

function eval_node(n, e, run,    i, s, r, e2) {
  for (i = 1; i <= nstmt[n]; i++) {
    s = stmt[n, i]
    if (skind[s] != "TEST") { if (!env_stmt(s, e, run)) return 0; continue }
    if (!run) continue
    r = run_named(sname[s], smods[s], e)
    if (r == 0) return 0
    if (r == 2) run = 0          # skipped: the rest of this branch is n/a
  }
  for (i = 1; i <= nchild[n]; i++) {
    e2 = env_copy(e)
    if (!eval_node(child[n, i], e2, run)) return 0
  }
  return 1
}

# 1 = pass, 2 = skip, 0 = unsupported (err set)
function run_named(name, mods, e) {
  if (mods != "") return fail("test with modifiers (" mods ")")
  if (name == "bytecode") {
    if (!act_setup(e) || !act_compile(e) || !act_checkc(e) || !act_run(e) || !act_checkp(e)) return 0
    return 1
  }
  if (name == "setup-ocamlc.byte-build-env") return act_setup(e)
  if (name == "ocamlc.byte") return act_compile(e)
  if (name == "check-ocamlc.byte-output") return act_checkc(e)
  if (name == "run") return act_run(e)
  if (name == "check-program-output") return act_checkp(e)
  if (name == "pass") return 1
  if (name == "skip") return 2
  if (name == "native" || name == "native-compiler")
    return cfg_native == "true" ? fail("native test with a native compiler") : 2
  if (name == "not-windows" || name == "not-msvc" || name == "no-tsan" || name == "not_macos_amd64_tsan") return 1
  if (name == "windows" || name == "tsan") return 2
  if (name == "bsd") return cfg_system ~ /bsd/ ? 1 : 2
  if (name == "not-bsd") return cfg_system ~ /bsd/ ? 2 : 1
  if (name == "macos") return cfg_system == "macosx" ? 1 : 2
  if (name == "arch64") return cfg_arch64 == "true" ? 1 : 2
  if (name == "arch32") return cfg_arch64 == "true" ? 2 : 1
  if (name ~ /^arch_/) return substr(name, 6) == cfg_arch ? 1 : 2
  if (name == "flambda") return cfg_flambda == "true" ? 1 : 2
  if (name == "no-flambda") return cfg_flambda == "true" ? 2 : 1
  if (name == "flat-float-array") return cfg_flat == "true" ? 1 : 2
  if (name == "no-flat-float-array") return cfg_flat == "true" ? 2 : 1
  if (name == "shared-libraries") return cfg_shared == "true" ? 1 : 2
  if (name == "no-shared-libraries") return cfg_shared == "true" ? 2 : 1
  if (name == "expect" || name == "toplevel" || name == "toplevel.opt") return fail(name " test")
  if (name ~ /^ocamldoc/) return fail("ocamldoc test")
  if (name ~ /ocamlopt|ocamlc\.opt|ocamlnat/) return fail("native compiler action " name)
  return fail("unsupported action " name)
}

function cleanval(v, what) {
  if (experr != "") return fail(experr)
  if (v ~ /[\t\n\r]/) return fail(what " has a tab or newline")
  return 1
}
# envlines: the exported user variables and OCAMLRUNPARAM for a command
function envlines(e,    v, o, x) {
  o = "Z\n"
  for (v in userexp) if ((e, v) in E) {
    if (E[e, v] == "\001") o = o "U\t" v "\n"
    else { x = lookup(e, v); if (!cleanval(x, v)) return ""; o = o "X\t" v "\t" x "\n" }
  }
  x = lookup(e, "ocamlrunparam")
  if (!cleanval(x, "ocamlrunparam")) return ""
  return o "X\tOCAMLRUNPARAM\t" x "\n"
}
# a reference file: must lie in the tests tree; returns the path relative to
# the tests root, or "\002" (err set)
function refpath(v,    r) {
  if (!cleanval(v, "reference")) return "\002"
  if (substr(v, 1, length(srcroot) + 1) != srcroot "/") { fail("reference outside the test directory"); return "\002" }
  return substr(v, length(srcroot) + 2)
}
function act_setup(e,    f, n, i, ro, pfx) {
  inbuild = 1
  if (!defined(e, "compiler_reference")) {
    pfx = dir "/" prefix
    f = pfx ".ocamlc.byte.reference"
    if (!exists[f]) f = pfx ".byte.reference"
    if (!exists[f]) f = pfx ".compilers.reference"
    E[e, "compiler_reference"] = srcroot "/" f; knownvar["compiler_reference"] = 1
  }
  ro = lookup(e, "readonly_files")
  if (!cleanval(ro, "readonly_files")) return 0
  n = split(ro, a, " ")
  for (i = 1; i <= n; i++) {
    if (a[i] ~ /\// || !exists[dir "/" a[i]]) return fail("readonly file in a subdirectory or missing")
  }
  out = out "B\t" modules (ro != "" ? " " ro : "") "\n"
  return 1
}
function act_compile(e,    x, fl, st) {
  if (!inbuild) return fail("compile without a build environment")
  x = envlines(e); if (x == "") return 0
  fl = lookup(e, "flags") " " lookup(e, "ocamlc_flags")
  if (!cleanval(fl, "flags")) return 0
  st = lookup(e, "ocamlc_byte_exit_status") + 0
  ncomp++
  if (ncomp == 1) { benchflags = fl; gsub(/^ +| +$/, "", benchflags); gsub(/  +/, " ", benchflags) }
  out = out x "C\t" st "\t" (lookup(e, "compile_only") == "true" ? 1 : 0) "\t" fl "\n"
  return 1
}
function act_checkc(e,    r) {
  if (!inbuild) return fail("check without a build environment")
  r = refpath(lookup(e, "compiler_reference")); if (r == "\002") return 0
  out = out "K\t" (exists[r] ? srcroot "/" r : "") "\n"
  return 1
}
function act_run(e,    x, args) {
  if (!inbuild) return fail("run without a build environment")
  x = envlines(e); if (x == "") return 0
  args = lookup(e, "arguments"); if (!cleanval(args, "arguments")) return 0
  nrun++
  out = out x "R\t" (lookup(e, "exit_status") + 0) "\t" args "\n"
  return 1
}
function act_checkp(e,    r) {
  if (!inbuild) return fail("check without a build environment")
  r = refpath(lookup(e, "reference")); if (r == "\002") return 0
  if (!exists[r]) noref = 1
  out = out "P\t" (exists[r] ? srcroot "/" r : "") "\n"
  return 1
}
AWK

(cd "$TESTS" && find . -type f | sed 's|^\./||' | sort > "$WORK/files")
grep '\.ml$' "$WORK/files" | grep -Ev '(^|/)[_.]' > "$WORK/candidates"
if [ -n "$ONLY" ]; then
  grep -E -- "$ONLY" "$WORK/candidates" > "$WORK/candidates.only"
  mv "$WORK/candidates.only" "$WORK/candidates"
fi
(cd "$TESTS" && awk -v files="$WORK/files" -v specdir="$WORK/spec" \
   -v srcroot="$TESTS" -v treeroot="$TREE" -v noref_ok="$NOREF_OK" -v base_orp="${OCAMLRUNPARAM-}" \
   -v cfg_native="$(cfg NATIVE_COMPILER)" -v cfg_flambda="$(cfg FLAMBDA)" \
   -v cfg_flat="$(cfg FLAT_FLOAT_ARRAY)" -v cfg_shared="$(cfg SUPPORTS_SHARED_LIBRARIES)" \
   -v cfg_arch="$(cfg ARCH)" -v cfg_arch64="$(cfg ARCH64)" -v cfg_system="$(cfg SYSTEM)" \
   -f "$WORK/classify.awk" "$WORK/candidates") > "$WORK/plan" \
  || { echo "run-tests.sh: classification failed" >&2; exit 2; }
if [ -n "$EXCLUDE" ]; then
  awk -F '\t' -v OFS='\t' -v re="$EXCLUDE" -v why="$EXCLUDE_REASON" \
    '$2 == "RUN" && $1 ~ re { print $1, "SKIP", why; next } { print }' \
    "$WORK/plan" > "$WORK/plan.x" && mv "$WORK/plan.x" "$WORK/plan"
fi

if [ "$LIST" = 1 ]; then
  awk -F '\t' '$2 == "RUN" { print $1 "\t" $4 "\t" $5 }' "$WORK/plan"
  exit 0
fi

# ---------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------

# text_same REF OUT: ocamltest's text comparison (filecompare.ml): equal
# bytes, or equal after turning CRLF into LF in whichever file has CRLF line
# endings (its first line ends in CR) when the other has not; a final CR
# without LF is kept.
first_line_cr() { [ "$(head -n 1 "$1" | tr -d '\n' | tail -c 1 | od -An -tx1 | tr -d ' ')" = 0d ]; }
crlf_to_lf() {
  local term=1
  [ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -tx1 | tr -d ' ')" != 0a ] && term=0
  awk -v term=$term 'BEGIN { ORS = "" }
    { l[NR] = $0 }
    END { for (i = 1; i <= NR; i++) {
            x = l[i]
            if (i < NR || term) { if (x !~ /\r$/) exit 1; sub(/\r$/, "", x); print x "\n" }
            else print x } }' "$1"
}
text_same() {
  local r=1 o=1
  cmp -s "$1" "$2" && return 0
  [ -s "$1" ] && [ -s "$2" ] || return 1
  first_line_cr "$1" || r=0
  first_line_cr "$2" || o=0
  [ "$r" = "$o" ] && return 1
  if [ "$o" = 1 ]; then crlf_to_lf "$2" > "$2.lf" && cmp -s "$1" "$2.lf"
  else crlf_to_lf "$1" > "$2.lf" && cmp -s "$2.lf" "$2"; fi
}

# run_steps RUNTIME LABEL SPEC SRCDIR PREFIX W
# Executes the steps of SPEC with RUNTIME running the compiler and the
# program, in the build directory $W/b (the same path for both runtimes: -g
# records the compilation directory in the bytecode).  Afterwards $W/b is
# moved to $W/LABEL.  Writes $W/LABEL.reason and $W/LABEL.detail on failure,
# and $W/LABEL.sums.K (checksums of the build directory after compile K).
run_steps() {
  local rt=$1 label=$2 spec=$3 srcdir=$4 prefix=$5 W=$6
  local B=$W/b cout=$W/$label.compiler.output pout=$W/$label.program.output
  local kind a1 a2 a3 st ncomp=0 f ok=1
  local -a envargs=() envset=() words=()
  rm -rf "$B" "$W/$label"; mkdir -p "$B"
  : > "$cout"; : > "$pout"
  fail_step() { echo "$1" > "$W/$label.reason"; ok=0; }
  # output_ok WHAT REFNAME REF OUT: OUT matches the reference file REF, or
  # is empty when there is none; otherwise the step fails.
  output_ok() {
    if [ -n "$3" ]; then
      text_same "$3" "$4" && return 0
      fail_step "$1 output differs from ${3#$TESTS/}"
      diff "$3" "$4" | head -n 10 > "$W/$label.detail"
    else
      [ -s "$4" ] || return 0
      fail_step "$1 output not empty (no $2)"
      head -n 10 "$4" > "$W/$label.detail"
    fi
    return 1
  }
  while IFS=$'\t' read -r kind a1 a2 a3; do
    case "$kind" in
      Z) envargs=(env); envset=() ;;
      U) envargs+=(-u "$a1") ;;
      X) envset+=("$a1=$a2") ;;
      B)
        rm -rf "$B"; mkdir -p "$B"; : > "$cout"
        set -f; words=($a1); set +f
        for f in "${words[@]}"; do cp "$srcdir/$f" "$B/$f" || { fail_step "setup: cannot copy $f"; break 2; }; done ;;
      C)
        ncomp=$((ncomp + 1))
        set -f; words=($a3); set +f
        local -a cmd=("$rt" "$OCAMLC" -use-runtime "$STOCK" -I "$TREE/runtime" -nostdlib -I "$TREE/stdlib")
        [ ${#words[@]} -gt 0 ] && cmd+=("${words[@]}")
        if [ "$a2" = 1 ]; then cmd+=(-c); else cmd+=(-o "$B/$prefix.byte"); fi
        words=()
        [ -f "$srcdir/$prefix.mli" ] && words+=("$prefix.mli")
        words+=("$prefix.ml")
        cmd+=("${words[@]}")
        local -a extra=(TERM=dumb OCAML_COLOR=auto OCAML_ERROR_STYLE=contextual)
        [ "$label" = mgc ] && [ "$MGC_PARAMS_SET" = 1 ] && extra+=("MGC_PARAMS=$MGC_PARAMS_VAL")
        (cd "$B" && exec "${envargs[@]}" ${envset[@]+"${envset[@]}"} ${extra[@]+"${extra[@]}"} timeout "$TO" "${cmd[@]}") \
          >> "$cout" 2>&1 < /dev/null
        st=$?
        (cd "$B" && find . -type f -exec cksum {} + | sort -k 3) > "$W/$label.sums.$ncomp"
        if [ "$st" != "$a1" ]; then
          if [ "$st" = 124 ]; then fail_step "compile: timeout after ${TO}s"
          else fail_step "compile: exit status $st (expected $a1)"; fi
          head -n 10 "$cout" > "$W/$label.detail"; break
        fi ;;
      K) output_ok compiler "compiler reference" "$a1" "$cout" || break ;;
      R)
        set -f; words=($a2); set +f
        local -a extra=()
        [ "$label" = mgc ] && [ "$MGC_PARAMS_SET" = 1 ] && extra+=("MGC_PARAMS=$MGC_PARAMS_VAL")
        (cd "$B" && exec "${envargs[@]}" ${envset[@]+"${envset[@]}"} ${extra[@]+"${extra[@]}"} timeout "$TO" "$rt" "$B/$prefix.byte" ${words[@]+"${words[@]}"}) \
          > "$pout" 2>&1 < /dev/null
        st=$?
        if [ "$st" != "$a1" ]; then
          if [ "$st" = 124 ]; then fail_step "run: timeout after ${TO}s"
          else fail_step "run: exit status $st (expected $a1)"; fi
          tail -n 10 "$pout" > "$W/$label.detail"; break
        fi ;;
      P) output_ok program reference "$a1" "$pout" || break ;;
    esac
  done < "$spec"
  mv "$B" "$W/$label"
  [ "$ok" = 1 ]
}

# run_test INDEX REL SPEC: writes $WORK/res/INDEX
run_test() {
  local idx=$1 rel=$2 spec=$3
  local W=$WORK/t/$idx srcdir prefix reason="" s_ok=1 m_ok=1 k f
  srcdir=$TESTS/$(dirname "$rel"); prefix=$(basename "$rel" .ml)
  rm -rf "$W"; mkdir -p "$W"
  run_steps "$STOCK" stock "$spec" "$srcdir" "$prefix" "$W" || s_ok=0
  run_steps "$MGC" mgc "$spec" "$srcdir" "$prefix" "$W" || m_ok=0
  {
    if [ "$s_ok" = 0 ]; then
      echo "FAIL $rel stock failed (runner bug): $(cat "$W/stock.reason")"
      sed 's/^/    /' "$W/stock.detail" 2>/dev/null
    else
      local differ=""
      for f in "$W"/stock.sums.*; do
        k=${f##*.}
        [ -f "$W/mgc.sums.$k" ] || continue
        if ! cmp -s "$f" "$W/mgc.sums.$k"; then
          differ=$(diff "$f" "$W/mgc.sums.$k" | sed -n 's/^[<>] [0-9]* [0-9]* \.\///p' | sort -u | tr '\n' ' ')
          break
        fi
      done
      if [ -n "$differ" ]; then reason="compiler output differs (${differ% })"; fi
      if [ "$m_ok" = 0 ]; then
        case "$(cat "$W/mgc.reason")" in
          compile*|compiler*) reason="${reason:+$reason; }compiler output differs: $(cat "$W/mgc.reason")" ;;
          *) reason="${reason:+$reason; }mgc failed: $(cat "$W/mgc.reason")" ;;
        esac
      fi
      if [ -z "$reason" ]; then
        echo "PASS $rel"
        [ "$KEEP" = 1 ] || rm -rf "$W"
      else
        echo "FAIL $rel $reason"
        [ "$m_ok" = 0 ] && sed 's/^/    /' "$W/mgc.detail" 2>/dev/null
      fi
    fi
  } > "$WORK/res/$idx.tmp"
  mv "$WORK/res/$idx.tmp" "$WORK/res/$idx"
}

echo "work directory: $WORK"
echo "tree: $TREE"
echo "ocamlrun-mgc: $MGC${MGC_PARAMS_SET:+}$( [ "$MGC_PARAMS_SET" = 1 ] && echo " (MGC_PARAMS=$MGC_PARAMS_VAL)")"
start_s=$(date +%s)

# one index per test, in sorted order; skips are decided already
N=0
declare -a RELS=() KINDS=() SPECS=()
while IFS=$'\t' read -r rel kind a3 a4 a5; do
  RELS[N]=$rel; KINDS[N]=$kind; SPECS[N]=$a3; N=$((N + 1))
done < "$WORK/plan"

next_out=0
flush() {
  while [ "$next_out" -lt "$N" ]; do
    if [ "${KINDS[next_out]}" = SKIP ]; then
      echo "SKIP ${RELS[next_out]} ${SPECS[next_out]}"
    elif [ -f "$WORK/res/$next_out" ]; then
      cat "$WORK/res/$next_out"
    else
      break
    fi
    next_out=$((next_out + 1))
  done
}

running=0
{
  for ((i = 0; i < N; i++)); do
    [ "${KINDS[i]}" = RUN ] || continue
    if [ "$running" -ge "$JOBS" ]; then
      wait -n; running=$((running - 1)); flush
    fi
    run_test "$i" "${RELS[i]}" "${SPECS[i]}" &
    running=$((running + 1))
  done
  wait
  flush
} | tee "$WORK/results"

end_s=$(date +%s)
# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------
awk -v secs=$((end_s - start_s)) '
/^(PASS|FAIL|SKIP) / {
  v = $1; p = $2; d = p; sub(/\/.*$/, "", d); if (d == p) d = "."
  if (!(d in seen)) { seen[d] = 1; dirs[++nd] = d }
  if (v == "PASS") { pass[d]++; tp++ }
  else if (v == "FAIL") { fail[d]++; tf++ }
  else { skip[d]++; ts++; r = $0; sub(/^SKIP [^ ]* /, "", r); reasons[r]++ }
}
END {
  print ""
  printf "%-32s %9s %7s %7s %8s\n", "directory", "attempted", "passed", "failed", "skipped"
  for (i = 1; i <= nd; i++) {
    d = dirs[i]
    printf "%-32s %9d %7d %7d %8d\n", d, pass[d] + fail[d], pass[d], fail[d], skip[d]
  }
  printf "%-32s %9d %7d %7d %8d\n", "total", tp + tf, tp, tf, ts
  print ""
  print "skip reasons:"
  n = 0
  for (r in reasons) lines[++n] = sprintf("%6d  %s", reasons[r], r)
  # sort by count, descending (insertion sort: few reasons)
  for (i = 2; i <= n; i++) { x = lines[i]; j = i - 1
    while (j > 0 && lines[j] + 0 < x + 0) { lines[j + 1] = lines[j]; j-- }
    lines[j + 1] = x }
  for (i = 1; i <= n; i++) print lines[i]
  print ""
  print "time: " secs " s"
  print tp + 0 " passed, " tf + 0 " failed"
  exit (tf == 0 && tp > 0) ? 0 : 1
}' "$WORK/results"
