// The Python the page tells people to run, built as code: whatever comes from a person's file
// (feature names, classes, file names) goes in as a Python literal made here, never into a comment
// or between quotes as it is. A name may hold a CR, LF, U+2028, quotes, backslashes or a NUL: as
// raw text any of them could end a comment or a string and put the rest of the name in the program
// (issue 31.2). Pure functions of their arguments, so that tests run what they build
// (tests/test_exports.py, through node).

import { readForest } from "./forest_model.js";

// Characters Python's repr escapes: not printable (controls, format characters, surrogates,
// private use, unassigned, line and paragraph separators, spaces but " ").
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
const NAMED = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t" };

// A Python string literal (double-quoted) whose value is `text`, for any string: printable
// characters as they are, the others as \x, \u or \U escapes, as repr writes them.
export function pyString(text) {
  let out = '"';
  for (const ch of String(text)) {  // by code point: an emoji is one \U escape or one character
    const cp = ch.codePointAt(0);
    if (NAMED[ch]) out += NAMED[ch];
    else if (ch !== " " && UNPRINTABLE.test(ch)) {
      out += cp < 0x100 ? `\\x${hex(cp, 2)}` : cp < 0x10000 ? `\\u${hex(cp, 4)}` : `\\U${hex(cp, 8)}`;
    } else out += ch;
  }
  return out + '"';
}

const hex = (n, width) => n.toString(16).padStart(width, "0");

// A Python literal for JSON-like data: strings, finite numbers, booleans, null, arrays, objects.
export function pyLiteral(value) {
  if (typeof value === "string") return pyString(value);
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : `float(${pyString(String(value))})`;
  if (typeof value === "boolean") return value ? "True" : "False";
  if (value === null || value === undefined) return "None";
  if (Array.isArray(value)) return `[${value.map(pyLiteral).join(", ")}]`;
  return `{${Object.entries(value).map(([k, v]) => `${pyString(k)}: ${pyLiteral(v)}`).join(", ")}}`;
}

// The program that loads a forest run's JSON download (its file name from the run's id) with
// py_core and predicts one row: the training medians, each named by its feature. `binary`: the
// model as the page holds it (its header's "data": the features in order, their medians).
export function forestJsonSnippet(run, binary) {
  const file = `forest-${run.id.slice(0, 8)}.json`;
  const classify = run.metrics?.accuracy !== undefined;
  const data = readForest(binary).header.data;
  const task = classify ? "Classifier" : "Regressor";
  const features = data?.features || [];
  const medians = data?.medians || [];
  const row = features.map((name, j) => `    ${pyString(name)}: ${pyLiteral(medians[j] ?? 0)},`);
  return `# The forest outside the playground: pip install the playground's py_core (this
# repository), then run this next to the JSON download.
import asyncio
import json

from py_core.forest import RandomForest${task}

with open(${pyString(file)}, encoding="utf-8") as f:
    model = json.load(f)
forest = RandomForest${task}.from_dict(model, backend="reference")
features = model["data"]["features"]  # a row's values go in this order
# A row by its features: here every one at its training median. A category is its index in
# model["data"]["categories"][feature]; a missing value is the feature's training median.
row = {
${row.join("\n")}
}
rows = [[row[name] for name in features]]  # one list a row
print(list(asyncio.run(forest.predict(rows))))  # each row's prediction
`;
}

// What the transformer's snippet box says of a stopped model (`file`: its download's name).
export function stoppedTransformerNote(file) {
  return `# A stopped model is not stored, so the server has no snippet for it: the snippet of a
# finished run loads it too, with this path:
path = ${pyString(file)}
`;
}
