# shellcheck shell=bash disable=SC2154 # sourced by run.sh, which sets work, out, quick and the rest
# scripts/gpu/run_setup.sh: the set-up of scripts/gpu/run.sh (sourced by it): the pack's
# loaders on the library path, NVIDIA's Vulkan ICD and OpenCL library found and handed to them,
# the PyTorch that holds CUDA, and what the machine is, recorded with `fact` (run_report.sh).

# the first existing path among the patterns, else the first that find names under the
# driver's usual folders (a CUDA image puts them in several places)
first_path() {
    local pattern f name=$1
    shift
    for pattern in "$@"; do
        for f in $pattern; do [[ -e $f ]] && { echo "$f"; return 0; }; done
    done
    timeout 20 find /usr/local/nvidia /usr/lib /usr/lib64 /usr/share /etc /opt -name "$name" 2>/dev/null | head -1
}

# whether the dynamic loader finds a library by its bare name
resolvable() {
    local d
    ldconfig -p 2>/dev/null | grep -q "^\s*$1 " && return 0
    for d in ${LD_LIBRARY_PATH//:/ }; do [[ -e $d/$1 ]] && return 0; done
    return 1
}

# library_path of a Vulkan ICD json; a bare name the loader cannot resolve gets its folder
# added to LD_LIBRARY_PATH
vulkan_icd_library() {
    local lib dir
    lib=$(sed -n 's/.*"library_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1" | head -1)
    if [[ -n $lib && $lib != /* ]] && ! resolvable "$lib"; then
        dir=$(dirname "$(first_path "$lib" "/usr/local/nvidia/lib64/$lib" "/usr/lib/x86_64-linux-gnu/$lib")")
        [[ $dir != . ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$dir
    fi
    echo "$lib"
}

setup_vulkan() {
    local icd lib
    icd=$(first_path 'nvidia_icd*.json' '/usr/share/vulkan/icd.d/nvidia_icd*.json' '/etc/vulkan/icd.d/nvidia_icd*.json' \
        '/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd*.json' '/usr/local/share/vulkan/icd.d/nvidia_icd*.json')
    if [[ -n $icd ]]; then
        export VK_DRIVER_FILES=$icd
        lib=$(vulkan_icd_library "$icd")
        fact vulkan_icd "NVIDIA's $icd (library $lib), as VK_DRIVER_FILES"
    else
        fact vulkan_icd "no nvidia_icd.json found; the loader's own search finds: $(ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>/dev/null | grep json | paste -sd' ')"
    fi
}

setup_opencl() {
    local lib
    lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libnvidia-opencl.so.1" {print $NF; exit}')
    [[ -n $lib ]] || lib=$(first_path libnvidia-opencl.so.1 '/usr/local/nvidia/lib64/libnvidia-opencl.so.1' \
        '/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1' '/usr/lib64/libnvidia-opencl.so.1')
    if [[ -n $lib ]]; then
        # it loads the driver's other libraries (libcuda) by name, from its own folder
        resolvable libnvidia-opencl.so.1 || LD_LIBRARY_PATH=$LD_LIBRARY_PATH:${lib%/*}
        mkdir -p "$work/vendors"
        echo "$lib" >"$work/vendors/nvidia.icd"
        export OCL_ICD_VENDORS=$work/vendors
        fact opencl_icd "NVIDIA's $lib, as OCL_ICD_VENDORS"
    else
        fact opencl_icd "no libnvidia-opencl.so.1 found; the loader's /etc/OpenCL/vendors holds: $(ls /etc/OpenCL/vendors 2>/dev/null | paste -sd' ')"
    fi
}

# the python3 that imports torch: KILN_TORCH_PYTHON, else the usual places
setup_torch() {
    local py version
    torch_python="" torch_reason=""
    for py in ${KILN_TORCH_PYTHON:-} "$(command -v python3)" /opt/torch/.venv/bin/python3 /usr/local/bin/python3 /usr/bin/python3; do
        [[ -x $py ]] || continue
        version=$(timeout 60 "$py" -c 'import torch; c = torch.cuda.is_available()
print(torch.__version__ + ", " + (torch.cuda.get_device_name(0) if c else "no CUDA device"))' 2>/dev/null) || continue
        if [[ $version != *"no CUDA device" ]]; then
            torch_python=$py
            fact torch "$py: torch $version"
            return
        fi
        torch_reason="$py's torch $version"
    done
    [[ -n $torch_reason ]] || torch_reason="no python3 with torch (tried KILN_TORCH_PYTHON, python3 on PATH, /opt/torch/.venv, /usr/local/bin, /usr/bin)"
    fact torch "$torch_reason"
}

has_backend() { grep -q "^$1:[0-9]" "$work/logs/0-info.log"; }

no_device_reason() {
    local line
    line=$(sed -n "/^\[$1\]/,/^\[/p" "$work/logs/0-info.log" | grep -v '^\[' | grep -v '^\s*$' | head -1)
    echo "kiln info lists no $1 device${line:+: $line}"
}

setup() {
    export LD_LIBRARY_PATH=$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    {
        echo "== nvidia-smi"
        timeout 20 nvidia-smi 2>&1 || echo "(nvidia-smi: not available)"
        echo "== uname, os-release, glibc"
        uname -a
        cat /etc/os-release 2>/dev/null
        ldd --version 2>&1 | head -1
        echo "== pack MANIFEST"
        cat "$pack/MANIFEST"
    } >"$work/logs/0-machine.log" 2>&1
    fact started "$started"
    fact mode "$( ((quick)) && echo "shortened (RUN_QUICK=1)" || echo full)"
    fact pack "$(grep -E '^(commit|built) ' "$pack/MANIFEST" | paste -sd';' | sed 's/;/; /')"
    local gpu
    gpu=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
    fact gpu "${gpu:-no answer from nvidia-smi}"
    fact glibc "$(ldd --version 2>&1 | head -1 | grep -o '[0-9.]*$'); the pack needs $(sed -n 's/^glibc_needed //p' "$pack/MANIFEST")"
    setup_vulkan
    setup_opencl
    setup_torch
    data=$pack/data/tinyshakespeare.txt
    if ((quick)); then # a short file: the final validation pass stays seconds on a CPU driver
        head -c 200000 "$data" >"$work/shakespeare.txt"
        data=$work/shakespeare.txt
    fi
    timeout 60 "$kiln" info >"$work/logs/0-info.log" 2>&1 || echo "(kiln info exited $?)" >>"$work/logs/0-info.log"
    fact vulkan_device "$(device_line vulkan)"
    fact opencl_device "$(device_line opencl)"
    record 0-setup "set-up: loaders, ICDs, kiln info" passed "$SECONDS" ""
}

# the device kiln would use on a backend and its driver line, from kiln info
device_line() {
    has_backend "$1" || { no_device_reason "$1"; return; }
    sed -n "/^$1:[0-9]/{p;n;p;}" "$work/logs/0-info.log" | head -2 | sed 's/^ *//' | paste -sd';' | sed 's/;/; /'
}
