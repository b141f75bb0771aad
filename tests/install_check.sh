#!/usr/bin/env bash
# tests/install_check.sh [REPO_ROOT] [BUILD_DIR]: the installed package works.
#
# Runs `make install DESTDIR=$tmp PREFIX=/usr/local` into a scratch
# directory and checks: every file is there (header, libmgc.a, libmgc.so.V
# and its two links, lib/pkgconfig/mgc.pc), the versions of the Makefile, the
# header and the .pc agree, the .pc names PREFIX (not DESTDIR); the installed
# .so's SONAME is libmgc.so.0 and it exports only mgc_ symbols; the header
# compiles on its own (-std=c11 -Wpedantic -Werror); examples/embed.c builds
# with the flags of `pkg-config --define-prefix mgc` (the DESTDIR copy is
# used) and runs, linked shared (LD_LIBRARY_PATH into $tmp, and the loader
# really picks that copy) and static (`--static --libs`, libmgc.a through
# -Wl,-Bstatic: no libmgc in the binary's NEEDED); a second install over the
# first works; then `make uninstall DESTDIR=$tmp PREFIX=/usr/local` removes
# every file install wrote and nothing of mgc remains under $tmp.
# Without pkg-config ($PKG_CONFIG) the .pc checks are skipped (with a note)
# and the examples are built with plain -I/-L flags instead.  VERBOSE=1
# names every check.
# Prints "N passed, M failed" (and "K skipped" when some were).
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
build=${2:-$root/build}
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
prefix=/usr/local

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgc-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
inst=$dest$prefix
pass=0 fail=0 skip=0
check() {
  [ -n "${VERBOSE:-}" ] && echo "check: $1"
  if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi
}
skipped() { echo "skip: $1"; skip=$((skip + 1)); }
# make from a test run inherits the outer make's flags (jobserver): drop them.
mk() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory \
    -C "$root" BUILD="$build" "$@"
}

version=$(sed -n 's/^VERSION := *//p' "$root/Makefile")
soversion=$(sed -n 's/^SOVERSION := *//p' "$root/Makefile")
hdr_version=$(awk '/#define MGC_VERSION_(MAJOR|MINOR|PATCH) / {v = v (v == "" ? "" : ".") $3} END {print v}' "$root/include/mgc.h")
check "Makefile VERSION ($version) = mgc.h's MGC_VERSION_* ($hdr_version)" \
  '[ -n "$version" ] && [ "$version" = "$hdr_version" ]'

# ---------------------------------------------------------------- install --
check "make install DESTDIR=... PREFIX=$prefix" \
  'mk install DESTDIR="$dest" PREFIX="$prefix" >"$tmp/install.log" 2>&1 || { tail -20 "$tmp/install.log"; false; }'
installed="include/mgc.h lib/libmgc.a lib/libmgc.so.$version lib/libmgc.so.$soversion lib/libmgc.so lib/pkgconfig/mgc.pc"
for f in $installed; do
  check "installed $f" '[ -f "$inst/$f" ]'
done
check "lib/libmgc.so -> libmgc.so.$soversion -> libmgc.so.$version" \
  '[ "$(readlink "$inst/lib/libmgc.so")" = "libmgc.so.$soversion" ] && [ "$(readlink "$inst/lib/libmgc.so.$soversion")" = "libmgc.so.$version" ]'
check "the installed header is include/mgc.h" 'cmp -s "$root/include/mgc.h" "$inst/include/mgc.h"'
check "mgc.pc names PREFIX, not DESTDIR" \
  'grep -qx "prefix=$prefix" "$inst/lib/pkgconfig/mgc.pc" && ! grep -q "$dest" "$inst/lib/pkgconfig/mgc.pc"'

so=$inst/lib/libmgc.so.$version
check "installed .so has SONAME libmgc.so.$soversion" \
  'readelf -d "$so" | grep -q "(SONAME).*\[libmgc\.so\.$soversion\]"'
