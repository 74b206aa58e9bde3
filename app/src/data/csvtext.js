// CSV text to rows, fed a chunk at a time: a row, a quoted field, a "" escape, a CRLF or a UTF-8 character
// may be split anywhere between chunks, and only the row being read is carried from one chunk to the next.
// Quoting follows RFC 4180 ("" inside quotes is a quote; quoted fields may hold delimiters and newlines).

import { columnLetter, DataError } from "./errors.js";

const QUOTE = 34;
const CR = 13;
const LF = 10;
const SPACE = 32;
const TAB = 9;
const REPLACEMENT = "\uFFFD";
const MAX_FIELD = 2 ** 20; // characters of one field: a table's cell, not a document

export class CsvRows {
  // `onRow(fields, row)` gets each record's fields (unquoted ones trimmed) and its 1-based row number,
  // counted as a spreadsheet counts records; blank lines are counted but not passed on. `columnLabel(index)`
  // names a column in messages; a row of more than `maxFields` fields is refused as it is read.
  constructor(file, delimiter, onRow, columnLabel = columnLetter, maxFields = Infinity) {
    if (delimiter.length !== 1 || '\r\n"'.includes(delimiter)) {
      const why = `the delimiter must be one character other than a quote or newline, not ${JSON.stringify(delimiter)}`;
      throw new DataError({ file }, why);
    }
    this.file = file;
    this.separator = delimiter.charCodeAt(0);
    this.onRow = onRow;
    this.columnLabel = columnLabel;
    this.maxFields = maxFields;
    this.replaced = false; // the text holds U+FFFD, as bytes that are no UTF-8 decode to
    this.row = 1;
    this.fields = [];
    this.field = "";
    this.quoted = false; // the field being read was quoted: kept as is, not trimmed
    this.rowQuoted = false; // the row has a quoted field, so a row of one empty field is no blank line
    this.inQuotes = false;
    this.quoteSeen = false; // a quote inside quotes, not yet known to be "" or the closing quote
    this.closed = false; // the field's closing quote was read: only spaces may follow before the delimiter
    this.skipLF = false; // a CR ended the last row: an LF right after it belongs to it
    this.quoteRow = 1;
  }

  push(text) {
    this.replaced ||= text.includes(REPLACEMENT);
    let i = 0;
    while (i < text.length) {
      i = this.inQuotes ? this.readQuoted(text, i) : this.readPlain(text, i);
      if (this.field.length > MAX_FIELD) {
        const row = this.inQuotes ? this.quoteRow : this.row;
        throw this.error(
          row,
          `a field holds more than ${MAX_FIELD.toLocaleString("en")} characters, more than a table's cell may`,
        );
      }
    }
  }

  end() {
    if (this.inQuotes && !this.quoteSeen) {
      throw this.error(this.quoteRow, "a quoted field is never closed (its closing quote is missing)");
    }
    if (this.quoteSeen) this.closeQuote();
    if (this.fields.length || this.field !== "" || this.quoted) this.endRow();
  }

  readQuoted(text, i) {
    if (this.quoteSeen) {
      this.quoteSeen = false;
      if (text.charCodeAt(i) === QUOTE) {
        this.field += '"';
        return i + 1;
      }
      this.closeQuote();
      return i;
    }
    const quote = text.indexOf('"', i);
    if (quote < 0) {
      this.field += text.slice(i);
      return text.length;
    }
    this.field += text.slice(i, quote);
    this.quoteSeen = true;
    return quote + 1;
  }

  closeQuote() {
    this.quoteSeen = false;
    this.inQuotes = false;
    this.closed = true;
  }

  readPlain(text, i) {
    const c = text.charCodeAt(i);
    if (this.skipLF) {
      this.skipLF = false;
      if (c === LF) return i + 1;
    }
    if (c === this.separator) {
      this.endField();
    } else if (c === CR || c === LF) {
      this.endRow();
      this.skipLF = c === CR;
    } else if (this.closed) {
      if (c !== SPACE && c !== TAB) throw this.error(this.row, "text follows a quoted field's closing quote");
    } else if (c === QUOTE && this.field.trim() === "") {
      this.inQuotes = true;
      this.quoted = true;
      this.rowQuoted = true;
      this.quoteRow = this.row;
      this.field = "";
    } else {
      // A run of plain text up to the next delimiter, newline or quote (a quote after text, as in 5'11",
      // is taken as it is; one after spaces only opens a quoted field).
      let j = i + 1;
      while (j < text.length && !this.isBreak(text.charCodeAt(j))) j++;
      this.field += text.slice(i, j);
      return j;
    }
    return i + 1;
  }

  isBreak(c) {
    return c === this.separator || c === CR || c === LF || c === QUOTE;
  }

  endField() {
    if (this.replaced && this.field.includes(REPLACEMENT)) {
      throw this.error(this.row, "is not UTF-8 text (a byte here is no UTF-8 character): save the file as CSV UTF-8");
    }
    if (this.fields.length === this.maxFields) {
      const most = this.maxFields.toLocaleString("en");
      throw this.error(this.row, `the row has more than ${most} columns, the most a table may have`);
    }
    this.fields.push(this.quoted ? this.field : this.field.trim());
    this.field = "";
    this.quoted = false;
    this.closed = false;
  }

  endRow() {
    this.endField();
    const fields = this.fields;
    const blank = fields.length === 1 && fields[0] === "" && !this.rowQuoted;
    this.fields = [];
    this.rowQuoted = false;
    this.row += 1;
    if (!blank) this.onRow(fields, this.row - 1);
  }

  error(row, why) {
    return new DataError({ file: this.file, row, column: this.columnLabel(this.fields.length) }, why);
  }
}

// The chunks of a File's stream(), any ReadableStream or async iterable of Uint8Array (Safari's streams
// are not async iterable, so the reader is used when there is one).
export async function* chunksOf(source) {
  if (typeof source.getReader !== "function") {
    yield* source;
    return;
  }
  const reader = source.getReader();
  let ended = false;
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) yield next.value;
    ended = true;
  } finally {
    if (!ended) await reader.cancel(); // a refused file is read no further
    reader.releaseLock();
  }
}

// Feeds `rows` the UTF-8 text of the chunks, a chunk at a time; a BOM at the start is dropped. Bytes that
// are no UTF-8 decode to U+FFFD, which `rows` refuses where it stands (so the message names its cell).
// `onProgress({ bytes, rows })` follows each chunk (rows: the records read so far).
export async function feedChunks(source, rows, onProgress) {
  const decoder = new TextDecoder("utf-8");
  let bytes = 0;
  for await (const chunk of chunksOf(source)) {
    rows.push(decoder.decode(chunk, { stream: true }));
    bytes += chunk.length;
    onProgress?.({ bytes, rows: rows.row - 1 });
  }
  rows.push(decoder.decode());
  rows.end();
}
