# nanoGPT's CPU config (its README's small Shakespeare model) as kiln train options: the model
# and recipe that samples/train_shakespeare.sh and samples/train_precision.sh train, written
# once. Sourced; `nanogpt_cpu_config STEPS` sets the array `config` (samples/nanogpt_torch.py
# takes the same options).
nanogpt_cpu_config() {
  config=(--layers 4 --heads 4 --dim 128 --block 64 --batch 12 --steps "$1" --lr 1e-3
          --warmup 100 --min-lr 1e-4 --beta2 0.99 --weight-decay 0.1 --clip 1.0 --dropout 0)
}
