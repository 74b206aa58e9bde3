// The Runs history's records in IndexedDB: a database of its own ("scellis-runs", apart from the
// checkpoint objects' "scellis", whose version and contents it never touches). Version 2 holds two
// object stores: "runs", the records keyed by their id (runsmodel.js describes a record and checks one
// read back), and "kept", the page's convenience state by name (the last run, which a later visit offers
// to resume): nothing that a run needs to go on. The page writes them from its main thread; the
// checkpoint objects a deletion frees go through store.js.

import { committed, settled } from "./store.js";

const RUNS = "runs";
const KEPT = "kept";
const VERSION = 2;

class RunStore {
  constructor(db) {
    this.db = db;
    db.onversionchange = () => db.close(); // a newer page upgrades the database: this one lets it go
  }

  // Every stored record as [{key, value}] (the key it is stored under, whatever the value holds).
  async all() {
    const request = this.db.transaction(RUNS, "readonly").objectStore(RUNS).openCursor();
    const found = [];
    return new Promise((resolve, reject) => {
      request.onsuccess = () => {
        const cursor = request.result;
        if (!cursor) return resolve(found);
        found.push({ key: cursor.primaryKey, value: cursor.value });
        cursor.continue();
      };
      request.onerror = () => reject(request.error);
    });
  }

  async put(record) {
    const transaction = this.db.transaction(RUNS, "readwrite");
    transaction.objectStore(RUNS).put(record);
    await committed(transaction);
  }

  // Deletes the record stored under `key` (a record's id, or the key a damaged record is stored under).
  async delete(key) {
    const transaction = this.db.transaction(RUNS, "readwrite");
    transaction.objectStore(RUNS).delete(key);
    await committed(transaction);
  }

  // The convenience state kept under `name`, or null.
  async kept(name) {
    return (await settled(this.db.transaction(KEPT, "readonly").objectStore(KEPT).get(name))) ?? null;
  }

  async keep(name, value) {
    const transaction = this.db.transaction(KEPT, "readwrite");
    transaction.objectStore(KEPT).put(value, name);
    await committed(transaction);
  }

  close() {
    this.db.close();
  }
}

// Opens (creating on first use, upgrading one of an earlier version) the database `name`. Another tab
// holding it at an earlier version that does not let go: an error saying so, not a wait without end.
export async function openRuns(name = "scellis-runs") {
  const request = indexedDB.open(name, VERSION);
  request.onupgradeneeded = (event) => {
    const db = request.result;
    if (event.oldVersion < 1) db.createObjectStore(RUNS, { keyPath: "id" });
    if (event.oldVersion < 2) db.createObjectStore(KEPT);
  };
  const blocked = new Promise((_, reject) => {
    request.onblocked = () => {
      const error = new Error("another tab of this site holds the Runs history open: close it and reload this page");
      error.name = "RunsBlocked";
      reject(error);
    };
  });
  return new RunStore(await Promise.race([settled(request), blocked]));
}
