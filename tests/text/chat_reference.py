#!/usr/bin/env python3
"""Renders the published chat templates with jinja2, as transformers does, for the chat
template test: edgerun must produce the same text without running Jinja.

    chat_reference.py --out FILE [--model GGUF]

Templates: tests/text/chat_templates/*.jinja, plus the one in the model file (SmolLM2's).
They are the models' published templates (tokenizer_config.json's chat_template); the
Mistral ones as llama.cpp's test-chat-template.cpp quotes them, Mistral Nemo's, Llama
3.1's and the DeepSeek-R1 distillations' as llama.cpp's models/templates carries them (its copy of the
Qwen-32B one closes the think block unless enable_thinking is set).
Each case: a template, BOS/EOS texts, options, messages, and the rendered text (or
"error" when the template raises). Strings are hex-encoded.
"""
import argparse
import datetime
import json
import os

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))

# template file -> (family edgerun must detect, BOS text, EOS text)
TEMPLATES = {
    "qwen2-instruct": ("chatml", "", "<|im_end|>"),
    "qwen2.5-instruct": ("chatml", "", "<|im_end|>"),
    "qwen3": ("qwen3", "", "<|im_end|>"),
    "llama-3-instruct": ("llama3", "<|begin_of_text|>", "<|eot_id|>"),
    "llama-3.1-instruct": ("llama3", "<|begin_of_text|>", "<|eot_id|>"),
    "llama-3.2-instruct": ("llama3", "<|begin_of_text|>", "<|eot_id|>"),
    "llama-2-chat": ("llama2", "<s>", "</s>"),
    "phi-3.5-mini-instruct": ("phi3", "<s>", "<|endoftext|>"),
    "gemma-2-it": ("gemma", "<bos>", "<eos>"),
    "gemma-3-it": ("gemma", "<bos>", "<eos>"),
    "mistral-instruct-pre-v1": ("mistral-v1", "<s>", "</s>"),
    "mistral-7b-instruct-v0.2": ("mistral-v1", "<s>", "</s>"),
    "mistral-7b-instruct-v0.3": ("mistral-v3", "<s>", "</s>"),
    "mistral-nemo-instruct-2407": ("mistral-v3-tekken", "<s>", "</s>"),
    "tinyllama-1.1b-chat-v1.0": ("zephyr", "<s>", "</s>"),
    "deepseek-r1-distill-llama-8b": ("deepseek-r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek-r1-distill-qwen-32b": ("deepseek-r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
}

S, U, A = "system", "user", "assistant"
CONVERSATIONS = [
    [(U, "Hello!")],
    [(S, "You are terse."), (U, "What is 2+2?")],
    [(U, "Hi"), (A, "Hello! How can I help?"), (U, "Tell me a joke.")],
    [(S, "Be kind."), (U, "Hi"), (A, "Hi there."), (U, "Bye")],
    [(U, "  padded message \n\n"), (A, "\n answer with spaces  "), (U, "\tnext\t")],
    [(S, "  spaced system  "), (U, "x")],
    [(S, ""), (U, "empty system")],
    [(U, "multi\nline\n\ntext"), (A, "ok")],
    [(U, "Unicode: 你好, ñandú, 🦙, ∑"), (A, "Ünïcödé ☃")],
    [(U, "Why?"), (A, "<think>\nThe user asks why.\n</think>\n\nBecause."), (U, "And then?")],
    [(U, "Why?"), (A, "<think>\nReasoning here.\n</think>\n\nBecause.")],
    [(U, "q1"), (A, "a1"), (U, "q2"), (A, "\n\na2 with leading newlines")],
    [(U, "user"), (U, "user again")],
    [(A, "assistant first"), (U, "then user")],
    [(U, "first"), (S, "system in the middle"), (U, "last")],
    [(S, "sys only")],
]


# Tools and calls, for the templates that take them (Qwen2.5's and Qwen3's, with <tool_call>
# turns; Llama 3.1's and 3.2's, which put tools in the first user message). Messages as the OpenAI API has them, arguments as dicts (as vLLM and
# transformers hand them to templates).
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city — “quoted”, tabs\tand ünïcode",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "the city's name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
        "required": ["city"]}}}
