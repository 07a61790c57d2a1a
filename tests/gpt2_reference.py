#!/usr/bin/env python3
"""GPT-2's tokenizer as OpenAI's encoder.py implements it (bytes_to_unicode, get_pairs, bpe
with the merge ranks, the pattern run by the `regex` module), reading Hugging Face's
vocab.json and merges.txt. It is the reference kiln's tokenizer is tested against.

Text that is not valid UTF-8 is decoded with 'surrogateescape' (each invalid byte becomes a
lone surrogate, none of \\s, \\p{L}, \\p{N}) and a token's bytes are its original bytes: that is
the behaviour kiln defines for invalid UTF-8.

    gpt2_reference.py VOCAB MERGES encode FILE        ids of FILE's bytes, one line
    gpt2_reference.py VOCAB MERGES bench FILE [REPS]  prints "MB/s X" (best of REPS, no cache)
Needs /usr/bin/python3 with python3-regex (exits 77 when missing)."""
import json
import sys
import time

try:
    import regex as re
except ImportError:
    print("skipped: the Python module regex is missing (apt-get install python3-regex)")
    sys.exit(77)


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(n) for n in cs]))


def get_pairs(word):
    pairs = set()
    prev = word[0]
    for char in word[1:]:
        pairs.add((prev, char))
        prev = char
    return pairs


class Encoder:
    def __init__(self, encoder, bpe_merges):
        self.encoder = encoder
        self.byte_encoder = bytes_to_unicode()
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        self.cache = {}
        self.pat = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)
        if not pairs:
            return token
        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        word = " ".join(word)
        self.cache[token] = word
        return word

    def encode(self, data):
        """data: bytes"""
        text = data.decode("utf-8", errors="surrogateescape")
        bpe_tokens = []
        for token in re.findall(self.pat, text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8", errors="surrogateescape"))
            bpe_tokens.extend(self.encoder[bpe_token] for bpe_token in self.bpe(token).split(" "))
        return bpe_tokens


def load(vocab_path, merges_path):
    with open(vocab_path, encoding="utf-8") as f:
        encoder = json.load(f)
    with open(merges_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    merges = [tuple(line.rstrip("\r").split()) for line in lines if line.rstrip("\r")]
    return Encoder(encoder, merges)


def main():
    if len(sys.argv) < 5 or sys.argv[3] not in ("encode", "bench"):
        sys.exit(__doc__)
    enc = load(sys.argv[1], sys.argv[2])
    with open(sys.argv[4], "rb") as f:
        data = f.read()
    if sys.argv[3] == "encode":
        print(" ".join(map(str, enc.encode(data))))
        return
    best = 0.0
    for _ in range(int(sys.argv[5]) if len(sys.argv) > 5 else 1):
        enc.cache = {}
        start = time.perf_counter()
        enc.encode(data)
        best = max(best, len(data) / (time.perf_counter() - start) / 1e6)
    print("MB/s %.3f" % best)


if __name__ == "__main__":
    main()
