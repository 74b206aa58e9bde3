// Where the time to a run's first loss goes: spans (name, start, end, detail) recorded in the engine's worker
// (its calls, the WebGPU device opened, each compile's pipelines and buffers, the Python phases that
// scellis.session.timed tells) and sent to the page as they end, where each becomes a performance measure
// named PREFIX + name on the page's own timeline: DevTools shows them, bench/page_load.py reads them. The
// worker and the page count from different origins, so a span crosses in epoch milliseconds.

export const PREFIX = "scellis:";

// The worker's side: `send(span)` is given each span as it ends, its times in epoch ms. `clock` is the
// worker's `performance` (Pyodide's time.perf_counter() * 1000 is its `now()`, the same clock).
export function timeline(send, clock = performance) {
  const epoch = (ms) => clock.timeOrigin + ms;
  const line = {
    now: () => clock.now(),
    // A span from `start` to `end` (both the clock's ms).
    record(name, start, end = clock.now(), detail = null) {
      send({ name, start: epoch(start), end: epoch(end), detail });
    },
    // `work()`'s result, its time recorded as the span `name` (failed or not).
    async span(name, work, detail = null) {
      const start = clock.now();
      try {
        return await work();
      } finally {
        line.record(name, start, clock.now(), detail);
      }
    },
  };
  return line;
}

// The page's side: a span from the worker as a measure on the page's timeline.
export function measureSpan({ name, start, end, detail }, clock = performance) {
  clock.measure(PREFIX + name, { start: start - clock.timeOrigin, end: end - clock.timeOrigin, detail });
}
