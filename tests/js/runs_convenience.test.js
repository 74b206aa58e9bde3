// Convenience state under Node: the device choice (app/src/devicechoice.js) and the last run
// (app/src/runmodel.js) read and kept through a storage that is full or blocked never throw (a full
// storage keeps nothing, a blocked one reads as empty), and a last run read back is checked before use.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as device from "../../app/src/devicechoice.js";
import * as runs from "../../app/src/runmodel.js";

const full = {
  getItem: () => null,
  setItem: () => {
    const e = new Error("quota");
    e.name = "QuotaExceededError";
    throw e;
  },
  removeItem: () => {},
};
const no = (message) => () => {
  throw new Error(message);
};
const blocked = { getItem: no("SecurityError"), setItem: no("no"), removeItem: no("no") };
const kept = new Map();
const plainStorage = {
  getItem: (k) => kept.get(k) ?? null,
  setItem: (k, v) => kept.set(k, v),
  removeItem: (k) => kept.delete(k),
};
const key = `sha256:${"ab".repeat(32)}`;
const last = { program: "{}", level: "debug", seed: "7", epochs: 2, kind: "cpu", key, step: 25 };

test("a full or blocked storage keeps nothing and throws nothing", () => {
  const answers = [
    device.keepDevice(() => full, "cpu"),
    device.storedDevice(() => full),
    device.keepDevice(() => blocked, "cpu"),
    device.storedDevice(() => blocked),
    device.storedDevice(no("localStorage is not available")),
    device.keepDevice(() => plainStorage, "webgpu"),
    device.storedDevice(() => plainStorage),
  ];
  assert.deepEqual(answers, [false, null, false, null, null, true, "webgpu"]);
  assert.deepEqual([runs.lastRun(full), runs.lastRun(blocked)], [null, null]);
  runs.forgetLastRun(blocked);
  plainStorage.setItem(runs.LAST_RUN, JSON.stringify(last));
  assert.equal(runs.lastRun(plainStorage)?.key, key);
  runs.forgetLastRun(plainStorage);
  assert.equal(plainStorage.getItem(runs.LAST_RUN), null);
});

test("a last run read back is checked", () => {
  const check = (change) => runs.checkLastRun(change === null ? null : { ...last, ...change }) !== null;
  const checks = [
    check({}),
    check(null),
    check({ key: "sha256:12" }),
    check({ level: "turbo" }),
    check({ seed: "x" }),
    check({ epochs: "2" }),
    check({ program: 3 }),
    runs.checkLastRun("text") !== null,
    runs.checkLastRun(undefined) !== null,
  ];
  assert.deepEqual(checks, [true, false, false, false, false, false, false, false, false]);
});
