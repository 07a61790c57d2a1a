#!/usr/bin/env bash
# libkiln as a user links it: `cmake --install` into a temporary prefix, move the installed
# tree elsewhere (kiln.pc must follow it), then build samples/c/*.c with the C compiler and
# pkg-config alone, shared (`pkg-config --libs kiln`) and static (`pkg-config --static
# --libs kiln`, with libkiln.a named where -lkiln stood, since -l picks the .so where both
# are installed), and run both on the cpu backend: the MLP's loss must fall.
#   [CMAKE=cmake] install_sample.sh BUILD_DIR SOURCE_DIR CC [EXTRA_FLAGS...]
# EXTRA_FLAGS: what the build compiled libkiln with that a program must link too (the
# sanitizers' -fsanitize=...).
set -eu
build=$1 src=$2 cc=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"${CMAKE:-cmake}" --install "$build" --prefix "$tmp/prefix" >/dev/null
mv "$tmp/prefix" "$tmp/moved"
pc=$(find "$tmp/moved" -name kiln.pc)
[ -n "$pc" ] || { echo "FAIL: no kiln.pc installed"; exit 1; }
export PKG_CONFIG_PATH=${pc%/kiln.pc}
libdir=$(pkg-config --variable=libdir kiln)
if [ ! -e "$libdir/libkiln.a" ] || ! ls "$libdir"/libkiln.so.* >/dev/null 2>&1; then
  echo "FAIL: $libdir lacks libkiln.a or libkiln.so.N: $(ls "$libdir")"
  exit 1
fi
echo "kiln.pc: --cflags --libs: $(pkg-config --cflags --libs kiln)"
echo "kiln.pc: --static --libs: $(pkg-config --static --libs kiln)"

# shared: the program needs libkiln.so.N at run time
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror "$@" "$src"/samples/c/*.c -o "$tmp/mlp-shared" \
  $(pkg-config --cflags --libs kiln)
readelf -d "$tmp/mlp-shared" | grep -q 'NEEDED.*libkiln\.so' ||
  { echo "FAIL: the shared build does not load libkiln.so"; exit 1; }
LD_LIBRARY_PATH=$libdir "$tmp/mlp-shared" cpu

# static: libkiln.a and what it needs, from Libs.private and Requires.private
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror "$@" "$src"/samples/c/*.c -o "$tmp/mlp-static" \
  $(pkg-config --cflags kiln) $(pkg-config --static --libs kiln | sed "s/-lkiln\\b/-l:libkiln.a/")
if readelf -d "$tmp/mlp-static" | grep -q 'NEEDED.*libkiln'; then
  echo "FAIL: the static build loads libkiln.so"
  exit 1
fi
"$tmp/mlp-static" cpu
echo "ok: samples/c built and ran against the installed kiln, shared and static"