bad=$(nm -D --defined-only "$so" | awk '$2 ~ /[TDBRVWiu]/ {print $3}' | grep -v '^mgc_' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$')
check "installed .so exports only mgc_ symbols (got: $bad)" '[ -z "$bad" ]'

printf '#include <mgc.h>\nint main(void) { return MGC_VERSION == %d ? 0 : 1; }\n' \
  "$(awk -F. '{print $1 * 10000 + $2 * 100 + $3}' <<<"$version")" >"$tmp/hdr.c"
check "installed header compiles alone (-std=c11 -Wpedantic -Werror)" \
  '$CC -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$inst/include" "$tmp/hdr.c" -o "$tmp/hdr" && "$tmp/hdr"'

# ----------------------------------------------------- pkg-config, builds --
if command -v "$PKG_CONFIG" >/dev/null 2>&1; then
  # Only the DESTDIR copy: PKG_CONFIG_LIBDIR replaces the default search
  # path; --define-prefix takes prefix from where the .pc file lies.
  pc() {
    PKG_CONFIG_LIBDIR="$inst/lib/pkgconfig" PKG_CONFIG_PATH="$inst/lib/pkgconfig" \
      "$PKG_CONFIG" --define-prefix "$@" mgc
  }
  if ! pc --exists 2>/dev/null; then
    # A pkg-config without --define-prefix: the sysroot does the same here.
    pc() {
      PKG_CONFIG_LIBDIR="$inst/lib/pkgconfig" PKG_CONFIG_PATH="$inst/lib/pkgconfig" \
        PKG_CONFIG_SYSROOT_DIR="$dest" "$PKG_CONFIG" "$@" mgc
    }
  fi
  check "pkg-config finds mgc, version $version" '[ "$(pc --modversion 2>&1)" = "$version" ]'
  cflags=$(pc --cflags 2>/dev/null)
  libs=$(pc --libs 2>/dev/null)
  static_libs=$(pc --static --libs 2>/dev/null)
  check "pkg-config --cflags points into DESTDIR ($cflags)" '[[ " $cflags " == *" -I$inst/include "* ]]'
  check "pkg-config --libs points into DESTDIR ($libs)" \
    '[[ " $libs " == *" -L$inst/lib "* ]] && [[ " $libs " == *" -lmgc "* ]]'
else
  echo "note: $PKG_CONFIG not found: the mgc.pc checks are skipped;" \
    "the examples are built with -I/-L"
  skipped "pkg-config finds mgc"
  skipped "pkg-config --cflags"
  skipped "pkg-config --libs"
  cflags="-I$inst/include"
  libs="-L$inst/lib -lmgc -pthread"
  static_libs=$libs
fi
# -lmgc as the static archive, the rest as pkg-config says.
static_libs=$(sed 's/\(^\| \)-lmgc\( \|$\)/\1-Wl,-Bstatic -lmgc -Wl,-Bdynamic\2/' <<<"$static_libs")

cflags_w="-std=c11 -Wall -Wextra -Wpedantic -Werror -O2"
check "embed.c builds against the installed shared library" \
  '$CC $cflags_w $cflags "$root/examples/embed.c" -o "$tmp/embed-shared" $libs 2>"$tmp/cc1.log" || { cat "$tmp/cc1.log"; false; }'
check "shared embed needs libmgc.so.$soversion" \
  'readelf -d "$tmp/embed-shared" | grep -q "(NEEDED).*\[libmgc\.so\.$soversion\]"'
check "shared embed loads the DESTDIR copy" \
  'LD_LIBRARY_PATH="$inst/lib" ldd "$tmp/embed-shared" | grep -q "libmgc\.so\.$soversion => $inst/lib/libmgc\.so\.$soversion"'
check "shared embed runs" \
  'LD_LIBRARY_PATH="$inst/lib" "$tmp/embed-shared" >"$tmp/run1.log" 2>&1 && grep -q "= 5050" "$tmp/run1.log"'
check "embed.c builds against the installed static library ($static_libs)" \
  '$CC $cflags_w $cflags "$root/examples/embed.c" -o "$tmp/embed-static" $static_libs 2>"$tmp/cc2.log" || { cat "$tmp/cc2.log"; false; }'
check "static embed does not need libmgc.so" \
  '! readelf -d "$tmp/embed-static" | grep -q "(NEEDED).*libmgc"'
check "static embed runs" \
  '"$tmp/embed-static" >"$tmp/run2.log" 2>&1 && grep -q "= 5050" "$tmp/run2.log"'

check "a second make install over the first works" \
  'mk install DESTDIR="$dest" PREFIX="$prefix" >"$tmp/install2.log" 2>&1 || { tail -20 "$tmp/install2.log"; false; }'

# -------------------------------------------------------------- uninstall --
check "make uninstall DESTDIR=... PREFIX=$prefix" \
  'mk uninstall DESTDIR="$dest" PREFIX="$prefix" >"$tmp/uninstall.log" 2>&1 || { tail -20 "$tmp/uninstall.log"; false; }'
for f in $installed; do
  check "uninstalled $f" '[ ! -e "$inst/$f" ] && [ ! -L "$inst/$f" ]'
done
left=$(find "$dest" -name '*mgc*' | sed "s|^$dest||")
check "nothing of mgc left under DESTDIR (left: $left)" '[ -z "$left" ]'

echo "$pass passed, $fail failed"
[ "$skip" -eq 0 ] || echo "$skip skipped"
[ "$fail" -eq 0 ]
