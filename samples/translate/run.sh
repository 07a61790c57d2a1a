#!/usr/bin/env bash
# English -> German translation on the parallel text every Debian desktop carries: the German
# gettext catalogs (/usr/share/locale/de/LC_MESSAGES/*.mo, msgid -> msgstr).
#
#   samples/translate/run.sh [--out DIR] [--backend cpu|vulkan|opencl] [--steps N] [--vocab N]
#                            [--dim N] [--layers N] [--catalogs DIR]
#
# 1. `kiln pairs from-mo` reads the catalogs, drops headers, plural forms, untranslated
#    and multi-line entries and sources that are only placeholders, deduplicates by source
#    and splits by a hash of the source into train/valid/test.tsv (it prints the counts:
#    how many pairs this machine gave).
# 2. `kiln tokenizer train` learns one byte-level BPE on both sides of the training pairs.
# 3. `kiln train --model seq2seq` trains a small Transformer (Post-LN, Noam schedule, label
#    smoothing 0.1, the paper's recipe at a small size).
# 4. `kiln eval` prints the test pairs' loss, BLEU (sacreBLEU's default) and exact matches,
#    greedy and with a beam of 4, and `kiln decode` translates a few test sources.
# docs/results.md records the figures of one run and the command.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=runs/translate
backend=cpu
steps=3000
vocab=6000
dim=128
layers=3
catalogs=/usr/share/locale/de/LC_MESSAGES
kiln=${KILN:-build/host/kiln}
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --vocab) vocab=$2; shift 2 ;;
    --dim) dim=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --catalogs) catalogs=$2; shift 2 ;;
    *) echo "translate: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$kiln" ] || { echo "translate: build kiln first (cmake --build build), or set KILN" >&2; exit 2; }
ls "$catalogs"/*.mo >/dev/null 2>&1 || { echo "translate: no catalogs in $catalogs (--catalogs DIR)" >&2; exit 2; }
mkdir -p "$out"

echo "== pairs from $(ls "$catalogs"/*.mo | wc -l) catalogs in $catalogs"
"$kiln" pairs from-mo --out "$out/data" "$catalogs"/*.mo

echo "== a BPE of $vocab tokens on both sides of the training pairs"
cut -f1 "$out/data/train.tsv" >"$out/bpe_text.txt"
cut -f2 "$out/data/train.tsv" >>"$out/bpe_text.txt"
"$kiln" tokenizer train --data "$out/bpe_text.txt" --vocab "$vocab" --out "$out/bpe.tok"

echo "== training ($steps steps, dim $dim, $layers + $layers layers, $backend)"
start=$(date +%s)
"$kiln" train --model seq2seq --data "$out/data/train.tsv" --valid "$out/data/valid.tsv" \
  --tokenizer "$out/bpe.tok" --out "$out/model" --force --backend "$backend" \
  --dim "$dim" --heads 4 --layers "$layers" --max-len 64 --batch-tokens 6000 \
  --steps "$steps" --warmup 800 --noam-factor 2 --eval-every 1000 --log-every 100
echo "training took $(( $(date +%s) - start )) s"

echo "== test pairs: loss, BLEU, exact matches"
for beam in 1 4; do
  echo "-- beam $beam"
  "$kiln" eval --ckpt "$out/model/model.safetensors" --data "$out/data/test.tsv" --backend "$backend" --beam "$beam"
done

echo "== a few test translations (source | reference | kiln)"
head -n 12 "$out/data/test.tsv" | cut -f1 >"$out/sample_src.txt"
"$kiln" decode --ckpt "$out/model/model.safetensors" --input-file "$out/sample_src.txt" --backend "$backend" \
  --beam 4 2>/dev/null >"$out/sample_out.txt"
paste -d'|' "$out/sample_src.txt" <(head -n 12 "$out/data/test.tsv" | cut -f2) "$out/sample_out.txt" |
  sed 's/|/ | /g'
