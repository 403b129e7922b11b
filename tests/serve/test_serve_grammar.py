"""Constrained decoding in edgerun serve, through the official `openai` client on the real
SmolLM2: response_format (json_object, json_schema), llama.cpp's `grammar` and
`json_schema` fields, forced tool calls (tool_choice "required" or a named function), calls
held to their format once opened (tool_choice auto: a Qwen <tool_call> outside the
reasoning, a Llama reply that opens as a call object) and logit_bias; every answer is checked
against the schema by hand-written checks, not by the grammar.

    test_serve_grammar.py EDGERUN MODEL PLUGIN_DIR

PLUGIN_DIR holds the scripted sampler (tests/fixtures/c_greedy_sampler.c with SCRIPT_ENV),
which opens a tool call for the lazy grammar's case.

MODEL may be @fetch:REPO_ROOT (the project's real model, tests/fetched_model.py)."""
import json
import os
import re
import sys

import openai

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from fetched_model import model_path  # noqa: E402
from serve_server import Server  # noqa: E402
from test_serve import WEATHER, check, client, expect_error, raw, script  # noqa: E402

CITY = {"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 20},
                       "population": {"type": "integer", "minimum": 0},
                       "rivers": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 2},
                       "capital": {"type": "boolean"}},
        "required": ["city", "population", "capital"], "additionalProperties": False}


def city_errors(doc):
    """Why `doc` is not a CITY; empty when it is."""
    if not isinstance(doc, dict):
        return ["not an object"]
    errors = [f"missing {k}" for k in CITY["required"] if k not in doc]
    errors += [f"extra {k}" for k in doc if k not in CITY["properties"]]
    if not (isinstance(doc.get("city"), str) and len(doc["city"]) <= 20):
        errors.append("city")
    if not (type(doc.get("population")) is int and doc["population"] >= 0):
        errors.append("population")
    if not isinstance(doc.get("capital"), bool):
        errors.append("capital")
    rivers = doc.get("rivers", [])
    if not (isinstance(rivers, list) and len(rivers) <= 2 and all(isinstance(r, str) and len(r) <= 12 for r in rivers)):
        errors.append("rivers")
    return errors


def parsed(text):
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError) as e:
        return f"not JSON ({e}): {text!r}"


ASK = [{"role": "user", "content": "Describe Paris as JSON."}]
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}}


def response_formats(s):
    c = client(s)
    for temperature, seed in ((0, 0), (1.0, 1), (1.2, 2)):
        r = c.chat.completions.create(model=s.model_id, messages=ASK, max_tokens=150, temperature=temperature,
                                      seed=seed, response_format=SCHEMA_FORMAT)
        doc = parsed(r.choices[0].message.content)
        check(not city_errors(doc) and r.choices[0].finish_reason == "stop",
              f"json_schema at temperature {temperature}: {city_errors(doc)} {doc} {r.choices[0].finish_reason}")
    streamed, finish = "", None
    for chunk in c.chat.completions.create(model=s.model_id, messages=ASK, max_tokens=150, temperature=1.0, seed=1,
                                           response_format=SCHEMA_FORMAT, stream=True):
        for choice in chunk.choices:
            streamed += choice.delta.content or ""
            finish = choice.finish_reason or finish
    whole = c.chat.completions.create(model=s.model_id, messages=ASK, max_tokens=150, temperature=1.0, seed=1,
                                      response_format=SCHEMA_FORMAT).choices[0].message.content
    check(streamed == whole and finish == "stop", f"streamed {streamed!r} ({finish}), whole {whole!r}")
    r = c.chat.completions.create(model=s.model_id, messages=ASK, max_tokens=150, temperature=0,
                                  response_format={"type": "json_object"})
    check(isinstance(parsed(r.choices[0].message.content), dict), f"json_object: {r.choices[0].message.content!r}")
    # llama.cpp's fields: GBNF, and a schema outside response_format; the completions API too.
    r = c.chat.completions.create(model=s.model_id, messages=[{"role": "user", "content": "Pick a number."}],
                                  max_tokens=30, temperature=0, extra_body={"grammar": 'root ::= "n=" [1-9] [0-9]?'})
    check(re.fullmatch(r"n=[1-9][0-9]?", r.choices[0].message.content or "") is not None, f"grammar: {r}")
    r = c.completions.create(model=s.model_id, prompt="Paris facts in JSON:", max_tokens=150, temperature=0,
                             extra_body={"json_schema": CITY})
    doc = parsed(r.choices[0].text)
    check(not city_errors(doc) and r.choices[0].finish_reason == "stop", f"completions json_schema: {doc}")
    # Refusals name the field.
    for extra, param in (({"grammar": "root ::= nothing"}, "grammar"),
                         ({"json_schema": {"type": "object", "properties": {"a": {"type": "strnig"}}}}, "json_schema"),
                         ({"grammar": 'root ::= "a"', "json_schema": {}}, "json_schema")):
        expect_error(lambda: c.chat.completions.create(model=s.model_id, messages=ASK, extra_body=extra), 400, param)
    expect_error(lambda: c.chat.completions.create(model=s.model_id, messages=ASK, response_format={
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "minLength": "two"}}}), 400,
        "response_format.json_schema.schema")
    expect_error(lambda: c.chat.completions.create(model=s.model_id, messages=ASK, response_format="json"), 400,
                 "response_format")
    # A grammar whose parses multiply as the text grows: refused once one token's mask costs
    # too much (a bias on a letter it refuses makes every step compute the mask), and the
    # server goes on.
    nested = "root ::= x+\nx ::= [a-z ] x [a-z ] | [a-z ] | [a-z ] x\n"
    status, data = raw(s, "POST", "/tokenize", json.dumps({"content": "Q"}), {"Content-Type": "application/json"})
    capital = json.loads(data)["tokens"][0]
    try:
        c.chat.completions.create(model=s.model_id, messages=ASK, max_tokens=80, temperature=0,
                                  logit_bias={str(capital): 100}, extra_body={"grammar": nested})
        check(False, "a grammar too ambiguous to follow is refused")
    except openai.BadRequestError as e:
        check("too ambiguous" in str(e), f"the refusal says why: {e}")
    r = c.chat.completions.create(model=s.model_id, messages=ASK, max_tokens=4, temperature=0)
    check(r.choices[0].finish_reason == "length", f"the server goes on: {r}")


