// NumPy files to data sets: .npy arrays (format versions 1, 2 and 3; little-endian f4, f8, i4, i8, u1 and
// b1; C or Fortran order, the latter reordered to C) and .npz archives of them (zip.js: each entry's
// declared size checked before it is inflated). Features become float32 (or int32 when asked) and labels
// int32 class indices or float32 numbers; their bytes are checked against the budget before they are made.

import { typedFromLittleEndian } from "./bytes.js";
import { makeDataset } from "./dataset.js";
import { checkOption, DataError } from "./errors.js";
import { CEILINGS, checkBudget, checkDataBytes, dataBudget, formatMiB } from "./limits.js";
import { readEntry, zipEntries } from "./zip.js";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"

// The supported dtypes: the typed array that reads them, and whether they hold integers.
const DTYPES = {
  "<f4": { Type: Float32Array, integer: false },
  "<f8": { Type: Float64Array, integer: false },
  "<i4": { Type: Int32Array, integer: true },
  "<i8": { Type: BigInt64Array, integer: true },
  "|u1": { Type: Uint8Array, integer: true },
  "|b1": { Type: Uint8Array, integer: true },
};

export const NPY_DEFAULTS = Object.freeze({
  x: null, // the NPZ entry of the features ("x" or "x.npy"); null: "x" if there is one, else the first array
  y: null, // the NPZ entry of the labels; null: "y" if there is one, else the second array
  featureType: "float32", // or "int32" (integer arrays only: token indices and the like)
  labels: "auto", // "classes", "numbers", or "auto": classes for integer or bool labels, numbers for floats
  classes: null, // class names for integer labels (as many as the largest label + 1); null: "0", "1", ...
  budget: dataBudget(), // { bytes, how }: the most the encoded examples (and an archive's entries) may take
});

// One .npy file: { dtype, shape, data } with `data` a typed array in C order. `where`: { file, entry? }.
export function readNpy(bytes, where) {
  const fail = (why) => new DataError(where, why);
  if (bytes.length < 10 || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw fail("is not a NumPy .npy array (its first bytes are not \\x93NUMPY)");
  }
  const major = bytes[6];
  if (major < 1 || major > 3) {
    throw fail(`is a .npy file of format version ${major}.${bytes[7]}; versions 1, 2 and 3 are read`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const start = major === 1 ? 10 : 12;
  const length = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  if (start + length > bytes.length) throw fail("is cut short inside its header");
  const text = new TextDecoder(major === 3 ? "utf-8" : "latin1").decode(bytes.subarray(start, start + length));
  const { dtype, fortranOrder, shape } = parseHeader(text, fail);
  const count = shape.reduce((a, b) => a * b, 1);
  const size = count * DTYPES[dtype].Type.BYTES_PER_ELEMENT;
  const body = bytes.subarray(start + length);
  if (body.length !== size) {
    throw fail(`holds ${body.length} bytes of data, but shape (${shape.join(", ")}) of ${dtype} takes ${size}`);
  }
  const data = typedFromLittleEndian(DTYPES[dtype].Type, body);
  const notBool = dtype === "|b1" ? data.findIndex((value) => value > 1) : -1;
  if (notBool >= 0)
    throw fail(`holds byte ${data[notBool]} at element ${notBool} of a bool array, which holds only 0 and 1`);
  return { dtype, shape, data: fortranOrder ? fortranToC(data, shape) : data };
}

// The header is a Python dict literal of exactly these three keys, each once, in any order:
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
const HEADER_ENTRY = /\s*'(descr|fortran_order|shape)':\s*('[^']*'|\[[^\]]*\]|True|False|\([^)]*\))\s*(?:,|$)/y;

function parseHeader(text, fail) {
  const notNumpy = () => fail(`has a header that is not NumPy's: ${JSON.stringify(text.trim().slice(0, 200))}`);
  const body = /^\s*\{([\s\S]*)\}\s*$/.exec(text);
  if (!body) throw notNumpy();
  const entries = new Map();
  for (let at = 0; !/^\s*$/.test(body[1].slice(at)); at = HEADER_ENTRY.lastIndex) {
    HEADER_ENTRY.lastIndex = at;
    const match = HEADER_ENTRY.exec(body[1]);
    if (!match || entries.has(match[1])) throw notNumpy();
    entries.set(match[1], match[2]);
  }
  if (entries.size !== 3) throw notNumpy();
  const descr = /^'([^']*)'$|^(\[)/.exec(entries.get("descr"));
  const order = /^(True|False)$/.exec(entries.get("fortran_order"));
  const shape = /^\(([^)]*)\)$/.exec(entries.get("shape"));
  if (!descr || !order || !shape) throw notNumpy();
  if (descr[2]) {
    throw fail("holds a structured array (fields of several dtypes); save each field as an array of its own");
  }
  const dtype = descr[1];
  if (dtype.startsWith(">")) {
    throw fail(`holds big-endian numbers (${dtype}); save it little-endian, as array.astype("<${dtype.slice(1)}")`);
  }
  if (!(dtype in DTYPES)) throw fail(`has dtype ${dtype}; the dtypes read are ${Object.keys(DTYPES).join(", ")}`);
  const dims = shapeOf(shape[1].trim());
  if (dims === null) throw fail(`has a shape that is not NumPy's: (${shape[1]})`);
  return { dtype, fortranOrder: order[1] === "True", shape: dims };
}

