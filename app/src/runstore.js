// The Runs history's records in IndexedDB: a database of its own ("scellis-runs", apart from the
// checkpoint objects' "scellis", whose version and contents it never touches), one object store of
// records keyed by their id (runsmodel.js describes a record). The page writes them from its main
// thread; the checkpoint objects a deletion frees go through store.js.

import { committed, settled } from "./store.js";

const RUNS = "runs";
const VERSION = 1;

class RunStore {
  constructor(db) {
    this.db = db;
  }

  async all() {
    return settled(this.db.transaction(RUNS, "readonly").objectStore(RUNS).getAll());
  }

  async put(record) {
    const transaction = this.db.transaction(RUNS, "readwrite");
    transaction.objectStore(RUNS).put(record);
    await committed(transaction);
  }

  async delete(id) {
    const transaction = this.db.transaction(RUNS, "readwrite");
    transaction.objectStore(RUNS).delete(id);
    await committed(transaction);
  }

  close() {
    this.db.close();
  }
}

// Opens (creating on first use) the database `name` of run records.
export async function openRuns(name = "scellis-runs") {
  const request = indexedDB.open(name, VERSION);
  request.onupgradeneeded = () => request.result.createObjectStore(RUNS, { keyPath: "id" });
  return new RunStore(await settled(request));
}