CLOCK = {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
TOOLS = [WEATHER, CLOCK]


def call(name, **arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def m(role, content, **extra):
    return dict(role=role, content=content, **extra)


TOOL_CONVERSATIONS = [
    [m(S, "You are helpful."), m(U, "Weather in Paris?")],
    [m(U, "Weather in Paris?")],
    [m(U, "Weather in Paris?"), m(A, "", tool_calls=[call("get_weather", city="Paris")]),
     m("tool", '{"temp": 21, "sky": "clear"}')],
    [m(S, "Be brief."), m(U, "Weather in Paris and Köln, and the time?"),
     m(A, "Let me check.", tool_calls=[call("get_weather", city="Paris", unit="celsius"),
                                       call("get_weather", city="Köln", days=2), call("now")]),
     m("tool", "21 C"), m("tool", "17 C"), m("tool", "12:00"), m(A, "Paris 21 C, Köln 17 C, noon."),
     m(U, "Thanks!")],
    [m(U, "Time?"), m(A, "", reasoning_content="\nThe user wants the time.\n", tool_calls=[call("now")]),
     m("tool", "12:00")],
    [m(U, "Time?"), m(A, "<think>\nI will call now.\n</think>\n\n", tool_calls=[call("now")]), m("tool", "12:00")],
]


def render(template, bos, eos, messages, add_generation_prompt, thinking, date, tools=None):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    variables = dict(messages=[{"role": x[0], "content": x[1]} if isinstance(x, tuple) else x for x in messages],
                     bos_token=bos, eos_token=eos, add_generation_prompt=add_generation_prompt,
                     raise_exception=raise_exception, strftime_now=strftime_now)
    if tools is not None:
        variables["tools"] = tools
    if thinking is not None:
        variables["enable_thinking"] = thinking
    if date is not None:
        variables["date_string"] = date
    try:
        return template.render(**variables)
    except jinja2.exceptions.TemplateError:
        return None


def hexs(s):
    b = s.encode("utf-8")
    return b.hex() if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", help="a GGUF whose tokenizer.chat_template is tested too")
    args = ap.parse_args()

    templates = []
    for name, (family, bos, eos) in TEMPLATES.items():
        with open(os.path.join(HERE, "chat_templates", name + ".jinja"), encoding="utf-8") as f:
            templates.append((name, f.read(), family, bos, eos))
    if args.model:
        import llama_reference
        lc, model, _ = llama_reference.load_vocab(args.model)
        source = lc.llama_model_chat_template(model, None).decode("utf-8")
        lc.llama_model_free(model)
        templates.append((os.path.basename(args.model), source, "chatml", "<|im_start|>", "<|im_end|>"))

    # transformers' environment: trim_blocks and lstrip_blocks change the output whitespace,
    # and its tojson, which does not escape HTML as Jinja's own does.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def tojson(x):
        return env.filters["tojson"](x)
    n = 0
    with open(args.out, "w") as f:
        f.write("edgerun-chat-cases 1\n")
        for name, source, family, bos, eos in templates:
            compiled = env.from_string(source)
            runs = [(messages, None) for messages in CONVERSATIONS]
            if "<tool_call>" in source or "tools_in_user_message" in source:
                runs += [(messages, tools) for messages in TOOL_CONVERSATIONS for tools in (TOOLS, None)]
            for messages, tools in runs:
                for add_generation_prompt in (True, False):
                    for thinking in ((None, False, True) if family in ("qwen3", "deepseek-r1") else (None,)):
                        for date in ((None, "02 Jan 2025") if name.startswith("llama-3.2") else (None,)):
                            out = render(compiled, bos, eos, messages, add_generation_prompt, thinking, date, tools)
                            f.write("case %s %s %s %s %d %d %s\n" % (
                                name, family, hexs(source), " ".join([hexs(bos), hexs(eos)]),
                                int(add_generation_prompt), -1 if thinking is None else int(thinking),
                                "-" if date is None else hexs(date)))
                            for tool in tools or []:
                                f.write("tool %s\n" % hexs(tojson(tool)))
                            for x in messages:
                                x = {"role": x[0], "content": x[1]} if isinstance(x, tuple) else x
                                f.write("msg %s %s\n" % (hexs(x["role"]), hexs(x["content"])))
                                if "reasoning_content" in x:
                                    f.write("reasoning %s\n" % hexs(x["reasoning_content"]))
                                for c in x.get("tool_calls", []):
                                    f.write("call %s %s\n" % (hexs(c["function"]["name"]),
                                                               hexs(tojson(c["function"]["arguments"]))))
                            f.write("want %s\n" % ("error" if out is None else hexs(out)))
                            n += 1
        f.write("end\n")
    print(f"chat_reference: {n} cases from {len(templates)} templates -> {args.out}")


if __name__ == "__main__":
    main()