// A Python tuple's whole numbers: "" is (), "3," is (3,), "3, 4" and "3, 4," are (3, 4); else null.
function shapeOf(text) {
  if (text === "") return [];
  const parts = text.split(",").map((d) => d.trim());
  if (parts[parts.length - 1] === "") parts.pop();
  else if (parts.length === 1) return null; // (3) is a number, not a tuple
  const dims = parts.map((d) => (/^\d+$/.test(d) ? Number(d) : NaN));
  return dims.every((d) => Number.isSafeInteger(d)) ? dims : null;
}

// Fortran order to C order: C index i0..ik holds the value at sum(i_j * prod(shape[0..j-1])).
function fortranToC(data, shape) {
  const strides = shape.map((_, j) => shape.slice(0, j).reduce((a, b) => a * b, 1));
  const out = new data.constructor(data.length);
  const index = shape.map(() => 0);
  let from = 0;
  for (let i = 0; i < out.length; i++) {
    out[i] = data[from];
    for (let j = shape.length - 1; j >= 0; j--) {
      index[j] += 1;
      from += strides[j];
      if (index[j] < shape[j]) break;
      from -= strides[j] * shape[j];
      index[j] = 0;
    }
  }
  return out;
}

// A data set from an .npz archive (numpy.savez or savez_compressed); only its x and y arrays are inflated.
export function datasetFromNpz(bytes, file, options = {}) {
  const settings = { ...NPY_DEFAULTS, ...options };
  checkBudget("NumPy", settings.budget);
  const entries = zipEntries(bytes, file, { maxEntries: CEILINGS.entries });
  const names = entries.filter((entry) => entry.name.endsWith(".npy")).map((entry) => entry.name);
  const pair = names.includes("x.npy") && names.includes("y.npy") ? ["x.npy", "y.npy"] : names.slice(0, 2);
  const held = names.map((name) => JSON.stringify(name.slice(0, -4))).join(", ") || "none";
  const pick = (wanted, role, fallback) => {
    const name = wanted === null ? fallback : withSuffix(wanted);
    if (name === undefined) {
      const why = `holds ${names.length} array(s) (${held}); a data set needs two, features and labels`;
      throw new DataError({ file }, why);
    }
    if (!names.includes(name)) {
      throw new DataError({ file }, `has no array ${JSON.stringify(wanted)} for the ${role} (its arrays: ${held})`);
    }
    return name;
  };
  const xName = pick(settings.x, "features", pair[0]);
  const yName = pick(settings.y, "labels", pair[1]);
  if (xName === yName) throw new DataError({ file, entry: xName }, "is named for both the features and the labels");
  // an array's values take at least a byte each, and become 4 bytes each as float32 or int32
  const { budget } = settings;
  const why = `twice the ${formatMiB(budget.bytes)} the data set may take (${budget.how}): 8-byte values become 4-byte ones`;
  const limit = { maxBytes: 2 * budget.bytes + 65536, limitWhy: why };
  const read = (name) => {
    const bytesOf = readEntry(
      bytes,
      entries.find((entry) => entry.name === name),
      file,
      limit,
    );
    return { array: readNpy(bytesOf, { file, entry: name }), where: { file, entry: name } };
  };
  return datasetFromArrays(file, read(xName), read(yName), { ...settings, format: "npz" });
}

function withSuffix(name) {
  return name.endsWith(".npy") ? name : `${name}.npy`;
}

