// Image folders to data sets: a ZIP, or the files of a folder the user picked, with one subfolder per class
// (class names are the folder names, sorted by UTF-16 code units; examples class by class, each class's
// files sorted by path). PNG and JPEG only, decoded by the injected `decode` (the browser's in the app).
// An image becomes height x width x channels float32 values in [0, 1], row by row (HWC): channels 3 for
// "rgb", 1 for "gray" (0.299 R + 0.587 G + 0.114 B, ITU-R BT.601 luma); alpha is dropped. With `size`,
// every image is resized to it (bilinear, pixel centres aligned); without, every image must have the first
// image's size, and one that differs is refused by name.

import { unzipSync } from "fflate";
import { makeDataset } from "./dataset.js";
import { DataError } from "./errors.js";

export const IMAGE_DEFAULTS = Object.freeze({
  decode: null, // async (bytes, name) -> { width, height, rgba: Uint8ClampedArray }: required
  color: null, // "gray" or "rgb": required, so the choice is explicit
  size: null, // { height, width } to resize every image to, or null: all images must share one size
  onProgress: null, // ({ done, total }) after each image
});

const IMAGE_NAME = /\.(png|jpe?g)$/i;
const SKIPPED_NAMES = new Set(["thumbs.db", "desktop.ini"]);

// A data set from a ZIP's bytes: its entries' paths say their classes.
export async function imagesFromZip(bytes, file, options = {}) {
  const settings = settingsOf(options);
  let files;
  try {
    files = unzipSync(bytes);
  } catch (error) {
    throw new DataError({ file }, `is not a readable ZIP archive (${error.message})`);
  }
  const entries = Object.entries(files).map(([path, data]) => ({ path, read: async () => data }));
  return imagesFromEntries(entries, file, settings);
}

// A data set from a folder's files: File objects of an <input webkitdirectory> (their webkitRelativePath
// begins with the picked folder's name), or { path, bytes } records. `folder` names it in messages.
export async function imagesFromFiles(files, folder, options = {}) {
  const settings = settingsOf(options);
  const entries = Array.from(files, (f) => ({
    path: f.path ?? (f.webkitRelativePath || f.name),
    read: async () => f.bytes ?? new Uint8Array(await f.arrayBuffer()),
  }));
  return imagesFromEntries(entries, folder, settings);
}

async function imagesFromEntries(entries, file, settings) {
  const { classes, items } = classify(entries, file);
  const channels = settings.color === "rgb" ? 3 : 1;
  let size = settings.size;
  let sizeOf = null; // the image that set the size, when no size is given
  let x = null;
  for (const [i, item] of items.entries()) {
    const where = { file, entry: item.path };
    const image = await decodeChecked(await item.read(), item.path, where, settings.decode);
    if (size === null) {
      size = { height: image.height, width: image.width };
      sizeOf = item.path;
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
  return image;
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
