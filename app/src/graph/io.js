// Program JSON text in and out. In: parsed as JSON, a syntax error told by line and column in the same
// words in every browser (their own messages differ, and some give no place), then checked to be
// drawable (model.js). Out: a stable text, one node and one edge per line, so saved programs diff well.
// No DOM.

import { drawProblems } from "./model.js";

const SPACE = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

function matchAt(pattern, text, at) {
  pattern.lastIndex = at;
  return pattern.test(text) ? pattern.lastIndex : -1;
}

// What the scanner expects next, given the open brackets.
const AFTER = { "{": "',' or '}'", "[": "',' or ']'" };

// Where the first JSON syntax error in `text` is ({offset, message}), or null for valid JSON. A scan
// with an explicit stack of open brackets (no recursion: deep nesting cannot overflow).
export function syntaxError(text) {
  const open = [];
  let want = "value"; // value, key, colon, next (after a value), or first (a value or a closing bracket)
  for (let at = matchAt(SPACE, text, 0); ; at = matchAt(SPACE, text, at)) {
    const c = text[at];
    const top = open.at(-1);
    if (want === "next" && !top) return c === undefined ? null : { offset: at, message: "text after the end" };
    if (c === undefined) return { offset: at, message: "the text ends too early" };
    if ((want === "next" || want === "first") && c === { "{": "}", "[": "]" }[top]) {
      open.pop();
      [want, at] = ["next", at + 1];
    } else if (want === "next") {
      if (c !== ",") return { offset: at, message: `expected ${AFTER[top]}` };
      [want, at] = [top === "{" ? "key" : "value", at + 1];
    } else if (want === "colon") {
      if (c !== ":") return { offset: at, message: "expected ':' after the key" };
      [want, at] = ["value", at + 1];
    } else if (want === "key" || (want === "first" && top === "{")) {
      const end = matchAt(STRING, text, at);
      if (end < 0) return { offset: at, message: badString(c, "expected a key in double quotes") };
      [want, at] = ["colon", end];
    } else if (c === "{" || c === "[") {
      open.push(c);
      [want, at] = ["first", at + 1];
    } else {
      const end = [STRING, NUMBER, LITERAL].map((p) => matchAt(p, text, at)).find((e) => e >= 0);
      if (end === undefined) return { offset: at, message: badString(c, "expected a value") };
      [want, at] = ["next", end];
    }
  }
}

function badString(c, otherwise) {
  return c === '"' ? "a string that is not closed, or holds a bad escape or a raw control character" : otherwise;
}

// Line and column (from 1) of an offset into the text.
export function lineColumn(text, offset) {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}

// A program from text: {program, errors: []}, or {program: null, errors} where each error says where:
// {line, column, message} for JSON syntax, {path, message} for a shape that cannot be drawn.
export function importProgram(text) {
  let program;
  try {
    program = JSON.parse(text);
  } catch (err) {
    const found = syntaxError(text) ?? { offset: 0, message: String(err.message) };
    return { program: null, errors: [{ ...lineColumn(text, found.offset), message: found.message }] };
  }
  const problems = drawProblems(program);
  return problems.length ? { program: null, errors: problems } : { program, errors: [] };
}

// A program as text: the top-level fields one per line, each node and each edge on a line of its own,
// everything deeper inline; the field order is the object's (toProgram's is the builder's).
export function exportProgram(program) {
  const fields = Object.entries(program).filter(([, v]) => v !== undefined);
  const lines = fields.map(([key, value]) => `  ${JSON.stringify(key)}: ${block(value)}`);
  return `{\n${lines.join(",\n")}\n}\n`;
}

function block(value) {
  if (!Array.isArray(value) || !value.some((item) => item !== null && typeof item === "object")) return inline(value);
  return `[\n${value.map((item) => `    ${inline(item)}`).join(",\n")}\n  ]`;
}

// JSON on one line with a space after ':' and ',' (JSON.stringify's own spacing puts one entry per line).
function inline(value) {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : inline(v))).join(", ")}]`;
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`).join(", ")}}`;
}
