// The Storage card: checks every checkpoint object in this browser's IndexedDB (its bytes hash to its
// key) and lists the damage, offering to delete it; and frees the space of objects nothing keeps. What
// keeps an object: a Runs record refers to it (runsmodel.referencedKeys, and any key a record holds), or
// a kept checkpoint names it as its history (a chain of segments: py/scellis/store/history.py). The
// logic (checkObjects, unusedObjects, referencesOf) takes the store as an argument; the card is DOM.

import { byId, element } from "./dom.js";
import { errorText } from "./format.js";
import { referencedKeys } from "./runsmodel.js";
import { openRuns } from "./runstore.js";
import { keyOf, openStore } from "./store.js";

const KEY = /^sha256:[0-9a-f]{64}$/;
const SEGMENT = "scellis.history/1";
const MAX_HEADER = 100_000_000; // bytes of a tensor file's JSON header (as the engine's reader)
const KIND_TEXT = {
  corrupt: "corrupt: its bytes hash to another key",
  "not bytes": "not an object's bytes",
  misnamed: "stored under a name that is no object key",
};

// JSON text parsed, or null when it is not JSON (never throws: the text comes from storage).
function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// The keys an object's bytes keep: a checkpoint (a tensor file whose metadata names its history) its
// history's last segment; a history segment the one before it. Anything else keeps nothing.
export function referencesOf(bytes) {
  if (bytes.byteLength < 8) return [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getBigUint64(0, true);
  if (length <= BigInt(Math.min(MAX_HEADER, bytes.byteLength - 8))) {
    const header = parsed(new TextDecoder().decode(bytes.subarray(8, 8 + Number(length))));
    const log = typeof header?.__metadata__?.log === "string" ? parsed(header.__metadata__.log) : null;
    if (typeof log?.key === "string" && KEY.test(log.key)) return [log.key];
  }
  const segment = bytes[0] === 0x7b ? parsed(new TextDecoder().decode(bytes)) : null;
  if (segment?.format === SEGMENT && typeof segment.previous === "string" && KEY.test(segment.previous)) {
    return [segment.previous];
  }
  return [];
}

// Every object verified: {whole, damage: [{key, kind, detail}]} (kind: "corrupt", "not bytes",
// "misnamed"). `progress(done, total)` is told as it goes.
export async function checkObjects(store, progress = () => {}) {
  const keys = await store.keys();
  const out = { whole: 0, damage: [] };
  for (const [i, key] of keys.entries()) {
    const value = await store.raw(key);
    if (typeof key !== "string" || !KEY.test(key)) {
      out.damage.push({ key: String(key), raw: key, kind: "misnamed", detail: KIND_TEXT.misnamed });
    } else if (!(value instanceof ArrayBuffer)) {
      out.damage.push({ key, raw: key, kind: "not bytes", detail: KIND_TEXT["not bytes"] });
    } else {
      const found = await keyOf(value);
      if (found === key) out.whole += 1;
      else
        out.damage.push({ key, raw: key, kind: "corrupt", detail: `${value.byteLength} bytes that hash to ${found}` });
    }
    progress(i + 1, keys.length);
  }
  return out;
}

// Every object key anywhere in a record (walked without recursion): a record this page cannot read
// still keeps what it names.
function keysIn(record) {
  const found = new Set();
  const stack = [record];
  while (stack.length) {
    const value = stack.pop();
    if (typeof value === "string" && KEY.test(value)) found.add(value);
    else if (value && typeof value === "object") stack.push(...Object.values(value));
  }
  return found;
}

// The keys the Runs `records` keep, each record's checkpoints by runsmodel's reading and any other key
// it holds.
export function rootsOf(records) {
  const roots = new Set();
  for (const record of records) {
    try {
      for (const key of referencedKeys(record)) roots.add(key);
    } catch {
      // a record in another shape: its keys are found below all the same
    }
    for (const key of keysIn(record)) roots.add(key);
  }
  return roots;
}

// The objects nothing keeps: [{key, size}] of the whole objects neither in `roots` nor named (as its
// history) by an object kept. Damaged objects are left to the check.
export async function unusedObjects(store, roots) {
  const sizes = new Map();
  const refs = new Map();
  for (const key of await store.keys()) {
    const value = await store.raw(key);
    if (typeof key !== "string" || !KEY.test(key) || !(value instanceof ArrayBuffer)) continue;
    if ((await keyOf(value)) !== key) continue;
    sizes.set(key, value.byteLength);
    refs.set(key, referencesOf(new Uint8Array(value)));
  }
  const kept = new Set();
  const stack = [...roots];
  while (stack.length) {
    const key = stack.pop();
    if (kept.has(key)) continue;
    kept.add(key);
    stack.push(...(refs.get(key) ?? []));
  }
  return [...sizes].filter(([key]) => !kept.has(key)).map(([key, size]) => ({ key, size }));
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

function runGoing() {
  return byId("run")?.dataset.phase === "running" || byId("shared")?.dataset.state === "running";
}

// The card: "Check storage" lists damaged objects (and offers to delete them); "Find unused objects"
// lists what nothing keeps (and offers to delete it). data-state says where it is: idle, checking,
// checked, finding, found, deleting, deleted, refused, error.
export class StorageCheck {
  constructor() {
    this.pending = []; // the raw keys the delete button would delete
    this.unused = false; // whether they are unused objects (looked up again before they go)
  }

  static mount() {
    const card = new StorageCheck();
    byId("storage").hidden = false;
    byId("storage-check").addEventListener("click", () => card.act("checking", () => card.check()));
    byId("storage-unused").addEventListener("click", () => card.act("finding", () => card.findUnused()));
    byId("storage-delete").addEventListener("click", () => card.act("deleting", () => card.remove()));
    card.state("idle");
    return card;
  }

  state(name, text) {
    byId("storage").dataset.state = name;
    if (text !== undefined) byId("storage-status").textContent = text;
  }

  // One action at a time, its buttons off while it runs; a failure is said, never thrown.
  async act(state, action) {
    const buttons = ["storage-check", "storage-unused", "storage-delete"].map(byId);
    for (const button of buttons) button.disabled = true;
    this.state(state, state === "checking" ? "Checking…" : state === "finding" ? "Looking…" : "Deleting…");
    try {
      await action();
    } catch (error) {
      console.error(error);
      this.show([], null);
      this.state("error", `The storage check failed: ${errorText(error)}`);
    } finally {
      for (const button of buttons.slice(0, 2)) button.disabled = false;
      byId("storage-delete").disabled = !this.pending.length;
    }
  }

  show(items, offer, unused = false) {
    byId("storage-list").replaceChildren(...items);
    this.pending = offer ? offer.keys : [];
    this.unused = unused;
    byId("storage-delete").hidden = !offer;
    if (offer) byId("storage-delete").textContent = offer.label;
  }

  async check() {
    const store = await openStore();
    try {
      const status = (done, total) => (byId("storage-status").textContent = `Checking… ${done} of ${total}`);
      const { whole, damage } = await checkObjects(store, status);
      const items = damage.map((d) => element("li", `${d.key}: ${d.detail}`, { "data-kind": d.kind }));
      const offer = damage.length
        ? {
            keys: damage.map((d) => d.raw),
            label: `Delete the ${plural(damage.length, "damaged object", "damaged objects")}`,
          }
        : null;
      this.show(items, offer);
      byId("storage").dataset.damaged = String(damage.length);
      const found = damage.length ? `, ${plural(damage.length, "is", "are")} damaged:` : ": every one is whole.";
      this.state("checked", `${plural(whole + damage.length, "object", "objects")} checked${found}`);
    } finally {
      store.close();
    }
  }

  async findUnused() {
    if (runGoing()) {
      this.show([], null);
      this.state("refused", "A run is going: look for unused objects once it is paused or has ended.");
      return;
    }
    const runs = await openRuns();
    const store = await openStore();
    try {
      const unused = await unusedObjects(store, rootsOf(await runs.all()));
      const bytes = unused.reduce((sum, u) => sum + u.size, 0);
      const items = unused.map((u) => element("li", `${u.key} (${u.size.toLocaleString("en")} bytes)`));
      const label = `Delete the ${plural(unused.length, "unused object", "unused objects")}`;
      this.show(items, unused.length ? { keys: unused.map((u) => u.key), label } : null, true);
      byId("storage").dataset.unused = String(unused.length);
      const text = unused.length
        ? `${plural(unused.length, "object", "objects")} (${bytes.toLocaleString("en")} bytes) no run refers to:`
        : "Every object is kept by a run.";
      this.state("found", text);
    } finally {
      runs.close();
      store.close();
    }
  }

  // Deletes what was listed; unused objects only if still unused (a run since may keep one again).
  async remove() {
    if (this.unused && runGoing()) {
      this.show([], null);
      this.state("refused", "A run is going: look for unused objects once it is paused or has ended.");
      return;
    }
    let keys = this.pending;
    const store = await openStore();
    try {
      if (this.unused) {
        const runs = await openRuns();
        const still = new Set((await unusedObjects(store, rootsOf(await runs.all()))).map((u) => u.key));
        runs.close();
        keys = keys.filter((key) => still.has(key));
      }
      for (const key of keys) await store.remove(key);
    } finally {
      store.close();
    }
    this.show([], null);
    this.state("deleted", `Deleted ${plural(keys.length, "object", "objects")}.`);
  }
}
