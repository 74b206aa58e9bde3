// The Runs history's records as the tests build them (runsmodel.test.js, retention.test.js): keys, the
// settings of a run, an epoch's row, a run panel's state and a new record.
import * as runs from "../../app/src/runsmodel.js";

export const key = (c) => `sha256:${c.repeat(64)}`;
export const settings = {
  program: JSON.stringify({ name: "digits-mlp" }),
  kind: "cpu",
  level: "debug",
  seed: 5,
  epochs: 2,
  resume: undefined,
};
export const row = (epoch, accuracy, loss) => ({
  epoch,
  steps: epoch * 22,
  batch: 64,
  train_loss: 0.5,
  level: "debug",
  test: { loss, "metric/accuracy": accuracy },
  notes: [],
  memory: { bytes: 1, verdict: "green", reasons: [] },
});
export const state = (step, more = {}) => ({
  step,
  total: 44,
  device: "CPU path (WebAssembly) via pyodide",
  checkpoints: [],
  saved: [],
  epochs_done: [],
  ...more,
});
export const fresh = (id = "a", now = 1000) => runs.newRecord({ id, now, settings, device: "the page's device" });
