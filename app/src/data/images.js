// Image folders to data sets: a ZIP, or the files of a folder the user picked, with one subfolder per class
// (class names are the folder names, sorted by UTF-16 code units; examples class by class, each class's
// files sorted by path). PNG and JPEG only, decoded by the injected `decode` (the browser's in the app).
// An image becomes height x width x channels float32 values in [0, 1], row by row (HWC): channels 3 for
// "rgb", 1 for "gray" (0.299 R + 0.587 G + 0.114 B, ITU-R BT.601 luma); alpha is dropped. With `size`,
// every image is resized to it (bilinear, pixel centres aligned); without, every image must have the first
// image's size, and one that differs is refused by name. Sizes are checked before anything is allocated
// for them: a ZIP entry's declared size before it is inflated (zip.js), an image's width and height, as its
// header gives them, before it is decoded, and the data set's bytes before its features are made.

import { makeDataset } from "./dataset.js";
import { DataError } from "./errors.js";
import { CEILINGS, checkBudget, checkDataBytes, dataBudget, formatMiB } from "./limits.js";
import { readEntry, zipEntries } from "./zip.js";

export const IMAGE_DEFAULTS = Object.freeze({
  decode: null, // async (bytes, name) -> { width, height, rgba: Uint8ClampedArray }: required
  color: null, // "gray" or "rgb": required, so the choice is explicit
  size: null, // { height, width } to resize every image to, or null: all images must share one size
  onProgress: null, // ({ done, total }) after each image
  budget: dataBudget(), // { bytes, how }: the most the images' float32 values may take
});

const IMAGE_NAME = /\.(png|jpe?g)$/i;
const SKIPPED_NAMES = new Set(["thumbs.db", "desktop.ini"]);

// A data set from a ZIP's bytes: its entries' paths say their classes.
export async function imagesFromZip(bytes, file, options = {}) {
  const settings = settingsOf(options);
  const { budget } = settings;
  const limit = {
    maxBytes: budget.bytes,
    limitWhy: `an image file may take at most the ${formatMiB(budget.bytes)} of the data set (${budget.how})`,
  };
  const entries = zipEntries(bytes, file, { maxEntries: CEILINGS.entries }).map((entry) => ({
    path: entry.name,
    read: async () => readEntry(bytes, entry, file, limit),
  }));
  return imagesFromEntries(entries, file, settings);
}

// A data set from a folder's files: File objects of an <input webkitdirectory> (their webkitRelativePath
// begins with the picked folder's name), or { path, bytes } records. `folder` names it in messages.
export async function imagesFromFiles(files, folder, options = {}) {
  const settings = settingsOf(options);
  const { budget } = settings;
  const entries = Array.from(files, (f) => {
    const path = f.path ?? (f.webkitRelativePath || f.name);
    const read = async () => {
      if (f.bytes) return f.bytes;
      if (f.size > budget.bytes) {
        const why = `takes ${formatMiB(f.size)}, more than an image file may (the ${formatMiB(budget.bytes)} of the data set: ${budget.how})`;
        throw new DataError({ file: folder, entry: path }, why);
      }
      return new Uint8Array(await f.arrayBuffer());
    };
    return { path, read };
  });
  return imagesFromEntries(entries, folder, settings);
}

async function imagesFromEntries(entries, file, settings) {
  const { classes, items } = classify(entries, file);
  const channels = settings.color === "rgb" ? 3 : 1;
  let size = settings.size;
  let sizeOf = null; // the image that set the size, when no size is given
  let x = null;
  const checkBytes = () => {
    const what = `images of ${size.width}x${size.height} pixels, ${channels === 3 ? "RGB" : "gray"}`;
    checkDataBytes({ file }, items.length, size.height * size.width * channels, settings.budget, what);
  };
  if (size !== null) checkBytes();
  for (const [i, item] of items.entries()) {
    const where = { file, entry: item.path };
    const image = await decodeChecked(await item.read(), item.path, where, settings.decode);
    if (size === null) {
      size = { height: image.height, width: image.width };
      sizeOf = item.path;
      checkBytes();
    } else if (sizeOf !== null && (image.height !== size.height || image.width !== size.width)) {
      const sizes = `is ${image.width}x${image.height} pixels but ${sizeOf} is ${size.width}x${size.height}`;
      throw new DataError(where, `${sizes}: give a size to resize them all to`);
    }
    const width = size.height * size.width * channels;
    x ??= new Float32Array(items.length * width);
    writePixels(image, size, channels, x.subarray(i * width, (i + 1) * width));
    settings.onProgress?.({ done: i + 1, total: items.length });
  }
  const y = Int32Array.from(items, (item) => item.label);
  const paths = items.map((item) => item.path);
  const source = { format: "images", color: settings.color, resized: settings.size !== null, paths };
  const exampleShape = [size.height, size.width, channels];
  return makeDataset({ name: file, exampleShape, featureType: "float32", classes, x, y, source });
}

