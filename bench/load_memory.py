#!/usr/bin/env python3
"""Peak host memory per rank of loading a model: `train --init` and a reshard 8 -> 3 ranks.

For each model (default gpt2-124m and llama3.2-1b) it writes Hugging Face
weights of the model's shape (GPT-2: transformers' GPT2LMHeadModel names,
F32, as the published gpt2 is; Llama: LlamaForCausalLM names, BF16, as
Llama 3.2 1B is) with a small safetensors writer below (no download; the
values are a fixed finite pattern: loading does not depend on them), then
runs `tierzero bench load` (bench/load_bench.h: the sharded trainer built
and a checkpoint resumed, no training step) under mpirun:

  init     8 ranks, zero3 (node=4,world=2), built from the weights (--init),
           then saving the 8-rank checkpoint the next case resumes;
  reshard  3 ranks, zero3 (node=3), resuming that checkpoint (re-partitioned).

A model whose 8 ranks cannot save on this machine (--fixture MODEL: the
save's host snapshot is the rank's whole shard) gets its 8-rank checkpoint
from `tierzero bench checkpoint` instead, which writes the files an 8-rank
save would (one rank after another, unit by unit, in one process);
--check-fixture compares its files with a real save's, byte for byte, for
the models that save for real.
--offload MODEL puts that model's optimizer state and parameters in swap
files (--offload-optimizer nvme --offload-param nvme) so that the ranks'
shards fit the machine's memory.

Prints one JSON line per run: the command, every rank's peak resident set
after building and after resuming (VmHWM), the bytes of its shards, and
their maxima in GiB.

Usage: bench/load_memory.py [TIERZERO] [--models gpt2-124m,llama3.2-1b]
       [--fixture llama3.2-1b] [--offload llama3.2-1b] [--check-fixture] [--work DIR]"""
import argparse
import filecmp
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1024 ** 3

# The presets' shapes (src/model/gpt_config.cc); a wrong one is refused by the loader, naming the tensor.
SHAPES = {
    "gpt2-124m": dict(family="gpt2", V=50257, T=1024, L=12, C=768),
    "llama3.2-1b": dict(family="llama", V=128256, L=16, C=2048, H=32, KV=8, F=8192),
}


def tensors(model):
    """(name, shape) of every tensor of the model in transformers' names."""
    s = SHAPES[model]
    V, L, C = s["V"], s["L"], s["C"]
    if s["family"] == "gpt2":
        out = [("transformer.wte.weight", [V, C]), ("transformer.wpe.weight", [s["T"], C])]
        for l in range(L):
            h = f"transformer.h.{l}."
            out += [(h + "ln_1.weight", [C]), (h + "ln_1.bias", [C]), (h + "attn.c_attn.weight", [C, 3 * C]), (h + "attn.c_attn.bias", [3 * C]),
                    (h + "attn.c_proj.weight", [C, C]), (h + "attn.c_proj.bias", [C]), (h + "ln_2.weight", [C]), (h + "ln_2.bias", [C]),
                    (h + "mlp.c_fc.weight", [C, 4 * C]), (h + "mlp.c_fc.bias", [4 * C]), (h + "mlp.c_proj.weight", [4 * C, C]),
                    (h + "mlp.c_proj.bias", [C])]
        return out + [("transformer.ln_f.weight", [C]), ("transformer.ln_f.bias", [C])]
    kvd, F = s["KV"] * C // s["H"], s["F"]
    out = [("model.embed_tokens.weight", [V, C])]
    for l in range(L):
        h = f"model.layers.{l}."
        out += [(h + "input_layernorm.weight", [C]), (h + "self_attn.q_proj.weight", [C, C]), (h + "self_attn.k_proj.weight", [kvd, C]),
                (h + "self_attn.v_proj.weight", [kvd, C]), (h + "self_attn.o_proj.weight", [C, C]),
                (h + "post_attention_layernorm.weight", [C]), (h + "mlp.gate_proj.weight", [F, C]), (h + "mlp.up_proj.weight", [F, C]),
                (h + "mlp.down_proj.weight", [C, F])]
    return out + [("model.norm.weight", [C])]  # tied: no lm_head


