#!/usr/bin/env python3
"""A test scorer that misbehaves on request.

One-shot by default (one JSON object on stdin, the answer on stdout);
with --persistent it answers one JSON line per request line. Each start
appends "start" to the file $START_FILE names, and a persistent process
appends "stop" when its stdin ends, so tests count processes.

The output decides what it does: "crash" exits 3 with a message on
stderr, "hang" never answers, "garbage" prints a line that is not JSON,
"range" answers 1.5, "huge" prints 100 MB, "chatty" writes 100 MB to
stderr and then answers; anything else scores 1 when it equals the
expected output, else 0.
"""
import json
import os
import sys
import time


def note(what):
    path = os.environ.get("START_FILE")
    if path:
        with open(path, "a") as f:
            f.write(what + "\n")


def answer(req):
    out = req.get("output")
    if out == "crash":
        print("boom: the scorer crashed", file=sys.stderr, flush=True)
        sys.exit(3)
    if out == "hang":
        time.sleep(3600)
    if out == "garbage":
        return "this is not JSON"
    if out == "range":
        return "1.5"
    if out == "huge":
        chunk = "x" * (1 << 20)
        for _ in range(100):
            sys.stdout.write(chunk)
        return ""
    if out == "chatty":
        chunk = "e" * (1 << 20)
        for _ in range(100):
            sys.stderr.write(chunk)
    ok = out == req.get("expected_output")
    return json.dumps({"score": 1 if ok else 0,
                       "reason": "pid %d: %s" % (os.getpid(), "equal" if ok else "different")})


note("start")
if "--persistent" in sys.argv:
    for line in sys.stdin:
        print(answer(json.loads(line)), flush=True)
    note("stop")
else:
    print(answer(json.load(sys.stdin)))
