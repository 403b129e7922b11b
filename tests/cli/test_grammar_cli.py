#!/usr/bin/env python3
"""Constrained decoding through the real binary on the default model: --grammar and
--json-schema make the output a sentence of the grammar whatever the model would say,
greedy and sampled, in plain generation and in chat; --logit-bias moves tokens; bad
grammars, schemas and biases are refused before any work.
    test_grammar_cli.py EDGERUN MODEL WORKDIR
"""
import json
import os
import re

from cli_harness import MODEL, WORK, check, run, run_tests

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog", "fish"]}, "maxItems": 3},
        "nick": {"type": "string", "maxLength": 8},
    },
    "required": ["name", "age", "pets"],
    "additionalProperties": False,
}


def person_errors(doc):
    """Why `doc` is not a PERSON (empty when it is); written out so that the test needs no
    schema library, and the grammar is judged by something other than itself."""
    if not isinstance(doc, dict):
        return ["not an object"]
    errors = [f"missing {k}" for k in PERSON["required"] if k not in doc]
    errors += [f"extra {k}" for k in doc if k not in PERSON["properties"]]
    if not (isinstance(doc.get("name"), str) and len(doc["name"]) <= 12):
        errors.append("name")
    if not (type(doc.get("age")) is int and doc["age"] >= 0):
        errors.append("age")
    pets = doc.get("pets")
    if not (isinstance(pets, list) and len(pets) <= 3 and all(p in ("cat", "dog", "fish") for p in pets)):
        errors.append("pets")
    if "nick" in doc and not (isinstance(doc["nick"], str) and len(doc["nick"]) <= 8):
        errors.append("nick")
    return errors


def generate(*args):
    return run("-m", MODEL, "--threads", "2", *args)


def stop_reason(stderr):
    m = re.search(r"stopped: ([a-z ]+)", stderr)
    return m.group(1) if m else None


def grammar_decides_the_words():
    # Greedy SmolLM2 would go on with " Paris." here: every token must come from the mask.
    r = generate("-p", "The capital of France is", "--temp", "0", "-n", "40", "--grammar",
                 'root ::= " number " [0-9]{1,3} "."')
    check("a grammar overrides what the model would say", r.returncode == 0 and
          re.fullmatch(r" number [0-9]{1,3}\.", r.stdout) is not None, (r.stdout, r.stderr))
    check("... and generation ends when the sentence is complete", stop_reason(r.stderr) == "grammar", r.stderr)
    r = generate("-p", "Is the sky blue? Answer yes or no:", "--temp", "0", "-n", "20", "--grammar",
                 'root ::= " " ("yes" | "no")')
    check("an alternative the model picks itself", r.returncode == 0 and r.stdout in (" yes", " no"), r.stdout)
    gbnf = os.path.join(WORK, "list.gbnf")
    with open(gbnf, "w") as f:
        f.write('# a list of two to four short words\nroot ::= item{2,4}\nitem ::= "\\n- " [a-z]{1,8}\n')
    r = generate("-p", "Three fruits:", "--temp", "0", "-n", "60", "--grammar-file", gbnf)
    check("--grammar-file, with repetition counts", r.returncode == 0 and
          re.fullmatch(r"(\n- [a-z]{1,8}){2,4}", r.stdout) is not None, repr(r.stdout))


def json_schema_output():
    schema = json.dumps(PERSON)
    prompt = "Here is a person described in JSON:"
    for temp, seed in (("0", "0"), ("1.0", "1"), ("1.3", "2"), ("1.3", "3")):
        r = generate("-p", prompt, "--temp", temp, "--seed", seed, "--top-k", "0", "--top-p", "1", "--min-p", "0",
                     "-n", "160", "--json-schema", schema)
        try:
            doc = json.loads(r.stdout)
            errors = person_errors(doc)
        except json.JSONDecodeError as e:
            errors = [f"not JSON: {e}"]
        check(f"--json-schema at temperature {temp}: the output is a valid document", r.returncode == 0 and not errors,
              (errors, r.stdout, r.stderr[-300:]))
        check(f"... complete before the budget (temperature {temp})", stop_reason(r.stderr) == "grammar", r.stderr[-300:])
    path = os.path.join(WORK, "numbers.json")
    with open(path, "w") as f:  # greedy SmolLM2 would count on far past three
        json.dump({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 99}, "maxItems": 3}, f)
    r = generate("-p", "A JSON array of numbers:", "--temp", "0", "-n", "80", "--json-schema-file", path)
    try:
        doc = json.loads(r.stdout)
        ok = (r.returncode == 0 and stop_reason(r.stderr) == "grammar" and isinstance(doc, list) and len(doc) <= 3
              and all(type(x) is int and 1 <= x <= 99 for x in doc))
    except json.JSONDecodeError:
        ok = False
    check("--json-schema-file: a bounded array, complete", ok, (r.stdout, r.stderr[-300:]))


