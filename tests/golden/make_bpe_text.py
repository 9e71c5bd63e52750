#!/usr/bin/env python3
"""Writes the GPT-2 tokenizer's golden input: ~250 KB of varied text, made
deterministically (seeded) from the built-in corpus and synthetic material
that exercises every branch of GPT-2's pre-tokenisation pattern: letters of
many scripts, combining marks, emoji, digits of several kinds, contractions
(and near-misses: curly quotes, upper case), runs of every Unicode
White_Space character, punctuation runs, code, URLs and long repetitions.
U+0085 and U+FEFF are left out: JavaScript's \\s (the reference encoder's)
and Unicode's White_Space (tiktoken's and tierzero's) differ on exactly
these two. Usage: make_bpe_text.py KJV.txt OUT.txt"""
import random
import sys

kjv_path, out_path = sys.argv[1], sys.argv[2]
rng = random.Random(20240520)
kjv = open(kjv_path, encoding="utf-8").read()

words = {
    "latin": ["the", "The", "THE", "naïve", "café", "Übermaß", "straße", "ﬁne", "Ångström", "façade", "œuvre", "İstanbul"],
    "greek": ["Ἐν", "ἀρχῇ", "ἦν", "ὁ", "λόγος", "καὶ", "Ωμέγα"],
    "cyrillic": ["В", "начале", "было", "Слово", "ёжик", "Україна", "їжак"],
    "cjk": ["太初有道", "道与神同在", "東京", "日本語のテキスト", "한국어", "안녕하세요", "中文分词"],
    "arabic_hebrew": ["في", "البدء", "كان", "الكلمة", "בְּרֵאשִׁית", "בָּרָא", "שָׁלוֹם"],
    "indic": ["आदि", "में", "वचन", "था", "தமிழ்", "বাংলা", "ไทย", "ພາສາລາວ"],
    "marks": ["e\u0301", "a\u0308\u0304", "n\u0303o", "Z\u0351\u0337a\u0352l\u0310g\u0313o"],
    "emoji": ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "❤️", "🤖🤖🤖", "☃"],
    "numbers": ["0", "7", "42", "1999", "2024", "3.14159", "1,000,000", "-17", "1e-9", "0x1F", "٣٤٥", "१२३", "²³", "½", "Ⅻ", "①②", "１２３"],
    "contractions": ["I'm", "you're", "we've", "they'll", "she'd", "it's", "don't", "IT'S", "DON'T", "O'Brien", "'tis", "rock'n'roll", "it’s", "'s'", "''", "'"],
    "punct": ["!!!", "?!", "...", "—", "–", "«»", "„“", "()", "[]{}", "<|endoftext|>", "@#$%^&*", "::", "->", "=>", "¿¡", "。、", "§¶", "~`"],
    "code": ["def f(x):\n    return x**2", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", "SELECT * FROM t WHERE id=7;", "$ ls -la | grep '.txt'", "{\"key\": [1, 2, {\"k\": null}]}"],
    "urls": ["https://example.org/a/b?c=d&e=f#g", "user@example.com", "C:\\Windows\\System32", "/usr/local/bin/"],
}
spaces = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\x0b", "\x0c", "\xa0", "\u1680", "\u2000", "\u2005", "\u200a",
          "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", " \n ", "\t\t", "    \n    "]

def synthetic(n_items):
    kinds = list(words)
    out = []
    for _ in range(n_items):
        out.append(rng.choice(words[rng.choice(kinds)]))
        out.append(rng.choice(spaces) if rng.random() < 0.35 else " ")
    return "".join(out)

parts = []
# Plain English prose, as most training text is.
start = rng.randrange(0, len(kjv) - 200_000)
parts.append(kjv[start:start + 120_000])
# Mixed material, in paragraphs.
for _ in range(120):
    parts.append(synthetic(rng.randrange(20, 200)))
# Long runs: whitespace of each kind, digits, one letter, punctuation.
for s in spaces:
    parts.append("x" + s * rng.randrange(1, 40) + "y")
parts += ["9" * 500, "a" * 1000, "!" * 300, " " * 2000 + "end", "\n" * 100, "ab" * 400, "😀" * 50]
# Prose again, with its words' case and spacing disturbed.
start = rng.randrange(0, len(kjv) - 50_000)
for w in kjv[start:start + 40_000].split(" "):
    r = rng.random()
    parts.append((w.upper() if r < 0.1 else w.title() if r < 0.2 else w) + rng.choice([" ", " ", " ", "  ", "\t", " \n"]))

text = "\n".join(parts)
assert "\x85" not in text and "\ufeff" not in text
open(out_path, "w", encoding="utf-8", newline="").write(text)
print(f"{out_path}: {len(text.encode('utf-8'))} bytes")
