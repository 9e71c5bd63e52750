"""Writes data/published-runs.toml from the published figures transcribed here: llm-foundry's benchmark tables
(llmfoundry-benchmarks.csv, beside this file, one row per table row of the README named in LF_URL) and the rows below, each
with its source. The TOML is what the project reads; this script is how it was made (python3 bench/corpus/make_corpus.py)."""
import csv, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, '..', '..', 'data', 'published-runs.toml')
LF_URL = 'https://github.com/mosaicml/llm-foundry/blob/c90b9b312c644dbde5c9e6eef75c6f1c117d8782/scripts/train/benchmarking/README.md'
LF_TABLE = {'H100L': 'H100 80GB BF16 (Large Scale, >= 128 GPUs)', 'H100': 'H100 80GB BF16', 'H100FP8': 'H100 80GB FP8',
            'A100_80': 'A100 80GB with 1600 Gbps node-node interconnect (RoCE)', 'A100_40': 'A100 40GB with 1600 Gbps node-node interconnect (RoCE)'}
LF_HALF = {'H100': 'fit', 'A100_80': 'fit', 'H100L': 'check', 'A100_40': 'check', 'H100FP8': 'check'}
MPT = {'125m': (12, 768, 12), '350m': (24, 1024, 16), '760m': (24, 1536, 12), '1b': (24, 2048, 16), '3b': (32, 2560, 20),
       '7b': (32, 4096, 32), '13b': (40, 5120, 40), '30b': (48, 7168, 56), '70b': (80, 8192, 64)}
DEVICE = {'h100': 'h100-sxm', 'a100_80': 'a100-80gb', 'a100_40': 'a100-40gb'}


def q(s):
    return '"' + str(s).replace('\\', '\\\\').replace('"', '\\"') + '"'


MODEL_KEYS = {'model': 'name', 'layers': 'layers', 'hidden': 'channels', 'heads': 'heads', 'kv_heads': 'kv_heads', 'ffn': 'ffn',
              'mlp': 'mlp', 'norm': 'norm', 'positions': 'positions', 'tied': 'tied', 'bias': 'bias', 'vocab': 'vocab'}


def value(v):
    if isinstance(v, dict):
        return '{ ' + ', '.join(f'{k} = {value(x)}' for k, x in v.items()) + ' }'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return q(v)


def emit(f, r):
    f.write('\n[[run]]\n')
    model = {MODEL_KEYS[k]: v for k, v in r.items() if k in MODEL_KEYS}
    if 'preset' in r:
        model = {'preset': r.pop('preset'), 'name': model['name']}
    model['context'] = r['seq_len']
    for k, v in r.items():
        if k in MODEL_KEYS:
            continue
        if v is None:
            continue
        f.write(f'{k} = {value(v)}\n')
        # A source that does not state its network: said in data, so that validate prices the row as a range.
        if k == 'interconnect' and (v.startswith('unstated') or 'not stated' in v):
            f.write('network_stated = false\n')
    f.write('model = { ' + ', '.join(f'{k} = {value(v)}' for k, v in model.items()) + ' }\n')


EXCLUDED = []

# NeMo's and Megatron-Bridge's FP8 runs: their gradients' dtype, inferred (reduce_bytes = 2).
GRAD_NOTE = ("gradients reduced and held in bf16 (inferred: NeMo's FP8 performance scripts clear grad_reduce_in_fp32, "
             "NVIDIA/NeMo scripts/performance/llm/pretrain_gpt3_175b.py at commit fb34b2c; Megatron-Bridge's performance configs set "
             "ddp.grad_reduce_in_fp32 = False): reduce_bytes = 2; ")


def consistent(rows):
    """The rows that pass two checks of the tables against themselves, made before any prediction: (1) a row more than
    10% off the median of the same table's rows of the same model, sequence, micro-batch and recomputation at other GPU
    counts (at least three) is a measurement its own table contradicts; (2) a row of the A100 80GB table more than 10%
    slower than the A100 40GB table's of the same model and sequence contradicts the hardware (one chip; the 80GB part
    has the faster memory)."""
    import collections, statistics
    groups = collections.defaultdict(list)
    for r in rows:
        groups[(r['table'], r['model'], r['seq'], r['mb'], r['ac'])].append(r)
    a40 = {(r['model'], r['seq']): float(r['tps']) for r in rows if r['table'] == 'A100_40'}
    kept = []
    for r in rows:
        same = groups[(r['table'], r['model'], r['seq'], r['mb'], r['ac'])]
        med = statistics.median(float(x['tps']) for x in same)
        if len(same) >= 3 and abs(float(r['tps']) / med - 1) > 0.10:
            EXCLUDED.append(f"'{LF_TABLE[r['table']]}' {r['model']} SeqLen {r['seq']} {r['gpus']} GPUs: {r['tps']} tokens/s/GPU, "
                            f"the median of its {len(same)} GPU counts {med:.0f} (check 1)")
            continue
        slower = a40.get((r['model'], r['seq']))
        if r['table'] == 'A100_80' and slower and float(r['tps']) < 0.9 * slower:
            EXCLUDED.append(f"'{LF_TABLE[r['table']]}' {r['model']} SeqLen {r['seq']} {r['gpus']} GPUs: {r['tps']} tokens/s/GPU, "
                            f"the A100 40GB's {slower:.0f} (check 2)")
            continue
        kept.append(r)
    return kept


def llmfoundry():
    rows = consistent(list(csv.DictReader(open(os.path.join(HERE, 'llmfoundry-benchmarks.csv')))))
    out = []
    for row in rows:
        L, h, H = MPT[row['model']]
        t = row['table']
        seq, gpus, mb = int(row['seq']), int(row['gpus']), int(row['mb'])
        strategy = {'FULL_SHARD': 'zero3', 'SHARD_GRAD_OP': 'zero2'}[row['shard']]
        out.append(dict(
            id=f"llmfoundry-{t.lower().replace('_', '')}-mpt{row['model']}-s{seq}-g{gpus}-mb{mb}",
            half=LF_HALF[t],
            source=f"mosaicml/llm-foundry scripts/train/benchmarking/README.md (commit c90b9b3), table '{LF_TABLE[t]}', row {row['model']}, SeqLen {seq}, {gpus} GPUs, MicroBatchSize {mb}",
            url=LF_URL,
            gpu=DEVICE[row['gpu']], gpus=gpus, gpus_per_node=8,
            world_gbs=25 if t.startswith('A100') else 50,
            interconnect=('1600 Gbps node-node RoCE (the table heading): 200 GB/s per node of 8, 25 GB/s per GPU' if t.startswith('A100')
                          else 'unstated; taken as a DGX H100 (8 x 400 Gb/s InfiniBand per node: 50 GB/s per GPU)'),
            engine='fsdp', strategy=strategy, strategy_as_published=row['shard'],
            precision='fp8' if 'fp8' in row['prec'] else 'bf16',
            precision_as_published=f"{row['prec']}, MP mode {row['mp']}",
            attention='triton', fused_loss=True,
            reduce_bytes=4 if row['mp'] == 'DEFAULT' else 2,
            backward_prefetch='post',
            model=f"mpt-{row['model']}", layers=L, hidden=h, heads=H, kv_heads=H, ffn=4 * h, mlp='gelu', norm='layernorm',
            positions='learned', tied=True, bias='none', vocab=50368,
            seq_len=seq, micro_batch=mb, grad_accum=int(row['ga']),
            recompute='full' if row['ac'] == 'True' else 'none',
            tokens_per_s_per_gpu=float(row['tps']),
            notes=(f"Throughput (T/s/GPU) as published; MFU {row['mfu']}%, NumParams {row['nparams']}. Composer + FSDP1; "
                   "the shape from scripts/train/yamls/pretrain/mpt-*.yaml (d_model, n_layers, n_heads, expansion_ratio 4, vocab 50368, "
                   "learned positions as NumParams shows); attn_impl triton (submit_benchmarks.py's default) and loss_fn "
                   "fused_crossentropy (flash-attn's kernel, the yamls' default) inferred; MP mode DEFAULT reduces in fp32, PURE in bf16 "
                   "(Composer's get_mixed_precision); the yamls' fsdp_config sets no backward_prefetch: Composer's FSDPConfig default "
                   "BACKWARD_POST"),
        ))
    return out


