// DOM rendering of the memory plan panel: the verdict (in words and colour), the stacked bar of bytes
// by category with the budget on the same scale, each function's bytes, remedies as buttons and the
// capacity facts. The panel's controls (memory limit, reset, measure again) call back into main.js.

import { byId, element } from "./dom.js";
import { formatBytes } from "./format.js";
import { chartModel, chartSummary, exactBytes, functionLine, programLine, remedyLabel, VERDICT_WORDS } from "./plan.js";

// Bytes in human units, the exact count in a tooltip.
function bytesNode(n) {
  return element("data", formatBytes(n), { value: String(n), title: exactBytes(n) });
}

// The panel before a plan is shown (no level yet, planning, or why planning failed).
export function showPlanMessage(state, text) {
  const panel = byId("plan");
  panel.dataset.state = state;
  panel.setAttribute("aria-busy", state === "planning" ? "true" : "false");
  byId("plan-message").textContent = text;
  byId("plan-message").hidden = false;
  byId("plan-body").hidden = state !== "planning" || byId("plan-body").dataset.shown !== "yes";
}

const SOURCE_NAMES = {
  site: "this site's digits",
  chars: "the Zen of Python's characters",
  cancer: "the breast cancer data",
};

// A program that cannot train on the data chosen: every reason, and what would fit — the built-in data
// sets it fits (`onSource(source)`), or a starter program for the data (`onStarter()`).
export function showUnfit(unfit, { onSource, onStarter }) {
  showPlanMessage("unfit", `No plan: the program does not fit the data ${unfit.data}.`);
  const message = byId("plan-message");
  const reasons = element("ul", undefined, { class: "plan-unfit" });
  reasons.append(...unfit.problems.map((problem) => element("li", problem)));
  const actions = element("p", undefined, { class: "run-controls" });
  for (const source of unfit.fits) {
    const button = element("button", `Train on ${SOURCE_NAMES[source]} instead`, { type: "button" });
    button.addEventListener("click", () => onSource(source));
    actions.append(button);
  }
  const starter = element("button", `Replace the program with a starter program for ${unfit.data}`, { type: "button" });
  starter.addEventListener("click", onStarter);
  actions.append(starter);
  message.append(reasons, actions);
}

function showVerdict(plan) {
  const { color, reasons } = plan.verdict;
  const badge = element("span", color, { class: `verdict-badge verdict-${color}` });
  byId("plan-verdict").replaceChildren("Verdict: ", badge, ` — ${VERDICT_WORDS[color]}`);
  byId("plan-reasons").replaceChildren(...reasons.map((reason) => element("li", reason)));
}

function showChart(plan) {
  const model = chartModel(plan);
  const bar = element("div", undefined, { class: "plan-bar" });
  for (const segment of model.segments) {
    const title = `${segment.label}: ${formatBytes(segment.bytes)} (${exactBytes(segment.bytes)})`;
    const span = element("span", undefined, { class: `plan-segment${segment.alongside ? " alongside" : ""}`, title });
    span.style.left = `${segment.start}%`;
    span.style.width = `${segment.width}%`;
    span.style.backgroundColor = segment.color;
    bar.append(span);
  }
  const markers = model.markers.map((m) => {
    const mark = element("span", m.beyond ? `${m.label} →` : m.label, {
      class: `plan-marker plan-marker-${m.kind}${m.flip ? " flip" : ""}`,
      title: m.title,
    });
    mark.style.left = `${m.at}%`;
    return mark;
  });
  const chart = byId("plan-chart");
  chart.setAttribute("aria-label", chartSummary(plan));
  chart.replaceChildren(bar, ...markers);
  byId("plan-scale").replaceChildren(`0 — ${formatBytes(model.scale)} (linear scale)`);
  showLegend(model.parts);
}

