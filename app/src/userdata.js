// The user's own data in the engine's worker: the files the page hands over (dropped or picked) are read
// here, off the page's main thread, by the importer their names call for; the data set is split into
// training and held-out examples and kept by id as the engine's files (py/scellis/datasets.py
// from_user_files), so planning and training name it and nothing is sent twice. The page gets what it
// shows: the kind of file, the examples' shape and types, class counts, a preview, the content hash and
// the two splits' versions (the hashes a manifest pins).

import { decodeInBrowser } from "./data/browserdecode.js";
import {
  contentHash,
  DataError,
  datasetFromNpyPair,
  datasetFromNpz,
  dataVersion,
  engineFiles,
  imagesFromFiles,
  imagesFromZip,
  parseCsv,
  parseCsvStream,
  preview,
  splitDataset,
} from "./data/index.js";
import { checkFileSize, dataBudget, hostMemory } from "./data/limits.js";
import { dataJson, describeFiles, npyRoles, thumbnailRgba } from "./userdatamodel.js";

const encoder = new TextEncoder();
const STREAM_ABOVE = 64 * 2 ** 20; // bytes: a larger CSV is read in chunks (a browser's strings end near 512 MiB)

// `files`: File objects (a folder's carry webkitRelativePath); `settings`: { csv, images, npy, split,
// stream } as the Data card sets them. Resolves to { id, summary } or throws a DataError naming the
// file (and row, column or entry) that is wrong.
export async function importFiles(kept, files, settings, onProgress) {
  const kind = describeFiles(files);
  const budget = dataBudget(hostMemory()); // every importer checks the encoded data set against it
  const sizes = Array.from(files, (f) => (f.file ?? f).size ?? 0);
  if (kind.format !== "csv")
    checkFileSize(
      kind.name,
      sizes.reduce((a, b) => a + b, 0),
      budget,
    );
  // a table too large to be one string of text is read in chunks, whatever the card asks
  const stream = Boolean(settings.stream) || sizes[0] > STREAM_ABOVE;
  const dataset = await readDataset(kind, files, { ...withBudget(settings, budget), stream }, onProgress);
  const { train, validation } = splitDataset(dataset, settings.split);
  if (train.n === 0 || validation.n === 0) {
    const empty = train.n === 0 ? "training" : "held-out";
    throw new DataError(
      { file: kind.name },
      `its ${dataset.n} examples leave the ${empty} split empty: choose another validation fraction`,
    );
  }
  const engine = {
    "dataset.json": encoder.encode(JSON.stringify(dataJson(dataset))),
    ...prefixed("train", engineFiles(train)),
    ...prefixed("test", engineFiles(validation)),
  };
  const summary = {
    kind: kind.label,
    name: dataset.name,
    exampleShape: dataset.exampleShape,
    featureType: dataset.featureType,
    labels: dataset.classes === null ? "numbers" : "classes",
    classes: dataset.classes,
    columns: dataset.source.names ?? null,
    target: dataset.source.target ?? null,
    targetChosen: dataset.source.targetChosen ?? null,
    asked: dataset.source.asked ?? null,
    skippedRows: dataset.source.skippedRows ?? 0,
    n: dataset.n,
    split: { train: train.n, validation: validation.n, ...settings.split },
    hash: await contentHash(dataset),
    versions: [await dataVersion("train", train), await dataVersion("test", validation)],
    preview: withPixels(dataset, preview(dataset)),
    streamed: kind.format === "csv" && stream,
  };
  const id = kept.add({ files: engine, summary });
  return { id, summary };
}

function withBudget(settings, budget) {
  const { csv, npy, images } = settings;
  return { ...settings, csv: { ...csv, budget }, npy: { ...npy, budget }, images: { ...images, budget } };
}

function prefixed(split, { features, labels }) {
  return { [`${split}-x`]: features, [`${split}-y`]: labels };
}

async function readDataset(kind, files, settings, onProgress) {
  switch (kind.format) {
    case "csv": {
      const file = files[0];
      const options = {
        ...settings.csv,
        onProgress: ({ bytes, rows }) => onProgress({ file: file.name, bytes, total: file.size, rows }),
      };
      // streamed: read a chunk at a time, never whole; else read whole, then parsed
      return settings.stream
        ? parseCsvStream(file.stream(), file.name, options)
        : parseCsv(await file.text(), file.name, options);
    }
    case "npz":
      return datasetFromNpz(new Uint8Array(await files[0].arrayBuffer()), files[0].name, settings.npy);
    case "npy": {
      const { x, y } = npyRoles(files);
      const read = async (file) => ({ name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) });
      return datasetFromNpyPair(await read(x), await read(y), settings.npy);
    }
    case "zip":
      return imagesFromZip(
        new Uint8Array(await files[0].arrayBuffer()),
        files[0].name,
        imageOptions(kind, settings, onProgress),
      );
    case "folder": {
      // a dropped folder's files come as { path, file }, a picked folder's as Files with their paths
      const entries = files.map((f) => (f.file ? { path: f.path, arrayBuffer: () => f.file.arrayBuffer() } : f));
      return imagesFromFiles(entries, kind.name, imageOptions(kind, settings, onProgress));
    }
    default:
      throw new DataError({ file: kind.name }, `cannot be read: ${kind.why}`);
  }
}

function imageOptions(kind, settings, onProgress) {
  const report = ({ done, total }) => onProgress({ file: kind.name, done, total });
  return { ...settings.images, decode: decodeInBrowser, onProgress: report };
}

// Thumbnails as RGBA pixels the page puts on canvases, with their labels.
function withPixels(dataset, shown) {
  if (!shown.thumbnails || thumbnailRgba(dataset, 0) === null) return { ...shown, thumbnails: null };
  const thumbnails = shown.thumbnails.map((index) => ({
    index,
    label: dataset.classes === null ? String(dataset.y[index]) : dataset.classes[dataset.y[index]],
    ...thumbnailRgba(dataset, index),
  }));
  return { ...shown, thumbnails };
}
