// CSV files to data sets. A header row is detected (or chosen); each column is numeric when every value
// is a number and categorical otherwise; the target column (the last unless chosen) gives the labels and
// the other columns the features: a numeric column one float32, a categorical one a one-hot block of one
// float32 per category (1 for the row's category, 0 elsewhere; categories sorted). Missing values are
// refused unless the caller asks to drop their rows or to fill them. A stream is read chunk by chunk.
// Sizes are checked as the rows come, before anything grows past them: the columns of a row, the distinct
// values of the text columns (their one-hot width), and the bytes the encoded examples take (limits.js).

import { ColumnValues, numberName, parseNumber } from "./csvcolumns.js";
import { CsvRows, feedChunks } from "./csvtext.js";
import { makeDataset } from "./dataset.js";
import { checkOption, columnLetter, DataError, quoted } from "./errors.js";
import { CEILINGS, checkBudget, checkDataBytes, checkWidth, dataBudget } from "./limits.js";

export const CSV_DEFAULTS = Object.freeze({
  header: "auto", // true, false, or "auto": a header when its first row has text where the later rows have numbers
  target: null, // a column name (the header's), a 0-based index (negative counts from the end), or null: the last
  // a target name the file has no column for: "refuse" it, or take the "last" column (source.targetChosen says so)
  ifTargetAbsent: "refuse",
  labels: "auto", // "classes", "numbers", or "auto": classes for a text target, numbers (regression) for a numeric one
  // "refuse"; "drop" the row; or "fill": a numeric column's mean, a categorical column's all-zero one-hot.
  missing: "refuse",
  missingTokens: ["", "NA", "N/A", "NaN", "nan", "null", "?"], // missing values (unquoted fields are trimmed first)
  delimiter: ",",
  maxCategories: CEILINGS.categories, // the most categories a categorical column may have (its one-hot width)
  budget: dataBudget(), // { bytes, how }: the most the encoded examples may take, and what sets it
  onProgress: null, // ({ bytes, rows }) after each chunk of a stream
});

// A data set from a whole CSV file: its text, or its bytes (UTF-8, BOM or not).
export async function parseCsv(input, file, options = {}) {
  if (typeof input !== "string") return parseCsvStream([new Uint8Array(input)], file, options);
  const table = new Table(file, { ...CSV_DEFAULTS, ...options });
  const rows = table.rowReader();
  rows.push(input.startsWith("\uFEFF") ? input.slice(1) : input);
  rows.end();
  return table.finish();
}

// A data set from a File's stream() (or any ReadableStream or async iterable of Uint8Array chunks): the
// file is read a chunk at a time and never held whole, only the compact column values are.
export async function parseCsvStream(source, file, options = {}) {
  const table = new Table(file, { ...CSV_DEFAULTS, ...options });
  const rows = table.rowReader();
  await feedChunks(source, rows, table.options.onProgress);
  return table.finish();
}

class Table {
  constructor(file, options) {
    checkOption("CSV", "header", options.header, ["auto", true, false]);
    checkOption("CSV", "labels", options.labels, ["auto", "classes", "numbers"]);
    checkOption("CSV", "missing", options.missing, ["refuse", "drop", "fill"]);
    checkOption("CSV", "ifTargetAbsent", options.ifTargetAbsent, ["refuse", "last"]);
    checkBudget("CSV", options.budget);
    this.file = file;
    this.options = options;
    this.missingTokens = new Set(options.missingTokens);
    this.first = null; // { fields, row }: the first row, a header or data (decided at the end)
    this.columns = null;
    this.target = null;
    this.targetChosen = null; // "last", "named", "index" or "fallback" (a name asked for that the file lacks)
    this.oneHot = 0; // distinct values of the text feature columns so far: their one-hot width
    this.rows = 0; // rows kept after the first
    this.skipped = 0; // rows dropped for a missing value
  }

  rowReader() {
    const onRow = (fields, row) => this.addRow(fields, row);
    return new CsvRows(this.file, this.options.delimiter, onRow, (c) => this.columnLabel(c), CEILINGS.columns);
  }

