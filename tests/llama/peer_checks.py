"""What the peer checks of tests/llama/ share: their command line, the fixture's manifest,
running kiln, and the skips (exit 77 with one line) while a kiln feature or a peer is absent.
A real mismatch is a failure, never a skip."""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity_checks import check, failures, rel_err  # noqa: E402,F401  (exits 77 without torch)


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


# kiln's refusals before issue 30's parts land (the messages of 8ef48b1), and the line a
# check skips with: once kiln reads these files the refusals are gone, and any other error
# fails the check.
MISSING = [(r'architecture "(\w+)"; kiln reads', "kiln cannot read GGUF architecture {0} yet"),
           (r"not a regular file \(it is a directory\)", "kiln cannot read Hugging Face folders yet"),
           (r"\.gguf: header length .* \(not a safetensors file", "kiln dev parity cannot read GGUF files yet"),
           (r"no tokenizer inside: give it with --tokenizer",
            "kiln does not take the tokenizer from a Hugging Face folder's tokenizer.json yet")]


def missing_feature(err):
    """The skip line of a refusal that says a kiln feature has not landed, else None."""
    for pattern, why in MISSING:
        m = re.search(pattern, err)
        if m:
            return why.format(*m.groups())
    return None


def finish(unsupported, checked):
    """Exit: 1 on any failure; 77 when a needed kiln feature was missing for some files and
    nothing failed (naming what and how many files were checked equal); else 0."""
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    if unsupported:
        skip('; '.join(sorted(unsupported)) + (f" ({checked} other runs checked and equal)" if checked else ""))
    print("PASSED")
    sys.exit(0)