function settingsOf(options) {
  const settings = { ...IMAGE_DEFAULTS, ...options };
  const { decode, color, size } = settings;
  checkBudget("image", settings.budget);
  if (typeof decode !== "function") throw new TypeError("images need a decode(bytes, name) function");
  if (color !== "gray" && color !== "rgb") {
    throw new TypeError(`images need color "gray" or "rgb", not ${JSON.stringify(color)}`);
  }
  const positive = (d) => Number.isInteger(d) && d > 0;
  if (size !== null && !(positive(size.height) && positive(size.width))) {
    throw new TypeError(`an image size must be { height, width } in whole pixels, not ${JSON.stringify(size)}`);
  }
  return settings;
}

// Paths as lists of folder and file names; a ZIP's folder entries end in "/" and macOS's __MACOSX copies
// are left out. A top folder that holds everything (the picked folder, or a zipped folder) is dropped.
function splitPaths(entries) {
  const split = entries
    .map((entry) => {
      const parts = entry.path.split(/[\\/]/).filter((part) => part !== "" && part !== ".");
      return { ...entry, parts, folder: /[\\/]$/.test(entry.path) };
    })
    .filter((entry) => entry.parts.length > 0 && entry.parts[0] !== "__MACOSX");
  const files = split.filter((entry) => !entry.folder);
  const top = files[0]?.parts[0];
  const wrapped =
    files.every((entry) => entry.parts.length >= 2 && entry.parts[0] === top) &&
    files.some((entry) => entry.parts.length >= 3);
  if (wrapped) split.forEach((entry) => entry.parts.shift());
  return split.filter((entry) => entry.parts.length > 0);
}

// Hidden files (.DS_Store and the like) and Windows' thumbnails sit in folders unasked: they are skipped.
function isSkipped(parts) {
  const name = parts[parts.length - 1];
  return parts.some((part) => part.startsWith(".")) || SKIPPED_NAMES.has(name.toLowerCase());
}

// The classes (the top folders, sorted) and the images ({ path, label, read }, class by class, by path).
// Files deeper in a class folder belong to that class.
function classify(entries, file) {
  const folders = new Set();
  const images = [];
  for (const entry of splitPaths(entries)) {
    const path = entry.parts.join("/");
    if (entry.parts[0].startsWith(".")) continue; // a hidden folder (.git, .Trash) is no class
    if (entry.folder || entry.parts.length > 1) folders.add(entry.parts[0]);
    if (entry.folder || isSkipped(entry.parts)) continue;
    if (entry.parts.length === 1) {
      const why = "lies outside any class folder: put each image in a folder named for its class";
      throw new DataError({ file, entry: path }, why);
    }
    if (!IMAGE_NAME.test(path)) {
      throw new DataError({ file, entry: path }, "is not a PNG or JPEG image (.png, .jpg or .jpeg)");
    }
    images.push({ path, folder: entry.parts[0], read: entry.read });
  }
  const classes = [...folders].sort();
  if (classes.length === 0) throw new DataError({ file }, "holds no class folders of images");
  const byPath = (a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  const items = classes.flatMap((name, label) => {
    const own = images.filter((image) => image.folder === name).sort(byPath);
    if (own.length === 0) {
      throw new DataError({ file, entry: `${name}/` }, "is a class folder with no PNG or JPEG image");
    }
    return own.map((image) => ({ path: image.path, label, read: image.read }));
  });
  return { classes, items };
}

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];

