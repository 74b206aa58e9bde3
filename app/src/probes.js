// The WebGPU allocation probe's answers, kept per adapter across visits (in localStorage), so a later
// visit plans without allocating anything. An answer is kept only once the device is known to have
// been alive after the probe (a lost device "allocates" anything: its errors are never reported). An
// entry is trusted only when it is whole and in this format (earlier formats kept answers without that
// confirmation), was made for this very adapter (its identity: adapter info, limits, the browser's user
// agent), and its answers are plausible: none fits more than any device has, and none fits a size above
// one that does not. Anything else is ignored and replaced by the next answer measured. No DOM.

import { GpuLostError } from "./gpulost.js";

export const FORMAT = "scellis-probes/2";
// More than any device WebGPU reaches has: an answer that this fits is a lost or lying device's.
export const ABSURD_BYTES = 2 ** 40;
const PREFIX = "scellis.probes:";
const KEPT = 64; // answers per adapter (the newest); a plan asks a handful
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

// What identifies an adapter, as plain data with a fixed key order (so it compares as JSON text).
export function adapterIdentity(adapter, userAgent) {
  const info = adapter.info ?? {};
  const limits = {};
  // GPUSupportedLimits' values are attributes on its prototype: `for in` sees them, Object.keys does not
  const names = [];
  for (const name in adapter.limits) names.push(name);
  for (const name of names.sort()) {
    if (typeof adapter.limits[name] === "number") limits[name] = adapter.limits[name];
  }
  const text = (value) => (typeof value === "string" ? value : "");
  return {
    vendor: text(info.vendor),
    architecture: text(info.architecture),
    device: text(info.device),
    description: text(info.description),
    limits,
    userAgent: text(userAgent),
  };
}

// The adapter as the executor names it: its description, else its vendor and architecture.
function adapterName(identity) {
  return identity.description || [identity.vendor, identity.architecture].filter(Boolean).join(" ") || "WebGPU adapter";
}

// FNV-1a over the identity's JSON text: a short storage key (the entry holds the whole identity).
export function storageKey(identity) {
  let hash = 0x811c9dc5;
  for (const char of JSON.stringify(identity)) {
    hash = Math.imul(hash ^ char.codePointAt(0), 0x01000193) >>> 0;
  }
  return `${PREFIX}${hash.toString(16).padStart(8, "0")}`;
}

function validAnswer(answer) {
  return (
    answer !== null &&
    typeof answer === "object" &&
    Number.isSafeInteger(answer.bytes) &&
    answer.bytes > 0 &&
    !(answer.fits === true && answer.bytes >= ABSURD_BYTES) &&
    typeof answer.fits === "boolean" &&
    typeof answer.measured === "string" &&
    ISO_TIME.test(answer.measured) &&
    !Number.isNaN(Date.parse(answer.measured))
  );
}

// Whether no size is said to fit above one said not to (a device's memory does not work so).
function consistent(answers) {
  const fits = answers.filter((a) => a.fits).map((a) => a.bytes);
  const not = answers.filter((a) => !a.fits).map((a) => a.bytes);
  return fits.length === 0 || not.length === 0 || Math.max(...fits) < Math.min(...not);
}

// The answers stored for this adapter, by size: empty when there is no entry, or one that is corrupt,
// in another format, made for another adapter, or implausible.
export function readAnswers(storage, identity) {
  const answers = new Map();
  let entry;
  try {
    entry = JSON.parse(storage.getItem(storageKey(identity)));
  } catch {
    return answers;
  }
  const trusted =
    entry !== null &&
    typeof entry === "object" &&
    entry.format === FORMAT &&
    JSON.stringify(entry.identity) === JSON.stringify(identity) &&
    Array.isArray(entry.answers) &&
    entry.answers.length <= KEPT &&
    entry.answers.every(validAnswer) &&
    consistent(entry.answers);
  if (!trusted) return answers;
  for (const { bytes, fits, measured } of entry.answers) answers.set(bytes, { fits, measured });
  return answers;
}

// Adds (or replaces) one answer; an untrusted entry is replaced whole. Storage that refuses (quota,
// privacy settings) leaves the answer unkept, never an error.
export function recordAnswer(storage, identity, bytes, fits, measured) {
  const answers = readAnswers(storage, identity);
  answers.delete(bytes);
  // older answers this one contradicts (free memory changes) go, so the entry stays consistent
  for (const [size, answer] of answers) {
    if (fits ? !answer.fits && size <= bytes : answer.fits && size >= bytes) answers.delete(size);
  }
  answers.set(bytes, { fits, measured });
  const kept = [...answers].slice(-KEPT).map(([size, answer]) => ({ bytes: size, ...answer }));
  try {
    storage.setItem(storageKey(identity), JSON.stringify({ format: FORMAT, identity, answers: kept }));
  } catch {
    // not kept: the next visit measures again
  }
}

// localStorage when the page may use it; otherwise answers kept for the page's life only.
export function pageStorage() {
  try {
    const storage = globalThis.localStorage;
    if (storage) return storage;
  } catch {
    // access denied (e.g. storage blocked for this site)
  }
  const items = new Map();
  return {
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => items.set(key, String(value)),
    removeItem: (key) => items.delete(key),
  };
}

// The probe behind a store: `measure(nbytes)` answers from storage when it can ({fits, measured: ISO
// time, stored: true}), else runs `probe` and keeps its answer; `forget()` drops this adapter's answers.
// `lost()` resolves to null while the device is alive, else to its GPUDeviceLostInfo: it is asked after
// each probe, and an answer from a device lost by then is neither kept nor given (a GpuLostError is).
// An answer that more than any device has fits is given but not kept.
export function probeStore(storage, identity, probe, now = () => new Date(), lost = async () => null) {
  return {
    async measure(nbytes) {
      const known = readAnswers(storage, identity).get(nbytes);
      if (known) return { ...known, stored: true };
      const fits = await probe(nbytes);
      const gone = await lost();
      if (gone) throw new GpuLostError(gone, adapterName(identity), "the allocation probe");
      const measured = now().toISOString();
      if (!(fits && nbytes >= ABSURD_BYTES)) recordAnswer(storage, identity, nbytes, fits, measured);
      return { fits, measured, stored: false };
    },
    forget() {
      try {
        storage.removeItem(storageKey(identity));
      } catch {
        // nothing to forget where nothing could be kept
      }
    },
  };
}