def write_weights(model, path):
    """model.safetensors of the model's tensors (F32 for GPT-2, BF16 for Llama), each a repeated block of small finite values."""
    dtype, size = ("F32", 4) if SHAPES[model]["family"] == "gpt2" else ("BF16", 2)
    block_elems = 1 << 16
    values = [((i * 2654435761) % 2001 - 1000) * 2e-5 for i in range(block_elems)]
    block = struct.pack(f"<{block_elems}f", *values)
    if dtype == "BF16":
        block = b"".join(block[4 * i + 2:4 * i + 4] for i in range(block_elems))  # the high halves: bf16 by truncation
    header, offset, lengths = {}, 0, []
    for name, shape in tensors(model):
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        lengths.append(n)
        offset += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for n in lengths:
            while n > 0:
                f.write(block[:n])
                n -= min(n, len(block))


def tz_env():
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
                MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_="17179869184", OPENBLAS_NUM_THREADS="1")


def run(case, cmd):
    done = subprocess.run(cmd, env=tz_env(), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{case}: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row = {"case": case, "command": " ".join(cmd), **row}
    if "peak_rss_build_bytes" in row:
        row["max_peak_rss_build_gib"] = round(max(row["peak_rss_build_bytes"]) / GIB, 3)
        row["max_peak_rss_gib"] = round(max(row["peak_rss_bytes"]) / GIB, 3)
        row["max_shard_gib"] = round(max(row["shard_bytes"]) / GIB, 3)
    print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tierzero", nargs="?", default=os.path.join(ROOT, "build", "tierzero"))
    ap.add_argument("--models", default="gpt2-124m,llama3.2-1b")
    ap.add_argument("--fixture", default="llama3.2-1b", help="models whose 8-rank checkpoint `bench checkpoint` writes (comma-separated)")
    ap.add_argument("--offload", default="llama3.2-1b", help="models run with their state in swap files (comma-separated)")
    ap.add_argument("--check-fixture", action="store_true", help="also write the real save's checkpoint with `bench checkpoint` and compare the files")
    ap.add_argument("--work", default=None, help="scratch directory (default: a temporary one, removed after)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="tz-load-")
    tz = a.tierzero
    try:
        for model in a.models.split(","):
            d = os.path.join(work, model)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.join(d, "hf"))
            os.makedirs(os.path.join(d, "swap"))
            write_weights(model, os.path.join(d, "hf", "model.safetensors"))
            layout = ["--model", model, "--strategy", "zero3", "--param-dtype", "bf16"]
            if model in a.offload.split(","):
                layout_run = layout + ["--offload-optimizer", "nvme", "--offload-param", "nvme", "--nvme-path", os.path.join(d, "swap")]
            else:
                layout_run = layout
            ckpt = os.path.join(d, "ckpt8")
            eight = ["--init", os.path.join(d, "hf"), "--topology", "node=4,world=2"]
            if model in a.fixture.split(","):
                run("init", ["mpirun", "-np", "8", tz, "bench", "load"] + layout_run + eight)
                run("checkpoint", [tz, "bench", "checkpoint"] + layout + eight + ["--ranks", "8", "--output", ckpt])
            else:  # the real 8-rank save, and `bench checkpoint`'s files beside it: the same bytes
                run("init", ["mpirun", "-np", "8", tz, "bench", "load"] + layout_run + eight + ["--save-dir", ckpt])
                if a.check_fixture:
                    run("checkpoint", [tz, "bench", "checkpoint"] + layout + eight + ["--ranks", "8", "--output", ckpt + "-fixture"])
                    step = "step-00000000"
                    names = sorted(f for f in os.listdir(os.path.join(ckpt, step)) if f.startswith("rank-"))
                    same = [n for n in names if filecmp.cmp(os.path.join(ckpt, step, n), os.path.join(ckpt + "-fixture", step, n), shallow=False)]
                    print(json.dumps({"case": "fixture-check", "model": model, "files": len(names), "identical": len(same)}), flush=True)
                    if len(same) != len(names) or not names:
                        sys.exit(f"bench checkpoint's files differ from the real save's: {sorted(set(names) - set(same))}")
                    shutil.rmtree(ckpt + "-fixture")
            run("reshard", ["mpirun", "-np", "3", tz, "bench", "load"] + layout_run + ["--topology", "node=3", "--resume", ckpt])
            shutil.rmtree(d)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