async function decodeChecked(bytes, name, where, decode) {
  const starts = (magic) => magic.every((b, i) => bytes[i] === b);
  if (!starts(PNG) && !starts(JPEG)) {
    const first = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, "0")).join(" ");
    throw new DataError(where, `is neither PNG nor JPEG inside (its first bytes are ${first || "none"})`);
  }
  const header = starts(PNG) ? pngSize(bytes) : jpegSize(bytes);
  checkHeaderSize(header, starts(PNG) ? "PNG" : "JPEG", where);
  let image;
  try {
    image = await decode(bytes, name);
  } catch (error) {
    throw new DataError(where, `could not be decoded (${error?.message ?? error})`);
  }
  const { width, height, rgba } = image ?? {};
  const whole = (d) => Number.isInteger(d) && d > 0;
  if (!whole(width) || !whole(height) || rgba?.length !== width * height * 4) {
    const why = `was decoded to ${width}x${height} pixels with ${rgba?.length} RGBA bytes, which do not agree`;
    throw new DataError(where, why);
  }
  if (width !== header.width || height !== header.height) {
    throw new DataError(
      where,
      `was decoded to ${width}x${height} pixels, but its header says ${header.width}x${header.height}`,
    );
  }
  return image;
}

// { width, height } from a PNG's IHDR chunk (always the first), or null.
function pngSize(bytes) {
  const ihdr = [0x49, 0x48, 0x44, 0x52];
  if (bytes.length < 24 || !ihdr.every((b, i) => bytes[12 + i] === b)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

// { width, height } from a JPEG's frame header (SOF0 to SOF15 but DHT, JPG and DAC), or null when none
// comes before the image data.
function jpegSize(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 2;
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) return null;
    const marker = bytes[at + 1];
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2; // a marker without a segment
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return null; // the image data, or its end, before any frame header
    const sof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (sof) return at + 9 <= bytes.length ? { width: view.getUint16(at + 7), height: view.getUint16(at + 5) } : null;
    at += 2 + view.getUint16(at + 2);
  }
  return null;
}

function checkHeaderSize(header, kind, where) {
  if (header === null) {
    const part = kind === "PNG" ? "IHDR chunk" : "frame header";
    throw new DataError(where, `is a ${kind} whose header does not give its size (no ${part} where one belongs)`);
  }
  const { width, height } = header;
  const { imageSide, imagePixels } = CEILINGS;
  const size = `is ${width}x${height} pixels by its header`;
  if (width === 0 || height === 0) throw new DataError(where, `${size}: an image with no pixels`);
  if (width > imageSide || height > imageSide || width * height > imagePixels) {
    const most = `at most ${imageSide.toLocaleString("en")} pixels a side and ${imagePixels.toLocaleString("en")} in all`;
    throw new DataError(where, `${size}, larger than an image may be (${most})`);
  }
}

// One image into `out` (height * width * channels), resized bilinearly when its size differs: output pixel
// centres map onto the source's (x + 0.5) * w / width - 0.5, clamped to the edge, so same size is exact.
function writePixels({ width: w, height: h, rgba }, size, channels, out) {
  const xs = samplePoints(w, size.width);
  const ys = samplePoints(h, size.height);
  const rgb = [0, 0, 0];
  let at = 0;
  for (const sy of ys) {
    for (const sx of xs) {
      for (let c = 0; c < 3; c++) {
        const top = rgba[(sy.low * w + sx.low) * 4 + c] * (1 - sx.t) + rgba[(sy.low * w + sx.high) * 4 + c] * sx.t;
        const bottom = rgba[(sy.high * w + sx.low) * 4 + c] * (1 - sx.t) + rgba[(sy.high * w + sx.high) * 4 + c] * sx.t;
        rgb[c] = top * (1 - sy.t) + bottom * sy.t;
      }
      if (channels === 1) out[at++] = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255;
      else for (let c = 0; c < 3; c++) out[at++] = rgb[c] / 255;
    }
  }
}

function samplePoints(from, to) {
  return Array.from({ length: to }, (_, i) => {
    const s = Math.min(Math.max(((i + 0.5) * from) / to - 0.5, 0), from - 1);
    const low = Math.floor(s);
    return { low, high: Math.min(low + 1, from - 1), t: s - low };
  });
}
