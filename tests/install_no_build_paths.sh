#!/usr/bin/env bash
# What `cmake --install` writes holds no path of the machine that built it: neither the
# source tree's (configure time) nor the build tree's, in the kiln program or the
# libraries. CMake's cache, which holds both, checks that the search finds them.
#   install_no_build_paths.sh BUILD_DIR SOURCE_DIR
# Release builds (the default) carry no debug information; builds with -g name their
# sources relative to the trees (-ffile-prefix-map, CMakeLists.txt), so this holds for
# them too, the sanitizer build included.
set -eu
build=$(cd "$1" && pwd -P) src=$(cd "$2" && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

for path in "$src" "$build"; do
  grep -q -a -F "$path" "$build/CMakeCache.txt" ||
    { echo "FAIL: the search does not find $path in CMakeCache.txt"; exit 1; }
done
files=$(find "$tmp/prefix" -type f \( -path '*/bin/*' -o -name 'libkiln*' \) | sort)
[ "$(printf '%s\n' "$files" | grep -c -E '/bin/kiln$|libkiln\.a$|libkiln\.so\.')" -eq 3 ] ||
  { echo "FAIL: expected bin/kiln, libkiln.a and libkiln.so.N among: $files"; exit 1; }
failures=0
for f in $files; do
  for path in "$src" "$build"; do
    n=$(grep -c -a -F "$path" "$f" || true)
    if [ "$n" -ne 0 ]; then
      echo "FAIL: ${f#"$tmp/prefix/"} holds $path ($n lines):"
      grep -a -o -F "$path[^[:space:][:cntrl:]]*" "$f" | sort -u | head -5
      failures=$((failures + 1))
    fi
  done
done
[ "$failures" -eq 0 ] || exit 1
echo "ok: $(printf '%s\n' "$files" | wc -l) installed files hold neither $src nor $build"
