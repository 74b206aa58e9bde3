// ZIP archives (image folders, NumPy's .npz) read from their central directory, with every entry's
// declared size checked before anything is inflated: an entry may declare at most `maxBytes`, no more
// than deflate can produce from its compressed bytes (DEFLATE_MAX_RATIO to 1), and must inflate to exactly
// the size and CRC-32 it declares. Inflating stops as soon as an entry passes its declared size, so a
// lying entry costs no more than an honest one. Stored (0) and deflated (8) entries, ZIP64 included.

import { Inflate } from "fflate";
import { DataError } from "./errors.js";

const EOCD = 0x06054b50; // end of central directory
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const EOCD_SEARCH = 22 + 0xffff; // the record, after which only its comment (at most 65,535 bytes) follows
const INFLATE_CHUNK = 16384; // compressed bytes handed to the inflater at a time

// Deflate's largest expansion: one 258-byte match from each pair of bits, about 1032 to 1.
export const DEFLATE_MAX_RATIO = 1032;

// The archive's entries ({ name, rawName, method, flags, crc, compressedSize, size, offset }), as its central
// directory lists them: `file` names it in messages; at most `maxEntries` of them.
export function zipEntries(bytes, file, { maxEntries }) {
  const fail = (why) => new DataError({ file }, `is not a readable ZIP archive (${why})`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = findEnd(bytes, view);
  if (end < 0) throw fail("it has no end-of-archive record");
  let count = view.getUint16(end + 10, true);
  let size = view.getUint32(end + 12, true);
  let start = view.getUint32(end + 16, true);
  let directoryEnd = end;
  if (count === 0xffff || size === 0xffffffff || start === 0xffffffff) {
    ({ count, size, start, at: directoryEnd } = zip64End(view, end, fail));
  }
  // the directory ends where the end records begin: a count, size or offset that lies shows here
  if (start + size !== directoryEnd) {
    throw fail(`its directory of ${size} bytes at byte ${start} does not end where its end record begins`);
  }
  if (count > maxEntries) {
    throw new DataError(
      { file },
      `holds ${count.toLocaleString("en")} entries, more than the ${maxEntries.toLocaleString("en")} read`,
    );
  }
  if (count * 46 > size) throw fail(`its directory of ${size} bytes cannot hold the ${count} entries it counts`);
  const entries = [];
  const names = new Set();
  for (let i = 0, at = start; i < count; i++) {
    const { entry, next } = centralEntry(bytes, view, at, start + size, fail);
    if (names.has(entry.name)) throw new DataError({ file, entry: entry.name }, "appears twice in the archive");
    names.add(entry.name);
    entries.push(entry);
    at = next;
    if (i === count - 1 && at !== start + size) {
      throw fail(`its directory holds more than the ${count} entries its end record counts`);
    }
  }
  return entries;
}

function findEnd(bytes, view) {
  const last = Math.max(0, bytes.length - EOCD_SEARCH);
  for (let at = bytes.length - 22; at >= last; at--) {
    if (view.getUint32(at, true) === EOCD) return at;
  }
  return -1;
}

function zip64End(view, end, fail) {
  const locator = end - 20;
  if (locator < 0 || view.getUint32(locator, true) !== ZIP64_LOCATOR) throw fail("its ZIP64 locator is missing");
  const at = safeNumber(view.getBigUint64(locator + 8, true), fail);
  if (at + 56 > locator || view.getUint32(at, true) !== ZIP64_EOCD) throw fail("its ZIP64 end record is missing");
  const read = (offset) => safeNumber(view.getBigUint64(at + offset, true), fail);
  return { count: read(32), size: read(40), start: read(48), at };
}

function safeNumber(big, fail) {
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw fail(`it declares a size or offset of ${big}`);
  return Number(big);
}

// The central directory's record at `at` (ending by `limit`): the entry and where the next one starts.
function centralEntry(bytes, view, at, limit, fail) {
  if (at + 46 > limit || view.getUint32(at, true) !== CENTRAL) throw fail(`its directory is broken at byte ${at}`);
  const nameLength = view.getUint16(at + 28, true);
  const extraLength = view.getUint16(at + 30, true);
  const next = at + 46 + nameLength + extraLength + view.getUint16(at + 32, true);
  if (next > limit) throw fail(`its directory entry at byte ${at} runs past the directory`);
  const flags = view.getUint16(at + 8, true);
  const rawName = bytes.subarray(at + 46, at + 46 + nameLength);
  const entry = {
    name: entryName(rawName, flags),
    rawName,
    method: view.getUint16(at + 10, true),
    flags,
    crc: view.getUint32(at + 16, true),
    compressedSize: view.getUint32(at + 20, true),
    size: view.getUint32(at + 24, true),
    offset: view.getUint32(at + 42, true),
  };
  readZip64Extra(view, at + 46 + nameLength, extraLength, entry, fail);
  return { entry, next };
}

// Names are UTF-8 (flagged so, or valid as such); other bytes are read as Latin-1.
function entryName(raw, flags) {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(raw);
  } catch {
    if (flags & 0x800) return new TextDecoder("utf-8").decode(raw);
    return new TextDecoder("latin1").decode(raw);
  }
}

