#!/usr/bin/python3
"""Writes a small GPT-2 in Hugging Face transformers' layout and the logits
an independent PyTorch implementation of that layout gives, for tierzero's
Hugging Face import/export test (tests/hf_gpt2_test.cc):

  tests/golden/hf_gpt2/model.safetensors   GPT2LMHeadModel state dict names
                                           ("transformer." prefix, Conv1D
                                           weights [in, out], no lm_head: tied)
  tests/golden/hf_gpt2/config.json         GPT2Config fields
  tests/golden/hf_gpt2_reference.safetensors  tokens [2, 16] and logits [2, 16, V]

The model below is written from the layout's definition (Conv1D: y = x W + b;
c_attn packs q, k, v along its output; heads split each of them; GELU tanh
"gelu_new"; LayerNorm eps 1e-5; LM head = wte), not from tierzero's code.
Needs Debian's python3-torch; run: /usr/bin/python3 tests/golden/make_hf_gpt2_golden.py
"""
import json
import math
import os
import struct

import torch

V, N_POS, L, C, H = 256, 16, 2, 32, 4
B, T = 2, 16
here = os.path.dirname(os.path.abspath(__file__))
gen = torch.Generator().manual_seed(2019)


def randn(*shape, std=0.02):
    return torch.randn(*shape, generator=gen) * std


state = {"transformer.wte.weight": randn(V, C), "transformer.wpe.weight": randn(N_POS, C, std=0.01)}
for l in range(L):
    p = f"transformer.h.{l}."
    state[p + "ln_1.weight"] = 1 + randn(C, std=0.1)
    state[p + "ln_1.bias"] = randn(C, std=0.1)
    state[p + "attn.c_attn.weight"] = randn(C, 3 * C)
    state[p + "attn.c_attn.bias"] = randn(3 * C)
    state[p + "attn.c_proj.weight"] = randn(C, C)
    state[p + "attn.c_proj.bias"] = randn(C)
    state[p + "ln_2.weight"] = 1 + randn(C, std=0.1)
    state[p + "ln_2.bias"] = randn(C, std=0.1)
    state[p + "mlp.c_fc.weight"] = randn(C, 4 * C)
    state[p + "mlp.c_fc.bias"] = randn(4 * C)
    state[p + "mlp.c_proj.weight"] = randn(4 * C, C)
    state[p + "mlp.c_proj.bias"] = randn(C)
state["transformer.ln_f.weight"] = 1 + randn(C, std=0.1)
state["transformer.ln_f.bias"] = randn(C, std=0.1)


def conv1d(x, prefix):
    return x @ state[prefix + ".weight"] + state[prefix + ".bias"]


def gelu_new(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, prefix):
    return torch.nn.functional.layer_norm(x, (C,), state[prefix + ".weight"], state[prefix + ".bias"], eps=1e-5)


def forward(tokens):
    b, t = tokens.shape
    x = state["transformer.wte.weight"][tokens] + state["transformer.wpe.weight"][torch.arange(t)]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for l in range(L):
        p = f"transformer.h.{l}."
        q, k, v = conv1d(layer_norm(x, p + "ln_1"), p + "attn.c_attn").split(C, dim=2)
        heads = lambda z: z.view(b, t, H, C // H).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, C)
        x = x + conv1d(y, p + "attn.c_proj")
        x = x + conv1d(gelu_new(conv1d(layer_norm(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    return layer_norm(x, "transformer.ln_f") @ state["transformer.wte.weight"].T


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


tokens = torch.randint(0, V, (B, T), generator=gen, dtype=torch.int64)
with torch.no_grad():
    logits = forward(tokens)
os.makedirs(os.path.join(here, "hf_gpt2"), exist_ok=True)
write_safetensors(os.path.join(here, "hf_gpt2", "model.safetensors"), state, {"format": "pt"})
config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": V, "n_positions": N_POS, "n_embd": C,
          "n_layer": L, "n_head": H, "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}
with open(os.path.join(here, "hf_gpt2", "config.json"), "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
write_safetensors(os.path.join(here, "hf_gpt2_reference.safetensors"),
                  {"tokens": tokens.to(torch.int32), "logits": logits.to(torch.float32)},
                  {"generator": "tests/golden/make_hf_gpt2_golden.py", "torch": torch.__version__})
print("wrote tests/golden/hf_gpt2/ and hf_gpt2_reference.safetensors")
