// What an import may allocate, checked before it allocates: fixed sanity ceilings on a file's shape (its
// columns, categories, entries, image sides), and the budget for the encoded data set (n examples of
// their features and label, 4 bytes a value), which is where the data set lives whatever the program:
// the engine's worker holds it, with the page's import briefly holding it about four times over (the
// features, the two splits, the bytes hashed) and the engine's Python (wasm32: 4 GiB at most, for
// everything it holds) a copy of each split. A program that keeps the data set on the device is
// checked against the device's own budget by the memory plan (its "resident data set").

import { DataError } from "./errors.js";

export const CEILINGS = Object.freeze({
  columns: 65536, // columns of a CSV row
  categories: 1000, // distinct values of one text column: its one-hot width
  width: 65536, // values of one example once encoded (a CSV's columns, one-hot blocks counted whole)
  entries: 100000, // entries of a ZIP archive
  imageSide: 16384, // pixels along either side of an image
  imagePixels: 2 ** 26, // pixels of one image (64 Mpx: 256 MiB decoded as RGBA)
});

const MIB = 2 ** 20;
export const DATA_CEILING = 512 * MIB; // the encoded data set, whatever the host
const HOST_SHARE = 8; // of the host's memory, when the browser tells it

// The budget for the encoded data set: { bytes, how }. `hostBytes`: the host's memory as the browser
// reports it (navigator.deviceMemory, in GiB, times 2^30), or null when unknown.
export function dataBudget(hostBytes = null) {
  const ceiling = { bytes: DATA_CEILING, how: `the ${formatMiB(DATA_CEILING)} a data set may take in this page` };
  if (!(hostBytes > 0)) return ceiling;
  const share = Math.floor(hostBytes / HOST_SHARE);
  if (share >= ceiling.bytes) return ceiling;
  return {
    bytes: share,
    how: `an eighth of this device's ${formatMiB(hostBytes)} of memory, as the browser reports it`,
  };
}

// The host's memory in bytes as a worker or page can know it (navigator.deviceMemory), or null.
export function hostMemory() {
  const gib = globalThis.navigator?.deviceMemory;
  return typeof gib === "number" && gib > 0 ? gib * 2 ** 30 : null;
}

export function formatMiB(bytes) {
  if (bytes < MIB) return `${bytes.toLocaleString("en")} bytes`;
  if (bytes >= 2 ** 30) return `${Number((bytes / 2 ** 30).toFixed(1))} GiB`;
  return `${Number((bytes / MIB).toFixed(1))} MiB`;
}

// Refuses `n` examples of `width` feature values (and a 4-byte label each) that the budget cannot hold;
// `what` says what the examples are made of (e.g. "200 one-hot text columns"), in the message.
export function checkDataBytes(where, n, width, budget, what) {
  const bytes = n * (width + 1) * 4;
  if (bytes <= budget.bytes) return;
  const size = `${n.toLocaleString("en")} examples of ${width.toLocaleString("en")} values (${what})`;
  const why = `${size} take ${formatMiB(bytes)} as float32, more than the budget of ${formatMiB(budget.bytes)} (${budget.how})`;
  throw new DataError(where, `${why}: use fewer rows, columns or pixels`);
}

// Files read whole (NumPy arrays, ZIP archives, images) may take at most twice the data budget: their
// values become 4-byte floats, so a file any larger holds a data set larger than the budget (8-byte values
// halve; compressed images only grow). `size`: the file's (or a folder's files') bytes.
export function checkFileSize(file, size, budget) {
  if (size <= 2 * budget.bytes) return;
  const why = `takes ${formatMiB(size)}, more than the ${formatMiB(2 * budget.bytes)} a file read whole may take (twice the budget for a data set: ${budget.how})`;
  throw new DataError({ file }, why);
}

// Refuses an example wider than the ceiling.
export function checkWidth(where, width, what) {
  if (width <= CEILINGS.width) return;
  const why = `one example would hold ${width.toLocaleString("en")} values (${what}), more than the ${CEILINGS.width.toLocaleString("en")} an example may hold`;
  throw new DataError(where, why);
}

// A budget given as an option: { bytes: a positive number, how: text }.
export function checkBudget(kind, budget) {
  if (budget === null || typeof budget !== "object" || !(budget.bytes > 0) || typeof budget.how !== "string") {
    throw new TypeError(`${kind} option budget must be { bytes, how } with bytes > 0, not ${JSON.stringify(budget)}`);
  }
}
