#!/usr/bin/env node
// An exec scorer in JavaScript (Node.js), one-shot or persistent.
//
// One-shot (the default): the request is the whole of standard input, the
// answer the whole of standard output. With --persistent (and
// `persistent: true` in the suite), every line of standard input is a
// request and every line printed an answer, in order.
//
// The score: 1 for an answer of at most `max` words (metadata.max_words, or
// 6), less the longer it is.
"use strict";
const readline = require("node:readline");

function score(req) {
  const text = typeof req.output === "string" ? req.output : JSON.stringify(req.output);
  const max = (req.metadata && req.metadata.max_words) || 6;
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  const s = words <= max ? 1 : max / words;
  return { score: Math.round(s * 1000) / 1000, reason: `${words} words (at most ${max} wanted)` };
}

if (process.argv.includes("--persistent")) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on("line", (line) => {
    process.stdout.write(JSON.stringify(score(JSON.parse(line))) + "\n");
  });
} else {
  let input = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (input += chunk));
  process.stdin.on("end", () => process.stdout.write(JSON.stringify(score(JSON.parse(input))) + "\n"));
}
