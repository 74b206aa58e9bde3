// The side panel's fields for an op's parameters (the catalog's `params`: name, kind, doc, default,
// choices, low, high) and the program's own fields: which control each gets, the text a value shows as,
// and the typed text back to a value. A value that does not read as its kind is kept as typed, so the
// engine's check names what is wrong with it in its own words. No DOM.

const NUMBER = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const LISTS = new Set(["ints", "axes", "pair"]); // a bare "3, 3" is read as the list [3, 3]

// "checkbox" (bool), "select" (a closed set of choices) or "text" (everything else).
export function fieldKind(param) {
  if (param.kind === "bool") return "checkbox";
  return param.choices?.length ? "select" : "text";
}

// A value as its field shows it: "" for unset, a string as is, anything else as one line of JSON with
// a space after each comma ([1, 8, 8]).
export function valueText(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  return inner(value);
}

// A value inside a list or an object: strings quoted.
function inner(value) {
  if (Array.isArray(value)) return `[${value.map(inner).join(", ")}]`;
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  return `{${Object.entries(value)
    .map(([k, v]) => `${JSON.stringify(k)}: ${inner(v)}`)
    .join(", ")}}`;
}

// The value of a field's text for a parameter of `kind` ("str" keeps the text; "json" is a program
// field whose text is JSON, or a bare word such as a node id): undefined for an empty field (unset: the
// default applies, or the check says a required one is missing).
export function parseField(kind, text) {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  if (kind === "str" || kind === "key") return trimmed; // a name, even one that reads as a number
  if (NUMBER.test(trimmed)) return Number(trimmed);
  try {
    return JSON.parse(trimmed);
  } catch {
    if (LISTS.has(kind) && /^[^[\]{}]*,[^[\]{}]*$/.test(trimmed)) {
      const listed = parseField(kind, `[${trimmed}]`);
      if (Array.isArray(listed)) return listed;
    }
    return trimmed;
  }
}

// Whether a field must be set: a parameter without a default (a program field, kind "json", or a field
// marked optional may stay unset).
export function isRequired(param) {
  return !("default" in param) && param.kind !== "json" && !param.optional;
}

// What an unset field means, shown as its placeholder: the default, that it is required, or not set.
export function unsetText(param) {
  if (param.kind === "json" || param.optional) return "not set";
  if (!("default" in param)) return "required";
  return param.default === null ? "default: none" : `default: ${valueText(param.default)}`;
}

// The range the catalog allows, in words ("at least 1", "from 0 to 1"), or "".
export function rangeText(param) {
  const { low, high } = param;
  if (low !== undefined && high !== undefined) return `from ${low} to ${high}`;
  if (low !== undefined) return `at least ${low}`;
  return high !== undefined ? `at most ${high}` : "";
}

// Whether two values are the same JSON (so setting a field to what it holds records no edit).
export function sameValue(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
