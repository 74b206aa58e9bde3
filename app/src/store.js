// The content-addressed object store in the page: one IndexedDB database holding one object store of
// byte arrays keyed by "sha256:" and the hex SHA-256 of their bytes. Writing is idempotent (an object
// already there whole is left as it is; one whose stored bytes differ is replaced, in the same
// transaction); every read hashes the bytes again and refuses them if they differ.
// Errors carry the name and a `detail` object that the engine (runtime/browser_store.py) reads.

const OBJECTS = "objects";
const VERSION = 1;
const KEY = /^sha256:[0-9a-f]{64}$/;

function storeError(name, message, detail) {
  const error = new Error(message);
  error.name = name;
  error.detail = detail;
  return error;
}

export function checkKey(key) {
  if (typeof key !== "string" || !KEY.test(key)) {
    throw storeError("BadKey", `not an object key: ${JSON.stringify(key)}`, { key: String(key) });
  }
  return key;
}

// The key of `bytes` (an ArrayBuffer or a view of one).
export async function keyOf(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

// IndexedDB's request and transaction events as promises (runstore.js uses them too).
export function settled(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

export function committed(transaction) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onabort = () => reject(transaction.error ?? new Error("the transaction was aborted"));
  });
}

// Whether `stored` (what IndexedDB holds: any value) is an ArrayBuffer of exactly `value`'s bytes.
export function sameBytes(stored, value) {
  if (!(stored instanceof ArrayBuffer) || stored.byteLength !== value.byteLength) return false;
  const a = new Uint8Array(stored);
  const b = new Uint8Array(value);
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

function isQuotaError(error) {
  return error?.name === "QuotaExceededError";
}

class ObjectStore {
  constructor(db, name) {
    this.db = db;
    this.where = `IndexedDB database "${name}"`;
  }

  // Stores `bytes` unless the object under its key already holds exactly them (a damaged one is
  // replaced); resolves to the key. The comparison runs inside the write's transaction, so the object
  // is whole when the put resolves. A write the origin's quota cannot hold aborts its own transaction
  // only: every object stored before stays as it was.
  async put(bytes) {
    // Our own copy: a view's memory (Pyodide's heap) may move or change while the hash is computed.
    const value = ArrayBuffer.isView(bytes)
      ? bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
      : bytes.slice(0);
    const key = await keyOf(value);
    const transaction = this.db.transaction(OBJECTS, "readwrite", { durability: "strict" });
    const objects = transaction.objectStore(OBJECTS);
    const found = objects.get(key);
    found.onsuccess = () => {
      if (!sameBytes(found.result, value)) objects.put(value, key);
    };
    try {
      await committed(transaction);
    } catch (error) {
      if (!isQuotaError(error)) throw error;
      const why = "the browser's storage quota for this site is used up";
      throw storeError("StoreFull", `${this.where} is full: writing object ${key} (${value.byteLength} bytes) failed`, {
        key,
        size: value.byteLength,
        where: this.where,
        why,
      });
    }
    return key;
  }

  // The bytes stored under `key` (a Uint8Array), once they are shown to hash to it.
  async get(key) {
    checkKey(key);
    const found = await settled(this.db.transaction(OBJECTS, "readonly").objectStore(OBJECTS).get(key));
    if (found === undefined)
      throw storeError("MissingObject", `no object ${key} in ${this.where}`, { key, where: this.where });
    const bytes = found instanceof ArrayBuffer ? new Uint8Array(found) : new Uint8Array(0);
    const hash = found instanceof ArrayBuffer ? await keyOf(bytes) : "(not bytes)";
    if (hash !== key) {
      const detail = { key, where: this.where, found: hash, size: bytes.byteLength };
      throw storeError("CorruptObject", `object ${key} in ${this.where} is corrupt: its bytes hash to ${hash}`, detail);
    }
    return bytes;
  }

  // Whatever is stored under `key` (any key, any value: undefined when none), unverified: for the
  // storage check (storagecheck.js), which says what is wrong with it.
  async raw(key) {
    return settled(this.db.transaction(OBJECTS, "readonly").objectStore(OBJECTS).get(key));
  }

  // Deletes whatever is stored under `key`, well-formed or not (the storage check's damaged objects).
  async remove(key) {
    const transaction = this.db.transaction(OBJECTS, "readwrite");
    transaction.objectStore(OBJECTS).delete(key);
    await committed(transaction);
  }

  async has(key) {
    checkKey(key);
    return (await settled(this.db.transaction(OBJECTS, "readonly").objectStore(OBJECTS).count(key))) > 0;
  }

  // Every key, sorted (IndexedDB orders string keys by code unit, the same order as Python's for ASCII).
  async keys() {
    return settled(this.db.transaction(OBJECTS, "readonly").objectStore(OBJECTS).getAllKeys());
  }

  async delete(key) {
    checkKey(key);
    const transaction = this.db.transaction(OBJECTS, "readwrite");
    const objects = transaction.objectStore(OBJECTS);
    const count = objects.count(key);
    count.onsuccess = () => {
      if (count.result > 0) objects.delete(key);
    };
    await committed(transaction);
    if (count.result === 0)
      throw storeError("MissingObject", `no object ${key} in ${this.where}`, { key, where: this.where });
  }

  close() {
    this.db.close();
  }
}

// Opens (creating on first use) the database `name` and its object store.
export async function openStore(name = "scellis") {
  const request = indexedDB.open(name, VERSION);
  request.onupgradeneeded = () => request.result.createObjectStore(OBJECTS);
  return new ObjectStore(await settled(request), name);
}