def chat_replies():
    schema = json.dumps({"type": "object", "properties": {"answer": {"type": "string", "maxLength": 30}},
                         "required": ["answer"], "additionalProperties": False})
    r = run("chat", "-m", MODEL, "--threads", "2", "--temp", "0", "-n", "60", "--json-schema", schema,
            input="What is the capital of France?\nAnd of Italy?\n")
    # The replies one after the other, each followed by a newline; a reply may span lines.
    replies, at, decoder = [], 0, json.JSONDecoder()
    try:
        while at < len(r.stdout):
            doc, at = decoder.raw_decode(r.stdout, at)
            replies.append(doc)
            check_newline = r.stdout[at] == "\n"
            at += 1
            if not check_newline:
                replies.append("no newline after the reply")
    except (json.JSONDecodeError, IndexError) as e:
        replies.append(f"not JSON: {e}")
    ok = r.returncode == 0 and len(replies) == 2 and r.stderr.count("; grammar]") == 2
    for doc in replies:
        ok = ok and isinstance(doc, dict) and list(doc) == ["answer"] and isinstance(doc["answer"], str)
    check("chat: every reply is a document of the schema", ok, (r.stdout, r.stderr[-400:]))


def token_ids(text):
    r = run("tokenize", "-m", MODEL, "--no-bos", text)
    return [int(t) for t in r.stdout.split()]


def logit_biases():
    out = os.path.join(WORK, "tokens.json")
    r = generate("-p", "The capital of France is", "--temp", "0", "-n", "3", "--tokens-out", out)
    greedy = json.load(open(out))["generated"]
    r = generate("-p", "The capital of France is", "--temp", "0", "-n", "3", "--tokens-out", out,
                 "--logit-bias", f"{greedy[0]}-100")
    check("--logit-bias ID-100 all but bans the greedy token", r.returncode == 0 and
          json.load(open(out))["generated"][0] != greedy[0], (greedy, r.stderr[-300:]))
    rome = token_ids(" Rome")
    r = generate("-p", "The capital of France is", "--temp", "0.7", "-n", "3", "--tokens-out", out,
                 "-l", f"{rome[0]}+100")
    check("-l ID+100 all but forces a token, sampling too", len(rome) == 1 and r.stdout == " Rome" * 3 and
          json.load(open(out))["generated"] == rome * 3, (rome, r.stdout))


def refusals():
    cases = [
        (["--grammar", "root ::= value"], "rule 'value'"),
        (["--grammar", 'root ::= "a'], "line 1"),
        (["--grammar", 'item ::= "a"'], "root"),
        (["--json-schema", "{not json"], "--json-schema: not valid JSON"),
        (["--json-schema", '{"type": "strnig"}'], "strnig"),
        (["--grammar", 'root ::= "a"', "--json-schema", "{}"], "--grammar and --json-schema"),
        (["--grammar-file", os.path.join(WORK, "missing.gbnf")], "missing.gbnf"),
        (["--logit-bias", "15"], "--logit-bias: '15'"),
        (["--logit-bias", "15+200"], "from -100 to 100"),
        (["--logit-bias", "15+x"], "--logit-bias: '15+x'"),
        (["--logit-bias", "999999+1"], "logit bias 999999"),
    ]
    for args, named in cases:
        r = generate("-p", "x", "-n", "4", *args)
        lines = r.stderr.strip().splitlines()
        check(f"refused in one line naming the fault: {' '.join(args)[:60]}",
              r.returncode != 0 and r.stdout == "" and len(lines) == 1 and named in lines[0], r.stderr)


run_tests(grammar_decides_the_words, json_schema_output, chat_replies, logit_biases, refusals)
