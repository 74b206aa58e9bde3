// What the page shows of an imported data set before training: its size, its class counts, the first rows
// of a table (as the file's values, decoded back from the features) and a few images to draw.

import { exampleWidth } from "./dataset.js";

// { n, exampleShape, classCounts: [{ name, count }] or null, table: { header, rows } or null (examples
// of rank 1), thumbnails: example indices or null (examples of rank 2 or more, drawn by the page) }.
export function preview(dataset, { rows = 5, thumbnails = 8, features = 20 } = {}) {
  const rank = dataset.exampleShape.length;
  return {
    n: dataset.n,
    exampleShape: dataset.exampleShape,
    classCounts: classCounts(dataset),
    table: rank === 1 ? table(dataset, rows, features) : null,
    thumbnails: rank >= 2 ? thumbnailIndices(dataset, thumbnails) : null,
  };
}

function classCounts({ classes, y }) {
  if (classes === null) return null;
  const counts = new Array(classes.length).fill(0);
  for (const label of y) counts[label] += 1;
  return classes.map((name, i) => ({ name, count: counts[i] }));
}

function labelOf(dataset, i) {
  return dataset.classes === null ? dataset.y[i] : dataset.classes[dataset.y[i]];
}

// A CSV's rows as its columns held them (a one-hot block back to its category's name, null when
// none); other examples as their first `features` values.
function table(dataset, rows, features) {
  const target = dataset.source.target ?? "label";
  const width = exampleWidth(dataset);
  const count = Math.min(rows, dataset.n);
  if (dataset.columns === null) {
    const shown = Math.min(width, features);
    const header = [...Array.from({ length: shown }, (_, j) => `x[${j}]`), target];
    const body = Array.from({ length: count }, (_, i) => [
      ...dataset.x.subarray(i * width, i * width + shown),
      labelOf(dataset, i),
    ]);
    return { header, rows: body };
  }
  const header = [...dataset.columns.map((column) => column.name), target];
  const body = Array.from({ length: count }, (_, i) => {
    const row = dataset.columns.map((column) => cellOf(dataset.x, i * width + column.offset, column));
    return [...row, labelOf(dataset, i)];
  });
  return { header, rows: body };
}

function cellOf(x, at, column) {
  if (column.kind === "number") return x[at];
  const hot = x.subarray(at, at + column.width).indexOf(1);
  return hot < 0 ? null : column.categories[hot];
}

// Up to `count` examples, taken from each class in turn (its first, then its second, ...) so every class
// shows; without classes, the first examples.
function thumbnailIndices(dataset, count) {
  const limit = Math.min(count, dataset.n);
  if (dataset.classes === null) return Array.from({ length: limit }, (_, i) => i);
  const byClass = dataset.classes.map(() => []);
  dataset.y.forEach((label, i) => {
    if (byClass[label].length < limit) byClass[label].push(i);
  });
  const picked = [];
  for (let k = 0; picked.length < limit; k++) {
    for (const indices of byClass) if (k < indices.length && picked.length < limit) picked.push(indices[k]);
  }
  return picked;
}
