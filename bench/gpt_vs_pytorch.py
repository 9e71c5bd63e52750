#!/usr/bin/python3
"""One training step (forward + backward + AdamW) of gpt-mini, B=8, T=256,
in tierzero and in PyTorch, same config and thread count (1 and 2), in one
run. Prints one JSON object per (impl, threads) and one ratio line per
thread count: ratio = PyTorch step time / tierzero step time (>= 1 means
tierzero is at least as fast).

Usage: bench/gpt_vs_pytorch.py [--tierzero build/tierzero] [--steps 5]
Needs Debian's python3-torch (installed if missing, as root)."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time


def ensure_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        subprocess.run(["apt-get", "install", "-y", "-q", "python3-torch"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def torch_step_time(threads, steps, V=256, T=256, L=6, C=384, H=6, B=8, device="cpu", bf16=False, attention="eager"):
    """Median seconds of one step; on a GPU (device "cuda") the GEMMs run in bf16
    under autocast with fp32 weights and AdamW, as tierzero's device path does.
    attention: "eager" writes it out as tierzero does (scores, mask, softmax);
    "sdpa" calls scaled_dot_product_attention (PyTorch >= 2.0: the fused kernels)."""
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    if device != "cpu":
        torch.set_default_device(device)  # PyTorch >= 2.0 (Debian's 1.13 runs the CPU case)
    shapes = [("wte", (V, C)), ("wpe", (T, C))]
    for l in range(L):
        p = f"h.{l}."
        shapes += [(p + "ln1_w", (C,)), (p + "ln1_b", (C,)), (p + "attn_w", (3 * C, C)), (p + "attn_b", (3 * C,)),
                   (p + "proj_w", (C, C)), (p + "proj_b", (C,)), (p + "ln2_w", (C,)), (p + "ln2_b", (C,)),
                   (p + "fc_w", (4 * C, C)), (p + "fc_b", (4 * C,)), (p + "fcproj_w", (C, 4 * C)), (p + "fcproj_b", (C,))]
    shapes += [("lnf_w", (C,)), ("lnf_b", (C,))]
    params = {n: (torch.randn(s) * 0.02 if len(s) == 2 else (torch.ones(s) if n.endswith("_w") else torch.zeros(s))).requires_grad_(True)
              for n, s in shapes}
    decay = [v for v in params.values() if v.dim() == 2]
    no_decay = [v for v in params.values() if v.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    hs = C // H

    def forward(p):
        x = p["wte"][tokens] + p["wpe"][:T]
        for l in range(L):
            q = f"h.{l}."
            h = F.layer_norm(x, (C,), p[q + "ln1_w"], p[q + "ln1_b"], eps=1e-5)
            qkv = F.linear(h, p[q + "attn_w"], p[q + "attn_b"])
            qq, kk, vv = (t.view(B, T, H, hs).transpose(1, 2) for t in qkv.split(C, dim=2))
            if attention == "sdpa":
                y = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
            else:
                att = (qq @ kk.transpose(-2, -1)) / math.sqrt(hs)
                y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ vv
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            x = x + F.linear(y, p[q + "proj_w"], p[q + "proj_b"])
            h = F.layer_norm(x, (C,), p[q + "ln2_w"], p[q + "ln2_b"], eps=1e-5)
            x = x + F.linear(F.gelu(F.linear(h, p[q + "fc_w"], p[q + "fc_b"]), approximate="tanh"), p[q + "fcproj_w"], p[q + "fcproj_b"])
        x = F.layer_norm(x, (C,), p["lnf_w"], p["lnf_b"], eps=1e-5)
        return F.cross_entropy((x @ p["wte"].t()).view(-1, V), targets.view(-1))

    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
    times = []
    for i in range(steps + 1):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            loss = forward(params)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        sync()
        if i > 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tierzero", default=os.path.join(os.path.dirname(__file__), "..", "build", "tierzero"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--torch-only", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_only:  # child process: OpenBLAS and OpenMP pools sized by the environment
        print(torch_step_time(args.torch_only, args.steps))
        return
    ensure_torch()
    for threads in (1, 2):
        # Both sides get the same thread count for every pool (PyTorch's GEMMs go
        # through OpenBLAS, whose pool torch.set_num_threads does not size).
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), MALLOC_MMAP_MAX_="0",
                   MALLOC_TRIM_THRESHOLD_="17179869184")
        out = subprocess.run([args.tierzero, "bench", "step", "--model", "gpt-mini", "--micro-batch", "8", "--seq-len", "256",
                              "--threads", str(threads), "--steps", str(args.steps)], check=True, capture_output=True,
                             text=True, env=env).stdout
        tz = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(tz))
        pt_time = float(subprocess.run([sys.executable, __file__, "--torch-only", str(threads), "--steps", str(args.steps)],
                                       check=True, capture_output=True, text=True, env=env).stdout.strip().splitlines()[-1])
        tokens = 8 * 256
        print(json.dumps({"impl": "pytorch", "torch": __import__("torch").__version__, "model": "gpt-mini", "micro_batch": 8,
                          "seq_len": 256, "threads": threads, "step_time_s": pt_time, "tokens_per_s": tokens / pt_time,
                          "tflops": tokens / pt_time * tz["tflops"] / tz["tokens_per_s"]}))
        print(json.dumps({"threads": threads, "ratio": pt_time / tz["step_time_s"],
                          "meaning": "pytorch step time / tierzero step time (>= 1: tierzero at least as fast)"}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
