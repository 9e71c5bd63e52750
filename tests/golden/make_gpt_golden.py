#!/usr/bin/python3
"""Writes tests/golden/gpt_tiny.safetensors: a PyTorch reference for gpt-tiny.

The same architecture as tierzero's GptModel (GPT-2: learned position
embeddings, pre-LayerNorm blocks, causal attention, tanh-GELU MLP, tied LM
head), built from the same tensor names and weights. Stored: the weights,
tokens and targets, logits, loss, every gradient, the losses of 10 AdamW
steps on that batch (lr 1e-3, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on
matrices only, gradient clipping at 1.0), and the weights after them.

Needs Debian's python3-torch (CPU); run: /usr/bin/python3 tests/golden/make_gpt_golden.py
"""
import math
import os

import torch
import torch.nn.functional as F

from golden_safetensors import write_safetensors

V, T_CTX, L, C, H = 256, 64, 2, 64, 4  # gpt-tiny
B, T = 4, 32
STEPS = 10

torch.manual_seed(1234)
gen = torch.Generator().manual_seed(1234)


def tensor_shapes():
    shapes = [("wte", (V, C)), ("wpe", (T_CTX, C))]
    for l in range(L):
        p = f"h.{l}."
        shapes += [(p + "ln1_w", (C,)), (p + "ln1_b", (C,)), (p + "attn_w", (3 * C, C)), (p + "attn_b", (3 * C,)),
                   (p + "proj_w", (C, C)), (p + "proj_b", (C,)), (p + "ln2_w", (C,)), (p + "ln2_b", (C,)),
                   (p + "fc_w", (4 * C, C)), (p + "fc_b", (4 * C,)), (p + "fcproj_w", (C, 4 * C)), (p + "fcproj_b", (C,))]
    return shapes + [("lnf_w", (C,)), ("lnf_b", (C,))]


params = {}
for name, shape in tensor_shapes():
    if len(shape) == 2:
        t = torch.randn(shape, generator=gen) * 0.02
    elif name.endswith("_w"):
        t = 1.0 + 0.1 * torch.randn(shape, generator=gen)  # LayerNorm weights, perturbed
    else:
        t = 0.1 * torch.randn(shape, generator=gen)  # biases, perturbed so their gradients are generic
    params[name] = t.float().requires_grad_(True)
initial = {k: v.detach().clone() for k, v in params.items()}

tokens = torch.randint(0, V, (B, T), generator=gen)
targets = torch.randint(0, V, (B, T), generator=gen)


def forward(p):
    x = p["wte"][tokens] + p["wpe"][:T]
    hs = C // H
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        q = f"h.{l}."
        h = F.layer_norm(x, (C,), p[q + "ln1_w"], p[q + "ln1_b"], eps=1e-5)
        qkv = h @ p[q + "attn_w"].t() + p[q + "attn_b"]
        qq, kk, vv = qkv.split(C, dim=2)
        qq = qq.view(B, T, H, hs).transpose(1, 2)
        kk = kk.view(B, T, H, hs).transpose(1, 2)
        vv = vv.view(B, T, H, hs).transpose(1, 2)
        att = (qq @ kk.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ vv).transpose(1, 2).contiguous().view(B, T, C)
        x = x + y @ p[q + "proj_w"].t() + p[q + "proj_b"]
        h = F.layer_norm(x, (C,), p[q + "ln2_w"], p[q + "ln2_b"], eps=1e-5)
        h = F.gelu(h @ p[q + "fc_w"].t() + p[q + "fc_b"], approximate="tanh")
        x = x + h @ p[q + "fcproj_w"].t() + p[q + "fcproj_b"]
    x = F.layer_norm(x, (C,), p["lnf_w"], p["lnf_b"], eps=1e-5)
    logits = x @ p["wte"].t()
    loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
    return logits, loss


logits, loss = forward(params)
loss.backward()
out = {"tokens": tokens.int(), "targets": targets.int(), "logits": logits.detach(), "loss": loss.detach().view(1)}
for k, v in initial.items():
    out["param." + k] = v
for k, v in params.items():
    out["grad." + k] = v.grad.detach().clone()

decay = [v for k, v in params.items() if v.dim() == 2]
no_decay = [v for k, v in params.items() if v.dim() != 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
losses = []
for step in range(STEPS):
    opt.zero_grad()
    _, loss = forward(params)
    losses.append(loss.item())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
    opt.step()
out["losses"] = torch.tensor(losses, dtype=torch.float64)
for k, v in params.items():
    out["final." + k] = v.detach().clone()


path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpt_tiny.safetensors")
write_safetensors(path, out, {"generator": "tests/golden/make_gpt_golden.py", "torch": torch.__version__})
print(f"wrote {path}: loss {out['loss'].item():.6f}, 10-step losses {losses[0]:.5f} -> {losses[-1]:.5f}")
