// The run panel's live charts (uPlot): the train loss by step, and the held-out metrics at each epoch's
// end (the loss on the left axis, metrics in [0, 1] on a percent axis at the right). The series are
// chartmodel.js's; states may come at any rate, and a chart is drawn at most once per animation frame.
// Colours are the page's CSS custom properties, read again whenever the theme changes.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatValue, LOSS, nonFiniteText, RunSeries } from "./chartmodel.js";

const HEIGHT = 220; // the canvas's, axes included; the legend goes below it
const SERIES_COLOURS = ["--chart-1", "--chart-2", "--chart-3", "--chart-4"];
// Ticks on whole steps only (uPlot's default increments include fractions).
const STEP_INCRS = Array.from({ length: 30 }, (_, i) => [1, 2, 5][i % 3] * 10 ** Math.floor(i / 3));

const idle = (work) => (globalThis.requestIdleCallback ?? setTimeout)(work);

function themeColours(element) {
  const style = getComputedStyle(element);
  const read = (name) => style.getPropertyValue(name).trim();
  return { fg: read("--fg"), line: read("--line"), series: SERIES_COLOURS.map(read) };
}

// The legend's value: at the cursor, else the series' newest (so the legend says where the run stands).
function legendValue(format) {
  return (u, v, sidx, idx) => {
    if (idx !== null && idx !== undefined) return v === null ? "—" : format(v);
    const column = u.data[sidx];
    for (let i = column.length - 1; i >= 0; i -= 1) if (column[i] !== null) return format(column[i]);
    return "—";
  };
}

// Axes of a fixed size: uPlot need not measure tick labels until their sizes settle, which made a
// chart's first draw a long task on a busy machine.
const AXIS_SIZE = 56;

function axis(colours, label, more = {}) {
  const rule = { stroke: colours.line, width: 1 };
  return { label, stroke: colours.fg, grid: rule, ticks: rule, size: AXIS_SIZE, ...more };
}

// The x axis and scale both charts share: steps from the run's origin to the newest step fed.
function stepAxis(series, colours) {
  const range = () => {
    const from = series.origin ?? 0;
    return [from, Math.max(series.step ?? from, from + 1)];
  };
  const xSeries = { label: "step", value: legendValue(String) };
  return { scale: { time: false, range }, xSeries, axis: axis(colours, "step", { incrs: STEP_INCRS }) };
}

function lossOptions(width, series, colours) {
  const x = stepAxis(series, colours);
  const value = legendValue((v) => formatValue(v, "value"));
  const line = { label: LOSS, stroke: colours.series[0], width: 1.5, value };
  return {
    width,
    height: HEIGHT,
    cursor: { drag: { x: false, y: false } }, // a zoom would be undone by the next state
    scales: { x: x.scale },
    series: [x.xSeries, line],
    axes: [x.axis, axis(colours, "loss")],
  };
}

function metricsOptions(width, series, colours, columns) {
  const x = stepAxis(series, colours);
  const lines = columns.map(({ label, unit }, i) => ({
    label,
    scale: unit,
    stroke: colours.series[(i + 1) % colours.series.length],
    width: 1.5,
    value: legendValue((v) => formatValue(v, unit)),
  }));
  const axisLabel = (unit, alone) => {
    const on = columns.filter((c) => c.unit === unit);
    return on.length === 1 ? on[0].label : alone;
  };
  const axes = [x.axis];
  if (columns.some((c) => c.unit === "value"))
    axes.push(axis(colours, axisLabel("value", "value"), { scale: "value" }));
  if (columns.some((c) => c.unit === "%")) {
    const values = (u, splits) => splits.map((v) => `${Math.round(v * 100)} %`);
    axes.push(axis(colours, axisLabel("%", "percent"), { scale: "%", side: 1, grid: { show: false }, values }));
  }
  return {
    width,
    height: HEIGHT,
    cursor: { drag: { x: false, y: false } },
    scales: { x: x.scale, "%": { range: [0, 1] } },
    series: [x.xSeries, ...lines],
    axes,
  };
}

// The two charts in `root` (the run panel's #run-charts: [data-chart=loss], [data-chart=metrics] and
// .run-chart-note). `start()` at a run's start, `feed(state)` with every state, `finish()` at its end.
export class RunCharts {
  constructor(root, series = new RunSeries()) {
    this.root = root;
    this.series = series;
    this.boxes = { loss: root.querySelector("[data-chart=loss]"), metrics: root.querySelector("[data-chart=metrics]") };
    this.note = root.querySelector(".run-chart-note");
    this.plots = { loss: null, metrics: null };
    this.drawn = { loss: -1, metrics: -1, layout: -1 }; // the tables' row counts and the layout drawn
    this.widths = new Map(); // box -> its content width, as the ResizeObserver last saw it
    this.frame = 0; // the requested animation frame, or 0
    this.watch();
    idle(() => this.warm());
  }

