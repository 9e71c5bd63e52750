"""Writes a small byte-fallback BPE tokenizer.json (Llama 2 / Mistral style:
<unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>, 10 merged pieces;
vocabulary 269), the one tests/tokenizer_test.cc works by hand.
Usage: byte_fallback_tokenizer.py OUT.json"""
import json, sys
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
vocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
for i, p in enumerate(["\u2581", "a", "b", "c", "\u00e9", "\u2581a", "ab", "\u2581ab", "bc", "\u2581\u2581"]):
    vocab[p] = 259 + i
json.dump({
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                       {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": None,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "model": {"type": "BPE", "byte_fallback": True, "unk_token": "<unk>", "fuse_unk": True, "vocab": vocab,
              "merges": ["\u2581 a", "b c", "a b", "\u2581a b", "\u2581 \u2581"]},
    "added_tokens": [{"id": i, "content": c, "special": True, "normalized": False} for i, c in enumerate(["<unk>", "<s>", "</s>"])],
}, open(sys.argv[1], "w"))
