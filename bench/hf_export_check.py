#!/usr/bin/env python3
"""tierzero's Hugging Face GPT-2 layout against the real transformers library.

Loads tests/golden/hf_gpt2 (the committed GPT-2 directory, which
tests/hf_gpt2_test.cc checks tierzero's `ckpt export --format hf-gpt2`
writes byte for byte and reads back to the reference logits) with
transformers.GPT2LMHeadModel on the CPU, runs the reference tokens and
prints the max relative difference of its logits from the reference
(tests/golden/hf_gpt2_reference.safetensors) as one JSON line. With
--export DIR it also loads a directory tierzero exported (e.g. the GPU
check's trained gpt2-124m) and checks its logits are finite.

Usage: bench/hf_export_check.py [--export DIR]
Needs transformers, torch and safetensors (the GPU machine's image)."""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export")
    args = ap.parse_args()
    import torch
    from safetensors.torch import load_file
    from transformers import GPT2LMHeadModel
    golden = os.path.join(ROOT, "tests", "golden")
    ref = load_file(os.path.join(golden, "hf_gpt2_reference.safetensors"))
    model = GPT2LMHeadModel.from_pretrained(os.path.join(golden, "hf_gpt2"), local_files_only=True).eval()
    with torch.no_grad():
        logits = model(ref["tokens"].long()).logits.float()
    want = ref["logits"].float()
    rel = ((logits - want).abs().max() / want.abs().max()).item()
    print(json.dumps({"check": "hf_gpt2_export_vs_transformers", "value": rel, "unit": "max relative difference",
                      "transformers": __import__("transformers").__version__}))
    if args.export:
        m = GPT2LMHeadModel.from_pretrained(args.export, local_files_only=True).eval()
        with torch.no_grad():
            out = m(torch.arange(16).view(1, 16) % m.config.vocab_size).logits
        loads = bool(torch.isfinite(out).all().item())
        print(json.dumps({"check": "hf_gpt2_export_loads_in_transformers", "value": 1 if loads else 0,
                          "unit": "finite logits (1) or not (0)", "params": sum(p.numel() for p in m.parameters())}))
        if not loads:
            return 1
    return 0 if rel < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
