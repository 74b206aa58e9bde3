// Entry module: the only one that runs code on import.

import { boot, exampleGuide } from "./src/boot.js";
import {
  showEpoch,
  showError,
  showGuide,
  showOffline,
  showReady,
  showStage,
  showTrainDone,
  showTrainPanel,
  stagesSeen,
} from "./src/page.js";
import { prepareDevice, trainExample } from "./src/train.js";

const EPOCHS = 20;

function startTraining(session, level) {
  const kind = session.report.selected.device.kind;
  trainExample(session.pyodide, kind, level, EPOCHS, showEpoch)
    .then((last) => showTrainDone(last, null))
    .catch((error) => {
      console.error(error);
      showTrainDone(null, error);
    });
}

// Registers the service worker and has it keep a copy of this build; resolves once the copy is whole.
async function enableOffline(buildText) {
  if (!("serviceWorker" in navigator)) return "not available in this browser";
  await navigator.serviceWorker.register("sw.js");
  const worker = (await navigator.serviceWorker.ready).active;
  const answer = await new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (event) => resolve(event.data);
    worker.postMessage({ type: "remember", build: buildText }, [channel.port2]);
  });
  if (!answer.ok) throw new Error(answer.error);
  return "available: this site starts without a network after this visit";
}

boot(showStage)
  .then((session) => {
    const readyMs = performance.now(); // since navigation began
    window.scellis = { ...session, readyMs, stages: stagesSeen, prepareDevice };
    showReady(session, readyMs);
    showTrainPanel(session.report.selected, session.report.levels, (level) => startTraining(session, level));
    return Promise.all([
      exampleGuide(session.pyodide).then(showGuide),
      enableOffline(session.buildText)
        .catch((error) => `not available (${error.message})`)
        .then(showOffline),
    ]);
  })
  .catch((error) => {
    console.error(error);
    showError(error);
  });
