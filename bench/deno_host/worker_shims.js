// What the engine's worker needs under Deno and lacks, installed before engine_worker.js runs (host.js):
// 1. A browser worker's runtime as Pyodide sees it: Pyodide takes a global `Deno` or `process` for a
//    server runtime and then reads its indexURL (an http URL here, as on the page) as a file path. Both
//    globals are removed from this worker only; Deno's fetch, WebAssembly and WebGPU stay as they are.
// 2. An in-memory IndexedDB, just the part the engine's object store (app/src/store.js) uses: open with an
//    upgrade, one object store per name, transactions whose requests (get, put, count, delete, getAllKeys)
//    settle in order on later tasks, and a transaction that completes once no request of it is left to
//    run. Values are structured-cloned in and out, as IndexedDB's are. Nothing outlives the process: a
//    run's checkpoints live as long as the host does.

delete globalThis.Deno;
delete globalThis.process;

const later = (work) => setTimeout(work, 0);

class Request {
  constructor() {
    this.result = undefined;
    this.error = null;
    this.onsuccess = null;
    this.onerror = null;
  }

  succeed(result) {
    this.result = result;
    this.onsuccess?.({ target: this });
  }
}

class Transaction {
  constructor(stores) {
    this.stores = stores; // name -> Map of key -> value
    this.queue = [];
    this.error = null;
    this.oncomplete = null;
    this.onabort = null;
    later(() => this.drain());
  }

  objectStore(name) {
    const objects = this.stores.get(name);
    if (!objects) throw new DOMException(`no object store ${name}`, "NotFoundError");
    return new ObjectStoreShim(this, objects);
  }

  // A request whose `work()` runs on a later task, after the requests made before it.
  request(work) {
    const request = new Request();
    this.queue.push({ request, work });
    return request;
  }

  drain() {
    const next = this.queue.shift();
    if (next) {
      next.request.succeed(next.work());
      later(() => this.drain());
    } else {
      this.oncomplete?.({ target: this });
    }
  }
}

class ObjectStoreShim {
  constructor(transaction, objects) {
    this.transaction = transaction;
    this.objects = objects;
  }

  get(key) {
    return this.transaction.request(() => structuredClone(this.objects.get(key)));
  }

  put(value, key) {
    const copy = structuredClone(value);
    return this.transaction.request(() => {
      this.objects.set(key, copy);
      return key;
    });
  }

  count(key) {
    return this.transaction.request(() => (this.objects.has(key) ? 1 : 0));
  }

  delete(key) {
    return this.transaction.request(() => {
      this.objects.delete(key);
      return undefined;
    });
  }

  getAllKeys() {
    return this.transaction.request(() => [...this.objects.keys()].sort());
  }
}

class Database {
  constructor(name) {
    this.name = name;
    this.stores = new Map();
  }

  createObjectStore(name) {
    this.stores.set(name, new Map());
  }

  transaction(name) {
    return new Transaction(this.stores);
  }

  close() {}
}

const databases = new Map();

// IndexedDB's `open`: a new database gets `onupgradeneeded` first, then every open gets `onsuccess`.
function open(name) {
  const request = new Request();
  later(() => {
    const fresh = !databases.has(name);
    if (fresh) databases.set(name, new Database(name));
    request.result = databases.get(name);
    if (fresh) request.onupgradeneeded?.({ target: request });
    request.succeed(request.result);
  });
  return request;
}

globalThis.indexedDB ??= { open };
