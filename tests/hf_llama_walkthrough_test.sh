#!/usr/bin/env bash
# The Hugging Face Llama user's walkthrough (docs/walkthrough-hf-llama.md),
# its commands run as the page gives them (walkthrough_lib.sh), in a folder
# holding what the page starts from: llama/, a tiny Llama directory written
# here as transformers writes one (config.json, model.safetensors in BF16
# with LlamaForCausalLM's names; llama-tiny's shape with the vocabulary of a
# small byte-fallback tokenizer.json, 269 ids; an untied head of zeros), and
# corpus.txt. The page: data prepare with the tokenizer, --model and --init
# from the directory on 4 ranks (zero3 over node=2,world=2), resumed on 3
# ranks (resharded) into a save folder without --save-every, exported back
# to a Hugging Face directory and read back.
# Checks: the first loss is ln 269 (a zero head gives every token 1/269: the
# head came from the file); the checkpoints are the steps the page names;
# the run resumed on 3 ranks gives a 4-rank run's losses (within 1e-5:
# another reduction order) and saved its last step; the export's config
# keeps the directory's shape; sampling from the export and from the
# checkpoint draws the same text, and --init from the export starts at the
# checkpoint's loss (and transformers loads it, where it is installed).
# Usage: hf_llama_walkthrough_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/walkthrough_lib.sh"
page=$(dirname "${BASH_SOURCE[0]}")/../docs/walkthrough-hf-llama.md
w=$tmp/walk
# What the page starts from: llama/ (config.json, model.safetensors, tokenizer.json) and corpus.txt. The weights: a fixed
# pseudo-random pattern in BF16 (the high halves of small floats), the untied lm_head all zeros.
mkdir -p "$w/llama"
python3 - "$w/llama" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
V, C, L, H, KV, F = 269, 64, 2, 4, 2, 176
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
python3 "$(dirname "${BASH_SOURCE[0]}")/byte_fallback_tokenizer.py" "$w/llama/tokenizer.json"
for _ in $(seq 300); do printf 'ab c abc cab \xc3\xa9 ba bca\n'; done > "$w/corpus.txt"

# The page's commands, as written.
run_walkthrough "$page" "$w" && ok "docs/walkthrough-hf-llama.md's commands run as written" || { tail -8 "$w/walkthrough.log"; bad "the page's commands"; }
# losses FILE: the metrics' losses, one per line.
losses() { python3 -c 'import json, sys; [print(json.loads(l)["loss"]) for l in open(sys.argv[1])]' "$1"; }

# Step 2: --init from the directory: the first loss is ln 269 (the file's zero head); checkpoints after steps 4 and 8.
first=$(losses "$w/run1.jsonl" | head -1)
python3 -c 'import math, sys; assert abs(float(sys.argv[1]) - math.log(269)) < 1e-4, sys.argv[1]' "$first" 2>/dev/null &&
  ok "--init from the Hugging Face directory on 4 ranks: first loss $first = ln 269 (the file's zero head)" || bad "first loss $first, not ln 269"
[ "$(ls "$w/run1" | grep step- | tr '\n' ' ')" = "step-00000004 step-00000008 " ] && ok "run1 holds the checkpoints of steps 4 and 8" ||
  bad "run1: $(ls "$w/run1" | tr '\n' ' ')"

# Step 3: resumed on 3 ranks, saved at its end without --save-every; its losses are a 4-rank run's from the same checkpoint.
[ "$(cat "$w/run2/latest" 2>/dev/null)" = step-00000012 ] && ok "run2 (--save-dir, no --save-every) saved its last step" || bad "run2: $(ls "$w/run2" 2>&1 | tr '\n' ' ')"
"$mpirun" --oversubscribe -np 4 "$tz" train --model "$w/llama" --data "$w/corpus.bin" --strategy zero3 --micro-batch 3 --seq-len 32 \
  --lr 3e-4 --warmup 2 --steps 12 --resume "$w/run1" --metrics "$w/four.jsonl" > "$w/four.log" 2>&1 || { tail -5 "$w/four.log"; bad "the 4-rank continuation"; }
python3 - "$w/four.jsonl" "$w/run2.jsonl" <<'PY' && ok "resumed on 3 ranks: steps 9-12 as a 4-rank run's (within 1e-5)" || bad "resharded losses"
import json, sys
four = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1]))}
three = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
assert sorted(three) == [9, 10, 11, 12] and sorted(four) == sorted(three), (four, three)
assert all(abs(three[s] - four[s]) <= 1e-5 * abs(four[s]) for s in three), (four, three)
PY

# Step 4: the export keeps the shape; tierzero reads it back as it reads the checkpoint.
python3 - "$w/llama/config.json" "$w/llama-continued/config.json" <<'PY' && ok "the export's config.json keeps the directory's shape" || bad "export config"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = ["architectures", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta", "tie_word_embeddings"]
assert all(a[k] == b[k] for k in keys), [(k, a[k], b.get(k)) for k in keys if a[k] != b.get(k)]
PY
tok=(--tokenizer-file "$w/llama/tokenizer.json" --prompt "ab c" --tokens 24 --seed 5)
"$tz" sample --checkpoint "$w/llama-continued" "${tok[@]}" > "$tmp/from_hf" 2> "$tmp/log"
"$tz" sample --checkpoint "$w/run2" "${tok[@]}" > "$tmp/from_ckpt" 2>> "$tmp/log"
[ -s "$tmp/from_hf" ] && cmp -s "$tmp/from_hf" "$tmp/from_ckpt" && ok "sample from the export = sample from the checkpoint" ||
  { cat "$tmp/log"; bad "sample: $(od -c "$tmp/from_hf" | head -2) vs $(od -c "$tmp/from_ckpt" | head -2)"; }
# --init from the export on one rank and from the checkpoint's fp32 master weights give the same first loss: the export
# holds them rounded to bf16, the working precision both runs compute in.
"$tz" ckpt export "$w/run2" --safetensors "$tmp/w.safetensors" 2> "$tmp/log"
for init in "$w/llama-continued" "$tmp/w.safetensors"; do
  "$tz" train --model "$w/llama-continued" --init "$init" --data "$w/corpus.bin" --seq-len 32 --strategy ddp --micro-batch 2 --steps 1 \
    --log-every 100 --metrics "$tmp/reload.jsonl" >> "$tmp/log" 2>&1 && losses "$tmp/reload.jsonl"
done > "$tmp/reloaded"
[ "$(sort -u "$tmp/reloaded" | wc -l)" -eq 1 ] && [ "$(wc -l < "$tmp/reloaded")" -eq 2 ] &&
  ok "--init from the export starts where the checkpoint's weights do: $(head -1 "$tmp/reloaded")" ||
  { tail -5 "$tmp/log"; bad "reload: $(tr '\n' ' ' < "$tmp/reloaded")"; }
if python3 -c 'import torch, transformers' 2> /dev/null; then  # the export as transformers reads it
  python3 - "$w/llama-continued" <<'PY' && ok "transformers loads the export" || bad "transformers on the export"
import sys, torch, transformers
m = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
logits = m(torch.tensor([[65, 110, 100]])).logits
assert logits.shape == (1, 3, 269) and torch.isfinite(logits).all()
PY
else
  echo "note: transformers is not installed; the export was read by tierzero's loader only"
fi
[ $fail -eq 0 ] && echo "hf_llama_walkthrough: all passed"
exit $fail