def llama(layers, hidden, heads, kv, ffn, vocab, name):
    return dict(model=name, layers=layers, hidden=hidden, heads=heads, kv_heads=kv, ffn=ffn, mlp='swiglu', norm='rmsnorm',
                positions='rope', tied=False, bias='none', vocab=vocab)


TT_URL = 'https://github.com/pytorch/torchtitan/blob/041336434916bdc0f88c1f89fda176fd3c2092e4/docs/performance.md'
TT_SRC = "pytorch/torchtitan docs/performance.md (commit 0413364), table '{t}', row {row}"
TT_NOTE = ("WPS is tokens/s per GPU (torchtitan train.py). FSDP2 1D over 64 A100 80GB, bf16 mixed precision reducing in fp32 "
           "(torchtitan's mixed_precision_reduce default), SDPA attention (FlashAttention-2 on the A100), no torch.compile; "
           "'selective layer' AC checkpoints every second block (every:2), 'selective op' keeps every other matmul's output "
           "(selective-op); the shapes from torchtitan/models/llama/__init__.py; interconnect unstated: taken as a DGX A100's")


def others():
    out = []
    base_tt = dict(half='fit', url=TT_URL, gpu='a100-80gb', gpus=64, gpus_per_node=8, world_gbs=25,
                   interconnect='unstated; taken as a DGX A100 (200 Gb/s InfiniBand per GPU)', engine='fsdp2', strategy='zero3',
                   strategy_as_published='FSDP2 1D (dp_shard 64)', precision='bf16', attention='flash2', model_code='torchtitan', reduce_bytes=4,
                   notes=TT_NOTE)
    l3_8b = llama(32, 4096, 32, 8, 14336, 128256, 'llama3-8b')
    l3_70b = llama(80, 8192, 64, 8, 28672, 128256, 'llama3-70b')
    l2_13b = llama(40, 5120, 40, 40, 13824, 32000, 'llama2-13b')
    l2_70b = llama(80, 8192, 64, 8, 28672, 32000, 'llama2-70b')
    for rid, t, row, shape, seq, mb, rc, tps, oom in [
        ('torchtitan-a100-llama3-8b-sac-layer', 'Llama 3 performance numbers', '8B, batch 1, AC selective layer (MFU 56.8%)', l3_8b, 8192, 1, 'every:2', 2904, False),
        ('torchtitan-a100-llama3-8b-sac-op', 'Llama 3 performance numbers', '8B, batch 1, AC selective op (MFU 58.2%)', l3_8b, 8192, 1, 'selective-op', 2973, False),
        ('torchtitan-a100-llama3-70b-full', 'Llama 3 performance numbers', '70B, batch 1, AC full (MFU 51.7%)', l3_70b, 8192, 1, 'full', 331, False),
        ('torchtitan-a100-llama2-13b-noac', 'Llama 2 performance numbers', '13B, batch 2, AC no (MFU 61.1%)', l2_13b, 4096, 2, 'none', 2162, False),
        ('torchtitan-a100-llama2-13b-sac-layer', 'Llama 2 performance numbers', '13B, batch 2, AC selective layer (MFU 54.1%)', l2_13b, 4096, 2, 'every:2', 1914, False),
        ('torchtitan-a100-llama2-13b-sac-op', 'Llama 2 performance numbers', '13B, batch 2, AC selective op (MFU 53.8%)', l2_13b, 4096, 2, 'selective-op', 1904, False),
        ('torchtitan-a100-llama2-70b-full', 'Llama 2 performance numbers', '70B, batch 2, AC full (MFU 50.5%)', l2_70b, 4096, 2, 'full', 353, False),
        ('torchtitan-a100-llama2-70b-sac-op-b1', 'Llama 2 performance numbers', '70B, batch 1, AC selective op (MFU 50.8%)', l2_70b, 4096, 1, 'selective-op', 355, False),
        ('torchtitan-a100-llama2-70b-sac-op-b2-oom', 'Llama 2 performance numbers', "footnote: 70B, batch 2, AC selective op runs out of memory", l2_70b, 4096, 2, 'selective-op', None, True),
    ]:
        r = dict(id=rid, source=TT_SRC.format(t=t, row=row), **base_tt, **shape, seq_len=seq, micro_batch=mb, grad_accum=1, recompute=rc)
        if oom:
            r['oom'] = True
            r['notes'] = TT_NOTE + ". Published as out of memory"
        else:
            r['tokens_per_s_per_gpu'] = float(tps)
        out.append(r)
    # NeMo 24.07 (Megatron-Core), pure data parallel rows.
    nemo_url = 'https://github.com/NVIDIA/NeMo/blob/070a0bb168d405d653b9734c0017cf5078e77c0d/docs/source/performance/performance_summary.md'
    nemo_note = ("Megatron-Core via NeMo 24.07 on DGX-H100, FP8 (Transformer Engine), TP 1 PP 1 CP 1: data parallel with the distributed "
                 "optimizer (NeMo's distributed_fused_adam, inferred from the launcher configs); " + GRAD_NOTE + "recomputation not stated: none taken; "
                 "grad_accum = GBS / (MBS x DP); interconnect not stated: a DGX H100's")
    gpt3_5b = dict(model='gpt3-5b', layers=24, hidden=4096, heads=32, kv_heads=32, ffn=16384, mlp='gelu', norm='layernorm',
                   positions='learned', tied=True, bias='all', vocab=50257)
    l2_7b = llama(32, 4096, 32, 32, 11008, 32000, 'llama2-7b')
    for rid, row, shape, gpus, seq, mb, ga, tps in [
        ('nemo2407-gpt3-5b-h100-64gpu-fp8', 'GPT3-5B, 64 GPUs, GBS 2048, MBS 4 (model TFLOP/s 736)', gpt3_5b, 64, 2048, 4, 8, 22521),
        ('nemo2407-llama2-7b-h100-8gpu-fp8', 'LLAMA2-7B, 8 GPUs, GBS 128, MBS 1 (model TFLOP/s 776)', l2_7b, 8, 4096, 1, 16, 16847),
    ]:
        out.append(dict(id=rid, half='fit', source=f"NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 070a0bb), table 'Pretraining', row {row}",
                        url=nemo_url, gpu='h100-sxm', gpus=gpus, gpus_per_node=8, world_gbs=50,
                        interconnect='DGX-H100 (NVLink within the node; the fabric not stated: 400 Gb/s InfiniBand per GPU taken)',
                        engine='megatron', strategy='zero1', strategy_as_published='TP 1, PP 1, distributed optimizer', precision='fp8',
                        attention='cudnn', **shape, seq_len=seq, micro_batch=mb, grad_accum=ga, recompute='none', reduce_bytes=2,
                        tokens_per_s_per_gpu=float(tps), notes=nemo_note))
    # Megatron-Bridge: Megatron-FSDP (checking half).
    out.append(dict(id='mbridge2511-llama3-8b-h100-8gpu-fp8-mfsdp', half='check',
                    source="NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (commit 0a25f91), '25.11 NeMo Container', DGX-H100, row LLAMA3_8B (FSDP 8, GBS 128, MBS 1; 744 model TFLOP/s)",
                    url='https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/0a25f911b2ed6c6905a539504fdb8e5b40e3438b/docs/performance-summary-archive.md',
                    gpu='h100-sxm', gpus=8, gpus_per_node=8, world_gbs=50, interconnect='DGX-H100, one node',
                    engine='megatron', strategy='zero3', strategy_as_published='Megatron-FSDP (optim_grads_params), TP=PP=CP=1', precision='fp8',
                    attention='cudnn', **l3_8b, seq_len=8192, micro_batch=1, grad_accum=16, recompute='none', reduce_bytes=2,
                    tokens_per_s_per_gpu=14451.0,
                    notes="FP8 current scaling (Transformer Engine); Megatron-Core's own FSDP; " + GRAD_NOTE + "recomputation not stated: none taken; the Llama 3 8B shape"))
    # IBM / PyTorch blog (checking half).
    ibm_url = 'https://github.com/pytorch/pytorch.github.io/blob/site/_posts/2024-03-13-maximizing-training.md'
    ibm_note = ("IBM's foundation-model-stack fms-fsdp (FSDP1, SDPA FlashAttention-2, bf16, PyTorch nightlies after 2.2); batch 2 and "
                "sequence 4096 (the blog and the fms-fsdp README); reduce in bf16; the Llama 2 shapes (34B: fms-fsdp's llama2 34b); "
                "FSDP(..., limit_all_gathers=True) with backward_prefetch left at PyTorch's BACKWARD_PRE (fms-fsdp main_training.py)")
    l2_34b = llama(48, 8192, 64, 8, 22016, 32000, 'llama2-34b')
    for rid, row, gpu, gpus, world, shape, strat, rc, tps in [
        ('ibm-fsdp-llama2-7b-a100-128gpu', '7B, A100, 128 GPUs, HSDP, AC no, 3700 tokens/s/GPU (MFU 0.57)', 'a100-80gb', 128, 6.25, l2_7b, 'mics', 'none', 3700),
        ('ibm-fsdp-llama2-7b-h100-96gpu', '7B, H100, 96 GPUs, HSDP, AC no, 7500 tokens/s/GPU (MFU 0.37)', 'h100-sxm', 96, 12.5, l2_7b, 'mics', 'none', 7500),
        ('ibm-fsdp-llama2-34b-a100-128gpu', '34B, A100, 128 GPUs, FSDP, AC yes, 700 tokens/s/GPU (MFU 0.47)', 'a100-80gb', 128, 6.25, l2_34b, 'zero3', 'full', 700),
        ('ibm-fsdp-llama2-70b-a100-128gpu', '70B, A100, 128 GPUs, FSDP, AC yes, 370 tokens/s/GPU (MFU 0.50)', 'a100-80gb', 128, 6.25, l2_70b, 'zero3', 'full', 370),
        ('ibm-fsdp-llama2-70b-h100-96gpu', '70B, H100, 96 GPUs, FSDP, AC yes, 800 tokens/s/GPU (MFU 0.34)', 'h100-sxm', 96, 12.5, l2_70b, 'zero3', 'full', 800),
    ]:
        out.append(dict(id=rid, half='check', source=f"pytorch.github.io _posts/2024-03-13-maximizing-training.md, table 1, row {row}", url=ibm_url,
                        gpu=gpu, gpus=gpus, gpus_per_node=8, world_gbs=world,
                        interconnect=('400 Gbps between nodes with GPUDirect RDMA (the blog): 50 GB/s per node of 8' if gpu.startswith('a100')
                                      else '800 Gbps between nodes (the blog): 100 GB/s per node of 8'),
                        engine='fsdp', strategy=strat, strategy_as_published='HYBRID_SHARD' if strat == 'mics' else 'FULL_SHARD',
                        precision='bf16', attention='flash2', model_code='fms', **shape, seq_len=4096, micro_batch=2, grad_accum=1,
                        recompute=rc, tokens_per_s_per_gpu=float(tps), notes=ibm_note))
    # DeepSpeed (FlagPerf: fitting; ChatGLM3 and the Hugging Face blog: checking).
    fp_note = ("BAAI FlagPerf, DeepSpeed 0.11.1 ZeRO-3 (stage 3, overlap_comm, reduce and prefetch buckets 1e7), Hugging Face "
               "LlamaForCausalLM with FlashAttention-2, one node of 8, sequence 4096, micro batch 1, no recomputation (none enabled); "
               "H800 / A800: the H100 / A100 chips with NVLink capped at 400 GB/s (200 per direction)")
    for rid, src, gpu, tps, prec in [
        ('flagperf-llama2-7b-h800-8gpu-zero3', "FlagOpen/FlagPerf training/nvidia/llama2_7b-deepspeed/README.md, table '性能指标', row H800 1x8 (7151 tokens/s/GPU)", 'h100-sxm', 7151.0, 'fp16'),
        ('flagperf-llama2-7b-a800-8gpu-zero3', "FlagOpen/FlagPerf training/nvidia/llama2_7b-deepspeed-nvidia/README.md, table '性能指标', row A800 1x8 (3583 tokens/s/GPU)", 'a100-80gb', 3583.0, 'fp16'),
    ]:
        out.append(dict(id=rid, half='fit', source=src, url='https://github.com/FlagOpen/FlagPerf', gpu=gpu, gpus=8, gpus_per_node=8,
                        node_gbs=200, world_gbs=25, interconnect='one node; NVLink 400 GB/s (H800/A800)', engine='deepspeed', strategy='zero3',
                        strategy_as_published='ZeRO-3', precision='bf16', precision_as_published=prec, attention='flash2',
                        model_code='hf-transformers', **l2_7b,
                        seq_len=4096, micro_batch=1, grad_accum=1, recompute='none', tokens_per_s_per_gpu=tps, notes=fp_note))
    chatglm = dict(model='chatglm3-6b', layers=28, hidden=4096, heads=32, kv_heads=2, ffn=13696, mlp='swiglu', norm='rmsnorm',
                   positions='rope', tied=False, bias='qkv', vocab=65024)
    out.append(dict(id='flagperf-chatglm3-6b-h100-8gpu-zero3', half='check',
                    source="FlagOpen/FlagPerf training/nvidia/chatglm3_6b-deepspeed/README.md, table '性能指标', row H100 1x8 (bf16, 8429.22 tokens/s/GPU)",
                    url='https://github.com/FlagOpen/FlagPerf', gpu='h100-sxm', gpus=8, gpus_per_node=8, world_gbs=50,
                    interconnect='one DGX H100 node', engine='deepspeed', strategy='zero3', strategy_as_published='ZeRO-3', precision='bf16',
                    attention='flash2', model_code='hf-transformers', **chatglm, seq_len=4096, micro_batch=1, grad_accum=1, recompute='none', tokens_per_s_per_gpu=8429.22,
                    notes='DeepSpeed 0.11.1 ZeRO-3; the shape from THUDM/chatglm3-6b config.json (28 layers, 4096, 32 heads, 2 KV groups, ffn 13696, vocab 65024); SDPA attention (FlashAttention-2) inferred; model_code hf-transformers: THUDM/chatglm3-6b modeling_chatglm.py writes its RMSNorm as Hugging Face\'s Llama does (38 bytes per element forward against 36) and rotates half of each head (fewer bytes than the Llama code), and copies K and V to every head (multi_query_group_num 2: not priced)'))
    granite = llama(32, 4096, 32, 32, 11008, 32008, 'granite-7b')
    hf_url = 'https://github.com/huggingface/blog/blob/main/deepspeed-to-fsdp-and-back.md'
    for rid, engine, strat, tps in [('hfblog-granite7b-a100-4gpu-zero3', 'deepspeed', 'ZeRO-3', 3094.5),
                                    ('hfblog-granite7b-a100-4gpu-fsdp', 'fsdp', 'FULL_SHARD', 3158.7)]:
        out.append(dict(id=rid, half='check',
                        source=f"huggingface/blog deepspeed-to-fsdp-and-back.md, Table 3 'Ballpark throughput comparisons between FSDP and DeepSpeed on four A100 GPUs', row {'DeepSpeed' if engine == 'deepspeed' else 'FSDP (aligned mode)'}",
                        url=hf_url, gpu='a100-80gb', gpus=4, gpus_per_node=4, world_gbs=25, interconnect='one node of 4 A100 (NVLink taken)',
                        engine=engine, strategy='zero3', strategy_as_published=strat, precision='bf16', attention='flash2',
                        model_code='hf-transformers', **granite,
                        seq_len=4096, micro_batch=8, grad_accum=1, recompute='full', tokens_per_s_per_gpu=tps,
                        notes='Accelerate >= 0.30, bf16 with fp32 master (aligned mode); batch 8 per device, step 10.4-10.6 s: sequence 4096 inferred from tokens per step; recomputation not stated: full taken (batch 8 x 4096 of a 7B model on an 80 GB A100 needs it); the A100\'s memory not stated: 80 GB taken'))
    # MI250X (checking half).
    out.append(dict(id='frontier-torchtitan-llama3-8b-mi250x-64gcd', half='check',
                    source="eminorhan/frontier-torchtitan README.md, 'Head-to-head comparison between A100 vs. MI250X GPUs (8 nodes)' (later version): wps ~1333",
                    url='https://github.com/eminorhan/frontier-torchtitan', gpu='mi250x-gcd', gpus=64, gpus_per_node=8, world_gbs=12.5,
                    interconnect='Frontier: 8 GCDs per node, 4 Slingshot NICs of 25 GB/s per node (OLCF user guide)', engine='fsdp2',
                    strategy='zero3', strategy_as_published='FSDP2 1D', precision='bf16', attention='flash2', model_code='torchtitan',
                    reduce_bytes=4, **l3_8b,
                    seq_len=8192, micro_batch=1, grad_accum=1, recompute='selective-op', tokens_per_s_per_gpu=1333.0,
                    notes="torchtitan's 64 x A100 Llama 3 8B setup replicated on 64 GCDs: FSDP2, selective op AC, "
                          "no compile, local batch 1, ROCm FlashAttention-2; 'wps ~1333' approximate; an earlier version's 645 came from a slow "
                          "attention backward kernel in PyTorch-ROCm (pytorch/pytorch#135431) and is not used"))
    return out


