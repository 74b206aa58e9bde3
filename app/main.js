// Entry module: the only one that runs code on import.

import { boot } from "./src/boot.js";
import { showError, showReady, showStage, stagesSeen } from "./src/page.js";

boot(showStage)
  .then((session) => {
    const readyMs = performance.now(); // since navigation began
    window.scellis = { ...session, readyMs, stages: stagesSeen };
    showReady(session, readyMs);
  })
  .catch((error) => {
    console.error(error);
    showError(error);
  });
