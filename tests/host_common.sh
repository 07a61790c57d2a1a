# What the host test scripts (host_*.sh) share; each sources it first:
#   . "$(dirname "$0")/host_common.sh"

# host_workdir WORKDIR: a fresh, empty WORKDIR, made the current directory.
host_workdir() {
  rm -rf "$1" && mkdir -p "$1" && cd "$1"
}

# host_setup KILN WORKDIR [BACKEND]: sets kiln, work and backend (cpu when not given), exits
# 77 (skipped) when this machine has no device of that backend (`kiln info` lists "NAME:N"),
# and starts in a fresh WORKDIR.
host_setup() {
  kiln=$1
  work=$2
  backend=${3:-cpu}
  "$kiln" info 2>/dev/null | grep -q "^$backend:[0-9]" || { echo "skipped: no $backend device"; exit 77; }
  host_workdir "$work"
}

# numbered_lines COUNT TEXT: COUNT lines of training text, the i-th one "TEXT" with its %d
# replaced by i.
numbered_lines() {
  local i
  for i in $(seq 1 "$1"); do printf "$2\n" "$i"; done
}

# A python that can write bytes (any python3 will do: struct and json only).
py=python3
command -v "$py" >/dev/null || py=/usr/bin/python3
