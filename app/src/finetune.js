// The Fine-tune card: a pretrained model (this site's all-MiniLM-L6-v2, or a Hugging Face BERT folder the
// user gives) and labelled texts (this site's SpamAssassin mails, or the user's CSV) read in the engine's
// worker; then the three ways to fine-tune it (every weight, LoRA, QLoRA on a 4-bit base), each planned on
// the page's device at the level chosen here: bytes by category, planned as the run allocates them. The
// user picks one to train: the page's program and data become it (`onChoose`). The card's `data-state`
// says where it stands: idle, reading, planning, planned or error.

import { byId, element } from "./dom.js";
import { errorText, formatBytes } from "./format.js";
import { planProgram } from "./train.js";

const SHOWN = ["parameters", "gradients", "optimizer state", "activations kept for backward", "workspace"];
const BUNDLED_TEXTS = { name: "SpamAssassin mails", text_column: "text", label_column: "label" };

// A whole number from the field `id`, or its text as typed (the engine's check names what is wrong).
function whole(id) {
  const text = byId(id).value.trim();
  return /^\d+$/.test(text) ? Number(text) : text;
}

export class FineTuneCard {
  // `kind()`: the device kind the page plans and trains on now; `onChoose({ program, label, texts })`:
  // the user chose a way to fine-tune (texts: { id, name } as the engine keeps them).
  constructor(engine, { kind, onChoose }) {
    Object.assign(this, { engine, kind, onChoose });
    this.texts = null; // { id, described } of the model and texts read last
    this.ticket = 0;
  }

  wire() {
    byId("finetune").hidden = false;
    byId("ft-read").addEventListener("click", () => this.read());
    byId("ft-level").addEventListener("change", () => this.texts && this.plan());
    const pick = (name, value) => () => {
      document.querySelector(`input[name=${name}][value=${value}]`).checked = true;
    };
    byId("ft-model-folder").addEventListener("change", pick("ft-model", "folder"));
    byId("ft-model-files").addEventListener("change", pick("ft-model", "folder"));
    byId("ft-texts-file").addEventListener("change", pick("ft-texts", "csv"));
  }

  // What the engine's readTexts takes, from the card's fields; throws what the user must fix.
  request() {
    const modelChoice = document.querySelector("input[name=ft-model]:checked").value;
    const textsChoice = document.querySelector("input[name=ft-texts]:checked").value;
    let model = "bundled";
    if (modelChoice === "folder") {
      const files = [...byId("ft-model-folder").files, ...byId("ft-model-files").files];
      if (!files.length) throw new Error("choose the model's folder or its files first");
      model = files;
    }
    let texts = "bundled";
    let named = BUNDLED_TEXTS;
    if (textsChoice === "csv") {
      const file = byId("ft-texts-file").files[0];
      if (!file) throw new Error("choose a CSV file of texts first");
      texts = file;
      named = {
        name: file.name,
        text_column: byId("ft-text-column").value,
        label_column: byId("ft-label-column").value,
      };
    }
    const settings = { ...named, length: whole("ft-length"), batch: whole("ft-batch"), epochs: whole("ft-epochs") };
    return { model, texts, settings };
  }

  async read() {
    const card = byId("finetune");
    showError("");
    let request;
    try {
      request = this.request();
    } catch (error) {
      showError(error.message);
      return;
    }
    this.texts = null;
    this.ticket += 1; // a plan of the texts read before, still under way, is dropped
    card.dataset.state = "reading";
    card.setAttribute("aria-busy", "true");
    byId("ft-plans").hidden = true;
    byId("ft-progress").textContent =
      request.model === "bundled"
        ? "Reading all-MiniLM-L6-v2 (91 MB) and the texts…"
        : "Reading the model and the texts…";
    const started = performance.now();
    try {
      const { model, texts, settings } = request;
      this.texts = await this.engine.call("readTexts", model, texts, settings);
      showFacts(this.texts.described, performance.now() - started);
      byId("ft-progress").textContent = "";
      await this.plan();
    } catch (error) {
      console.error(error);
      card.dataset.state = "error";
      byId("ft-progress").textContent = "";
      showError(`The model or the texts could not be read: ${errorText(error)}`);
    } finally {
      card.removeAttribute("aria-busy");
    }
  }

