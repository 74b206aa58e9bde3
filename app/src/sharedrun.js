// A share link's run: its card shows what the link pins and asks for the data; the data's hashes are
// checked before anything runs, the run is re-run (runmodel.Driver) and its final key compared with the
// pinned one. A link to a program not run yet loads the program and its settings into the trainer.

import { setRunSettings } from "./page.js";
import { Driver, checkDataFiles } from "./runmodel.js";
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
import { openReplay, readLink } from "./train.js";

export class SharedRun {
  // `data`: the Data card, whose choice (the characters, or the user's own files) a re-run may take.
  // The re-run goes to the device the page trains on (`controller.current().kind`).
  constructor(engine, controller, data) {
    Object.assign(this, { engine, controller, data });
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
  }

  async rerunFiles(picked) {
    const checked = checkDataFiles(picked.map((file) => file.name));
    if (checked.error) {
      showSharedError(checked.error);
      return;
    }
    const read = async (file) => [file.name, new Uint8Array(await file.arrayBuffer())];
    await this.rerun({ files: Object.fromEntries(await Promise.all(picked.map(read))) });
  }

  // `data`: "site" (the digits this site ships), { files } (the four data files by name), the Data
  // card's choice (enginehost.js files), or "none" for a run of a program that reads no data.
  async rerun(data) {
    clearSharedError();
    showSharedBusy(true);
    showSharedStatus(data === "none" ? "Opening the run…" : "Checking the data's hashes…");
    try {
      const opened = await openReplay(this.engine, data, this.controller.current().kind, location.href);
      if (opened.refused) {
        showSharedError(`the re-run does not fit on this device: ${opened.refused}`);
        return;
      }
      const { level, seed } = this.shown.settings;
      const checked = this.shown.settings.data.length ? "The data matches the pinned hashes. " : "";
      showSharedStatus(`${checked}Re-running (${opened.note ?? `level ${level}, seed ${seed}`})…`);
      await new Driver(opened.run, { onState: showSharedState }).go();
      const verdict = JSON.parse(await opened.run.verdict());
      await opened.run.close();
      showSharedVerdict(verdict);
      showSharedStatus(verdict.verified ? "Verified." : "The re-run did not reach the pinned checkpoint.");
    } catch (error) {
      console.error(error);
      showSharedStatus("");
      showSharedError(error, "Nothing was verified: ");
    } finally {
      showSharedBusy(false);
    }
  }
}
