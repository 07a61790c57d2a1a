#!/usr/bin/env bash
# What `cmake --install` writes holds no path of the machine that built it: neither the
# source tree's (configure time) nor the build tree's, in the kiln program or the
# libraries. CMake's cache, which holds both, checks that the search finds them.
#   [CMAKE=cmake] install_no_build_paths.sh BUILD_DIR SOURCE_DIR [--sanitized]
# --sanitized (a KILN_SANITIZE build): skipped, since ASan and UBSan write the sources' full
# paths into the code for their reports (global variables' metadata, type descriptors); such
# a build is for the tests, not for installing.
# The code and data are searched, not the debug information: a Release build (the default)
# has none, and a -g build's names the sources by their full paths on purpose, for
# debuggers (strip it: objcopy --strip-debug, `cmake --install --strip`). __FILE__ is
# relative in every build (-fmacro-prefix-map, CMakeLists.txt).
set -eu
if [ "${3:-}" = --sanitized ]; then
  echo "skipped: a sanitizer build holds the sources' paths for its reports"
  exit 77
fi
build=$(cd "$1" && pwd -P) src=$(cd "$2" && pwd -P)
# each tree with its links resolved, and as CMake named it (absolute)
paths=$(printf '%s\n' "$src" "$build" "$2" "$1" | grep '^/' | sort -u)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CMAKE:-cmake}" --install "$build" --prefix "$tmp/prefix" >/dev/null

while read -r path; do
  grep -q -a -F "$path" "$build/CMakeCache.txt" ||
    { echo "FAIL: the search does not find $path in CMakeCache.txt"; exit 1; }
done <<<"$paths"
files=$(find "$tmp/prefix" -type f \( -path '*/bin/*' -o -name 'libkiln*' \) | sort)
[ "$(printf '%s\n' "$files" | grep -c -E '/bin/kiln$|libkiln\.a$|libkiln\.so\.')" -eq 3 ] ||
  { echo "FAIL: expected bin/kiln, libkiln.a and libkiln.so.N among: $files"; exit 1; }
failures=0
for f in $files; do
  searched=$f
  if readelf -S "$f" 2>/dev/null | grep -q '\.debug_'; then
    searched=$tmp/stripped
    objcopy --strip-debug "$f" "$searched"
    echo "${f#"$tmp/prefix/"}: searched without its debug information"
  fi
  while read -r path; do
    n=$(grep -c -a -F "$path" "$searched" || true)
    if [ "$n" -ne 0 ]; then
      echo "FAIL: ${f#"$tmp/prefix/"} holds $path ($n lines):"
      strings -n 4 "$searched" | grep -F "$path" | sort -u | head -5
      failures=$((failures + 1))
    fi
  done <<<"$paths"
done
[ "$failures" -eq 0 ] || exit 1
echo "ok: $(printf '%s\n' "$files" | wc -l) installed files hold neither $src nor $build"
