"""The tokenizer test corpus: varied byte strings, deterministic (fixed seed).

strings("full") is a few hundred strings: English, code, CJK, emoji, whitespace runs,
digits, accents, special-token texts, malformed UTF-8, and random mixes of code points
from every class the pre-tokenizers distinguish. strings("small") is a subset for the
many pre-tokenizer variants.
"""
import random

FIXED = [
    "", " ", "  ", "\t", "\n", "\n\n", "\r\n", " \r\n \r\n", "\t\n\t ", "a", "A", "Hello world", " Hello world",
    "Hello World!", "Hello, world! How are you?", "The quick brown fox jumps over the lazy dog.",
    "I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL",
    "don't DON'T it's IT'S we're WE'RE they've THEY'VE I'm I'M we'll WE'LL he'd HE'D",
    "can ' t stop ' s here ' re 've 'll",
    "Mr. Smith , said : \" no ! \" and left ... ( really ? )",
    "3", "33", "333", "3333", "33333", "333333", "1234567890", "3.14159 2,718 1e-10 0x1F 0b1010 1_000_000",
    "٠١٢٣٤٥٦٧٨٩ ０１２３ ²³ ½ ⅓ Ⅻ", "the year 2024 and 7 days",
    "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += x[i] * y[i];\n}",
    "{\"name\": \"edgerun\", \"version\": [0, 1, 0], \"ok\": true, \"ratio\": 0.25}",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "    indented\n        twice\n\ttabbed\n",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares",
    "a  b   c    d     e", "end with spaces   ", "   start with spaces", "\n\n\nthree newlines",
    "mixed \u00a0nbsp\u2009thin\u3000ideographic\u2028line\u2029para\u0085nel",
    "\u000b\u000c vertical and form feed", "\x1c\x1d\x1e\x1f separators",
    "我想在apple工作1314151天～", "你好，世界！这是一个测试。", "日本語のテキストです。カタカナとひらがな。",
    "한국어 텍스트입니다. 안녕하세요!", "Русский текст: Привет, мир!", "Ελληνικά: Γειά σου κόσμε",
    "עברית: שלום עולם", "العربية: مرحبا بالعالم ١٢٣", "हिन्दी: नमस्ते दुनिया", "ไทย: สวัสดีชาวโลก",
    "Tiếng Việt: Xin chào thế giới", "ქართული ენა", "Հայերեն", "ᠮᠣᠩᠭᠣᠯ", "ꦗꦮ", "𐌰𐌱𐌲 gothic",
    "កាន់តែពិសេសអាចខលចេញ", "Äpfel Öl Über straße", "café naïve résumé coöperate", "cafe\u0301 nai\u0308ve",
    "e\u0301\u0301\u0301 stacked marks", "ﬁ ligature ﬀ", "Ａｂｃ　ｆｕｌｌｗｉｄｔｈ", "µ Ω K Å",
    "🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅ (only emoji that has its own token)",
    "👨‍👩‍👧‍👦 family 👍🏽 thumbs 🇫🇷 flag 🏳️‍🌈", "emoji🙂inside🙃words", "🦙.cpp 🦙🦙🦙",
    "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～",
    "!!!!!!", "??? !!! ... ,,, ;;; ::: ---", "''''''```````\"\"\"\"......!!!!!!??????",
    "~tilde~ `back` $dollar$ +plus+ <lt> =eq= >gt> ^caret^ |pipe|", "@user #tag %percent &amp *star*",
    "C++ C# F# .NET node.js", "https://example.com/path?q=1&r=two#frag", "user@example.org",
    "\u2581already\u2581marked \u2581", "<0x41> <0xFF> literal byte names", "[INST] hi [/INST]",
    "<s> hello </s>", "<unk>", "<s>", "</s>", "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>\n",
    "<|im_start|>assistant\n", "<|im_end|><|im_end|>", "text<|im_end|>more", " <|im_end|> spaced <|im_start|> ",
    "<|im_start|><|im_start|><|im_end|>", "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n",
    "<fim_prefix>def f():<fim_suffix>\n<fim_middle>", "<|fim_prefix|><|fim_suffix|><|fim_middle|>",
    "<repo_name>x<file_sep>y<reponame>", "<|user|>\nhi<|end|>\n<|assistant|>\n", "<|system|> sys <|end|>  \n x",
    "<|assistant|>   after", "<end_of_turn><start_of_turn>model\n", "<|begin_of_text|>", "<|im_start", "im_end|>",
    "<<SYS>>\nsystem\n<</SYS>>", "<think>\n\n</think>\n\n",
    # malformed UTF-8
    b"\x80", b"\xbf\xbf", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xf0\x9f\x98", b"\xf0\x9f\x98 x",
    b"\xc0\x80 overlong nul", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80 surrogate", b"\xed\xbf\xbf",
    b"\xfe\xff bom-ish", b"\xf8\x88\x80\x80\x80", b"\xf5 x", b"\xff", b"abc\xffdef", b"\xe4\xbd\xa0\xe5\xa5",
    b"caf\xe9 latin1", b"\x00nul\x00", b"\x7f del", b"a\xcc", b"\xcc\x81 lone mark",
]


