// Byte layouts shared by data import: little-endian views of typed arrays (the engine's files and the
// content hash are little-endian whatever the host), concatenation, and SHA-256 keys as the store writes them.

function hostIsLittleEndian() {
  return new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
}

// Reverses each `size`-byte element in place: big-endian hosts only (every browser host today is little-endian).
export function swapBytes(bytes, size) {
  for (let at = 0; at + size <= bytes.length; at += size) bytes.subarray(at, at + size).reverse();
}

// The little-endian bytes of a typed array: a view without copying on a little-endian host.
export function littleEndianBytes(array) {
  const view = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  if (hostIsLittleEndian() || array.BYTES_PER_ELEMENT === 1) return view;
  const copy = view.slice();
  swapBytes(copy, array.BYTES_PER_ELEMENT);
  return copy;
}

// Host-order typed array of `Type` over a copy of `bytes` (little-endian in the file): the copy is aligned,
// as typed arrays need, wherever the bytes sat in the file.
export function typedFromLittleEndian(Type, bytes) {
  const copy = bytes.slice();
  if (!hostIsLittleEndian()) swapBytes(copy, Type.BYTES_PER_ELEMENT);
  return new Type(copy.buffer, 0, copy.length / Type.BYTES_PER_ELEMENT);
}

export function concatBytes(parts) {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// The key the object store and the manifest use: "sha256:" and the hex digest.
export async function sha256Key(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
