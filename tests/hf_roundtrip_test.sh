#!/usr/bin/env bash
# A byte-fallback (Llama 2 / Mistral style) tokenizer through the CLI, end
# to end: data prepare puts <s> before each document and </s> between them;
# a Llama model trains on it and is saved; ckpt export --format hf ships the
# tokenizer (tokenizer.json as it was, a tokenizer_config.json, the token ids
# in config.json and generation_config.json); sample reads the exported
# directory with its tokenizer and draws what it draws from the checkpoint.
# The tokenizer is a small one written here (the same as
# tests/tokenizer_test.cc's hand-worked one), so nothing is fetched.
# Usage: hf_roundtrip_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/script_lib.sh"
mkdir -p "$tmp/tok"
python3 "$(dirname "${BASH_SOURCE[0]}")/byte_fallback_tokenizer.py" "$tmp/tok/tokenizer.json"
ids() {  # ids FILE: the token file's ids, space-separated, after checking its header (vocabulary 269, uint16)
  python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"TZTOKENS", b[:8]
version, width, count, vocab = struct.unpack_from("<IIQI", b, 8)
assert (version, width, vocab) == (1, 2, 269), (version, width, vocab)
print(" ".join(map(str, struct.unpack_from("<%dH" % count, b, 32))))
PY
}
# 1. Two documents: "ab c" is ▁ab ▁ c (266 259 262), "é\n" is ▁ é <0x0A> (259 263 13); each after <s> (1), </s> (2) between.
printf 'ab c' > "$tmp/a.txt"
printf '\xc3\xa9\n' > "$tmp/b.txt"
"$tz" data prepare --tokenizer-file "$tmp/tok" --input "$tmp/a.txt" --input "$tmp/b.txt" --output "$tmp/two.bin" 2>"$tmp/log" &&
  [ "$(ids "$tmp/two.bin")" = "1 266 259 262 2 1 259 263 13" ] && ok "data prepare: <s> before each document, </s> between, byte fallback" ||
  { cat "$tmp/log"; bad "data prepare ids: $(ids "$tmp/two.bin" 2>&1)"; }
# 2. A Llama model with the tokenizer's vocabulary trains on it and is saved.
for _ in $(seq 200); do printf 'ab c abc cab \xc3\xa9 ba\n'; done > "$tmp/train.txt"
"$tz" data prepare --tokenizer-file "$tmp/tok/tokenizer.json" --input "$tmp/train.txt" --output "$tmp/train.bin" 2>>"$tmp/log"
printf 'preset = "llama-tiny"\nvocab = 269\n' > "$tmp/model.toml"
"$mpirun" --oversubscribe -np 2 "$tz" train --model "$tmp/model.toml" --data "$tmp/train.bin" --seq-len 16 --micro-batch 2 --steps 4 \
  --strategy zero3 --save-dir "$tmp/save" --save-every 4 --log-every 100 >"$tmp/log" 2>&1 && ok "trained and saved" || { tail -5 "$tmp/log"; bad "train"; }
# 3. The export ships the tokenizer and names its tokens.
"$tz" ckpt export "$tmp/save" --format hf --output "$tmp/hf" --tokenizer-file "$tmp/tok" 2>"$tmp/log" &&
  cmp -s "$tmp/tok/tokenizer.json" "$tmp/hf/tokenizer.json" &&
  python3 - "$tmp/hf" <<'PY' && ok "export: tokenizer.json as it was; tokenizer_config.json, config.json and generation_config.json name <s> 1 and </s> 2" || { cat "$tmp/log"; bad "export with a tokenizer"; }
import json, os, sys
d = sys.argv[1]
config, gen, tok = (json.load(open(os.path.join(d, f))) for f in ("config.json", "generation_config.json", "tokenizer_config.json"))
assert config["architectures"] == ["LlamaForCausalLM"] and config["vocab_size"] == 269, config
assert (config["bos_token_id"], config["eos_token_id"]) == (1, 2), config
assert gen == {"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2}, gen
assert tok == {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "clean_up_tokenization_spaces": False}, tok
PY
# 4. sample reads the exported directory with its own tokenizer.json: the same text as from the checkpoint (the same fp32
#    weights and prompt ids, <s> first), and the prompt's text is printed back.
from_hf=$("$tz" sample --checkpoint "$tmp/hf" --tokenizer-file "$tmp/hf/tokenizer.json" --prompt "ab" --tokens 12 --seed 3 2>"$tmp/log")
from_ckpt=$("$tz" sample --checkpoint "$tmp/save" --tokenizer-file "$tmp/tok" --prompt "ab" --tokens 12 --seed 3 2>>"$tmp/log")
[ -n "$from_hf" ] && [ "$from_hf" = "$from_ckpt" ] && [ "${from_hf:0:2}" = "ab" ] && [ "${#from_hf}" -gt 2 ] &&
  ok "sample from the export equals sample from the checkpoint: '$from_hf'" || { cat "$tmp/log"; bad "sample: '$from_hf' vs '$from_ckpt'"; }
# 5. Bad input: exit 2 naming the problem, nothing written.
out=$("$tz" ckpt export "$tmp/save" --format hf --output "$tmp/hf2" --tokenizer-file "$tmp/none" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "no tokenizer files at '$tmp/none'" <<<"$out" && [ ! -e "$tmp/hf2" ] && ok "export with a missing tokenizer: exit 2" ||
  bad "export with a missing tokenizer (exit $rc): $out"
out=$("$tz" ckpt export "$tmp/save" --safetensors "$tmp/w.safetensors" --tokenizer-file "$tmp/tok" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "are for the Hugging Face formats" <<<"$out" && ok "--tokenizer-file with the tierzero format: exit 2" || bad "tierzero + tokenizer (exit $rc): $out"
printf 'preset = "llama-tiny"\nvocab = 260\n' > "$tmp/small.toml"
python3 -c "
import struct, sys; sys.stdout.buffer.write(b'TZTOKENS' + struct.pack('<IIQII', 1, 2, 64, 260, 0) + struct.pack('<64H', *[5] * 64))" > "$tmp/small.bin"
"$mpirun" --oversubscribe -np 1 "$tz" train --model "$tmp/small.toml" --data "$tmp/small.bin" --seq-len 16 --micro-batch 1 --steps 1 \
  --strategy ddp --save-dir "$tmp/small" --save-every 1 >"$tmp/log" 2>&1 || { tail -3 "$tmp/log"; bad "train the small model"; }
out=$("$tz" ckpt export "$tmp/small" --format hf --output "$tmp/hf3" --tokenizer-file "$tmp/tok" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "the tokenizer's vocabulary of 269 does not fit the model's 260" <<<"$out" && ok "a tokenizer larger than the model: exit 2" ||
  bad "tokenizer vocabulary check (exit $rc): $out"
[ $fail -eq 0 ] && echo "hf_roundtrip: all passed"
exit $fail
