#!/usr/bin/env bash
# Installs what kiln needs on Debian 12 (or Ubuntu 22.04+), skipping what is present.
# Run as root or with sudo available. Used by the README's first command and by CI.
#   scripts/install-deps.sh [--peers]
# --peers (CI) adds node and npm, which install the npm test peers (.ci/run: llama.cpp
# through node-llama-cpp, @lenml/tokenizers); the README's set-up needs neither.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config check            # build and tests
  clang libomp-dev                                  # the clang build (CI's sanitizer stage) and the fuzzers
  libvulkan-dev libvulkan-volk-dev glslc spirv-tools  # Vulkan backend
  vulkan-validationlayers mesa-vulkan-drivers vulkan-tools
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo oclgrind  # OpenCL backend
  libopenblas-dev libclblast-dev                    # benchmark peers
  python3-torch python3-numpy                       # PyTorch parity tests
  librsvg2-bin                                      # renders kiln plot's SVG in its test
  python3-regex                                     # GPT-2's tokenizer reference (tests/gpt2_reference.py)
  openmpi-bin libopenmpi-dev                        # data-parallel training (mpirun -np N kiln train)
)

# node and npm where no node is installed yet (a newer one, e.g. NodeSource's, is kept:
# node-llama-cpp 3.21.1 asks for node >= 20, Debian 12's nodejs is 18)
if [ "${1:-}" = "--peers" ] && ! { command -v node && command -v npm; } >/dev/null; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
