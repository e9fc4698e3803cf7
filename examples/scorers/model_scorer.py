#!/usr/bin/env python3
"""A persistent exec scorer: one process for the whole run.

With `persistent: true` evalrun starts this program once, at the first
item, and writes one JSON request per line on standard input; the program
answers each with one line on standard output, in order, and flushes.
When the run ends evalrun closes standard input: the loop ends and the
program exits. Logs go to standard error (standard output is for answers).

Loading "the model" is what a real scorer would do once (a sentence
embedding model, a classifier...): here it is a short sleep and a table.
When $MODEL_LOADS_FILE is set, every load appends a line to that file, so
you can check the model was loaded once per run, not once per item.
"""
import json
import os
import sys
import time


def load_model():
    time.sleep(0.5)  # pretend to load weights
    path = os.environ.get("MODEL_LOADS_FILE")
    if path:
        with open(path, "a") as f:
            f.write("loaded by pid %d\n" % os.getpid())
    print("model loaded", file=sys.stderr, flush=True)
    return {"brasilia": "brasília", "washington d.c.": "washington"}


def normalize(model, s):
    s = " ".join(str(s).lower().replace(".", " ").split())
    return model.get(s, s)


def trigrams(s):
    s = "  " + s + " "
    return {s[i:i + 3] for i in range(len(s) - 2)}


def similarity(model, output, expected):
    a, b = trigrams(normalize(model, output)), trigrams(normalize(model, expected))
    return len(a & b) / len(a | b) if a | b else 1.0


model = load_model()
served = 0
for line in sys.stdin:
    req = json.loads(line)
    served += 1
    if req["expected_output"] is None:
        answer = {"score": 0, "reason": "no expected_output"}
    else:
        score = similarity(model, req["output"], req["expected_output"])
        answer = {"score": round(score, 4),
                  "reason": "trigram similarity %.2f (pid %d, request %d)" % (score, os.getpid(), served)}
    print(json.dumps(answer), flush=True)