// The ZIP64 extra field (id 1) holds, in order, each of size, compressed size and offset that is 0xffffffff.
function readZip64Extra(view, at, length, entry, fail) {
  const end = at + length;
  while (at + 4 <= end) {
    const id = view.getUint16(at, true);
    const size = view.getUint16(at + 2, true);
    if (at + 4 + size > end) throw fail(`the extra field of ${JSON.stringify(entry.name)} runs past its entry`);
    if (id === 1) {
      let field = at + 4;
      for (const key of ["size", "compressedSize", "offset"]) {
        if (entry[key] !== 0xffffffff) continue;
        if (field + 8 > at + 4 + size) throw fail(`the ZIP64 field of ${JSON.stringify(entry.name)} is cut short`);
        entry[key] = safeNumber(view.getBigUint64(field, true), fail);
        field += 8;
      }
    }
    at += 4 + size;
  }
}

// The entry's bytes, inflated, after its declared size is checked (at most `maxBytes`, `limitWhy`
// saying what sets it) and checked again against what it inflates to.
export function readEntry(bytes, entry, file, { maxBytes, limitWhy }) {
  const where = { file, entry: entry.name };
  const fail = (why) => new DataError(where, why);
  if (entry.flags & 0x41) throw fail("is encrypted; save the archive without a password");
  if (entry.flags & 0x20) throw fail("holds patch data (flag bit 5), which is no file's bytes");
  if (entry.method !== 0 && entry.method !== 8) {
    throw fail(`is compressed with method ${entry.method}; entries stored or deflated (methods 0 and 8) are read`);
  }
  if (entry.size > maxBytes) {
    const sizes = `${entry.size.toLocaleString("en")} bytes, more than ${maxBytes.toLocaleString("en")}`;
    throw fail(`declares ${sizes} (${limitWhy})`);
  }
  const stored = entry.method === 0;
  if (stored ? entry.size !== entry.compressedSize : entry.size > entry.compressedSize * DEFLATE_MAX_RATIO + 1024) {
    const declared = `declares ${entry.size.toLocaleString("en")} bytes from ${entry.compressedSize.toLocaleString("en")} compressed`;
    throw fail(
      stored
        ? `${declared}, but a stored entry is not compressed`
        : `${declared}: more than deflate can produce (${DEFLATE_MAX_RATIO} to 1 at most)`,
    );
  }
  const data = entryData(bytes, entry, fail);
  const out = stored ? data.slice() : inflateExactly(data, entry.size, fail);
  const crc = crc32(out);
  if (crc !== entry.crc) throw fail(`is damaged: its CRC-32 is ${hex(crc)}, not the ${hex(entry.crc)} it declares`);
  return out;
}

function entryData(bytes, entry, fail) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = entry.offset;
  if (at + 30 > bytes.length || view.getUint32(at, true) !== LOCAL) throw fail(`has no local header at byte ${at}`);
  const nameLength = view.getUint16(at + 26, true);
  const name = bytes.subarray(at + 30, at + 30 + nameLength);
  if (name.length !== entry.rawName.length || name.some((b, i) => b !== entry.rawName[i])) {
    throw fail(`has a local header at byte ${at} that names another entry`);
  }
  const start = at + 30 + nameLength + view.getUint16(at + 28, true);
  if (start + entry.compressedSize > bytes.length)
    throw fail("is cut short: its data runs past the end of the archive");
  return bytes.subarray(start, start + entry.compressedSize);
}

function inflateExactly(data, size, fail) {
  const out = new Uint8Array(size);
  let length = 0;
  const inflater = new Inflate((chunk) => {
    if (length + chunk.length > size)
      throw fail(`inflates to more than the ${size.toLocaleString("en")} bytes it declares`);
    out.set(chunk, length);
    length += chunk.length;
  });
  try {
    for (let at = 0; at < data.length || at === 0; at += INFLATE_CHUNK) {
      inflater.push(data.subarray(at, at + INFLATE_CHUNK), at + INFLATE_CHUNK >= data.length);
    }
  } catch (error) {
    if (error instanceof DataError) throw error;
    throw fail(`cannot be inflated (${error?.message ?? error})`);
  }
  if (length !== size)
    throw fail(`inflates to ${length.toLocaleString("en")} bytes, not the ${size.toLocaleString("en")} it declares`);
  return out;
}

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes) {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function hex(value) {
  return value.toString(16).padStart(8, "0");
}
