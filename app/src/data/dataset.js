// The data set every importer produces, and what is done with one: a reproducible train/validation split,
// a content hash that names the data whatever file it came from, the engine's byte layout of a split (whose
// hash equals the engine's DataVersion.sha256), and a preview for the page.

import { concatBytes, littleEndianBytes, sha256Key } from "./bytes.js";

// { name, exampleShape, featureType: "float32" | "int32", classes: names or null (a numeric target),
//   columns: the CSV feature layout or null, n, x: n * prod(exampleShape) values (Float32Array or
//   Int32Array as featureType says), y: Int32Array of class indices (classes given) or Float32Array,
//   source: what the importer says of the file (format and its own details) }. Checked, not copied.
export function makeDataset({ name, exampleShape, featureType, classes = null, columns = null, x, y, source = {} }) {
  const width = exampleShape.reduce((a, b) => a * b, 1);
  if (!exampleShape.every((d) => Number.isInteger(d) && d > 0)) {
    throw new TypeError(`bad example shape [${exampleShape}]`);
  }
  const XType = { float32: Float32Array, int32: Int32Array }[featureType];
  if (!XType || !(x instanceof XType)) throw new TypeError(`features must be a ${featureType} array`);
  const YType = classes === null ? Float32Array : Int32Array;
  if (!(y instanceof YType)) {
    throw new TypeError(`labels must be ${YType.name} when classes is ${classes === null ? "null" : "given"}`);
  }
  const n = y.length;
  if (x.length !== n * width) {
    throw new TypeError(`${x.length} feature values are not ${n} examples of shape [${exampleShape}]`);
  }
  if (classes !== null) {
    const bad = y.findIndex((label) => label < 0 || label >= classes.length);
    if (bad >= 0) throw new TypeError(`example ${bad}'s label ${y[bad]} is no class of ${classes.length}`);
  }
  return { name, exampleShape: [...exampleShape], featureType, classes, columns, n, x, y, source };
}

export function exampleWidth(dataset) {
  return dataset.exampleShape.reduce((a, b) => a * b, 1);
}

// The examples at `indices`, in that order, as a data set of their own.
export function subset(dataset, indices) {
  const width = exampleWidth(dataset);
  const x = new dataset.x.constructor(indices.length * width);
  const y = new dataset.y.constructor(indices.length);
  indices.forEach((index, i) => {
    x.set(dataset.x.subarray(index * width, (index + 1) * width), i * width);
    y[i] = dataset.y[index];
  });
  return makeDataset({ ...dataset, x, y });
}

// Mulberry32 (Tommy Ettinger's 32-bit generator): the next uint32 of the sequence seeded by `seed`.
function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t = (t + Math.imul(t ^ (t >>> 7), t | 61)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

// A permutation of 0..n-1: Fisher-Yates from the end, position i swapped with floor(u * (i + 1) / 2^32)
// for the next uint32 u of mulberry32(seed). The same (n, seed) gives the same permutation everywhere.
export function permutation(n, seed) {
  const order = Int32Array.from({ length: n }, (_, i) => i);
  const next = mulberry32(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor((next() * (i + 1)) / 2 ** 32);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

// The split's example indices: the first round(n * fraction) of permutation(n, seed) are held out for
// validation (at least one and at most n - 1 when n >= 2, none when the fraction is 0); both lists are
// sorted, so each split keeps the file's order.
export function splitIndices(n, { fraction = 0.2, seed = 0 } = {}) {
  if (!(fraction >= 0 && fraction < 1)) {
    throw new RangeError(`the validation fraction must be in [0, 1), not ${fraction}`);
  }
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`the seed must be a uint32, not ${seed}`);
  }
  const wanted = Math.round(n * fraction);
  const held = fraction === 0 || n < 2 ? 0 : Math.min(Math.max(wanted, 1), n - 1);
  const order = permutation(n, seed);
  const ascending = (a, b) => a - b;
  return {
    train: Array.from(order.subarray(held)).sort(ascending),
    validation: Array.from(order.subarray(0, held)).sort(ascending),
  };
}

export function splitDataset(dataset, options = {}) {
  const { train, validation } = splitIndices(dataset.n, options);
  return { train: subset(dataset, train), validation: subset(dataset, validation) };
}

// The canonical bytes the content hash covers, all integers little-endian uint32 and each text as its
// UTF-8 byte length then its bytes:
//   text "scellis.dataset/1", text featureType, rank, each dimension of exampleShape,
//   text labelType ("int32" or "float32"), n, the number of classes (0 for numbers) then each class name,
//   the features (n * prod(exampleShape) little-endian values), the labels (n little-endian values).
// File name, format and column names are not in it: the same examples and classes give the same hash.
export function canonicalBytes(dataset) {
  const texts = [];
  const text = (value) => {
    const bytes = new TextEncoder().encode(value);
    texts.push(uint32s([bytes.length]), bytes);
  };
  const labelType = dataset.classes === null ? "float32" : "int32";
  text("scellis.dataset/1");
  text(dataset.featureType);
  texts.push(uint32s([dataset.exampleShape.length, ...dataset.exampleShape]));
  text(labelType);
  texts.push(uint32s([dataset.n, dataset.classes?.length ?? 0]));
  for (const name of dataset.classes ?? []) text(name);
  return concatBytes([...texts, littleEndianBytes(dataset.x), littleEndianBytes(dataset.y)]);
}

function uint32s(values) {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((value, i) => view.setUint32(i * 4, value, true));
  return bytes;
}

// "sha256:<hex>" of canonicalBytes(dataset).
export async function contentHash(dataset) {
  return sha256Key(canonicalBytes(dataset));
}

// A split as the engine's two files hold it (py/scellis/datasets.py): features then labels, each
// little-endian, float32 (or int32) features row by row and int32 labels (float32 for a numeric target).
export function engineFiles(split) {
  return { features: littleEndianBytes(split.x), labels: littleEndianBytes(split.y) };
}

// The engine's DataVersion of a split (py/scellis/manifest/pins.py): sha256 of the features bytes then
// the labels bytes, its examples, and the flat example width as its shape.
export async function dataVersion(splitName, split) {
  const { features, labels } = engineFiles(split);
  const sha256 = await sha256Key(concatBytes([features, labels]));
  return { split: splitName, sha256, examples: split.n, shape: [exampleWidth(split)] };
}
