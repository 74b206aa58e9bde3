// Calls between the page and the engine's worker over one message port (a Worker, or a MessagePort in
// tests): `connect(port)` gives the caller `call(name, ...args)`, a promise of the answer; `serve(port,
// handlers)` answers each call with its handler's result or error. Either side may also send events
// (`emit`), which the other side's `on(name, handler)` receives. Only data crosses: results and errors
// are structured-cloned, and an error keeps its message and, for Python's, its exception type.

// An error as data: message, name and (Pyodide's PythonError) the Python exception type.
function errorData(error) {
  if (error instanceof Error) return { message: error.message, name: error.name, type: error.type };
  return { message: String(error), name: "Error" };
}

// The error again on the calling side; errorText (format.js) reads `type` as it reads a PythonError's.
export function errorFrom(data) {
  const error = new Error(data.message);
  error.name = data.name ?? "Error";
  if (data.type !== undefined) error.type = data.type;
  return error;
}

function listen(port, onMessage) {
  if (typeof port.addEventListener === "function") {
    port.addEventListener("message", (event) => onMessage(event.data));
    port.start?.();
  } else {
    port.onmessage = (event) => onMessage(event.data);
  }
}

function eventsOf(port) {
  const handlers = new Map();
  return {
    on(name, handler) {
      handlers.set(name, handler);
    },
    emit(name, value) {
      port.postMessage({ event: name, value });
    },
    deliver(message) {
      handlers.get(message.event)?.(message.value);
    },
  };
}

// The caller's side. Calls still waiting when the port closes stay pending; `close()` rejects them.
export function connect(port) {
  const waiting = new Map();
  const events = eventsOf(port);
  let next = 1;
  listen(port, (message) => {
    if (message.event !== undefined) return events.deliver(message);
    const pending = waiting.get(message.id);
    if (!pending) return undefined;
    waiting.delete(message.id);
    return message.ok ? pending.resolve(message.result) : pending.reject(errorFrom(message.error));
  });
  return {
    call(name, ...args) {
      const id = next++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        port.postMessage({ id, name, args });
      });
    },
    on: events.on,
    emit: events.emit,
    close(reason = "the engine stopped") {
      for (const { reject } of waiting.values()) reject(new Error(reason));
      waiting.clear();
    },
  };
}

// The answering side: each call runs its handler (which may be async), or, for a name without one,
// `otherwise(name, ...args)` where it is given; an unknown name is an error that names it.
export function serve(port, handlers, otherwise = undefined) {
  const events = eventsOf(port);
  listen(port, async (message) => {
    if (message.event !== undefined) return events.deliver(message);
    const { name, args } = message;
    const handler = Object.hasOwn(handlers, name)
      ? handlers[name]
      : otherwise && ((...rest) => otherwise(name, ...rest));
    try {
      if (typeof handler !== "function") throw new Error(`the engine has no call named ${JSON.stringify(name)}`);
      const result = await handler(...args);
      port.postMessage({ id: message.id, ok: true, result });
    } catch (error) {
      port.postMessage({ id: message.id, ok: false, error: errorData(error) });
    }
    return undefined;
  });
  return { on: events.on, emit: events.emit };
}

// A Storage (getItem/setItem/removeItem) for a worker, which has no localStorage: it starts from the
// page's entries and tells the page each change (`onChange(key, value or null)`), which keeps it.
export function mirroredStorage(entries, onChange) {
  const items = new Map(Object.entries(entries));
  return {
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem(key, value) {
      items.set(key, String(value));
      onChange(key, String(value));
    },
    removeItem(key) {
      items.delete(key);
      onChange(key, null);
    },
  };
}