# Code point pools for random strings, each a class the pre-tokenizers treat apart.
POOLS = {
    "ascii_letters": [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)],
    "digits": list("0123456789") + ["٣", "۵", "५", "௭", "๙", "０", "９", "²", "½", "Ⅳ"],
    "spaces": [" ", " ", " ", "\t", "\n", "\r", "\u00a0", "\u2009", "\u3000", "\u2028", "\u0085", "\x0b", "\x0c"],
    "punct": list("!\"#%&'()*,-./:;?@[\\]_{}") + ["…", "。", "，", "、", "«", "»", "¿", "¡", "‘", "’", "“", "”", "–", "—", "·"],
    "symbols": list("$+<=>^`|~") + ["©", "®", "°", "±", "×", "÷", "€", "£", "¥", "→", "∑", "√", "∞", "♥", "★", "☺"],
    "latin": list("àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿßœĳŁłŠšŽžĀāĒē"),
    "marks": ["\u0300", "\u0301", "\u0308", "\u0327", "\u064b", "\u093f", "\u0e31", "\u20dd", "\ufe0f"],
    "cjk": list("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可"),
    "kana": list("あいうえおかきくけこアイウエオカキクケコー"),
    "hangul": list("가나다라마바사아자차카타파하한글"),
    "cyrillic": list("абвгдежзийклмнопрстуфхцчшщъыьэюяАБВГД"),
    "greek": list("αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔ"),
    "arabic": list("ابتثجحخدذرزسشصضطظعغفقكلمنهوي"),
    "indic": list("कखगघङचछजझञटठडढणतथदधन"),
    "emoji": ["😀", "😂", "🥲", "🦙", "🚀", "👍", "👍🏽", "🇯🇵", "❤️", "✅", "🧑‍💻", "🏳️‍🌈", "\u200d"],
    "other": ["\u200b", "\u200c", "\u2060", "\ufeff", "\ue000", "\U000f0000", "\u0378", "\U0001fffe", "\x01", "\x1b"],
    "apostrophe": ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'x"],
}


def random_strings(count, seed):
    rng = random.Random(seed)
    names = sorted(POOLS)
    out = []
    for _ in range(count):
        length = rng.choice([1, 2, 3, 5, 8, 13, 21, 40])
        # Most strings mix a few classes, so their boundaries get exercised.
        chosen = rng.sample(names, rng.choice([1, 2, 3, 4]))
        s = "".join(rng.choice(POOLS[rng.choice(chosen)]) for _ in range(length))
        out.append(s)
    return out


def strings(which="full"):
    fixed = [s if isinstance(s, bytes) else s.encode("utf-8") for s in FIXED]
    extra = [s.encode("utf-8") for s in random_strings(200 if which == "full" else 40, seed=20240611)]
    if which == "small":
        fixed = fixed[::3]
    # Long inputs: a whitespace run, a digit run, a paragraph.
    longs = [(" " * 300).encode(), ("9" * 250).encode(),
             ("Edge devices share DRAM between CPU and GPU; decode is bandwidth-bound. " * 12).encode()]
    return fixed + extra + (longs if which == "full" else [])