  addRow(fields, row) {
    if (this.first === null) {
      this.setFirst(fields, row);
      return;
    }
    this.checkWidth(fields, row);
    // at least one 4-byte value a column (the first row may be a header): refused by the row where the rows
    // so far outgrow the budget
    checkDataBytes(
      { file: this.file, row },
      this.rows + 1,
      fields.length - 1,
      this.options.budget,
      "at least one value a column",
    );
    if (!this.acceptMissing(fields, row)) {
      this.skipped += 1;
      return;
    }
    for (let c = 0; c < fields.length; c++) this.columns[c].add(fields[c], this.missingTokens.has(fields[c]), row);
    this.rows += 1;
  }

  setFirst(fields, row) {
    this.first = { fields, row };
    this.target = this.resolveTarget();
    this.columns = fields.map(
      (_, c) =>
        new ColumnValues(
          (atRow, why) => this.error(atRow, c, why),
          this.options.maxCategories,
          (atRow) => {
            if (c !== this.target) this.countCategory(atRow, c);
          },
        ),
    );
  }

  // One more distinct value of a text feature column: refused once they outgrow an example's width.
  countCategory(row, c) {
    this.oneHot += 1;
    if (this.oneHot + this.columns.length <= CEILINGS.width) return;
    const why =
      `the text columns' distinct values, one-hot, and the other columns would make an example wider than ` +
      `the ${CEILINGS.width.toLocaleString("en")} values it may hold: leave text columns with many values out`;
    throw this.error(row, c, why);
  }

  resolveTarget() {
    const { target, header } = this.options;
    const width = this.first.fields.length;
    this.targetChosen = "last";
    if (target === null || target === undefined) return width - 1;
    if (typeof target === "string") {
      const index = header === false ? -1 : this.first.fields.indexOf(target);
      this.targetChosen = index < 0 ? "fallback" : "named";
      if (index < 0 && this.options.ifTargetAbsent === "last") return width - 1;
      if (index < 0) {
        const names = this.first.fields.map(quoted).join(", ");
        const why = `has no column named ${quoted(target)} (the first row holds ${names})`;
        throw new DataError({ file: this.file }, why);
      }
      return index;
    }
    this.targetChosen = "index";
    const index = target < 0 ? width + target : target;
    if (!Number.isInteger(index) || index < 0 || index >= width) {
      throw new DataError({ file: this.file }, `has ${width} columns, so column index ${target} names none of them`);
    }
    return index;
  }

  checkWidth(fields, row) {
    const width = this.first.fields.length;
    if (fields.length === width) return;
    const column = Math.min(fields.length, width);
    const what = fields.length < width ? "it is missing" : "it is one too many";
    throw this.error(row, column, `the row has ${fields.length} fields where the first row has ${width}: ${what}`);
  }

  // Whether to keep the row: refuses a missing value, or asks to drop its row, as `missing` says.
  acceptMissing(fields, row) {
    const c = fields.findIndex((text) => this.missingTokens.has(text));
    if (c < 0) return true;
    const { missing } = this.options;
    const value = quoted(fields[c]);
    if (missing === "refuse") {
      const why = `the value is missing (${value}): pass missing "drop" to leave such rows out, or "fill"`;
      throw this.error(row, c, why);
    }
    if (missing === "fill") {
      const target = fields.findIndex((text, i) => i === this.target && this.missingTokens.has(text));
      if (target >= 0) {
        const value = quoted(fields[target]);
        const why = `the target is missing (${value}), and a target cannot be filled: pass missing "drop"`;
        throw this.error(row, target, why);
      }
    }
    return missing === "fill";
  }

  decideHeader() {
    const { header } = this.options;
    if (header !== "auto") return header;
    if (this.targetChosen === "named") return true; // a target named by the first row makes it the header
    return this.first.fields.some((text, c) => this.isTextCell(text) && this.columns[c].isNumeric);
  }

  isTextCell(text) {
    return !this.missingTokens.has(text) && parseNumber(text) === null;
  }

  // A column as a message names it: its letter, and the header's name when the first row may be one.
  columnLabel(c) {
    const name = this.first?.fields[c];
    const named = this.options.header !== false && name !== undefined && this.isTextCell(name);
    return named ? `${columnLetter(c)} (${quoted(name)})` : columnLetter(c);
  }

  error(row, c, why) {
    return new DataError({ file: this.file, row, column: this.columnLabel(c) }, why);
  }

