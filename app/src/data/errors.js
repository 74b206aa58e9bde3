// Data import's errors: each says where (the file, and the ZIP entry, the spreadsheet row or the column
// when there is one) and why, so that a user can find the cell or the entry and fix it. The parts are kept
// as fields too, for the page to highlight.

export class DataError extends Error {
  // `where`: { file, entry?, row? (1-based, as a spreadsheet shows it), column? (its label) }.
  constructor(where, why) {
    super(`${describePlace(where)}: ${why}`);
    this.name = "DataError";
    this.file = where.file;
    this.entry = where.entry ?? null;
    this.row = where.row ?? null;
    this.column = where.column ?? null;
    this.why = why;
  }
}

function describePlace({ file, entry, row, column }) {
  const parts = [];
  if (entry !== undefined) parts.push(`entry ${JSON.stringify(entry)}`);
  if (row !== undefined) parts.push(`row ${row}`);
  if (column !== undefined) parts.push(`column ${column}`);
  return parts.length ? `${file}: ${parts.join(", ")}` : file;
}

// A spreadsheet's column letters: 0 -> A, 25 -> Z, 26 -> AA.
export function columnLetter(index) {
  let letters = "";
  for (let i = index + 1; i > 0; i = Math.floor((i - 1) / 26)) {
    letters = String.fromCharCode(65 + ((i - 1) % 26)) + letters;
  }
  return letters;
}

// A value as a message quotes it: at most 40 characters.
export function quoted(text) {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
}

// A caller's option that is none of its allowed values: a programming error, not the data's.
export function checkOption(kind, option, value, allowed) {
  if (!allowed.includes(value)) {
    const choices = allowed.map((a) => JSON.stringify(a)).join(", ");
    throw new TypeError(`${kind} option ${option} must be one of ${choices}, not ${JSON.stringify(value)}`);
  }
}
