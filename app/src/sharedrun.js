// A share link's run: its card shows what the link pins, the steps its re-run takes and the storage its
// checkpoints take at most (against a storage cap the user sees and sets, and the room the browser gives
// this site), and asks for the data; the data's hashes are checked before anything runs. A re-run over
// the cap or the room does not start (the card says the numbers; nothing is written). A re-run is a
// Runs record like any other (runs.js: listed as it goes, deletable with its checkpoints), can be
// stopped from the card, and its final key is compared with the pinned one. A link to a program not run
// yet loads the program and its settings into the trainer.

import { byId } from "./dom.js";
import { errorText } from "./format.js";
import { setRunSettings } from "./page.js";
import { checkDataFiles, Driver } from "./runmodel.js";
import {
  clearSharedError,
  showShared,
  showSharedBusy,
  showSharedError,
  showSharedState,
  showSharedStatus,
  showSharedVerdict,
  wireShared,
} from "./runpanel.js";
import { DEFAULT_CAP_MIB, rerunStorageCheck, SITE_DATA } from "./runsmodel.js";
import { openReplay, readLink } from "./train.js";

const MIB = 1024 * 1024;

// The bytes the browser says this site may still store, or null when it does not say.
async function freeBytes() {
  try {
    const { quota, usage } = await navigator.storage.estimate();
    return Number.isFinite(quota) && Number.isFinite(usage) ? quota - usage : null;
  } catch {
    return null;
  }
}

export class SharedRun {
  // `data`: the Data card, whose choice (the characters, or the user's own files) a re-run may take.
  // `history`: the Runs card (runs.RunsCard), or null. The re-run goes to the device the page trains on
  // (`controller.current().kind`).
  constructor(engine, controller, data, history = null) {
    Object.assign(this, { engine, controller, data, history });
    this.driver = null; // the re-run under way
  }

  // Reads the link in the page's address and shows it; nothing runs until the data is given.
  async show() {
    try {
      this.shown = await readLink(this.engine, location.href);
    } catch (error) {
      console.error(error);
      showSharedError(error, "This share link cannot be read: ");
      return;
    }
    showShared(this.shown);
    if (!this.shown.ran_on) {
      this.controller.load(this.shown.program, "the shared program");
      setRunSettings(this.shown.settings);
      showSharedStatus("Loaded into the trainer below: choose Train to run it.");
      return;
    }
    wireShared({
      onSiteData: () => this.rerun("site"),
      onChosenData: () => this.rerun(this.data.current().source),
      onFiles: (picked) => this.rerunFiles(picked),
      onRerun: () => this.rerun("none"),
    });
    const cap = byId("shared-cap");
    if (!cap.value) cap.value = String(DEFAULT_CAP_MIB);
    cap.oninput = () => this.check();
    byId("shared-stop").onclick = () => this.stop();
    await this.check();
  }

  // The storage check against the cap as it stands now, shown; {ok, text}.
  async check() {
    const capBytes = Number(byId("shared-cap").value) * MIB;
    const checked = rerunStorageCheck(this.shown.storage, capBytes, await freeBytes());
    byId("shared-storage").textContent = checked.text;
    byId("shared").dataset.storage = checked.ok ? "within" : "over";
    return checked;
  }

  async rerunFiles(picked) {
    const checked = checkDataFiles(picked.map((file) => file.name));
    if (checked.error) {
      showSharedError(checked.error);
      return;
    }
    const read = async (file) => [file.name, new Uint8Array(await file.arrayBuffer())];
    await this.rerun({ files: Object.fromEntries(await Promise.all(picked.map(read))) }, "the data files given");
  }

  // What the re-run's record names as its data.
  dataName(data, named) {
    if (named) return named;
    if (data === "site") return SITE_DATA;
    if (data === "none") return "no data";
    return this.data.name();
  }

  // Stops the re-run under way after the chunk of steps it is taking.
  stop() {
    byId("shared-stop").disabled = true;
    showSharedStatus("Stopping the re-run…");
    this.driver?.pause();
  }

  // Runs the re-run until it ends or is stopped (the Stop button enabled meanwhile); its last state.
  async drive(run, log) {
    this.driver = new Driver(run, {
      onState: (state) => {
        showSharedState(state);
        log?.state(state);
      },
    });
    byId("shared-stop").disabled = false;
    try {
      return await this.driver.go();
    } finally {
      byId("shared-stop").disabled = true;
    }
  }

  // `data`: "site" (the digits this site ships), { files } (the four data files by name), the Data
  // card's choice (enginehost.js files), or "none" for a run of a program that reads no data.
  async rerun(data, named = null) {
    clearSharedError();
    if (this.driver) return; // one re-run at a time
    const checked = await this.check();
    if (!checked.ok) {
      showSharedError(checked.text);
      return;
    }
    showSharedBusy(true);
    showSharedStatus(data === "none" ? "Opening the run…" : "Checking the data's hashes…");
    let log = null;
    let run = null;
    try {
      const pageKind = this.controller.current().kind;
      const opened = await openReplay(this.engine, data, pageKind, location.href);
      if (opened.refused) {
        showSharedError(`the re-run does not fit on this device: ${opened.refused}`);
        return;
      }
      run = opened.run;
      const s = this.shown.settings;
      const kind = s.device === "webgpu" && pageKind !== "webgpu" ? "cpu" : s.device;
      const settings = { program: this.shown.program, kind, level: s.level, seed: s.seed, epochs: s.epochs };
      const recorded = { name: this.dataName(data, named), versions: s.data };
      log = this.history?.begin({ ...settings, data: recorded, rerunOf: s.final }) ?? null;
      const checkedData = s.data.length ? "The data matches the pinned hashes. " : "";
      showSharedStatus(`${checkedData}Re-running (${opened.note ?? `level ${s.level}, seed ${s.seed}`})…`);
      const state = await this.drive(run, log);
      if (!state?.done) {
        log?.settle("stopped");
        byId("shared").dataset.state = "stopped";
        showSharedStatus(
          `Stopped at step ${state?.step ?? 0}: nothing was verified. The Runs card lists the re-run and its checkpoints.`,
        );
        return;
      }
      const verdict = JSON.parse(await run.verdict());
      log?.compared(verdict);
      log?.settle("done");
      showSharedVerdict(verdict);
      showSharedStatus(
        verdict.verified
          ? "Verified."
          : verdict.final === verdict.pinned
            ? "The re-run reached the pinned checkpoint, but the link claims something else it did not: see below."
            : "The re-run did not reach the pinned checkpoint.",
      );
    } catch (error) {
      console.error(error);
      log?.settle("failed", errorText(error));
      showSharedStatus("");
      showSharedError(error, "Nothing was verified: ");
    } finally {
      this.driver = null;
      byId("shared-stop").disabled = true;
      await run?.close().catch((error) => console.error(error));
      showSharedBusy(false);
    }
  }
}
