"""What the peer checks of tests/llama/ share: their command line, the fixture's manifest,
running kiln, and the skip (exit 77 with one line) when a peer is absent (node-llama-cpp,
@lenml/tokenizers, torch) or a backend cannot open. A mismatch or any refusal of kiln's is a
failure, never a skip."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity_checks import check, failures, finish, kiln_ok, rel_err  # noqa: E402,F401  (exits 77 without torch)


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


def args(need_models=True, need_kiln=True):
    """--models DIR (the fixture's output), --kiln PATH, [--backend B] [--work DIR: made here]."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=need_models)
    ap.add_argument("--kiln", required=need_kiln)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--work")
    a = ap.parse_args()
    if a.work:
        os.makedirs(a.work, exist_ok=True)
    return a


def manifest(models_dir):
    path = os.path.join(models_dir, "manifest.json")
    if not os.path.exists(path):
        skip(f"{path} is absent: the fixture test llama_models did not write the models")
    with open(path) as f:
        return json.load(f)


def llama_cpp_tokens(models_dir, m):
    """{gguf path: [ids per prompt]} of llama.cpp, or a skip naming why the peers are absent."""
    path = os.path.join(models_dir, "llama_cpp.json")
    if not os.path.exists(path):
        skip(f"llama.cpp's tokens are absent: {m['peers'].get('why', 'the fixture did not run node-llama-cpp')}")
    with open(path) as f:
        return json.load(f)


def kiln(a, *argv, trust=True):
    """Runs kiln ARGV --backend B (with trust, --trust-device off the cpu: the device's
    first-use check is other tests' job); (return code, stdout, stderr). Skips when the
    backend cannot open."""
    extra = ["--backend", a.backend] + (["--trust-device"] if trust and a.backend != "cpu" else [])
    r = subprocess.run([a.kiln, *argv, *extra], capture_output=True, text=True)
    if r.returncode == 77:
        skip(r.stderr.strip())
    return r.returncode, r.stdout, r.stderr.strip()

