// Start-up: read the build manifest, check every file of the app against it (integrity.js), then start
// the engine's worker (engine.js), which loads Pyodide, installs the scellis wheel it checked itself and
// says what it can reach; the engine installed must be the one build.json names. Each stage is reported
// as it begins. A mixed build is shown as such (with its repair) and rejects: nothing else starts.

import { startEngine } from "./engine.js";
import { BuildMismatch, checkEngine, checkFiles, readBuild, showMismatch } from "./integrity.js";

async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

async function start(onStage) {
  const base = new URL(".", location.href);
  onStage(0, "Reading the build manifest and checking the app's files against it…");
  const buildText = await fetchText(new URL("build.json", base));
  const build = readBuild(buildText);
  await checkFiles(base, build);
  const { engine, report } = await startEngine(base, buildText, onStage);
  checkEngine(build, report);
  return { build, buildText, report, engine };
}

export async function boot(onStage) {
  try {
    return await start(onStage);
  } catch (error) {
    if (error instanceof BuildMismatch) showMismatch(error);
    throw error;
  }
}