function showLegend(parts) {
  const items = parts
    .filter((part) => part.bytes > 0)
    .map((part) => {
      const swatch = element("span", undefined, {
        class: `swatch${part.alongside ? " alongside" : ""}`,
        "aria-hidden": "true",
      });
      swatch.style.backgroundColor = part.color;
      const item = element("li");
      item.append(swatch, `${part.label}: `, bytesNode(part.bytes));
      return item;
    });
  byId("plan-legend").replaceChildren(...items);
  const absent = parts.filter((part) => part.bytes === 0).map((part) => part.label);
  byId("plan-absent").textContent = absent.length ? `Nothing at the step's peak for: ${absent.join(", ")}.` : "";
}

function showBudget(plan) {
  const budget = plan.budget;
  const line = byId("plan-budget-line");
  if (budget.bytes === null) line.replaceChildren(`Budget: not measured — ${budget.how}`);
  else line.replaceChildren("Budget: ", bytesNode(budget.bytes), ` — ${budget.how}`);
  const facts = byId("plan-functions");
  facts.replaceChildren();
  for (const fn of plan.functions) facts.append(element("dt", fn.name), element("dd", functionLine(fn)));
  facts.append(element("dt", "total held"), element("dd", `${formatBytes(plan.total)} (${exactBytes(plan.total)})`));
}

function showRemedies(plan, onApply) {
  const list = byId("plan-remedies");
  const buttons = plan.remedies.map((remedy) => {
    const button = element("button", remedyLabel(remedy), {
      type: "button",
      class: `remedy verdict-edge-${remedy.verdict.color}`,
      "data-verdict": remedy.verdict.color,
      title: `${exactBytes(remedy.total)}: ${remedy.verdict.reasons.join("; ")}`,
    });
    button.onclick = () => onApply(remedy);
    const item = element("li");
    item.append(button);
    return item;
  });
  list.replaceChildren(...buttons);
  const none = plan.verdict.color === "green" ? "" : "No remedy found that lowers this plan's bytes.";
  byId("plan-no-remedy").textContent = buttons.length ? "" : none;
  byId("plan-remedies-box").hidden = plan.verdict.color === "green";
  byId("plan-capacity").replaceChildren(...plan.capacity.map((line) => element("li", line)));
  byId("plan-capacity-box").hidden = plan.capacity.length === 0;
}

// The plan, with remedies that call `onApply(remedy)`; `applied` names the remedies already applied.
export function showPlan(plan, applied, onApply) {
  byId("plan-message").hidden = true;
  byId("plan-program").textContent = `Program: ${programLine(plan, applied)}`;
  byId("plan").dataset.device = plan.device; // the device the plan is for
  showVerdict(plan);
  showChart(plan);
  showBudget(plan);
  showRemedies(plan, onApply);
  const body = byId("plan-body");
  body.hidden = false;
  body.dataset.shown = "yes";
  const panel = byId("plan");
  panel.dataset.state = "shown";
  panel.dataset.verdict = plan.verdict.color;
  panel.setAttribute("aria-busy", "false");
}

// Wires the panel's own controls: the memory limit (form: Enter or the button), clearing it, undoing
// remedies, and measuring the device again (WebGPU only: the CPU path's budget is read, not probed).
export function wirePlanControls({ probed, onCap, onReset, onMeasure }) {
  const form = byId("plan-cap-form");
  form.onsubmit = (event) => {
    event.preventDefault();
    onCap(byId("plan-cap").value);
  };
  byId("plan-cap-clear").onclick = () => {
    byId("plan-cap").value = "";
    onCap("");
  };
  byId("plan-reset").onclick = onReset;
  const measure = byId("plan-measure");
  measure.hidden = !probed;
  measure.onclick = onMeasure;
}

// "Undo remedies (back to the example)" is enabled while the program is not the example as shipped
// (`applied` names what changed it), whatever the panel shows meanwhile: a plan, planning, a program that
// does not fit the data.
export function showChanges(applied) {
  byId("plan-reset").disabled = applied.length === 0;
}

export function showCapError(text) {
  const error = byId("plan-cap-error");
  error.textContent = text;
  error.hidden = text === "";
}
