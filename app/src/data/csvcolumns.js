// One CSV column as it is read, row by row: numbers while every value is a number, else text categories.
// Only compact values are kept (a float64 per number, an int32 code per category), never the text.

import { quoted } from "./errors.js";

// A finite decimal number, as a spreadsheet writes one (no thousands separators, no "inf").
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const FLOAT32_MAX = 3.4028234663852886e38;

export function parseNumber(text) {
  return NUMBER.test(text) ? Number(text) : null;
}

// A category's name when a column of numbers turns out to hold text too, or a numeric target is taken as
// classes: JavaScript's shortest text of the number ("1.0" and "1" are one category, named "1").
export function numberName(value) {
  return String(value);
}

// A text column's category for a value: a number's shortest text wherever it stands in the column.
function categoryName(text) {
  const value = parseNumber(text);
  return value === null ? text : numberName(value);
}

class Growable {
  constructor(Type) {
    this.data = new Type(16); // small: a file may have many columns
    this.length = 0;
  }

  push(value) {
    if (this.length === this.data.length) {
      const bigger = new this.data.constructor(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  view() {
    return this.data.subarray(0, this.length);
  }
}

export class ColumnValues {
  // `fail(row, why)` returns the error to throw for this column; `maxCategories` bounds one-hot width;
  // `onCategory(row)` hears each new distinct value (and may throw).
  constructor(fail, maxCategories, onCategory = () => {}) {
    this.fail = fail;
    this.maxCategories = maxCategories;
    this.onCategory = onCategory;
    this.numbers = new Growable(Float64Array); // NaN where a value is missing
    this.codes = null; // once text: first-seen codes, -1 where missing
    this.categories = null; // once text: Map name -> first-seen code
    this.firstText = null; // { row, text }: the value that made the column text
  }

  get isText() {
    return this.codes !== null;
  }

  // Whether the column holds numbers only, at least one of them.
  get isNumeric() {
    return !this.isText && this.numbers.view().some((v) => !Number.isNaN(v));
  }

  add(text, missing, row) {
    if (missing) {
      if (this.isText) this.codes.push(-1);
      else this.numbers.push(NaN);
      return;
    }
    if (!this.isText) {
      const value = this.numberOf(text, row);
      if (value !== null) {
        this.numbers.push(value);
        return;
      }
      this.becomeText(row, text);
    }
    this.codes.push(this.codeOf(categoryName(text), row));
  }

  numberOf(text, row) {
    const value = parseNumber(text);
    if (value !== null && Math.abs(value) > FLOAT32_MAX) {
      throw this.fail(row, `${quoted(text)} is beyond float32's range (about ±3.4e38)`);
    }
    return value;
  }

  codeOf(text, row) {
    let code = this.categories.get(text);
    if (code === undefined) {
      code = this.categories.size;
      if (code === this.maxCategories) {
        const why =
          `holds more than ${this.maxCategories} distinct values (${quoted(text)} is one too many), too many ` +
          "for one-hot features: leave the column out or raise maxCategories";
        throw this.fail(row, why);
      }
      this.onCategory(row);
      this.categories.set(text, code);
    }
    return code;
  }

  becomeText(row, text) {
    this.firstText = { row, text };
    this.codes = new Growable(Int32Array);
    this.categories = new Map();
    for (const value of this.numbers.view()) {
      this.codes.push(Number.isNaN(value) ? -1 : this.codeOf(numberName(value), row));
    }
    this.numbers = null;
  }

  // The whole column, with `first` ({ text, missing, row }: the file's first row when it is data) ahead of
  // the rest: { kind: "number", values } or { kind: "category", codes, categories } with the categories
  // sorted by UTF-16 code units (as Python's sorted() orders str), so their order is not the file's.
  finish(first) {
    if (first && !first.missing && !this.isText && this.numberOf(first.text, first.row) === null) {
      this.becomeText(first.row, first.text);
    }
    const offset = first ? 1 : 0;
    if (!this.isText) {
      const rest = this.numbers.view();
      const values = new Float64Array(rest.length + offset);
      if (first) values[0] = first.missing ? NaN : parseNumber(first.text);
      values.set(rest, offset);
      return { kind: "number", values };
    }
    const firstCode = first && !first.missing ? this.codeOf(categoryName(first.text), first.row) : -1;
    const categories = [...this.categories.keys()].sort();
    const rank = new Int32Array(categories.length);
    categories.forEach((name, i) => (rank[this.categories.get(name)] = i));
    const rest = this.codes.view();
    const codes = new Int32Array(rest.length + offset);
    if (first) codes[0] = firstCode < 0 ? -1 : rank[firstCode];
    for (let i = 0; i < rest.length; i++) codes[i + offset] = rest[i] < 0 ? -1 : rank[rest[i]];
    return { kind: "category", codes, categories, firstText: this.firstText };
  }
}