  // Each way to fine-tune planned on the page's device at the card's level, one row each.
  async plan() {
    const card = byId("finetune");
    const level = byId("ft-level").value;
    if (!level) {
      card.dataset.state = "read";
      byId("ft-progress").textContent = "Choose a determinism level to see what each way costs in memory.";
      return;
    }
    this.ticket += 1;
    const ticket = this.ticket;
    const { id, described } = this.texts;
    card.dataset.state = "planning";
    byId("ft-progress").textContent = "Planning the three ways on this device…";
    const rows = [];
    try {
      for (const choice of described.programs) {
        const run = { program: choice.program, kind: this.kind(), level, cap: null, source: { text: id } };
        rows.push({ choice, plan: await planProgram(this.engine, run) });
        if (ticket !== this.ticket) return;
      }
    } catch (error) {
      console.error(error);
      if (ticket !== this.ticket) return;
      card.dataset.state = "error";
      byId("ft-progress").textContent = "";
      showError(`Planning failed: ${errorText(error)}`);
      return;
    }
    showPlans(rows, (choice) =>
      this.onChoose({ program: choice.program, label: choice.label, texts: { id, name: described.texts.name } }),
    );
    byId("ft-progress").textContent = "";
    card.dataset.state = "planned";
  }
}

function showError(text) {
  const box = byId("ft-error");
  box.textContent = text;
  box.hidden = !text;
}

function showFacts(described, ms) {
  const { model, texts } = described;
  const facts = [
    [
      "Model",
      `${model.layers} layers, hidden ${model.hidden}, ${model.heads} heads, vocabulary ${model.vocab.toLocaleString("en")}`,
    ],
    [
      "Parameters",
      `${model.parameters.toLocaleString("en")} (${formatBytes(model.weights.bytes)}, ${model.weights.file})`,
    ],
    ["Weights SHA-256", model.weights.sha256],
    [
      "Texts",
      `${texts.name}: ${texts.train.toLocaleString("en")} to train on, ${texts.held_out.toLocaleString("en")} held out`,
    ],
    ["Classes", texts.classes.join(", ")],
    ["Split", `seed ${texts.split_seed}, ${Math.round(texts.held_out_share * 100)} % held out`],
    ["Window", `${texts.settings.length} tokens per text ([CLS], the text's first word pieces, [SEP], padding)`],
    ["Read in", `${(ms / 1000).toFixed(1)} s (tokenizing: ${(texts.ms / 1000).toFixed(1)} s)`],
  ];
  const list = byId("ft-facts");
  list.dataset.tokenizedMs = String(Math.round(texts.ms));
  list.replaceChildren();
  for (const [label, value] of facts) list.append(element("dt", label), element("dd", value));
}

function showPlans(rows, choose) {
  const table = byId("ft-plans");
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const { choice, plan } of rows) {
    const tr = element("tr", undefined, { "data-choice": choice.choice });
    tr.append(element("th", choice.label, { scope: "row" }));
    if (plan.unfit) {
      const cell = element("td", plan.unfit.problems.join("; "), { colspan: String(SHOWN.length + 3) });
      tr.append(cell);
      body.append(tr);
      continue;
    }
    const bytes = Object.fromEntries(plan.breakdown.map((b) => [b.category, b.bytes]));
    for (const category of SHOWN) tr.append(element("td", formatBytes(bytes[category] ?? 0)));
    tr.append(element("td", formatBytes(plan.total), { "data-bytes": String(plan.total) }));
    const verdict = plan.verdict.color;
    tr.append(element("td", verdict, { "data-verdict": verdict, title: plan.verdict.reasons.join("; ") }));
    const button = element("button", "Train this way", { type: "button" });
    button.addEventListener("click", () => choose(choice));
    const action = element("td");
    action.append(button);
    tr.append(action);
    body.append(tr);
  }
  table.hidden = false;
}
