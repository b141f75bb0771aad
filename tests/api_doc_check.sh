#!/usr/bin/env bash
# Every public name of include/mgc.h has an entry in docs/API.md.
#
# Usage: tests/api_doc_check.sh [REPO_ROOT]   (default: this script's parent
# directory's parent, i.e. the repository root)
#
# Names taken from the header, comments removed first:
#   - every identifier declared with MGC_API (functions and variables);
#   - every macro: #define MGC_... (object-like and function-like);
#   - every type: the name a typedef declares (plain, struct, function
#     pointer), every struct/union/enum tag mgc_..., and every enumerator;
#   - every static inline function.
# Internal names (mgc__/MGC__, the fast-path state) are checked too: the
# manual lists them under "Internals visible in the header".
#
# A name has an entry when docs/API.md shows it in backticks (`name`,
# `name(...)`, `struct name`, `#define name`) or on a heading line (a line
# starting with "#" and a space, outside fenced code blocks) as a whole
# word.  One check per name; a missing one prints "FAIL: NAME has no entry
# in docs/API.md".  Ends with the usual "N passed, M failed" line and exits
# non-zero on any failure.
set -u

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
header=$root/include/mgc.h
doc=$root/docs/API.md

for f in "$header" "$doc"; do
  if [ ! -r "$f" ]; then
    echo "FAIL: cannot read $f"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# The header without comments (block and line comments; string literals in
# the header hold no comment markers), continuation lines joined.
strip() {
  awk '
    BEGIN { inc = 0 }
    {
      line = $0; out = ""
      while (length(line) > 0) {
        if (inc) {
          i = index(line, "*/")
          if (i == 0) { line = ""; break }
          line = substr(line, i + 2); inc = 0
        } else {
          i = index(line, "/*"); j = index(line, "//")
          if (j > 0 && (i == 0 || j < i)) { out = out substr(line, 1, j - 1); line = ""; break }
          if (i == 0) { out = out line; line = ""; break }
          out = out substr(line, 1, i - 1) " "; line = substr(line, i + 2); inc = 1
        }
      }
      print out
    }' "$1" |
    awk '
      { if (cont != "") { $0 = cont " " $0; cont = "" } }
      /\\[ \t]*$/ { sub(/\\[ \t]*$/, ""); cont = $0; next }
      { print }
      END { if (cont != "") print cont }'
}

clean=$(strip "$header")

names=$(
  printf '%s\n' "$clean" | awk '
    # The last identifier of s.
    function last_ident(s) {
      sub(/[ \t]+$/, "", s)
      if (match(s, /[A-Za-z_][A-Za-z0-9_]*$/)) return substr(s, RSTART)
      return ""
    }
    # A complete top-level declaration (a statement ended by ";").
    function decl(s,   t, m) {
      gsub(/[ \t]+/, " ", s)
      if (s ~ /(^| )MGC_API( |$)/) {
        t = s
        if (match(t, /\( *\* *[A-Za-z_][A-Za-z0-9_]* *\(/)) {
          # a function returning a function pointer: T (*name(args))(...)
          m = substr(t, RSTART + 1, RLENGTH - 2)
          gsub(/[ *]/, "", m)
          print m
          return
        }
        if (index(t, "(")) {                # a function: the name before "("
          t = substr(t, 1, index(t, "(") - 1)
        } else {                            # variables: each declarator
          gsub(/MGC_TLS_MODEL/, "", t)
          gsub(/\[[^]]*\]/, "", t)
          gsub(/=[^,]*/, "", t)
          nv = split(t, vars, ",")
          for (q = 1; q <= nv; q++)
            if ((m = last_ident(vars[q])) != "") print m
          return
        }
        if ((m = last_ident(t)) != "") print m
      } else if (s ~ /(^| )typedef /) {
        if (match(s, /\( *\* *[A-Za-z_][A-Za-z0-9_]* *\)/)) {  # function pointer
          m = substr(s, RSTART + 1, RLENGTH - 2)
          gsub(/[ *]/, "", m)
          print m
        } else {
          sub(/\[.*$/, "", s)
          if ((m = last_ident(s)) != "") print m
        }
      }
    }
    /^[ \t]*#/ { next }
    {
      line = $0 " "
      n = length(line)
      for (k = 1; k <= n; k++) {
        c = substr(line, k, 1)
        if (c == "{") {
          if (depth == 0) {
            if (stmt ~ /extern *"C" *$/) { ext++; stmt = ""; continue }
            head = stmt
            in_enum = (head ~ /(^|[ \t])enum([ \t]|$)/)
            ebody = ""
            if (head ~ /(^|[ \t])static[ \t]+inline[ \t]/) {
              t = substr(head, 1, index(head, "(") - 1)
              if ((m = last_ident(t)) != "") print m
            }
          }
          depth++
          continue
        }
        if (c == "}") {
          if (depth == 0) { if (ext > 0) ext--; continue }
          depth--
          if (depth == 0) {
            if (in_enum) {                    # the enumerators
              ne = split(ebody, items, ",")
              for (q = 1; q <= ne; q++)
                if (match(items[q], /[A-Za-z_][A-Za-z0-9_]*/)) print substr(items[q], RSTART, RLENGTH)
              in_enum = 0
            }
            if (head ~ /(^|[ \t])static[ \t]+inline[ \t]/) stmt = ""
            else stmt = stmt " {} "
          }
          continue
        }
        if (depth > 0) { if (in_enum) ebody = ebody c; continue }
        if (c == ";") { decl(stmt); stmt = ""; continue }
        stmt = stmt c
      }
    }'
  # Macros.
  printf '%s\n' "$clean" |
    sed -n 's/^[[:blank:]]*#[[:blank:]]*define[[:blank:]][[:blank:]]*\(MGC_[A-Za-z0-9_]*\).*/\1/p'
  # Struct, union and enum tags.
  printf '%s\n' "$clean" |
    grep -oE '(struct|union|enum)[[:space:]]+mgc_[A-Za-z0-9_]*' |
    sed -E 's/^(struct|union|enum)[[:space:]]+//'
)
names=$(printf '%s\n' "$names" | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u)

# Heading lines of the manual (ATX headings, outside fenced code blocks).
headings=$(awk '/^```/ { code = !code; next } !code && /^#+[ \t]/' "$doc")

pass=0 fail=0
if [ -z "$names" ]; then
  echo "FAIL: no public name found in $header (the extraction is broken)"
  fail=1
fi

for n in $names; do
  # In backticks, possibly after "struct ", "enum " or "#define ", and not
  # followed by another identifier character; or a whole word on a heading.
  if grep -Eq "\`((struct|union|enum|#define|typedef) +)?$n([^A-Za-z0-9_]|\$)" "$doc" ||
    printf '%s\n' "$headings" | grep -Eq "(^|[^A-Za-z0-9_])$n([^A-Za-z0-9_]|\$)"; then
    pass=$((pass + 1))
  else
    echo "FAIL: $n has no entry in docs/API.md"
    fail=$((fail + 1))
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
