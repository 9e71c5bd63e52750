#!/usr/bin/env bash
# The Hugging Face Llama user's walkthrough (docs/walkthrough-hf-llama.md)
# at small scale: a tiny Llama directory written here as transformers
# writes one (config.json, model.safetensors in BF16 with LlamaForCausalLM's
# names; llama-tiny's shape, an untied head of zeros), --model and --init
# from it on 4 ranks (zero3 over node=2,world=2: two "nodes" of two), saved,
# resumed on 3 ranks (resharded), exported back to a Hugging Face directory
# and read back by tierzero's own loader (and by transformers, where it is
# installed).
# Checks: the first loss is ln 256 (a zero head gives every byte 1/256: the
# head came from the file); the run resumed on 3 ranks gives the 4-rank
# run's losses (within 1e-5: another reduction order); the export's config
# keeps the directory's shape; sampling from the export and from the
# checkpoint draws the same text, and --init from the export starts at the
# checkpoint's loss.
# Usage: hf_llama_walkthrough_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"

# 1. The Hugging Face directory: llama-tiny's shape (V 256, C 64, 2 layers, 4 heads, 2 KV heads, F 176), weights a fixed
#    pseudo-random pattern in BF16 (the high halves of small floats), the untied lm_head all zeros.
mkdir -p "$tmp/llama"
python3 - "$tmp/llama" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
V, C, L, H, KV, F = 256, 64, 2, 4, 2, 176
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": C, "intermediate_size": F,
          "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": KV, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
json.dump(config, open(os.path.join(d, "config.json"), "w"), indent=2)
kv = KV * C // H
names = [("model.embed_tokens.weight", [V, C])]
for l in range(L):
    h = f"model.layers.{l}."
    names += [(h + "input_layernorm.weight", [C]), (h + "self_attn.q_proj.weight", [C, C]), (h + "self_attn.k_proj.weight", [kv, C]),
              (h + "self_attn.v_proj.weight", [kv, C]), (h + "self_attn.o_proj.weight", [C, C]),
              (h + "post_attention_layernorm.weight", [C]), (h + "mlp.gate_proj.weight", [F, C]), (h + "mlp.up_proj.weight", [F, C]),
              (h + "mlp.down_proj.weight", [C, F])]
names += [("model.norm.weight", [C]), ("lm_head.weight", [V, C])]
header, blobs, offset, seed = {"__metadata__": {"format": "pt"}}, [], 0, 1
for name, shape in names:
    n = 1
    for s in shape:
        n *= s
    if name == "lm_head.weight":
        values = [0.0] * n
    elif name.endswith("layernorm.weight") or name == "model.norm.weight":
        values = [1.0] * n
    else:
        values = []
        for _ in range(n):
            seed = (seed * 1103515245 + 12345) % 2 ** 31
            values.append((seed / 2 ** 31 - 0.5) * 0.1)
    f32 = struct.pack(f"<{n}f", *values)
    blobs.append(b"".join(f32[4 * i + 2:4 * i + 4] for i in range(n)))
    header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + 2 * n]}
    offset += 2 * n
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
PY
# losses FILE: the metrics' losses, one per line.
losses() { python3 -c 'import json, sys; [print(json.loads(l)["loss"]) for l in open(sys.argv[1])]' "$1"; }

# 2. Init from the directory and train on 4 ranks, saving at step 4 (and the uninterrupted run to 6, to compare with).
common=(--model "$tmp/llama" --seq-len 32 --strategy zero3 --log-every 100)
"$mpirun" --oversubscribe -np 4 "$tz" train "${common[@]}" --init "$tmp/llama" --topology node=2,world=2 --micro-batch 3 --steps 6 \
  --save-dir "$tmp/save" --save-every 4 --metrics "$tmp/four.jsonl" > "$tmp/log" 2>&1 || { tail -5 "$tmp/log"; bad "train --init on 4 ranks"; }
