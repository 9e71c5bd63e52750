#!/usr/bin/env python3
"""gpt2-124m's training step (B=8, T=1024, forward + backward + AdamW, bf16
GEMMs with fp32 weights) in PyTorch eager on the GPU, for the table of
scripts/gpu_check.sh: prints one JSON line with its tokens/s. The model is
bench/gpt_vs_pytorch.py's (the same written-out attention as tierzero's).

Usage: bench/gpt_vs_pytorch_gpu.py [--steps 10]
Needs PyTorch with CUDA and a GPU (the GPU machine's image has both)."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_vs_pytorch import torch_step_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print(json.dumps({"check": "pytorch_gpt2_124m_tokens_per_s", "skipped": "no CUDA device"}))
        return 77
    B, T = 8, 1024
    step = torch_step_time(os.cpu_count() or 1, args.steps, V=50257, T=T, L=12, C=768, H=12, B=B, device="cuda", bf16=True)
    print(json.dumps({"check": "pytorch_gpt2_124m_tokens_per_s", "value": B * T / step, "unit": "tokens/s", "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(0), "step_time_s": step}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