def forced_calls(s):
    c = client(s)
    time_tool = {"type": "function", "function": {"name": "now", "parameters": {
        "type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": ["tz"]}}}
    ask = dict(model=s.model_id, messages=[{"role": "user", "content": "Hello there!"}], tools=[WEATHER, time_tool],
               max_tokens=120, temperature=0)
    r = c.chat.completions.create(tool_choice="required", parallel_tool_calls=False, **ask)
    calls = r.choices[0].message.tool_calls or []
    ok = len(calls) == 1 and r.choices[0].finish_reason == "tool_calls"
    if ok and calls[0].function.name == "get_weather":
        args = json.loads(calls[0].function.arguments)
        ok = isinstance(args.get("city"), str) and set(args) <= {"city", "days", "units"}
    elif ok:
        ok = calls[0].function.name == "now" and json.loads(calls[0].function.arguments)["tz"] in ("UTC", "CET")
    check(ok, f"tool_choice required, a greeting: {r}")
    r = c.chat.completions.create(tool_choice={"type": "function", "function": {"name": "now"}}, **ask)
    calls = r.choices[0].message.tool_calls or []
    check(len(calls) == 1 and calls[0].function.name == "now" and
          json.loads(calls[0].function.arguments)["tz"] in ("UTC", "CET") and r.choices[0].finish_reason == "tool_calls",
          f"a named function: {r}")
    # A tool whose parameters refer to their own $defs: the references hold inside the call's schema.
    booking = {"type": "function", "function": {"name": "book", "parameters": {
        "type": "object", "properties": {"when": {"$ref": "#/$defs/slot"}}, "required": ["when"],
        "$defs": {"slot": {"type": "object", "properties": {"day": {"enum": ["mon", "tue"]},
                                                            "hour": {"type": "integer", "minimum": 8, "maximum": 17}},
                           "required": ["day", "hour"], "additionalProperties": False}}}}}
    r = c.chat.completions.create(**dict(ask, tools=[WEATHER, booking]),
                                  tool_choice={"type": "function", "function": {"name": "book"}})
    calls = r.choices[0].message.tool_calls or []
    args = json.loads(calls[0].function.arguments) if len(calls) == 1 else None
    check(args is not None and calls[0].function.name == "book" and list(args) == ["when"] and
          args["when"]["day"] in ("mon", "tue") and 8 <= args["when"]["hour"] <= 17, f"$defs in a tool: {r}")
    unsupported = {"type": "function", "function": {"name": "odd", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}}}
    expect_error(lambda: c.chat.completions.create(**dict(ask, tools=[WEATHER, unsupported]), tool_choice="required"),
                 400, "tools[1].function.parameters")
    # The prompt of a constrained answer closes Qwen3's think block, as enable_thinking false does.
    body = {"messages": ask["messages"], "response_format": {"type": "json_object"}}
    status, data = raw(s, "POST", "/apply-template", json.dumps(body), {"Content-Type": "application/json"})
    check(status == 200 and json.loads(data)["prompt"].endswith("<think>\n\n</think>\n\n"), f"/apply-template: {data!r}")