def model_parallel():
    """The tensor-, pipeline- and context-parallel rows (checking half, added after the split): NeMo 24.07's pretraining
    table and Megatron-Bridge's DGX-H100 tables (26.02, 25.11), every row with TP, PP or CP above 1 the simulator can
    price: dense models it has a shape for. Left out: Nemotron's squared-ReLU MLP, the MoE models, Llama 3.1 405B (126
    layers over PP 8 x VP 8, which Megatron splits unevenly: an uneven split under the interleaved schedule is not modelled), Llama 2 13B's PP 4 over 2 nodes (its stages straddle the
    nodes), the fine-tuning rows (packed SFT and LoRA)."""
    gpt3 = dict(mlp='gelu', norm='layernorm', positions='learned', tied=True, bias='all', vocab=50257)
    shapes = {
        'gpt3-20b': (dict(model='gpt3-20b', layers=44, hidden=6144, heads=48, kv_heads=48, ffn=24576, **gpt3),
                     "the shape from NeMo's launcher config conf/training/gpt3/20b.yaml (44 layers, hidden 6144, 48 heads), as the 5B row's"),
        'gpt3-175b': (dict(model='gpt3-175b', layers=96, hidden=12288, heads=96, kv_heads=96, ffn=49152, **gpt3),
                      "the shape GPT-3 175B's (Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads)"),
        'llama2-70b': (llama(80, 8192, 64, 8, 28672, 32000, 'llama2-70b'), "the shape Llama 2 70B's (meta-llama/Llama-2-70b-hf config.json)"),
        'llama3-8b': (llama(32, 4096, 32, 8, 14336, 128256, 'llama3-8b'), "the shape Llama 3 8B's (meta-llama/Meta-Llama-3-8B config.json)"),
        'llama3-70b': (llama(80, 8192, 64, 8, 28672, 128256, 'llama3-70b'), "the shape Llama 3 70B's (meta-llama/Meta-Llama-3-70B config.json)"),
    }
    nemo = ('NeMo 24.07', "NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 070a0bb), table 'Pretraining', row ",
            'https://github.com/NVIDIA/NeMo/blob/070a0bb168d405d653b9734c0017cf5078e77c0d/docs/source/performance/performance_summary.md',
            "the performance recipes' tp_comm_overlap, MegatronCommOverlapCallback; NeMo 24.07's launcher configs ub_tp_comm_overlap: True")
    mbridge = ('Megatron-Bridge', "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (commit 0a25f91), ",
               'https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/0a25f911b2ed6c6905a539504fdb8e5b40e3438b/docs/performance-summary-archive.md',
               "the performance recipes' tp_comm_overlap, MegatronCommOverlapCallback")
    out = []
    for rid, (product, src, url, ub), row, shape, gpus, tp, pp, cp, vp, seq, mb, ga, tps in [
        ('nemo2407-gpt3-20b-h100-64gpu-fp8-tp2', nemo, 'GPT3-20B, 64 GPUs, GBS 256, MBS 2, TP 2 PP 1 CP 1 VP 1 (model TFLOP/s 750)',
         'gpt3-20b', 64, 2, 1, 1, 1, 2048, 2, 4, 5851),
        ('nemo2407-gpt3-175b-h100-128gpu-fp8-tp4-pp8', nemo, 'GPT3-175B, 128 GPUs, GBS 256, MBS 1, TP 4 PP 8 CP 1 VP 6 (model TFLOP/s 782)',
         'gpt3-175b', 128, 4, 8, 1, 6, 2048, 1, 64, 726),
        ('nemo2407-gpt3-175b-h100-512gpu-fp8-tp4-pp8', nemo,
         'GPT3-175B, 512 GPUs, GBS 2048, MBS 2, TP 4 PP 8 CP 1 VP 6 (model TFLOP/s 842, the MLPerf Training submission)',
         'gpt3-175b', 512, 4, 8, 1, 6, 2048, 2, 64, 782),
        ('nemo2407-llama2-70b-h100-64gpu-fp8-tp4-pp4', nemo, 'LLAMA2-70B, 64 GPUs, GBS 128, MBS 1, TP 4 PP 4 CP 1 VP 20 (model TFLOP/s 759)',
         'llama2-70b', 64, 4, 4, 1, 20, 4096, 1, 32, 1707),
        ('nemo2407-llama3-8b-h100-8gpu-fp8-cp2', nemo, 'LLAMA3-8B, 8 GPUs, GBS 128, MBS 1, TP 1 PP 1 CP 2 VP 1 (model TFLOP/s 697)',
         'llama3-8b', 8, 1, 1, 2, 1, 8192, 1, 32, 12036),
        ('nemo2407-llama3-70b-h100-64gpu-fp8-tp4-pp4-cp2', nemo, 'LLAMA3-70B, 64 GPUs, GBS 128, MBS 1, TP 4 PP 4 CP 2 VP 5 (model TFLOP/s 738)',
         'llama3-70b', 64, 4, 4, 2, 5, 8192, 1, 64, 1533),
        ('mbridge2602-llama3-70b-h100-64gpu-fp8-tp4-pp8', mbridge,
         "'26.02 NeMo Container', Model: LLAMA3_70B, row DGX-H100, 64 GPUs, FP8, GBS 256, MBS 1, FSDP 0, TP 4 PP 8 CP 1 VP 5 (model TFLOP/s 728)",
         'llama3-70b', 64, 4, 8, 1, 5, 8192, 1, 128, 1621),
        ('mbridge2511-llama3-70b-h100-64gpu-fp8-tp4-pp8', mbridge,
         "'25.11 NeMo Container', System: DGX-H100, row LLAMA3_70B, 64 GPUs, FP8-CS, GBS 128, MBS 1, FSDP 0, TP 4 PP 8 CP 1 VP 5, GA 64 "
         "(model TFLOP/s 719)",
         'llama3-70b', 64, 4, 8, 1, 5, 8192, 1, 64, 1602),
    ]:
        dims, why = shapes[shape]
        notes = [f"Megatron-Core via {product} on DGX-H100, FP8 (Transformer Engine)",
                 f"data parallel {gpus // (tp * pp * cp)} = {gpus} / (TP x PP x CP) with the distributed optimizer (inferred from the "
                 "performance recipes)", f"grad_accum = GBS / (MBS x DP) = {ga}"]
        par = {}
        if tp > 1:
            par.update(tp=tp, sp=True)
            notes += ["sequence parallelism with TP (the performance recipes' sequence_parallel, inferred)",
                      f"the TP collectives overlapped with their GEMMs ({ub}): tp_comm_overlap = true"]
        if pp > 1:
            par.update(pp=pp, pp_schedule=f'interleaved:{vp}' if vp > 1 else '1f1b')
            notes.append(f"VP {vp}: the interleaved schedule with {vp} chunks per rank")
        if cp > 1:
            par.update(cp=cp, cp_kind='ring')
            notes.append("CP with Transformer Engine's default p2p ring (cp_comm_type not stated)")
        notes += [GRAD_NOTE.rstrip('; '), 'recomputation not stated: none taken', why, "interconnect not stated: a DGX H100's"]
        out.append(dict(id=rid, half='check', source=src + row, url=url, gpu='h100-sxm', gpus=gpus, gpus_per_node=8, world_gbs=50,
                        interconnect='DGX-H100 (NVLink within the node; the fabric not stated: 400 Gb/s InfiniBand per GPU taken)',
                        engine='megatron', strategy='zero1', strategy_as_published=f'TP {tp}, PP {pp}, CP {cp}, VP {vp}, distributed optimizer',
                        precision='fp8', attention='cudnn', **par, **dims, seq_len=seq, micro_batch=mb, grad_accum=ga, recompute='none',
                        reduce_bytes=2, tp_comm_overlap=True if tp > 1 else None, tokens_per_s_per_gpu=float(tps), notes='; '.join(notes)))
    return out


