// Entry module of correctness.html: renders dist/correctness.json (written by the test suite,
// shipped by the build) against this build's engine version.

import { describeIdentity, formatError, ROW_HEADINGS, rowCells, summarize } from "./src/correctness.js";
import { element } from "./src/dom.js";

function table(headings, rows) {
  const node = element("table");
  const head = element("tr");
  head.append(...headings.map((h) => element("th", h)));
  node.append(element("thead"));
  node.tHead.append(head);
  const body = element("tbody");
  for (const cells of rows) {
    const tr = element("tr");
    tr.append(...cells.map((c) => element("td", c)));
    body.append(tr);
  }
  node.append(body);
  return node;
}

function levelSection(entry) {
  const section = element("section", undefined, { class: "card", id: `level-${entry.level}` });
  section.append(element("h2", `Level ${entry.level}`));
  section.append(element("p", `Promise: ${entry.promise}`), element("p", `How it is checked: ${entry.checked}`));
  const rows = entry.devices.map((d) => [
    `${d.id} (${d.name})`,
    `${d.passed} / ${d.checks}`,
    d.worst ? `${formatError(d.worst.row.error)} (${d.worst.row.case}: ${d.worst.row.check})` : "",
    d.worst && Number.isFinite(d.worst.share) ? `${(100 * d.worst.share).toFixed(1)} %` : "",
    d.identity.map(describeIdentity).join("; "),
  ]);
  const headings = [
    "device",
    "within tolerance",
    "error nearest its tolerance",
    "share of that tolerance",
    "bit identity",
  ];
  section.append(table(headings, rows));
  return section;
}

function deviceDetails(record) {
  const details = element("details", undefined, { class: "card", id: `device-${record.device.id}` });
  const summary = `${record.device.id}: ${record.device.name} — ${record.device.how}; measured ${record.measured_at}`;
  details.append(element("summary", summary));
  const features = record.device.features.length ? record.device.features.join(", ") : "none";
  details.append(element("p", `Optional features used: ${features}. Engine ${record.engine_version}.`));
  for (const skip of record.skipped ?? []) {
    details.append(element("p", `Not run on this device: ${skip.case} (${skip.reason}).`, { class: "skipped" }));
  }
  for (const level of ["debug", "prod", "fast"]) {
    details.append(element("h3", level));
    details.append(table(ROW_HEADINGS, record.rows.filter((r) => r.level === level).map(rowCells)));
  }
  return details;
}

async function main() {
  const main = document.getElementById("report");
  const [data, build] = await Promise.all(
    ["correctness.json", "build.json"].map((name) => fetch(name).then((r) => r.json())),
  );
  const view = summarize(data, build);
  if (view.empty) {
    main.append(
      element(
        "p",
        "No measurements in this build. Run scripts/test (it writes them), then build again " + "(scripts/serve does).",
        { class: "banner" },
      ),
    );
  }
  for (const stale of view.stale) {
    main.append(
      element(
        "p",
        `${stale.id} was measured with engine ${stale.engine}; this build is ` +
          `${build.engine_version}. Run scripts/test again to measure this engine.`,
        { class: "banner" },
      ),
    );
  }
  main.append(...view.levels.map(levelSection), ...view.records.map(deviceDetails));
  // the sections exist only now: follow a link to one of them (#level-fast) once they do
  if (location.hash) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  document.body.dataset.state = "ready";
}

main().catch((error) => {
  document
    .getElementById("report")
    .append(element("p", `Could not show the record: ${error.message}`, { class: "banner error" }));
  document.body.dataset.state = "error";
});
