// The run panel's answer to a lost GPU: it says which device was lost and why (GPUDeviceLostInfo), where
// the run stopped, whether the state at that step could still be saved, and which checkpoint the run can
// go on from; "Reopen GPU and resume from the last checkpoint" asks the engine for a fresh adapter and
// device and resumes the run from that checkpoint with the same settings, on WebGPU again (never
// silently on the CPU path). `#run-lost[data-state]`: "offered", "reopening", "resumed" or "failed".

import { byId } from "./dom.js";
import { errorText } from "./format.js";

// The newest checkpoint of a run's state (its loop program's, or saved from the page), or null.
export function newestCheckpoint(state, saved = null) {
  const all = [...state.checkpoints, ...state.saved];
  if (saved) all.push({ step: state.step, key: saved });
  return all.sort((a, b) => a.step - b.step).at(-1) ?? null;
}

// What the panel says: the loss, where the run stopped, the state saved or why not, the checkpoint to
// resume from (or that there is none: the run starts again from its beginning).
export function lossWords(error, after, from) {
  const sentence = (text) => `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
  const lines = [sentence(errorText(error)), `The run stopped at step ${after.state.step}.`];
  lines.push(after.saved ? `Its state at that step was saved as ${after.saved}.` : sentence(after.unsaved));
  lines.push(
    from
      ? `It can go on from the checkpoint of step ${from.step} (${from.key}) on a fresh GPU device.`
      : "It wrote no checkpoint before the loss: on a fresh GPU device it starts again from its beginning.",
  );
  return lines.join(" ");
}

function show(state, text, label) {
  const box = byId("run-lost");
  box.hidden = false;
  box.dataset.state = state;
  if (text !== undefined) byId("run-lost-text").textContent = text;
  byId("run-lost-status").textContent = label ?? "";
  byId("run-reopen").disabled = state === "reopening";
}

export function hideLoss() {
  byId("run-lost").hidden = true;
}

// After `control`'s current run failed with `error`, a GpuLostError: the panel offers to reopen and resume.
export async function offerReopen(control, error) {
  const { run, settings } = control.current;
  let after;
  try {
    after = await control.engine.call("afterLoss", run.id);
  } catch (failure) {
    console.error(failure);
    show("failed", `${errorText(error)}.`, `Where the run stopped is unknown: ${errorText(failure)}`);
    return;
  }
  const from = newestCheckpoint(after.state, after.saved);
  const button = byId("run-reopen");
  button.textContent = from
    ? "Reopen GPU and resume from the last checkpoint"
    : "Reopen GPU and run again from the start";
  show("offered", lossWords(error, after, from));
  button.onclick = () => reopen(control, settings, from);
}

async function reopen(control, settings, from) {
  show("reopening", undefined, "Opening a fresh GPU device…");
  let name;
  try {
    name = await control.engine.call("reopenGpu");
  } catch (error) {
    console.error(error);
    show("failed", undefined, `The GPU could not be reopened: ${errorText(error)}`);
    return;
  }
  // the failed run's own settings: program, data, level, seed, epochs, memory limit, and WebGPU; start()
  // hides this box before its first pause, so it is shown again, saying which device the run is on now
  const started = control.start({ ...settings, kind: "webgpu", resume: from?.key ?? undefined });
  show(
    "resumed",
    undefined,
    `Reopened ${name}: the run goes on ${from ? `from step ${from.step}` : "from its start"}.`,
  );
  await started;
}
