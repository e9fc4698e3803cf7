#!/usr/bin/env python3
"""A one-shot exec scorer: evalrun starts it once per item.

It reads one JSON object on standard input:
  {"id", "input", "output", "expected_output", "metadata", "trajectory"}
and prints a number in [0,1] or {"score": x, "reason": "..."}.
A non-zero exit status (an exception) is that item's scorer error, with
the end of standard error in the report.
"""
import json
import sys

def text(v):
    """A string's text, any other JSON value as compact JSON."""
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), sort_keys=True)


req = json.load(sys.stdin)
output = text(req["output"]).lower()
expected = req["expected_output"]
if expected is None:
    # No expected answer: nothing to compare with; say so in the reason.
    print(json.dumps({"score": 0, "reason": "the item has no expected_output"}))
    sys.exit(0)

found = text(expected).lower() in output
print(json.dumps({
    "score": 1 if found else 0,
    "reason": ("mentions %r" if found else "does not mention %r") % expected,
}))