  // A chart made and drawn off the page once, while the page is idle: the browser compiles the chart code
  // then, so the first chart of a run is drawn as fast as later ones (else a long task as the run starts).
  warm() {
    const box = document.createElement("div");
    box.style.cssText = "position: absolute; left: -10000px; top: 0; width: 320px";
    box.setAttribute("aria-hidden", "true");
    document.body.append(box);
    const colours = themeColours(this.root);
    const columns = [
      { name: "loss", label: "loss", unit: "value" },
      { name: "accuracy", label: "accuracy", unit: "%" },
    ];
    const plots = [
      new uPlot(
        lossOptions(320, new RunSeries(), colours),
        [
          [0, 1],
          [1, 0.5],
        ],
        box,
      ),
      new uPlot(
        metricsOptions(320, new RunSeries(), colours, columns),
        [
          [0, 1],
          [1, 0.5],
          [0.5, 0.9],
        ],
        box,
      ),
    ];
    idle(() => {
      for (const plot of plots) plot.setData([plot.data[0].concat(2), ...plot.data.slice(1).map((c) => c.concat(0.4))]);
      idle(() => {
        for (const plot of plots) plot.destroy();
        box.remove();
      });
    });
  }

  start() {
    this.series.reset();
    this.destroy();
    this.schedule();
  }

  feed(state) {
    this.series.update(state);
    this.schedule();
  }

  // Draws what is not drawn yet now, without waiting for a frame.
  finish() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    try {
      for (let pass = 0; pass < 3 && this.draw(); pass += 1); // a chart made, then filled
      cancelAnimationFrame(this.frame);
      this.frame = 0;
    } catch (error) {
      console.error(error); // called as the run ends: a chart's failure must not fail the run's panel
    }
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  watch() {
    const recolour = () => {
      this.destroy();
      this.schedule();
    };
    new MutationObserver(recolour).observe(document.documentElement, { attributeFilter: ["data-theme"] });
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", recolour);
    const resized = new ResizeObserver((entries) => {
      for (const entry of entries) this.widths.set(entry.target, Math.floor(entry.contentRect.width));
      this.resize();
    });
    for (const box of Object.values(this.boxes)) resized.observe(box);
  }

  resize() {
    for (const [name, plot] of Object.entries(this.plots)) {
      const width = this.widths.get(this.boxes[name]) ?? 0;
      if (plot && width && width !== plot.width) plot.setSize({ width, height: HEIGHT });
    }
    this.schedule();
  }

  destroy() {
    for (const plot of Object.values(this.plots)) plot?.destroy();
    this.plots = { loss: null, metrics: null };
    this.drawn = { loss: -1, metrics: -1, layout: -1 };
    for (const box of Object.values(this.boxes)) {
      delete box.dataset.points;
      delete box.dataset.step;
    }
    this.boxes.metrics.textContent = "Held-out metrics appear when the first epoch ends.";
  }

  // At most one setData per chart, and only for a chart whose table changed since it was last drawn; true
  // when it made a chart and left its data to the next frame.
  draw() {
    const { loss, metrics } = this.series;
    const width = (name) => this.widths.get(this.boxes[name]) ?? this.boxes[name].clientWidth;
    if (!width("loss")) return false; // hidden: the ResizeObserver asks again once it shows
    const colours = themeColours(this.root);
    if (!this.plots.loss) {
      // a chart is made in one frame and filled in the next: each stays a short task
      this.plots.loss = this.plot("loss", lossOptions(width("loss"), this.series, colours));
      this.schedule();
      return true;
    }
    // never empty data: after a setData of no points, uPlot 1.6.32 stops updating the legend
    if (loss.count && this.drawn.loss !== loss.count) this.setData("loss", loss.data(), loss.count);
    const columns = this.series.metricColumns();
    if (columns.length && this.drawn.layout !== this.series.layout) {
      this.plots.metrics?.destroy();
      this.boxes.metrics.textContent = "";
      this.plots.metrics = this.plot("metrics", metricsOptions(width("metrics"), this.series, colours, columns));
      this.drawn.layout = this.series.layout;
      this.drawn.metrics = -1;
      this.schedule();
      return true;
    }
    if (this.plots.metrics && this.drawn.metrics !== metrics.count) {
      this.setData("metrics", metrics.data(columns.map((c) => c.name)), metrics.count);
    }
    this.label();
    return false;
  }

  plot(name, options) {
    return new uPlot(
      options,
      options.series.map(() => []),
      this.boxes[name],
    );
  }

  setData(name, data, count) {
    this.plots[name].setData(data);
    this.drawn[name] = count;
    const box = this.boxes[name];
    box.dataset.points = String(data[0].length);
    box.dataset.step = String(data[0].at(-1) ?? "");
  }

  label() {
    const trains = this.series.trains;
    this.boxes.loss.closest("figure").querySelector("figcaption").textContent = trains
      ? "Train loss"
      : "Train loss (none)";
    this.boxes.metrics.closest("figure").querySelector("figcaption").textContent = trains
      ? "Held-out metrics"
      : "Results";
    this.boxes.loss.setAttribute("aria-label", this.series.lossSummary());
    this.boxes.metrics.setAttribute("aria-label", this.series.metricsSummary());
    const bad = this.series.nonFinite;
    this.note.textContent = bad ? `Train loss: ${nonFiniteText(bad)}.` : "";
    this.note.hidden = !bad;
  }
}
