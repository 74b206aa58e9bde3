// The Correctness page's content from correctness.json (pure: no DOM). Every figure shown comes
// from the records the test suite wrote; nothing here is a number of its own.

export const LEVELS = ["debug", "prod", "fast"];

export function formatError(value) {
  return value === 0 ? "0" : value.toExponential(2);
}

// Per device at one level: how many checks passed, the worst error as a share of its tolerance,
// and the identity checks recorded for that level.
function deviceAtLevel(record, level) {
  const rows = record.rows.filter((row) => row.level === level);
  const passed = rows.filter((row) => row.ok).length;
  let worst = null;
  for (const row of rows) {
    const share = row.tolerance > 0 ? row.error / row.tolerance : row.error > 0 ? Infinity : 0;
    if (!worst || share > worst.share) worst = { share, row };
  }
  const identity = record.identity.filter((check) => check.level === level);
  return { id: record.device.id, name: record.device.name, checks: rows.length, passed, worst, identity };
}

// { empty, stale: [{id, engine}], levels: [{level, promise, checked, devices: [...]}], records }
export function summarize(data, build) {
  const records = data.records ?? [];
  const stale = records
    .filter((record) => record.engine_version !== build.engine_version)
    .map((record) => ({ id: record.device.id, engine: record.engine_version }));
  const first = records[0];
  const levels = LEVELS.map((level) => ({
    level,
    promise: first?.levels?.[level]?.promise ?? "",
    checked: first?.levels?.[level]?.checked ?? "",
    devices: records.map((record) => deviceAtLevel(record, level)),
  }));
  return { empty: records.length === 0, stale, levels, records };
}

export function describeIdentity(check) {
  return `${check.check}: ${check.identical ? "identical" : "DIFFERENT"} (${check.cases} cases)`;
}

export function rowCells(row) {
  return [
    row.case,
    row.check,
    row.kernel,
    String(row.terms),
    formatError(row.error),
    row.exact ? "exact" : formatError(row.tolerance),
    row.ok ? "yes" : "NO",
    row.repeat_identical ? "yes" : "no",
  ];
}

export const ROW_HEADINGS = [
  "case",
  "check",
  "kernel",
  "terms summed",
  "error",
  "tolerance",
  "within",
  "repeat identical",
];
