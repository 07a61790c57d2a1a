#!/usr/bin/env python3
"""A naive byte-level BPE trainer with kiln's rules, to check `kiln tokenizer train`: GPT-2's
pre-tokenization (the `regex` module, surrogateescape for invalid UTF-8), ids 0..255 the
bytes, 256..261 the specials, then each step recounts every pair from scratch and merges the
most frequent (ties: the smallest left id, then the smallest right id) left to right in
every piece; stops at the vocabulary size or when no pair occurs twice.

    bpe_train_reference.py TEXT VOCAB   prints the merges as "merge LEFT RIGHT ID" lines
Exits 77 when the regex module is missing."""
import collections
import sys

try:
    import regex as re
except ImportError:
    print("skipped: the Python module regex is missing (apt-get install python3-regex)")
    sys.exit(77)

PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def main():
    data = open(sys.argv[1], "rb").read()
    vocab = int(sys.argv[2])
    text = data.decode("utf-8", errors="surrogateescape")
    words = collections.Counter(tuple(p.encode("utf-8", errors="surrogateescape")) for p in PAT.findall(text))
    words = [[list(w), c] for w, c in words.items()]
    next_id = 262
    while next_id < vocab:
        counts = collections.Counter()
        for w, c in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] += c
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p[0], p[1]))
        if counts[best] < 2:
            break
        for entry in words:
            w, out, i = entry[0], [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(next_id)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            entry[0] = out
        print("merge %d %d %d" % (best[0], best[1], next_id))
        next_id += 1


if __name__ == "__main__":
    main()
