// How the engine's Python starts (enginehost.js: boot): from the build's snapshot where it has one (the
// interpreter with the engine already imported, scripts/python-snapshot.mjs), else from scratch. A
// snapshot that is not the build's rejects (a mixed build: verifiedSnapshot's BuildMismatch); one that is
// but does not start is said so, in the stage shown and in the answer, and Python starts from scratch.
// Python's `random`, seeded once for every copy of the snapshot, is seeded again from this browser's
// entropy. Answers { pyodide, started }: the interpreter and how it started, in words for the page.

export async function startPython({ loadPyodide, indexURL, version, snapshot, stage }) {
  if (snapshot === null) {
    stage(`Loading Python (${version})…`);
    return { pyodide: await loadPyodide({ indexURL }), started: "started from scratch: this build has no snapshot" };
  }
  stage(`Starting Python (${version}) from the build's snapshot…`);
  let pyodide;
  let started = "started from the build's snapshot";
  try {
    pyodide = await loadPyodide({ indexURL, _loadSnapshot: snapshot }); // fetched while Pyodide's files load
  } catch (error) {
    await snapshot; // a snapshot that is not the build's rejects here
    started = `started from scratch: the build's snapshot did not start (${error.message})`;
    stage(`Loading Python (${version}): the build's snapshot did not start…`);
    pyodide = await loadPyodide({ indexURL });
  }
  pyodide.runPython("import sys\nif 'random' in sys.modules:\n    sys.modules['random'].seed()");
  return { pyodide, started };
}