def logit_biases(s):
    c = client(s)
    status, data = raw(s, "POST", "/tokenize", json.dumps({"content": " Rome"}), {"Content-Type": "application/json"})
    rome = json.loads(data)["tokens"]
    check(status == 200 and len(rome) == 1, f"' Rome' is one token: {data!r}")
    ask = dict(model=s.model_id, messages=[{"role": "user", "content": "What is the capital of France?"}],
               max_tokens=4, temperature=0, logprobs=True)
    r = c.chat.completions.create(logit_bias={str(rome[0]): 100}, **ask)
    check(r.choices[0].message.content == " Rome" * 4, f"+100 all but forces a token: {r.choices[0].message.content!r}")
    free = c.chat.completions.create(**ask).choices[0]
    first = free.logprobs.content[0].token
    status, data = raw(s, "POST", "/tokenize", json.dumps({"content": first}), {"Content-Type": "application/json"})
    banned = json.loads(data)["tokens"]
    r = c.chat.completions.create(logit_bias={str(banned[0]): -100}, **ask)
    check(len(banned) == 1 and r.choices[0].logprobs.content[0].token != first,
          f"-100 all but bans the greedy token {first!r}: {r.choices[0].message.content!r}")
    # With a grammar too: the bias moves the choice among what the grammar allows.
    grammar = {"grammar": 'root ::= " Rome" | " Paris"'}
    r = c.chat.completions.create(**dict(ask, logprobs=False), extra_body=dict(grammar, logit_bias={str(rome[0]): 30}))
    check(r.choices[0].message.content == " Rome", f"a bias under a grammar: {r.choices[0].message.content!r}")


def lazy_calls(edgerun, model, plugin_dir):
    """tool_choice auto: the answer opens a call (scripted: words, then "<tool_call>\\n"), and
    greedy SmolLM2 goes on from there. Held to the call format it writes a call of a given
    function with arguments of its schema; with --tool-grammar off, what it writes is no call."""
    os.environ["EDGERUN_SCRIPT"] = script(edgerun, model, "Let me check.\n<tool_call>\n")
    ask = dict(messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER], max_tokens=120)
    for tool_grammar in ("lazy", "off"):
        with Server(edgerun, model, "-t", "1", "-c", "1024", "--chat-template", "qwen3", "--sampler-plugin",
                    "scripted_sampler", "--tool-grammar", tool_grammar, plugin_dir=plugin_dir) as s:
            r = client(s).chat.completions.create(model=s.model_id, **ask)
            msg, finish = r.choices[0].message, r.choices[0].finish_reason
            calls = msg.tool_calls or []
            if tool_grammar == "lazy":
                args = json.loads(calls[0].function.arguments) if calls else {}
                check(msg.content == "Let me check." and finish == "tool_calls" and
                      all(c.function.name == "get_weather" for c in calls) and isinstance(args.get("city"), str) and
                      set(args) <= {"city", "days", "units"}, f"a lazily held call: {r}")
            else:
                check(not calls and "<tool_call>" in (msg.content or "") and finish != "tool_calls",
                      f"the same answer written freely is no call: {r}")
    # Reasoning that mentions the tag opens no call: the grammar starts at a trigger outside
    # the <think> block.
    thought = "I could write <tool_call> myself."
    os.environ["EDGERUN_SCRIPT"] = script(edgerun, model, f"<think>\n{thought}\n</think>\n\nLet me check.\n<tool_call>\n")
    with Server(edgerun, model, "-t", "1", "-c", "1024", "--chat-template", "qwen3", "--sampler-plugin",
                "scripted_sampler", plugin_dir=plugin_dir) as s:
        r = client(s).chat.completions.create(model=s.model_id, **dict(ask, max_tokens=240))
        msg, finish = r.choices[0].message, r.choices[0].finish_reason
        calls = msg.tool_calls or []
        check(getattr(msg, "reasoning_content", None) == thought and msg.content == "Let me check." and
              finish == "tool_calls" and calls and all(c.function.name == "get_weather" for c in calls),
              f"a trigger in the reasoning is text; the reply's call is held: {r}")
    # Llama 3's call is the whole reply: one that opens with {"name" is held to a call, and
    # the same object later in words is not.
    llama = os.path.join(os.path.dirname(__file__), "..", "text", "chat_templates", "llama-3.2-instruct.jinja")
    for opening in ('{"name"', 'Sure: {"name"'):
        os.environ["EDGERUN_SCRIPT"] = script(edgerun, model, opening)
        with Server(edgerun, model, "-t", "1", "-c", "1024", "--chat-template-file", llama, "--sampler-plugin",
                    "scripted_sampler", plugin_dir=plugin_dir) as s:
            r = client(s).chat.completions.create(model=s.model_id, **ask)
            msg, finish = r.choices[0].message, r.choices[0].finish_reason
            calls = msg.tool_calls or []
            if opening.startswith("{"):
                args = json.loads(calls[0].function.arguments) if calls else {}
                check(len(calls) == 1 and calls[0].function.name == "get_weather" and finish == "tool_calls" and
                      isinstance(args.get("city"), str) and set(args) <= {"city", "days", "units"},
                      f"Llama: a reply that opens a call is held to one: {r}")
            else:
                check(not calls and (msg.content or "").startswith(opening), f"Llama: words are not a call: {r}")


if __name__ == "__main__":
    edgerun, model, plugin_dir = sys.argv[1], model_path(sys.argv[2]), sys.argv[3]
    with Server(edgerun, model, "-t", "1", "-c", "512", "--parallel", "2") as s:
        response_formats(s)
        logit_biases(s)
    with Server(edgerun, model, "-t", "1", "-c", "1024", "--chat-template", "qwen3") as s:
        forced_calls(s)
    lazy_calls(edgerun, model, plugin_dir)
    print("serve grammar: ok")
