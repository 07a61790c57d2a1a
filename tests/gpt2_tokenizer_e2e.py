#!/usr/bin/python3
"""A GPT with GPT-2's vocabulary, end to end through GPT-2's own tokenizer.

  gpt2_tokenizer_e2e.py --kiln PATH/kiln --workdir DIR

A random GPT of GPT-2's vocabulary (50257 tokens, small otherwise) in Hugging Face's layout,
and GPT-2's tokenizer imported by `kiln tokenizer import` from tests/data/gpt2: `kiln decode
--tokenizer` must continue a prompt with exactly the text that PyTorch's greedy decoding of
the same weights gives (the prompt's ids and the output's text from OpenAI's encoder.py
algorithm, tests/gpt2_reference.py), and `kiln eval --tokenizer` must give PyTorch's loss on
a text. Exit 0: pass, 1: fail, 77: skipped (no torch, or no `regex` module, here).
"""
import argparse
import os
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
    import regex  # noqa: F401  (gpt2_reference needs it)
except ImportError as e:
    print(f"skipped: {e} (needs Debian's python3-torch and python3-regex)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "samples"))
import gpt2_reference  # noqa: E402
from nanogpt_torch import GPT  # noqa: E402

PROMPT = "Hello, world! The caf\u00e9's \U0001F600 menu:\n\tdef f(x):  return 1,234"
TEXT = ("It was the best of times, it was the worst of times; caf\u00e9 na\u00efve r\u00e9sum\u00e9 "
        "\u00fcber \U0001F680\U0001F468\u200d\U0001F469 x += 1  # code\n") * 6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(5)
    torch.set_num_threads(1)
    vocab, merges = os.path.join(HERE, "data", "gpt2", "vocab.json"), os.path.join(HERE, "data", "gpt2", "merges.txt")
    tok = os.path.join(args.workdir, "gpt2.tok")
    subprocess.run([args.kiln, "tokenizer", "import", "--vocab", vocab, "--merges", merges, "--out", tok], check=True,
                   capture_output=True)
    enc = gpt2_reference.load(vocab, merges)
    decoder = {v: k for k, v in enc.encoder.items()}
    byte_decoder = {v: k for k, v in gpt2_reference.bytes_to_unicode().items()}

    def detok(ids):
        return bytes(byte_decoder[c] for i in ids for c in decoder[i])

    cfg = {"n_layer": 2, "n_head": 2, "n_embd": 32, "n_positions": 64, "vocab_size": 50257}
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3) if p.dim() == 2 else p.zero_()
        for b in model.h:
            b.ln_1.weight.fill_(1.0)
            b.ln_2.weight.fill_(1.0)
        model.ln_f.weight.fill_(1.0)
    ckpt = os.path.join(args.workdir, "model.safetensors")
    model.save(ckpt)

    failures = 0
    ids = enc.encode(PROMPT.encode("utf-8"))
    out = []
    with torch.no_grad():
        for _ in range(12):
            logits = model(torch.tensor([ids + out]))
            out.append(int(logits[0, -1].argmax()))
    want = detok(out)
    r = subprocess.run([args.kiln, "decode", "--ckpt", ckpt, "--tokenizer", tok, "--prompt", PROMPT, "--greedy",
                        "--max-new", "12", "--backend", "cpu"], capture_output=True)
    ok = r.returncode == 0 and r.stdout == want
    print(f"{'ok  ' if ok else 'FAIL'} decode: prompt of {len(ids)} GPT-2 ids, kiln {r.stdout!r}, PyTorch {want!r}")
    if not ok:
        print(r.stderr.decode(errors="replace"))
        failures += 1

    text_path = os.path.join(args.workdir, "text.txt")
    with open(text_path, "wb") as f:
        f.write(TEXT.encode("utf-8"))
    tokens = enc.encode(TEXT.encode("utf-8"))
    T = cfg["n_positions"]
    windows = (len(tokens) - 1) // T
    with torch.no_grad():
        losses = [F.cross_entropy(model(torch.tensor([tokens[w * T:(w + 1) * T]]))[0],
                                  torch.tensor(tokens[w * T + 1:(w + 1) * T + 1])).item() for w in range(windows)]
    want_loss = sum(losses) / len(losses)
    r = subprocess.run([args.kiln, "eval", "--ckpt", ckpt, "--tokenizer", tok, "--data", text_path, "--backend", "cpu"],
                       capture_output=True, text=True)
    got = float(r.stdout.split()[1]) if r.returncode == 0 and r.stdout.startswith("loss ") else float("nan")
    ok = abs(got - want_loss) <= 1e-4 * abs(want_loss)
    print(f"{'ok  ' if ok else 'FAIL'} eval: {windows} windows of {T} GPT-2 tokens, kiln {got}, PyTorch {want_loss}")
    if not ok:
        print(r.stderr)
        failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