// A data set from two .npy files: { bytes, name } each.
export function datasetFromNpyPair(xFile, yFile, options = {}) {
  const settings = { ...NPY_DEFAULTS, ...options };
  const x = { array: readNpy(xFile.bytes, { file: xFile.name }), where: { file: xFile.name } };
  const y = { array: readNpy(yFile.bytes, { file: yFile.name }), where: { file: yFile.name } };
  return datasetFromArrays(xFile.name, x, y, { ...settings, format: "npy" });
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const MAX_CLASSES = 65536;

// `x` and `y`: { array: readNpy's, where }. Examples run along the first axis of both.
function datasetFromArrays(name, x, y, settings) {
  checkOption("NumPy", "featureType", settings.featureType, ["float32", "int32"]);
  checkOption("NumPy", "labels", settings.labels, ["auto", "classes", "numbers"]);
  checkBudget("NumPy", settings.budget);
  const xShape = x.array.shape;
  const yShape = y.array.shape;
  if (xShape.length === 0) throw new DataError(x.where, "is a single value, not an array of examples");
  const n = xShape[0];
  if (!(yShape.length === 1 || (yShape.length === 2 && yShape[1] === 1))) {
    throw new DataError(y.where, `has shape (${yShape.join(", ")}); labels must have shape (n,) or (n, 1)`);
  }
  if (yShape[0] !== n) throw new DataError(y.where, `holds ${yShape[0]} labels, but the features hold ${n} examples`);
  if (n === 0) throw new DataError(x.where, "holds no examples");
  const exampleShape = xShape.length === 1 ? [1] : xShape.slice(1);
  if (exampleShape.includes(0)) {
    throw new DataError(x.where, `has examples of shape (${exampleShape.join(", ")}), which hold no values`);
  }
  const width = exampleShape.reduce((a, b) => a * b, 1);
  checkDataBytes(x.where, n, width, settings.budget, `arrays of shape (${exampleShape.join(", ")})`);
  const features = settings.featureType === "int32" ? intFeatures(x) : floatValues(x, "features");
  const { labels, classes } = labelsOf(y, settings);
  const source = { format: settings.format, x: x.where.entry ?? x.where.file, y: y.where.entry ?? y.where.file };
  const { featureType } = settings;
  return makeDataset({ name, exampleShape, featureType, classes, x: features, y: labels, source });
}

// float32 copies of the values, each finite; integers beyond 2^24 round as float32 rounds them.
function floatValues({ array, where }, role) {
  const out = new Float32Array(array.data.length);
  const big = array.data instanceof BigInt64Array;
  for (let i = 0; i < out.length; i++) {
    out[i] = big ? Number(array.data[i]) : array.data[i];
    if (!Number.isFinite(out[i])) {
      const element = `element ${elementIndex(i, array.shape)} is ${array.data[i]}`;
      throw new DataError(where, `${element} as float32; ${role} must be finite numbers`);
    }
  }
  return out;
}

function intFeatures({ array, where }) {
  if (!DTYPES[array.dtype].integer) {
    throw new DataError(where, `holds ${array.dtype} values; int32 features need an integer array`);
  }
  const out = new Int32Array(array.data.length);
  for (let i = 0; i < out.length; i++) {
    const value = Number(array.data[i]);
    if (value < INT32_MIN || value > INT32_MAX) {
      const element = `element ${elementIndex(i, array.shape)} is ${array.data[i]}`;
      throw new DataError(where, `${element}, which does not fit in int32`);
    }
    out[i] = value;
  }
  return out;
}

// Class indices (int32, from 0) and their names, or float32 numbers for a regression target.
function labelsOf(y, settings) {
  const integer = DTYPES[y.array.dtype].integer;
  const asClasses = settings.labels === "auto" ? integer : settings.labels === "classes";
  if (!asClasses) return { labels: floatValues(y, "labels"), classes: null };
  const labels = new Int32Array(y.array.data.length);
  let largest = 0;
  for (let i = 0; i < labels.length; i++) {
    const value = y.array.data[i];
    const number = Number(value);
    if (!Number.isInteger(number) || number < 0 || number >= MAX_CLASSES) {
      const why = `label ${i} is ${value}; class labels must be whole numbers from 0 to ${MAX_CLASSES - 1}`;
      throw new DataError(y.where, number > INT32_MAX ? `${why} (it does not even fit in int32)` : why);
    }
    labels[i] = number;
    largest = Math.max(largest, number);
  }
  const classes = settings.classes ?? Array.from({ length: largest + 1 }, (_, i) => String(i));
  if (classes.length <= largest) {
    throw new DataError(y.where, `has label ${largest}, but ${classes.length} class names were given`);
  }
  return { labels, classes: [...classes] };
}

// A flat C-order index as NumPy writes it: [3, 0].
function elementIndex(flat, shape) {
  const index = [];
  for (let j = shape.length - 1; j >= 0; j--) {
    index.unshift(flat % shape[j]);
    flat = Math.floor(flat / shape[j]);
  }
  return `[${index.join(", ")}]`;
}
