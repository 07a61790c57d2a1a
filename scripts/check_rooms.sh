#!/usr/bin/env bash
# host/'s rooms use only the rooms above them. The rule's one source is the room table of
# host/README.md (columns: room, target, what goes there, may use); this script reads it and
# fails, naming the file and line, on:
#   - a "may use" entry that is not a room above it in the table (or libkiln),
#   - a folder of host/ that is no room of the table,
#   - an #include "ROOM/..." in a room's files of a room it may not use, or of a folder that
#     is neither a room nor libkiln's public kiln/ (engine-private headers),
#   - a kiln library in a host target_link_libraries that is neither the target's own room's
#     nor one of a room it may use (libkiln is the target `kiln`), or a host target that no
#     room of the table names.
# tests/ and fuzz/ stand above every room and are not checked.
# usage: scripts/check_rooms.sh [SOURCE_DIR]   (ctest: host_rooms)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
readme=$root/host/README.md
fail=0
problem() { echo "check_rooms: $*" >&2; fail=1; }

# The table's rows as "room|targets|may use", rooms in the table's order; a room is a folder
# ("cli/") or a file of host/ itself ("main.c").
rows=$(awk -F'|' '
  /^\| room \| target \|/ { in_table = 1; next }
  in_table && /^\|---/ { next }
  in_table && /^\|/ { gsub(/[` ]/, "", $2); gsub(/[` ]/, "", $3); gsub(/[` ]/, "", $5);
                      print $2 "|" $3 "|" $5; next }
  in_table { exit }' "$readme")
[ -n "$rows" ] || { echo "check_rooms: no room table in $readme" >&2; exit 1; }

declare -A rank may target_room
names=()
i=0
while IFS='|' read -r room targets uses; do
  name=${room%/}
  names+=("$name")
  rank[$name]=$i
  may[$name]=",$uses,"
  for t in $(grep -o 'kiln_[a-z_]*' <<<"$targets"); do target_room[$t]=$name; done
  i=$((i + 1))
done <<<"$rows"

# the table itself: each room may use only rooms above it
for name in "${names[@]}"; do
  for used in $(tr ',' ' ' <<<"${may[$name]}"); do
    [ "$used" = libkiln ] && continue
    if [ -z "${rank[$used]+x}" ]; then
      problem "host/README.md: $name may use '$used', which is no room of the table"
    elif [ "${rank[$used]}" -ge "${rank[$name]}" ]; then
      problem "host/README.md: $name may use $used, which is not above it in the table"
    fi
  done
done

# every folder of host/ is a room
for dir in "$root"/host/*/; do
  name=$(basename "$dir")
  [ -n "${rank[$name]+x}" ] || problem "host/$name/ is no room of host/README.md's table"
done

# the includes of each room's files
for name in "${names[@]}"; do
  if [ -d "$root/host/$name" ]; then
    files=$(find "$root/host/$name" -name '*.[ch]' -o -name '*.inc' | sort)
  else
    files=$root/host/$name
  fi
  for f in $files; do
    while IFS=: read -r line used; do
      if [ -z "${rank[$used]+x}" ]; then
        [ "$used" = kiln ] && case ${may[$name]} in *",libkiln,"*) continue ;; esac
        problem "${f#"$root"/}:$line: room $name includes $used/, which is neither a room it may use nor kiln/"
        continue
      fi
      [ "$used" = "$name" ] && continue
      case ${may[$name]} in *",$used,"*) continue ;; esac
      problem "${f#"$root"/}:$line: room $name includes $used/, which it may not use (host/README.md)"
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/' "$f" |
             sed -E 's/^([0-9]+):[^"]*"([a-z_]+)\/.*/\1:\2/')
  done
done

# the libraries each host target links (calls may span lines)
while IFS= read -r call; do
  cmake_file=${call%%|*}
  args=${call#*|}
  read -r -a words <<<"$args"
  tgt=${words[0]}
  name=${target_room[$tgt]:-}
  if [ -z "$name" ]; then
    problem "${cmake_file#"$root"/}: target $tgt is in no room of host/README.md's table"
    continue
  fi
  for lib in "${words[@]:1}"; do
    if [ "$lib" = kiln ]; then
      case ${may[$name]} in *",libkiln,"*) continue ;; esac
      problem "${cmake_file#"$root"/}: $tgt links libkiln, which $name may not use"
      continue
    fi
    [[ $lib == kiln_* ]] || continue # PUBLIC/PRIVATE, m, MPI::MPI_C, a peer library
    used=${target_room[$lib]:-}
    [ "$used" = "$name" ] && continue
    case ${may[$name]} in *",$used,"*) [ -n "$used" ] && continue ;; esac
    problem "${cmake_file#"$root"/}: $tgt ($name) links $lib (${used:-no room}), which it may not use (host/README.md)"
  done
done < <(find "$root/host" -name CMakeLists.txt | sort | while read -r cm; do
  awk -v F="$cm" '
    /^[[:space:]]*#/ { next }
    /target_link_libraries\(/ { call = ""; open = 1; sub(/.*target_link_libraries\(/, "") }
    open { line = $0; if (sub(/\).*/, "", line)) { call = call " " line; print F "|" call; open = 0 }
           else call = call " " line }' "$cm"
done)

[ "$fail" = 0 ] && echo "check_rooms: every room of host/ includes and links only the rooms above it"
exit "$fail"