def papers():
    """Runs from papers that quote their throughput as text (checking half, added after the split; no fit saw them):
    Narayanan et al. 2021 (the abstract's 1T run, configured by Megatron-LM's examples/sc21/run_table_1.sh),
    Smith et al. 2022 (MT-NLG 530B, section 2.4's three cluster sizes), the JUPITER benchmark suite's Megatron-LM
    benchmark (its 13B row) and BigScience's BLOOM 176B (tr11-176B-ml, 70 layers over 12 stages, split unevenly as its
    README says). Each row's tokens/s per GPU is the quoted
    figure turned into tokens by the source's own count (its FLOP formula, or its iteration time and batch). Left out:
    Dash et al. 2023 (arXiv:2312.12705, Frontier: configurations only in tables not available as text), the Llama 3
    paper's Table 4 (its virtual stages are not given, its schedule is Meta's own variant of the interleaved one, with
    micro-batches not a multiple of the stages, and its 16K-GPU rows use its all-gather context parallelism),
    frontier-torchtitan's 5120-GCD run and FZJ-JSC/jubench-megatron-lm's GPT-3 175B on JUWELS Booster (TP 8 across two
    levels: the simulator places a tensor group on one)."""
    out = []
    gpt = dict(mlp='gelu', norm='layernorm', positions='learned', tied=True, bias='all')
    # Narayanan et al. 2021: 502 PFLOP/s on 3072 GPUs, counted with the paper's equation 3 (section 5.1, with
    # recomputation): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs per iteration of B sequences.
    l, h, s, v, gpus = 128, 25600, 2048, 51200, 3072
    flops_per_token = 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
    tflops = 502e3 / gpus
    sc21 = ('NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (commit 79a3bb6), MODEL_SIZE 1T: TP 8, PP 64, MBS 1, GBS 3072, '
            '128 layers, hidden 25600, 160 heads, DDP local, 384 nodes, --recompute-method uniform (no virtual pipeline); '
            'examples/sc21/CONFIG.sh (as in the OpenGPTX/Megatron-LM fork, commit 6b27e3a): --seq-length 2048, --fp16')
    out.append(dict(id='megatron-sc21-gpt-1t-a100-3072gpu-tp8-pp64', half='check',
                    source="Narayanan et al. 2021, arXiv:2104.04473, abstract: 'training iterations on a model with 1 trillion parameters "
                           "at 502 petaFLOP/s on 3072 GPUs (per-GPU throughput of 52% of theoretical peak)'",
                    url='https://arxiv.org/abs/2104.04473', gpu='a100-80gb', gpus=gpus, gpus_per_node=8, world_gbs=25,
                    interconnect="Selene: DGX A100 80GB nodes of 8, 8 x 200 Gb/s HDR InfiniBand per node (the paper's evaluation setup): 25 GB/s per GPU",
                    engine='megatron', strategy='ddp', strategy_as_published='TP 8, PP 64, data parallel 6 (DDP local, no distributed optimizer)',
                    precision='bf16', precision_as_published='fp16 (--fp16)', attention='eager',
                    model='gpt-1t', layers=l, hidden=h, heads=160, kv_heads=160, ffn=4 * h, vocab=v, **gpt,
                    seq_len=s, micro_batch=1, grad_accum=3072 // 6, recompute='full', tp=8, sp=False, pp=64, pp_schedule='1f1b',
                    reduce_bytes=2, fused_loss=False, tokens_per_s_per_gpu=round(tflops * 1e12 / flops_per_token, 3),
                    notes=(f"{tflops:.2f} TFLOP/s per GPU (502 PFLOP/s / 3072) over the paper's {flops_per_token / 1e12:.4f} TFLOPs per token; "
                           "the configuration from " + sc21 + "; grad_accum = GBS / (MBS x DP 6) = 512; sequence parallelism did not "
                           "exist (2021): sp = false; attention as Megatron's fused softmax between two GEMMs (no FlashAttention in 2021): "
                           "eager; fp16 priced as bf16 (the same GEMM rate on the A100); gradients held and all-reduced in fp16 (inferred: "
                           "Megatron's local DDP keeps main_grad in the parameters' dtype unless --accumulate-allreduce-grads-in-fp32): "
                           "reduce_bytes = 2; the loss in fp32 and unfused: Megatron-LM's gpt_model.py computes "
                           "vocab_parallel_cross_entropy(output.float(), labels) unless --fp16-lm-cross-entropy, which CONFIG.sh does "
                           "not pass (the engine file's fused loss is Megatron-Core's, later): fused_loss = false; "
                           "the shape: GPT-3's (learned positions, tied embedding, biases, GELU MLP of 4h)")))
    # The JUPITER benchmark suite's Megatron-LM benchmark (JSC): its 13B evaluation model on 8 nodes of 4 A100 40GB.
    jsc = 'https://github.com/FZJ-JSC/jubench-megatron-lm/blob/d79ae122f7a4c0a842f6cb6aed4395db2a05002a/DESCRIPTION.md'
    out.append(dict(id='jubench-megatron-gpt-13b-a100-40gb-32gpu-tp2-pp4', half='check',
                    source="FZJ-JSC/jubench-megatron-lm DESCRIPTION.md (commit d79ae12), 'Results' table, row 13B, 8 nodes, batch size 1024, "
                           "pipeline parallel 4, tensor parallel 2: 60777.68 tokens/sec",
                    url=jsc, gpu='a100-40gb', gpus=32, gpus_per_node=4, node_gbs=100, world_gbs=25,
                    interconnect=("not stated by the source: JUWELS Booster (the JUBE script's default queue 'booster'), taken from JSC's "
                                  "description of its nodes: 4 A100 40GB fully connected by NVLink 3 (4 links of 25 GB/s per direction "
                                  "between each pair: 100 GB/s) and 4 HDR200 InfiniBand adapters per node (25 GB/s per GPU)"),
                    engine='megatron', strategy='zero1', strategy_as_published='TP 2, PP 4, DP 4, --use-distributed-optimizer',
                    precision='bf16', precision_as_published='fp16 (--fp16)', attention='flash2', model_code='megatron-lm-local',
                    model='gpt-13b-jsc', layers=40, hidden=5120, heads=32, kv_heads=32, ffn=20480, mlp='gelu', norm='layernorm',
                    positions='rope', tied=True, bias='all', vocab=50257,
                    seq_len=2048, micro_batch=1, grad_accum=256, recompute='none', tp=2, sp=True, pp=4, pp_schedule='1f1b',
                    reduce_bytes=2, fused_loss=False, tokens_per_s_per_gpu=round(60777.68 / 32, 3),
                    notes=("tokens/s per GPU = the table's 60777.68 tokens/sec (the JUBE result: global batch x sequence / mean "
                           "iteration time, benchmark/jube/nlp_benchmark.yaml) / 32 GPUs; the run as benchmark/slurm/jobscript_13B.sbatch "
                           "and the JUBE script give it: Megatron-LM at commit f772743, 40 layers, hidden 5120, 32 heads, ffn 20480, "
                           "sequence 2048, rope, GPT-2 BPE (vocab 50257), --use-flash-attn (FlashAttention-2 on the A100), "
                           "--sequence-parallel, --recompute-granularity selective (which Megatron-LM's local layers apply to the "
                           "attention core only without FlashAttention: megatron/model/transformer.py runs core_attention_flash "
                           "unchecked, so nothing is recomputed and the blocks keep FlashAttention's set, as selective would: "
                           "recompute = none), --use-distributed-optimizer, TP 2, PP 4 (1F1B, "
                           "no virtual stages), micro-batch 1, 256 accumulation steps; fp16 priced as bf16 (the same GEMM rate); "
                           "gradients held and reduced in fp16 (inferred: Megatron-LM keeps the grad buffer in the parameters' dtype "
                           "without --accumulate-allreduce-grads-in-fp32): reduce_bytes = 2; Megatron-LM's own layers, not Transformer "
                           "Engine's (src/compile_build.sh installs FlashAttention-2 and Apex, no Transformer Engine: --transformer-impl "
                           "local), so the rotary embedding as megatron/model/rotary_pos_embedding.py writes it: model_code = "
                           "megatron-lm-local; the loss in fp32 and unfused (gpt_model.py: vocab_parallel_cross_entropy(output.float(), "
                           "labels) without --fp16-lm-cross-entropy, which the scripts do not pass): fused_loss = false; biases and "
                           "tied embeddings Megatron-LM's defaults; the machine inferred (see interconnect); the JUBE figure is the mean over every logged "
                           "interval, the first (warm-up) one included: in the 175B example log of the same file the first "
                           "interval is 34% slower than the mean of the next four")))
    # BigScience's BLOOM 176B: the README's first-epoch iteration, 2048 sequences of 2048 tokens in 104.70 s on 48 nodes of 8.
    bloom = 'https://github.com/bigscience-workshop/bigscience/blob/00327f8c3533c39b3cc17013f0d0d2b770eb2bb9/train/tr11-176B-ml/'
    out.append(dict(id='bloom-176b-a100-384gpu-tp4-pp12', half='check',
                    source="bigscience-workshop/bigscience train/tr11-176B-ml/README.md (commit 00327f8), 'Important checkpoints': "
                           "'iteration 85376/ 115311 | ... | elapsed time per iteration (s): 104.70 | ... | global batch size: 2048 | ... "
                           "samples per second: 19.561 | TFLOPs: 149.77'",
                    url=bloom + 'README.md', gpu='a100-80gb', gpus=384, gpus_per_node=8, world_gbs=6.25,
                    interconnect=("Jean Zay's A100 80GB nodes (the README's Hardware: 8 GPUs per node with NVLink, 4 Omni-Path links "
                                  "per node): 4 x 100 Gb/s (Omni-Path's link rate) per node of 8, 6.25 GB/s per GPU"),
                    engine='deepspeed', strategy='zero1',
                    strategy_as_published='TP 4, PP 12, DP 8; DeepSpeed ZeRO stage 0 with its BF16_Optimizer (its own ZeRO stage 1)',
                    precision='bf16', attention='eager', model='bloom-176b', layers=70, hidden=14336, heads=112, kv_heads=112,
                    ffn=4 * 14336, vocab=250880, **gpt, seq_len=2048, micro_batch=2, grad_accum=2048 // (2 * 8), recompute='full',
                    tp=4, sp=False, pp=12, pp_schedule='1f1b', pp_split='embedding', reduce_bytes=4,
                    tokens_per_s_per_gpu=round(2048 * 2048 / (104.70 * 384), 3),
                    notes=("tokens/s per GPU = 2048 x 2048 / (104.70 s x 384 GPUs); the run as the README and tr11-176B-ml.slurm "
                           "(same commit) give it: Megatron-DeepSpeed, 70 layers, hidden 14336, 112 heads, sequence 2048, vocabulary "
                           "padded to 250880, tied embedding, TP 4, PP 12, DP 8, micro-batch 2, global batch 2048 (grad_accum = 2048 / "
                           "(2 x 8) = 128), --bf16, --checkpoint-activations (full recomputation), --pp-partition-method "
                           "'type:transformer|embedding', which the README spells out: '[embed | 5 transformer blocks]', 6 blocks on "
                           "each of pp ranks 1-10, '[5 transformer blocks | embed]' (pp_split = embedding: (70 + 2) / 12 - 1 = 5 on the "
                           "end stages); ZeRO stage 0 with the BF16_Optimizer, which the README says implements its own ZeRO stage 1 "
                           "and accumulates the gradients in fp32: zero1 with reduce_bytes = 4 (inferred: the fp32 gradients are the "
                           "ones reduced); inferred, not stated: ALiBi priced as learned positions (the simulator has no ALiBi: "
                           "one lookup of a 2048 x 14336 table more), the embedding layernorm not priced, attention as Megatron's "
                           "fused softmax between two GEMMs (2022, no FlashAttention): eager, the NVLink within the node a DGX "
                           "A100's, Omni-Path's 100 Gb/s per link; the slurm script sets CUDA_LAUNCH_BLOCKING=1, which the README "
                           "says has 'a tiny impact or no impact at all' on throughput")))
    # Smith et al. 2022 (MT-NLG 530B): GBS 1920 of 2048 tokens per iteration of 60.1, 50.2 and 44.4 s on 280, 350 and 420
    # DGX A100 nodes (126, 121 and 113 TFLOP/s per GPU).
    mtnlg_note = ("Megatron-DeepSpeed: Megatron's tensor slicing (8-way, within the node) and DeepSpeed's pipeline (35 stages "
                  "of 3 layers) and data parallelism; data parallel = GPUs / 280; tokens/s per GPU = 1920 x 2048 / (iteration "
                  "time x GPUs), the quoted iteration time; bf16 (the paper's mixed precision); the shape 105 layers, hidden 20480, "
                  "128 heads, GPT-2's tokenizer (vocab 50257), learned positions; inferred, not stated: "
                  "ZeRO stage 1 beside the pipeline (DeepSpeed's pipeline engine takes stage 0 or 1), micro-batch 1 (grad_accum = "
                  "1920 / DP), full recomputation (Megatron-DeepSpeed's --checkpoint-activations), attention as two GEMMs and a "
                  "fused softmax (2021, no FlashAttention): eager; Selene's DGX A100 80GB nodes with 8 x 200 Gb/s HDR InfiniBand "
                  "(the paper's hardware section, as summarised in jasperzhong/read-papers-and-code#261, and Microsoft's announcement; cli99/llm-analysis's README says 40 GB): 25 GB/s per GPU; (t, p, d) = (8, 35, GPUs / 280) as for the paper's training run (8, 35, 16, the same summary). DeepSpeed's engine file prices PyTorch's eager elementwise kernels, "
                  "where Megatron-DeepSpeed runs Megatron's fused ones")
    for nodes, iteration, tflops in [(280, 60.1, 126), (350, 50.2, 121), (420, 44.4, 113)]:
        gpus = nodes * 8
        dp = gpus // 280
        out.append(dict(id=f'mtnlg-530b-a100-{gpus}gpu-tp8-pp35', half='check',
                        source=f"Smith et al. 2022, arXiv:2201.11990, section 2.4: global batch 1920 on {nodes} DGX A100 nodes, "
                               f"{iteration} s per iteration, {tflops} TFLOP/s per GPU (as quoted by cli99/llm-analysis "
                               "examples/megatron-turing-nlg/README.md)",
                        url='https://arxiv.org/abs/2201.11990', gpu='a100-80gb', gpus=gpus, gpus_per_node=8, world_gbs=25,
                        interconnect='Selene: DGX A100 nodes of 8, 8 x 200 Gb/s HDR InfiniBand per node: 25 GB/s per GPU',
                        engine='deepspeed', strategy='zero1', strategy_as_published=f'TP 8, PP 35, DP {dp}', precision='bf16',
                        attention='eager', model='mt-nlg-530b', layers=105, hidden=20480, heads=128, kv_heads=128, ffn=4 * 20480,
                        vocab=50257, **gpt, seq_len=2048, micro_batch=1, grad_accum=1920 // dp, recompute='full', tp=8, sp=False,
                        pp=35, pp_schedule='1f1b', tokens_per_s_per_gpu=round(1920 * 2048 / (iteration * gpus), 3), notes=mtnlg_note))
    return out


