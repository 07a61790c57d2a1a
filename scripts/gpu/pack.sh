#!/usr/bin/env bash
# scripts/gpu/pack.sh [--check-size] [PACKDIR]: fills PACKDIR (default: gpu-pack/ in the repository, ignored
# by git) with what scripts/gpu/run.sh needs on a GPU machine that can install nothing:
#   bin/    a Release kiln (Vulkan and OpenCL on, MPI and the bench peers off) and the few
#           test programs worth running on a GPU (TESTS below)
#   lib/    the Vulkan and OpenCL ICD loaders, unpacked from Debian's libvulkan1 and
#           ocl-icd-libopencl1, and the other shared libraries those programs load that a
#           CUDA image may lack (KEEP_LIBS below, as ldd resolves them here)
#   data/   tinyshakespeare.txt: DATA=FILE, or else downloaded from its public source
#           (SHAKESPEARE_URL) into build-gpu-data/ once
#   MANIFEST  what was built, from which commit, and what the build left out
# It checks that the pack and the tracked files together stay under the device machine's
# 64 MiB (docs/gpu.md), and its last line names the folder. --check-size only checks that.
# Needs: the build dependencies (scripts/install-deps.sh), apt-get download (Debian's mirror).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
check_only=0
if [[ ${1:-} == --check-size ]]; then check_only=1; shift; fi
pack=$(realpath -m "${1:-$root/gpu-pack}")
build=${KILN_GPU_BUILD:-$root/build-gpu}
limit_mib=64
SHAKESPEARE_URL=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt

# The GPU-facing test programs: devices, memory and the GEMM slot, the op families kiln's
# models lean on (matmul, f16, quantized), and each backend's f16 paths. `kiln verify`
# covers every kernel; these add the engine's own checks of buffers and limits.
TESTS=(test_gpu_device test_gpu_memory test_gpu_gemm test_op_matmul test_op_f16 test_op_quant
       test_vulkan_f16 test_opencl_f16)
# Libraries a CUDA image (Ubuntu with NVIDIA's driver) may lack. Anything else ldd shows
# (glibc's, libgcc_s) is in every image; the loaders come from Debian's packages below.
KEEP_LIBS='^lib(gomp|check|subunit)\.so'

say() { printf 'pack: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

build_kiln() {
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
    mkdir -p "$build"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DKILN_VULKAN=ON -DKILN_OPENCL=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DKILN_BENCH_PEERS=OFF -DBUILD_TESTING=ON \
        "${launcher[@]}" >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; die "cmake failed"; }
    CCACHE_BASEDIR="$root" cmake --build "$build" -j"$(nproc)" --target kiln_host "${TESTS[@]}" >&2
}

# the loaders: Debian's packages for this machine's release, unpacked, only the .so.1
unpack_loaders() {
    local tmp
    tmp=$(mktemp -d)
    chmod 1777 "$tmp" # apt-get download writes as its sandbox user _apt when run as root
    (cd "$tmp" && apt-get download -q libvulkan1 ocl-icd-libopencl1 >&2) ||
        die "apt-get download libvulkan1 ocl-icd-libopencl1 failed (needs Debian's mirror)"
    for deb in "$tmp"/*.deb; do
        dpkg -x "$deb" "$tmp/root"
        echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$pack/MANIFEST.loaders"
    done
    # copied through their links: a link would travel as a link (docs/gpu.md)
    cp -L "$tmp"/root/usr/lib/*/libvulkan.so.1 "$tmp"/root/usr/lib/*/libOpenCL.so.1 "$pack/lib/"
    rm -rf "$tmp"
}

# the libraries ldd resolves for the packed programs that match KEEP_LIBS
copy_libs() {
    local lib
    ldd "$pack"/bin/* 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
        while read -r lib; do
            [[ $(basename "$lib") =~ $KEEP_LIBS ]] && cp -L "$lib" "$pack/lib/"
        done
    return 0
}

# the newest glibc symbol version the programs need: the image's glibc must be at least this
glibc_needed() {
    objdump -T "$pack"/bin/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1
}

manifest() {
    local commit coopmat
    commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
    git -C "$root" diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
    coopmat=yes
    grep -q "cannot compile GL_KHR_cooperative_matrix" "$build/configure.log" && coopmat=no
    {
        echo "commit $commit"
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME") with $(cc --version | head -1)"
        echo "cmake -DCMAKE_BUILD_TYPE=Release -DKILN_VULKAN=ON -DKILN_OPENCL=ON -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DKILN_BENCH_PEERS=OFF"
        echo "coopmat_gemm $coopmat"
        echo "glibc_needed $(glibc_needed)"
        sed 's/^/loader /' "$pack/MANIFEST.loaders"
        echo "libs $(cd "$pack/lib" && ls | paste -sd' ')"
        echo "tests ${TESTS[*]}"
    } >"$pack/MANIFEST"
    rm -f "$pack/MANIFEST.loaders"
}

# the tracked files plus the pack, against the device machine's limit on what travels
check_size() {
    local tracked packed total
    tracked=$(git -C "$root" ls-files -z | (cd "$root" && xargs -0 stat -c %s 2>/dev/null) | awk '{s += $1} END {print s + 0}')
    packed=$(du -sb "$pack" | cut -f1)
    total=$((tracked + packed))
    say "$(awk -v p="$packed" -v t="$tracked" -v a="$total" 'BEGIN {
        printf "pack %.1f MiB + tracked files %.1f MiB = %.1f MiB", p / 1048576, t / 1048576, a / 1048576 }') of ${limit_mib} MiB"
    ((total < limit_mib * 1024 * 1024)) || die "over the ${limit_mib} MiB the device machine takes"
}

main() {
    local data=""
    if ((check_only)); then check_size; return; fi
    data=${DATA:-}
    if [[ -z $data ]]; then # the text's public source (Karpathy's char-rnn), fetched once
        data=$root/build-gpu-data/tinyshakespeare.txt
        [[ -f $data ]] || { mkdir -p "${data%/*}" && curl -fsSL -o "$data.part" "$SHAKESPEARE_URL" &&
            mv "$data.part" "$data"; } || die "cannot download $SHAKESPEARE_URL: give the text as DATA=FILE"
    fi
    [[ -f $data ]] || die "DATA=$data: no such file"
    build_kiln
    rm -rf "$pack"
    mkdir -p "$pack/bin" "$pack/lib" "$pack/data"
    cp "$build/host/kiln" "$pack/bin/"
    for t in "${TESTS[@]}"; do cp "$build/tests/$t" "$pack/bin/"; done
    strip "$pack"/bin/*
    cp "$data" "$pack/data/tinyshakespeare.txt"
    unpack_loaders
    copy_libs
    manifest
    sed 's/^/pack: /' "$pack/MANIFEST" >&2
    check_size
    echo "$pack"
}

main
