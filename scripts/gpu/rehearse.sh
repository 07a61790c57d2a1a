#!/usr/bin/env bash
# scripts/gpu/rehearse.sh OUTDIR: runs scripts/gpu/run.sh in its shortened mode (RUN_QUICK=1)
# inside a Debian 12 chroot that holds only what a GPU machine would: a copy of the
# repository as the device tool sends it (tracked and untracked-not-ignored files, no
# build/), the pack (scripts/gpu/pack.sh), and stand-ins for NVIDIA's drivers: Mesa's
# Vulkan drivers (lavapipe) and PoCL, with their dependencies, but without the two ICD
# loaders (libvulkan1 and ocl-icd-libopencl1 are removed with dpkg --force-depends), so only
# the pack's loaders can load them. The stand-ins are then moved where NVIDIA's driver keeps
# its own in a CUDA image (REHEARSE_LAYOUT=nvidia, the default; =debian leaves them as
# installed): lavapipe as /usr/local/nvidia/lib64/libGLX_nvidia.so.0 behind
# /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json, which names it by its bare name, and
# PoCL as /usr/local/nvidia/lib64/libnvidia-opencl.so.1, with no ICD in the loaders' default
# folders, so that only run.sh's set-up can find them. Debian's python3 comes with PoCL's clang, but no torch:
# the PyTorch parts must skip with a reason.
# OUTDIR receives what $OUT would hold on the device machine, and the script checks it
# against the tool's output limits. Needs root (debootstrap, chroot, mounts) and Debian's
# mirror; installs debootstrap with apt-get when it is missing.
#
# The chroot is built under REHEARSE_WORK (default /var/tmp/kiln-gpu-rehearsal); its base
# (debootstrap and the drivers, about 700 MB) is kept there as base.tar and reused unless
# REHEARSE_FRESH=1.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# == 1 ]] || { echo "usage: scripts/gpu/rehearse.sh OUTDIR" >&2; exit 2; }
outdir=$(realpath -m "$1")
work=${REHEARSE_WORK:-/var/tmp/kiln-gpu-rehearsal}
pack=${KILN_GPU_PACK:-$root/gpu-pack}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
chroot_dir=$work/root
# the device machine's limit on one command
run_limit_s=600

say() { printf 'rehearse: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

mounts=()
unmount_all() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
    mounts=()
}
trap unmount_all EXIT

mount_into() { # mount_into DIR: /proc, /sys and /dev inside DIR
    mount -t proc proc "$1/proc" && mounts+=("$1/proc")
    mount -t sysfs sysfs "$1/sys" && mounts+=("$1/sys")
    mount --bind /dev "$1/dev" && mounts+=("$1/dev")
}

# debootstrap minbase, the stand-in drivers with their dependencies, then the loaders out
make_base() {
    local base_root=$work/base-root
    say "building the base chroot (debootstrap --variant=minbase bookworm, $mirror)"
    rm -rf "$base_root"
    mkdir -p "$base_root"
    debootstrap --variant=minbase bookworm "$base_root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log: $work/debootstrap.log)"; }
    mount_into "$base_root"
    chroot "$base_root" apt-get install -y -q --no-install-recommends mesa-vulkan-drivers pocl-opencl-icd \
        >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log" >&2; die "apt-get install in the chroot failed"; }
    chroot "$base_root" dpkg --remove --force-depends libvulkan1 ocl-icd-libopencl1 >>"$work/apt.log" 2>&1
    chroot "$base_root" apt-get clean
    unmount_all
    tar -C "$base_root" -cf "$work/base.tar" .
    rm -rf "$base_root"
}