def ratios():
    """Sources that publish only ratios: each row's speedup in throughput per GPU over the configuration its `over` names."""
    out = []
    zpp_url = 'https://github.com/deepspeedai/DeepSpeed/blob/master/blogs/zeropp/README.md'
    zpp_note = ("DeepSpeed ZeRO++ (qwZ, hpZ, qgZ) against ZeRO-3 on 24 DGX-2 nodes (384 V100 32GB, 16 per node, NVSwitch), "
                "100 Gb/s InfiniBand, 1 or 4 links per node (Wang et al. 2023, arXiv:2306.10209, section 6); fp16; the 18B GPT of the "
                "paper's throughput figure (gpt-18b: 40 layers of 6144); 1K or 2K tokens per GPU as micro-batch 1 or 2 of 1024; "
                "recomputation on (Megatron-DeepSpeed's default); eager attention (2023, V100: no FlashAttention); where the blog gives a "
                "range the middle is used; world link: the node's links at NCCL's achieved 12.2 GB/s per 100 Gb/s (NVIDIA/nccl-tests#29) "
                "over its 16 GPUs")
    for links, tokens, speedup, published in [(1, 1, 2.2, '2.2x (1K tokens per GPU, 100 Gbps)'), (1, 2, 2.0, '2x (2K tokens, 100 Gbps)'),
                                              (4, 1, 1.32, '28-36% (1K tokens, 400 Gbps)'), (4, 2, 1.265, '24-29% (2K tokens, 400 Gbps)')]:
        out.append(dict(id=f'zeropp-v100-384gpu-ib{links}-gpt18b-{tokens}k', half='fit',
                        source=f"DeepSpeed blog blogs/zeropp/README.md, 'ZeRO++ accelerates LLM training': ZeRO++ over ZeRO-3 {published}",
                        url=zpp_url, gpu='v100-sxm', gpus=384, gpus_per_node=16, node_gbs=150, world_gbs=round(links * 12.2 / 16, 4),
                        interconnect=f'{links} x 100 Gb/s InfiniBand per DGX-2 node of 16 V100', engine='deepspeed', strategy='zeropp',
                        strategy_as_published='ZeRO++ (qwZ, hpZ within the node, qgZ)', precision='bf16', precision_as_published='fp16',
                        attention='eager', model='gpt-18b', seq_len=1024, micro_batch=tokens, grad_accum=1, recompute='full',
                        speedup=speedup, over={'strategy': 'zero3'}, notes=zpp_note, preset='gpt-18b'))
    seed_url = 'https://arxiv.org/abs/2501.04266'
    seed_note = ("Xu et al. 2025, arXiv:2501.04266 (the abstract: a 20B GPT on up to 384 Frontier GCDs under DeepSpeed; only ratios "
                 "are published, not the batch or the sequence): gpt-20b (GPT-NeoX-20B's shape); 8 GCDs per node, 4 Slingshot NICs of "
                 "25 GB/s per node (OLCF user guide); micro-batch 1 of 2048 tokens per GCD (the model's context) and recomputation taken, "
                 "not published")
    seed = dict(half='check', url=seed_url, gpu='mi250x-gcd', gpus=384, gpus_per_node=8, world_gbs=12.5,
                interconnect='Frontier: MI250X packages of 2 GCDs, 4 per node, 4 x 25 GB/s Slingshot NICs per node', engine='deepspeed',
                precision='bf16', attention='flash2', model='gpt-20b', preset='gpt-20b', seq_len=2048, micro_batch=1, grad_accum=1,
                recompute='full', notes=seed_note)
    out.append(dict(id='seed-frontier-gpt20b-384gcd-zeropp-over-zero3', source="Xu et al. 2025, arXiv:2501.04266, abstract: ZeRO++ +40.5% over ZeRO-3",
                    strategy='zeropp', strategy_as_published='ZeRO++', speedup=1.405, over={'strategy': 'zero3'}, **seed))
    out.append(dict(id='seed-frontier-gpt20b-384gcd-hier3-over-zeropp', source="Xu et al. 2025, arXiv:2501.04266, abstract: 1.71x the TFLOPS per GPU of ZeRO++",
                    strategy='hier3', strategy_as_published='three-level partitioning (GCD, GPU, node)', speedup=1.71,
                    over={'strategy': 'zeropp'}, **seed))
    out.append(dict(id='seed-frontier-gpt20b-hier3-384-over-8gcd', source="Xu et al. 2025, arXiv:2501.04266, abstract: scaling efficiency 0.94 (to 384 GCDs)",
                    strategy='hier3', strategy_as_published='three-level partitioning (GCD, GPU, node)', speedup=0.94,
                    over={'gpus': 8}, **seed))
    return out