first=$(losses "$tmp/four.jsonl" | head -1)
python3 -c 'import math, sys; assert abs(float(sys.argv[1]) - math.log(256)) < 1e-4, sys.argv[1]' "$first" 2>/dev/null &&
  ok "--init from the Hugging Face directory on 4 ranks: first loss $first = ln 256 (the file's zero head)" || bad "first loss $first, not ln 256"

# 3. Resume the step-4 checkpoint on 3 ranks (the shards re-partitioned), the same global batch (3 x 4 = 4 x 3).
"$mpirun" --oversubscribe -np 3 "$tz" train "${common[@]}" --micro-batch 4 --steps 6 --resume "$tmp/save/step-00000004" \
  --save-dir "$tmp/save3" --save-every 6 --metrics "$tmp/three.jsonl" > "$tmp/log" 2>&1 || { tail -5 "$tmp/log"; bad "resume on 3 ranks"; }
python3 - "$tmp/four.jsonl" "$tmp/three.jsonl" <<'PY' && ok "resumed on 3 ranks: steps 5-6 as the 4-rank run's (within 1e-5)" || bad "resharded losses"
import json, sys
four = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
three = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
assert sorted(three) == [4, 5] and all(abs(three[s] - four[s]) <= 1e-5 * abs(four[s]) for s in three), (four, three)
PY

# 4. Export back to Hugging Face, read by tierzero's own loader: the shape kept, sampling and the loss the checkpoint's.
"$tz" ckpt export "$tmp/save3" --format hf --output "$tmp/hf" 2> "$tmp/log" || { cat "$tmp/log"; bad "ckpt export --format hf"; }
python3 - "$tmp/llama/config.json" "$tmp/hf/config.json" <<'PY' && ok "the export's config.json keeps the directory's shape" || bad "export config"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = ["architectures", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta", "tie_word_embeddings"]
assert all(a[k] == b[k] for k in keys), [(k, a[k], b.get(k)) for k in keys if a[k] != b.get(k)]
PY
from_hf=$("$tz" sample --checkpoint "$tmp/hf" --prompt "And God said" --tokens 24 --seed 5 2> "$tmp/log")
from_ckpt=$("$tz" sample --checkpoint "$tmp/save3" --prompt "And God said" --tokens 24 --seed 5 2>> "$tmp/log")
[ -n "$from_hf" ] && [ "$from_hf" = "$from_ckpt" ] && ok "sample from the export = sample from the checkpoint" ||
  { cat "$tmp/log"; bad "sample: '$from_hf' vs '$from_ckpt'"; }
# --init from the export on one rank and from the checkpoint's weights give the same first loss (the fp32 master exported).
"$tz" ckpt export "$tmp/save3" --safetensors "$tmp/w.safetensors" 2> "$tmp/log"
for w in "$tmp/hf" "$tmp/w.safetensors"; do
  "$tz" train --model "$tmp/hf" --init "$w" --seq-len 32 --strategy ddp --micro-batch 2 --steps 1 --param-dtype fp32 --log-every 100 \
    --metrics "$tmp/reload.jsonl" >> "$tmp/log" 2>&1 && losses "$tmp/reload.jsonl"
done > "$tmp/reloaded"
[ "$(sort -u "$tmp/reloaded" | wc -l)" -eq 1 ] && [ "$(wc -l < "$tmp/reloaded")" -eq 2 ] &&
  ok "--init from the export starts where the checkpoint's weights do: $(head -1 "$tmp/reloaded")" ||
  { tail -5 "$tmp/log"; bad "reload: $(tr '\n' ' ' < "$tmp/reloaded")"; }
if python3 -c 'import torch, transformers' 2> /dev/null; then  # the export as transformers reads it
  python3 - "$tmp/hf" <<'PY' && ok "transformers loads the export" || bad "transformers on the export"
import sys, torch, transformers
m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
logits = m(torch.tensor([[65, 110, 100]])).logits
assert logits.shape == (1, 3, 256) and torch.isfinite(logits).all()
PY
else
  echo "note: transformers is not installed; the export was read by tierzero's loader only"
fi
[ $fail -eq 0 ] && echo "hf_llama_walkthrough: all passed"
exit $fail
