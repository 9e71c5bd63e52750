#!/usr/bin/python3
"""Writes the Llama-family PyTorch references of tests/golden.

An independent implementation of Hugging Face transformers' Llama layout
(LlamaForCausalLM / Qwen2ForCausalLM: embed_tokens, per layer
input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
mlp.{gate,up,down}_proj, then norm and lm_head; RMSNorm, rotary embeddings
in rotate-half form with Llama 3.1's frequency scaling, grouped-query
attention by repeating key/value heads, SwiGLU), written out with plain
tensor operations (PyTorch 1.13 has no scaled_dot_product_attention). For
two small models, hf_llama_tiny (untied head, 2 query heads per key/value
head, no biases) and hf_qwen_tiny (tied, one key/value head, q/k/v biases,
rope scaling):

  hf_<name>/config.json, hf_<name>/model.safetensors  the model as transformers stores it
  llama_reference.safetensors  per model "<name>.": tokens, targets, logits,
      loss, grad.<HF name> of every tensor, the losses of 10 AdamW steps on
      that batch (lr 1e-3, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on
      matrices only, clipping at 1.0) and final.<HF name> after them.

Needs Debian's python3-torch (CPU); run: /usr/bin/python3 tests/golden/make_llama_golden.py
"""
import json
import math
import os

import torch

from golden_safetensors import write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
B, T, STEPS = 2, 24, 10

MODELS = {
    "llama_tiny": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256, "max_position_embeddings": 64,
                   "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "intermediate_size": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
                   "hidden_act": "silu", "attention_bias": False, "rope_scaling": None, "torch_dtype": "float32"},
    "qwen_tiny": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 256, "max_position_embeddings": 64,
                  "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 1,
                  "intermediate_size": 48, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
                  "hidden_act": "silu", "use_sliding_window": False, "torch_dtype": "float32",
                  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 16}},
}


def shapes(c):
    V, C, F, L = c["vocab_size"], c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    D = C // c["num_attention_heads"]
    KVD = c["num_key_value_heads"] * D
    bias = c["architectures"][0] == "Qwen2ForCausalLM"
    out = [("model.embed_tokens.weight", (V, C))]
    for l in range(L):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (C,)), (p + "self_attn.q_proj.weight", (C, C)), (p + "self_attn.k_proj.weight", (KVD, C)),
                (p + "self_attn.v_proj.weight", (KVD, C))]
        if bias:
            out += [(p + "self_attn.q_proj.bias", (C,)), (p + "self_attn.k_proj.bias", (KVD,)), (p + "self_attn.v_proj.bias", (KVD,))]
        out += [(p + "self_attn.o_proj.weight", (C, C)), (p + "post_attention_layernorm.weight", (C,)),
                (p + "mlp.gate_proj.weight", (F, C)), (p + "mlp.up_proj.weight", (F, C)), (p + "mlp.down_proj.weight", (C, F))]
    out.append(("model.norm.weight", (C,)))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, C)))
    return out


def inv_freq(c):
    D = c["hidden_size"] // c["num_attention_heads"]
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    s = c.get("rope_scaling")
    if s:  # transformers' _compute_llama3_parameters
        old = s["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / s["low_freq_factor"], old / s["high_freq_factor"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / s["factor"], inv)
        smooth = (old / wavelen - s["low_freq_factor"]) / (s["high_freq_factor"] - s["low_freq_factor"])
        smoothed = (1 - smooth) * scaled / s["factor"] + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    return inv


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def forward(c, p, tokens, targets):
    C, H, KV, L = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["num_hidden_layers"]
    D, eps = C // H, c["rms_norm_eps"]
    freqs = torch.outer(torch.arange(T).float(), inv_freq(c))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    lin = lambda x, name: x @ p[name + ".weight"].t() + (p[name + ".bias"] if name + ".bias" in p else 0)
    x = p["model.embed_tokens.weight"][tokens]
    for l in range(L):
        pre = f"model.layers.{l}."
        h = rms_norm(x, p[pre + "input_layernorm.weight"], eps)
        q = lin(h, pre + "self_attn.q_proj").view(B, T, H, D).transpose(1, 2)
        k = lin(h, pre + "self_attn.k_proj").view(B, T, KV, D).transpose(1, 2)
        v = lin(h, pre + "self_attn.v_proj").view(B, T, KV, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // KV, dim=1)  # transformers' repeat_kv
        v = v.repeat_interleave(H // KV, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + lin(y, pre + "self_attn.o_proj")
        h = rms_norm(x, p[pre + "post_attention_layernorm.weight"], eps)
        g = lin(h, pre + "mlp.gate_proj")
        x = x + lin(g * torch.sigmoid(g) * lin(h, pre + "mlp.up_proj"), pre + "mlp.down_proj")
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if c["tie_word_embeddings"] else p["lm_head.weight"]
    logits = x @ head.t()
    return logits, torch.nn.functional.cross_entropy(logits.view(-1, c["vocab_size"]), targets.view(-1))


reference = {}
for seed, (name, c) in enumerate(MODELS.items()):
    gen = torch.Generator().manual_seed(100 + seed)
    params = {}
    for tname, shape in shapes(c):
        if len(shape) == 2:
            t = torch.randn(shape, generator=gen) * 0.05
        elif tname.endswith("norm.weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        else:
            t = 0.1 * torch.randn(shape, generator=gen)  # biases, non-zero so their gradients are generic
        params[tname] = t.float().requires_grad_(True)
    d = os.path.join(HERE, "hf_" + name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(d, "model.safetensors"), {k: v.detach() for k, v in params.items()}, {"format": "pt"})
    tokens = torch.randint(0, c["vocab_size"], (B, T), generator=gen)
    targets = torch.randint(0, c["vocab_size"], (B, T), generator=gen)
    logits, loss = forward(c, params, tokens, targets)
    loss.backward()
    out = {"tokens": tokens.int(), "targets": targets.int(), "logits": logits.detach(), "loss": loss.detach().double().view(1)}
    out.update({"grad." + k: v.grad.detach().clone() for k, v in params.items()})
    decay = [v for v in params.values() if v.dim() == 2]
    no_decay = [v for v in params.values() if v.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        _, l = forward(c, params, tokens, targets)
        losses.append(l.item())
        l.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
    out["losses"] = torch.tensor(losses, dtype=torch.float64)
    out.update({"final." + k: v.detach().clone() for k, v in params.items()})
    reference.update({name + "." + k: v for k, v in out.items()})
    print(f"{name}: loss {loss.item():.6f}, 10-step losses {losses[0]:.5f} -> {losses[-1]:.5f}")

path = os.path.join(HERE, "llama_reference.safetensors")
write_safetensors(path, reference, {"generator": "tests/golden/make_llama_golden.py", "torch": torch.__version__})
print("wrote", path)