HEADER = '''# Published training runs: the corpus `tierzero validate` checks the simulator against (docs/simulator.md, "Validation").
# One [[run]] per published measurement: the model's shape, the cluster, the engine and its plan, the batch, and the
# figure, with the exact source (file and table, or paper and table) and every inference said in `notes`.
#
# Halves: split once, by source (and by table within llm-foundry's README), before any prediction was made:
#   fit    llm-foundry 'A100 80GB' and 'H100 80GB BF16'; torchtitan docs/performance.md (A100); NeMo 24.07's data-parallel rows; FlagPerf Llama 2;
#          the ZeRO++ blog's speedups (V100: DeepSpeed's overlap was inferred from them before this corpus existed)
#   check  llm-foundry 'A100 40GB', 'H100 80GB BF16 (Large Scale)', 'H100 80GB FP8'; the PyTorch/IBM FSDP blog;
#          Megatron-Bridge; FlagPerf ChatGLM3; the Hugging Face DeepSpeed/FSDP blog; frontier-torchtitan (MI250X); the Frontier
#          paper's speedups (MI250X); NeMo 24.07's and Megatron-Bridge's tensor-, pipeline- and context-parallel rows, and
#          the tensor- and pipeline-parallel runs of two papers, a benchmark suite and a training log (Narayanan et al. 2021's
#          1T GPT, MT-NLG 530B's three cluster sizes, the JUPITER benchmark's 13B GPT, BLOOM 176B), each quoted figure turned into tokens/s per GPU by
#          the source's own count (added later, to the checking half: no fit saw them)
# The constants fitted (docs/simulator.md lists them) were fitted on the fitting half only (bench/fit_simulator.py).
#
# Keys: gpu (a device preset, data/devices), gpus, gpus_per_node, node_gbs and world_gbs (link per GPU per direction, from
# the source's interconnect; node_gbs defaults to the device's DGX NVLink), engine (data/engines), strategy (a plan preset:
# FSDP's FULL_SHARD zero3, SHARD_GRAD_OP zero2, HYBRID_SHARD mics; ZeRO-n zeron; Megatron's distributed optimizer zero1),
# precision (bf16 or fp8 GEMMs), attention (a device rate), model_code (the code of the layers where it writes its norms
# and rotary embedding as PyTorch expressions: data/model-code; else the engine's kernels), reduce_bytes, fused_loss,
# backward_prefetch and tp_comm_overlap (the run's mixed precision, loss, FSDP1 backward prefetch and Transformer Engine's
# userbuffer overlap, over the engine's defaults), model (a model table, docs/models.md's keys), seq_len, micro_batch,
# grad_accum, recompute (none, full, selective, selective-op, every:N),
# tp, sp, pp, pp_schedule, pp_split, cp and cp_kind (the tensor-parallel degree with sequence parallelism, the pipeline
# stages, schedule and split of the layers, the context-parallel degree and kind, as simulate's --tp, --sp, --pp,
# --pp-schedule, --pp-split, --cp and --cp-kind take them; default none), network_stated (false where the source does not state its network: the links taken are an assumption, and validate prices
# a multi-node row at the network's bandwidth x 0.75 to x 1.25 besides), tokens_per_s_per_gpu (as published),
# oom (a configuration the source says ran out of memory), or, where a source publishes only ratios (the ZeRO++ blog, the
# Frontier paper), speedup: the ratio of this run's throughput per GPU over that of the run with the keys of `over` changed.
'''


def main():
    runs = llmfoundry() + others() + model_parallel() + papers() + ratios()
    ids = [r['id'] for r in runs]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    with open(OUT, 'w') as f:
        f.write(HEADER)
        f.write("#\n# llm-foundry's rows are every row of its five tables but those two checks of the tables against themselves\n"
                "# leave out (made before any prediction; make_corpus's rule, docs/simulator.md):\n")
        for e in EXCLUDED:
            f.write("#   " + e + "\n")
        for r in runs:
            emit(f, r)
    print('wrote', OUT, len(runs), 'runs')


main()
