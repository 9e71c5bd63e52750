#!/usr/bin/env python3
"""The training steps tierzero_gpu_bench times on the GPU, in PyTorch eager
on the same GPU and shapes, for the table of scripts/gpu_check.sh:
gpt2-124m (B 8, T 1024) and a Llama shape, llama3.2-1b (B 2, T 2048: 16
layers, 2048 channels, 32 heads, 8 KV heads, SwiGLU 8192, RMSNorm, RoPE,
tied head, vocab 128256), each forward + backward + clipping + AdamW with
fp32 weights and bf16 autocast. Attention written out (scores, causal mask,
softmax, as tierzero's kernels do: `eager`) and through
scaled_dot_product_attention (FlashAttention's kernels: `sdpa`), so the
table shows both what tierzero is compared with and how far the fused
kernels go. One JSON line per measurement, flushed as it is made, with
tokens/s and the model FLOPs utilisation against the datasheet peak
(tierzero's FLOPs per token: 6 N' + 12 L C T, N' the parameters without
the lookup-only embeddings).

Usage: bench/gpt_vs_pytorch_gpu.py [--steps 5] [--peak-tflops X]
Needs PyTorch with CUDA and a GPU (the GPU machine's image has both).
Exits 77 without one, 1 where TZ_REQUIRE_GPU=1."""
import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_vs_pytorch import torch_step_time  # noqa: E402

GPT2 = dict(V=50257, T=1024, L=12, C=768, H=12, B=8)
LLAMA = dict(V=128256, T=2048, L=16, C=2048, H=32, KV=8, F=8192, B=2)


def gpt2_flops_per_token(V, T, L, C, H, B):
    n = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C  # GPT-2 parameters
    return 6 * (n - T * C) + 12 * L * C * T


def llama_flops_per_token(V, T, L, C, H, KV, F, B):
    d = C // H
    n = V * C + L * (2 * C * C + 2 * KV * d * C + 3 * F * C + 2 * C) + C  # tied head
    return 6 * n + 12 * L * C * T


def llama_step_time(steps, V, T, L, C, H, KV, F, B, attention):
    """Median seconds of one training step of the Llama shape."""
    import torch
    import torch.nn.functional as Fn
    torch.manual_seed(0)
    torch.set_default_device("cuda")
    d = C // H
    shapes = [("wte", (V, C))]
    for l in range(L):
        p = f"h.{l}."
        shapes += [(p + "n1", (C,)), (p + "q", (C, C)), (p + "k", (KV * d, C)), (p + "v", (KV * d, C)), (p + "o", (C, C)),
                   (p + "n2", (C,)), (p + "gate", (F, C)), (p + "up", (F, C)), (p + "down", (C, F))]
    shapes += [("nf", (C,))]
    params = {n: (torch.randn(s) * 0.02 if len(s) == 2 else torch.ones(s)).requires_grad_(True) for n, s in shapes}
    opt = torch.optim.AdamW([{"params": [v for v in params.values() if v.dim() == 2], "weight_decay": 0.1},
                             {"params": [v for v in params.values() if v.dim() != 2], "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(T, dtype=torch.float32), inv)
    cos, sin = ang.cos()[None, None], ang.sin()[None, None]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def rope(x):
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def norm(x, w):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * w

    def forward(p):
        x = p["wte"][tokens]
        for l in range(L):
            q_ = f"h.{l}."
            h = norm(x, p[q_ + "n1"])
            q = rope(Fn.linear(h, p[q_ + "q"]).view(B, T, H, d).transpose(1, 2))
            k = rope(Fn.linear(h, p[q_ + "k"]).view(B, T, KV, d).transpose(1, 2)).repeat_interleave(H // KV, dim=1)
            v = Fn.linear(h, p[q_ + "v"]).view(B, T, KV, d).transpose(1, 2).repeat_interleave(H // KV, dim=1)
            if attention == "sdpa":
                y = Fn.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
                y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
            x = x + Fn.linear(y.transpose(1, 2).reshape(B, T, C), p[q_ + "o"])
            h = norm(x, p[q_ + "n2"])
            x = x + Fn.linear(Fn.silu(Fn.linear(h, p[q_ + "gate"])) * Fn.linear(h, p[q_ + "up"]), p[q_ + "down"])
        x = norm(x, p["nf"])
        return Fn.cross_entropy((x @ p["wte"].t()).view(-1, V).float(), targets.view(-1))

    times = []
    for i in range(steps + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = forward(params)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        torch.cuda.synchronize()
        if i > 0:
            times.append(time.perf_counter() - t0)
    del params, opt
    torch.cuda.empty_cache()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--peak-tflops", type=float, default=0)
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print(json.dumps({"check": "pytorch_gpt2_124m_tokens_per_s", "skipped": "no CUDA device"}), flush=True)
        return 1 if os.environ.get("TZ_REQUIRE_GPU") == "1" else 77
    name = torch.cuda.get_device_name(0)
    peak = args.peak_tflops or (312.0 if "A100" in name else 989.0)  # dense bf16 datasheet peaks (A100; H100/H200 SXM)
    common = {"torch": torch.__version__, "device": name}
    runs = [("gpt2_124m", GPT2, gpt2_flops_per_token(**GPT2),
             lambda a: torch_step_time(os.cpu_count() or 1, args.steps, device="cuda", bf16=True, attention=a, **GPT2)),
            ("llama_1b", LLAMA, llama_flops_per_token(**LLAMA), lambda a: llama_step_time(args.steps, attention=a, **LLAMA))]
    for model, shape, per_token, timed in runs:
        for attention in ("eager", "sdpa"):
            step = timed(attention)
            tokens_per_s = shape["B"] * shape["T"] / step
            suffix = "" if attention == "eager" else "_sdpa"
            print(json.dumps({"check": f"pytorch_{model}{suffix}_tokens_per_s", "value": tokens_per_s, "unit": "tokens/s",
                              "attention": attention, "micro_batch": shape["B"], "seq_len": shape["T"], "step_time_s": step,
                              "mfu": per_token * tokens_per_s / (peak * 1e12), **common}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
