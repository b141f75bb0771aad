#!/usr/bin/env bash
# tools/fetch-ocaml-source.sh VERSION OUT.tgz: downloads OCaml VERSION's
# full source tree (testsuite included), the npm registry's ocaml@VERSION
# package, into OUT.tgz: with npm pack when npm is installed, else curl or
# wget of the registry's URL for it.  Used by ports/ocaml/build.sh and
# tools/build-ocaml-peer.sh.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 VERSION OUT.tgz" >&2; exit 2; }
version="$1"
out="$2"
url="https://registry.npmjs.org/ocaml/-/ocaml-$version.tgz"
tmp="$(mktemp -d "$(dirname "$out")/fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "fetching ocaml@$version from the npm registry" >&2
if command -v npm >/dev/null 2>&1; then
  (cd "$tmp" && npm pack --silent "ocaml@$version" >/dev/null)
elif command -v curl >/dev/null 2>&1; then
  curl -fsSL -o "$tmp/ocaml-$version.tgz" "$url"
elif command -v wget >/dev/null 2>&1; then
  wget -q -O "$tmp/ocaml-$version.tgz" "$url"
else
  echo "$0: none of npm, curl, wget: cannot fetch $url" >&2
  exit 1
fi
mv "$tmp/ocaml-$version.tgz" "$out"
