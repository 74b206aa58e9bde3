// Start-up: load Pyodide from this site, install the scellis wheel, ask the engine what it can reach.

const REPORT_PY = `
import json
from scellis.runtime.report import environment_report
json.dumps(await environment_report(check=True))
`;

async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.text();
}

const GUIDE_PY = `
import json, time
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
start = time.perf_counter()
guide = compile_program(digits_mlp()).guide(Level.PROD)
guide["compile_ms"] = (time.perf_counter() - start) * 1000
json.dumps(guide)
`;

// Compiles the example program in the page and returns every stage's artifact.
export async function exampleGuide(pyodide) {
  return JSON.parse(await pyodide.runPythonAsync(GUIDE_PY));
}

// Runs each stage in order, reporting (index, label) before it starts.
export async function boot(onStage) {
  const base = new URL(".", location.href);
  onStage(0, "Reading the build manifest…");
  const buildText = await fetchText(new URL("build.json", base));
  const build = JSON.parse(buildText);
  onStage(1, `Loading Python (Pyodide ${build.tools.pyodide})…`);
  const pyodideModule = new URL("pyodide/pyodide.mjs", base).href;
  const { loadPyodide } = await import(pyodideModule);
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", base).href });
  onStage(2, `Installing the engine (${build.wheel})…`);
  await pyodide.loadPackage(new URL(build.wheel, base).href, { messageCallback: () => {} });
  onStage(3, "Finding devices and checking the CPU path…");
  const report = JSON.parse(await pyodide.runPythonAsync(REPORT_PY));
  return { build, buildText, report, pyodide };
}
