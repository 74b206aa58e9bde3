// Entry module: the only one that runs code on import.

import { boot } from "./src/boot.js";
import { showError, showReady, showStage } from "./src/page.js";

const started = performance.now();

boot(showStage)
  .then((session) => {
    const readyMs = performance.now() - started;
    window.scellis = { ...session, readyMs };
    showReady(session, readyMs);
  })
  .catch((error) => {
    console.error(error);
    showError(error);
  });