# the stand-in drivers where NVIDIA's are, outside the dynamic loader's and the ICD
# loaders' default paths
nvidia_layout() {
    local c=$chroot_dir nv=$chroot_dir/usr/local/nvidia
    mkdir -p "$nv/lib64" "$nv/share/vulkan/icd.d"
    cp -L "$c/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" "$nv/lib64/libGLX_nvidia.so.0"
    sed 's|"library_path": *"[^"]*"|"library_path": "libGLX_nvidia.so.0"|' \
        "$c/usr/share/vulkan/icd.d/lvp_icd.x86_64.json" >"$nv/share/vulkan/icd.d/nvidia_icd.json"
    rm -f "$c"/usr/share/vulkan/icd.d/*.json
    cp -L "$c/usr/lib/x86_64-linux-gnu/libpocl.so.2" "$nv/lib64/libnvidia-opencl.so.1"
    # Debian's PoCL is relocatable: it finds its device drivers in pocl/ beside itself and its
    # kernel library in ../../share/pocl (without these it reports no devices)
    ln -s /usr/lib/x86_64-linux-gnu/pocl "$nv/lib64/pocl"
    mkdir -p "$c/usr/local/share"
    ln -s /usr/share/pocl "$c/usr/local/share/pocl"
    rm -f "$c"/etc/OpenCL/vendors/*.icd
}

# the repository as the device tool sends it, and the pack beside it
fill_chroot() {
    rm -rf "$chroot_dir"
    mkdir -p "$chroot_dir"
    tar -C "$chroot_dir" -xf "$work/base.tar"
    mkdir -p "$chroot_dir/kiln" "$chroot_dir/out"
    (cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
        tar -C "$chroot_dir/kiln" -xf -
    cp -a "$pack" "$chroot_dir/kiln/gpu-pack"
    if chroot "$chroot_dir" sh -c 'ldconfig -p | grep -E "libvulkan\.so|libOpenCL\.so"'; then
        die "the chroot still has a system ICD loader"
    fi
    if chroot "$chroot_dir" python3 -c 'import torch' 2>/dev/null; then die "the chroot has a python3 with torch"; fi
    case ${REHEARSE_LAYOUT:-nvidia} in
    nvidia) nvidia_layout ;;
    debian) ;;
    *) die "REHEARSE_LAYOUT is nvidia or debian" ;;
    esac
}

# the device tool's limits on what comes back from $OUT (docs/gpu.md)
check_out_limits() {
    local dir=$1 files total=0 size bad=0 f rel
    files=$(find "$dir" -type f | wc -l)
    ((files <= 8)) || { say "$files files in OUT (at most 8 come back)"; bad=1; }
    while IFS= read -r -d '' f; do
        rel=${f#"$dir"/}
        [[ $rel =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+){0,2}$ ]] || { say "$rel: a name or depth that does not come back"; bad=1; }
        [[ -f $f && ! -L $f ]] || { say "$rel: not a plain file"; bad=1; continue; }
        size=$(stat -c %s "$f")
        ((size < 16 * 1024 * 1024)) || { say "$rel: $size bytes (each file must be under 16 MiB)"; bad=1; }
        total=$((total + size))
    done < <(find "$dir" -mindepth 1 -print0)
    ((total < 64 * 1024 * 1024)) || { say "$total bytes in all (under 64 MiB come back)"; bad=1; }
    say "OUT holds $files files, $total bytes: $( ((bad)) && echo "OVER the output limits" || echo "within the output limits")"
    return "$bad"
}

main() {
    [[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, mounts)"
    [[ -x $pack/bin/kiln ]] || die "no pack at $pack: run scripts/gpu/pack.sh first"
    if ! command -v debootstrap >/dev/null; then
        say "debootstrap is missing: apt-get install debootstrap"
        apt-get install -y -q debootstrap >&2
    fi
    mkdir -p "$work"
    local start=$SECONDS
    if [[ ${REHEARSE_FRESH:-0} == 1 || ! -f $work/base.tar ]]; then make_base; else say "reusing $work/base.tar"; fi
    say "base ready after $((SECONDS - start)) s"
    fill_chroot
    mount_into "$chroot_dir"
    local run_start=$SECONDS rc=0
    say "running scripts/gpu/run.sh with RUN_QUICK=1 in the chroot (at most $run_limit_s s, as on the device machine)"
    timeout -k 10 "$run_limit_s" chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
        HOME=/root OUT=/out RUN_QUICK=1 bash -c 'cd /kiln && bash scripts/gpu/run.sh' || rc=$?
    say "run.sh exited $rc after $((SECONDS - run_start)) s"
    unmount_all
    rm -rf "$outdir"
    mkdir -p "$outdir"
    cp -a "$chroot_dir/out/." "$outdir/"
    check_out_limits "$outdir" || rc=1
    say "rehearsal took $((SECONDS - start)) s in all; OUT is in $outdir"
    return "$rc"
}

main
