// Start-up: read the build manifest, then start the engine's worker (engine.js), which loads Pyodide,
// installs the scellis wheel and says what it can reach; each stage is reported as it begins.

import { startEngine } from "./engine.js";

async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

export async function boot(onStage) {
  const base = new URL(".", location.href);
  onStage(0, "Reading the build manifest…");
  const buildText = await fetchText(new URL("build.json", base));
  const build = JSON.parse(buildText);
  const { engine, report } = await startEngine(base, buildText, onStage);
  return { build, buildText, report, engine };
}