  finish() {
    if (this.first === null) throw new DataError({ file: this.file }, "is empty: it holds no rows");
    const header = this.decideHeader();
    let firstData = header ? null : this.first;
    if (firstData && !this.acceptMissing(firstData.fields, firstData.row)) {
      firstData = null;
      this.skipped += 1;
    }
    if (this.rows === 0 && firstData === null) throw new DataError({ file: this.file }, "holds no data rows");
    const columns = this.columns.map((column, c) => {
      if (!firstData) return column.finish(null);
      const text = firstData.fields[c];
      return column.finish({ text, missing: this.missingTokens.has(text), row: firstData.row });
    });
    const names = this.first.fields.map((text, c) => (header && text !== "" ? text : columnLetter(c)));
    const { y, classes } = this.labelsOf(columns[this.target]);
    const { x, layout } = this.features(columns, names);
    const { targetChosen } = this;
    const asked = typeof this.options.target === "string" ? this.options.target : null;
    const source = {
      format: "csv",
      header,
      names,
      target: names[this.target],
      targetChosen,
      asked,
      skippedRows: this.skipped,
    };
    const shape = { name: this.file, exampleShape: [layout.width], featureType: "float32", classes };
    return makeDataset({ ...shape, columns: layout.columns, x, y, source });
  }

  labelsOf(column) {
    const { labels } = this.options;
    if (column.kind === "category") {
      if (labels === "numbers") {
        const { row, text } = column.firstText;
        const why = `the target holds text (${quoted(text)}), not a number, and labels "numbers" asks for numbers`;
        throw this.error(row, this.target, why);
      }
      return { y: column.codes, classes: column.categories };
    }
    if (labels !== "classes") return { y: Float32Array.from(column.values), classes: null };
    const values = [...new Set(column.values)].sort((a, b) => a - b);
    const index = new Map(values.map((value, i) => [value, i]));
    return { y: Int32Array.from(column.values, (value) => index.get(value)), classes: values.map(numberName) };
  }

  // The feature columns' layout ({ name, kind, categories, offset, width, fill }: `fill` is the value
  // that replaced a numeric column's missing ones, else null) and the features, row by row.
  features(columns, names) {
    const layout = { width: 0, columns: [] };
    const sources = [];
    columns.forEach((column, c) => {
      if (c === this.target) return;
      const width = column.kind === "number" ? 1 : column.categories.length;
      const fill = column.kind === "number" ? this.fillValue(column.values, c) : null;
      const categories = column.categories ?? null;
      layout.columns.push({ name: names[c], kind: column.kind, categories, offset: layout.width, width, fill });
      layout.width += width;
      sources.push(column);
    });
    if (layout.width === 0) throw new DataError({ file: this.file }, "has no feature columns besides the target");
    const n = (columns[0].values ?? columns[0].codes).length;
    const texts = layout.columns.filter((column) => column.kind === "category").length;
    const what = `${layout.columns.length - texts} numeric columns and ${texts} text columns one-hot`;
    checkWidth({ file: this.file }, layout.width, what);
    checkDataBytes({ file: this.file }, n, layout.width, this.options.budget, what);
    const x = new Float32Array(n * layout.width);
    layout.columns.forEach((meta, i) => writeColumn(x, layout.width, meta, sources[i]));
    return { x, layout };
  }

  // The value that fills a numeric column's missing values: the mean of the present ones (none missing: null).
  fillValue(values, c) {
    let sum = 0;
    let present = 0;
    for (const value of values) {
      if (Number.isNaN(value)) continue;
      sum += value;
      present += 1;
    }
    if (present === values.length) return null;
    if (present === 0) {
      throw this.error(undefined, c, "the column has no value in any row, so there is nothing to fill it from");
    }
    return Math.fround(sum / present);
  }
}

function writeColumn(x, width, meta, column) {
  if (meta.kind === "number") {
    column.values.forEach((value, i) => (x[i * width + meta.offset] = Number.isNaN(value) ? meta.fill : value));
  } else {
    column.codes.forEach((code, i) => {
      if (code >= 0) x[i * width + meta.offset + code] = 1; // missing (filled): no category, all zeros
    });
  }
}
