"""The run panel's live charts in Chromium, on the CPU path (the charts are the same on every device): the
digits MLP trains and both charts draw while it runs, the train loss a point per state and the held-out
metrics a point per epoch, with legends and labels that say the latest values; a new run starts them over;
a theme change recolours them from the page's custom properties; however many states come at once, a
chart is drawn once a frame, and non-finite losses are counted and said; a narrow window narrows and stacks
them. Screenshots go to e2e/artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp, launch, open_app
from playwright.sync_api import Page, Playwright

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
STEPS_PER_EPOCH = 22  # the digits MLP's
VIEWPORT = {"width": 1200, "height": 1400}


@pytest.fixture(scope="module")
def loaded(playwright: Playwright, base_url: str) -> Iterator[LoadedApp]:
    browser = launch(playwright, webgpu=False)
    try:
        app = open_app(browser, base_url)
        app.page.set_viewport_size(VIEWPORT)
        yield app
    finally:
        browser.close()


# The train loss's colour in the legend is `colour` (the chart is remade on the next frame after a change).
MARKER_IS = """(colour) => {
  const marker = document.querySelector('#run-charts [data-chart=loss] .u-series:nth-child(2) .u-marker');
  return marker !== null && getComputedStyle(marker).borderColor === colour;
}"""


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#run-charts").screenshot(path=str(ARTIFACTS / f"charts-{name}.png"))


def chart(page: Page, name: str) -> dict:
    return page.evaluate(
        """(name) => {
        const box = document.querySelector(`#run-charts [data-chart=${name}]`);
        const legend = [...box.querySelectorAll('.u-legend .u-series:not(:first-child) .u-label')];
        const marker = box.querySelector('.u-legend .u-series:nth-child(2) .u-marker');
        return { points: Number(box.dataset.points ?? 0), step: Number(box.dataset.step ?? -1),
          label: box.getAttribute('aria-label'), role: box.getAttribute('role'),
          canvas: box.querySelectorAll('canvas').length, legend: legend.map((l) => l.textContent),
          colour: marker ? getComputedStyle(marker).borderColor : null,
          width: box.querySelector('.uplot')?.getBoundingClientRect().width ?? 0, box: box.clientWidth,
          top: box.getBoundingClientRect().top,
          values: [...box.querySelectorAll('.u-legend .u-value')].map((v) => v.textContent) };
        }""",
        name,
    )


def train(page: Page, epochs: int, seed: str) -> list[list[int]]:
    """Trains at debug to the end; returns the loss chart's (points, step) each time it was drawn."""
    page.select_option("#train-level", "debug")
    page.fill("#train-epochs", str(epochs))
    page.fill("#train-seed", seed)
    page.wait_for_selector("#train-button:enabled")
    page.evaluate(
        """() => {
        window.chartDraws = [];
        const box = document.querySelector('#run-charts [data-chart=loss]');
        new MutationObserver(() => window.chartDraws.push([Number(box.dataset.points), Number(box.dataset.step)]))
          .observe(box, { attributeFilter: ['data-step'] });
        }"""
    )
    page.click("#train-button")
    page.wait_for_function(  # this run's end (each run of this module has a seed of its own), not one before's
        """([end, seed]) => { const run = document.getElementById('run');
        if (!document.getElementById('run-line').textContent.endsWith(`, seed ${seed}`)) return false;
        return run.dataset.phase === 'failed' || (run.dataset.phase === 'done' &&
          document.getElementById('run-figures').textContent.startsWith(`step ${end} of ${end} `)); }""",
        arg=[epochs * STEPS_PER_EPOCH, seed],
        timeout=RUN_MS,
    )
    assert page.get_attribute("#run", "data-phase") == "done", page.inner_text("#train-status")
    return page.evaluate("() => window.chartDraws")


def test_both_charts_draw_as_the_run_goes(loaded: LoadedApp) -> None:
    page = loaded.page
    draws = train(page, 3, "11")
    end = 3 * STEPS_PER_EPOCH
    assert len(draws) >= 2 and draws[-1][1] == end  # drawn while it ran, not only at the end
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in pairwise(draws))
    loss, metrics = chart(page, "loss"), chart(page, "metrics")
    assert loss["points"] == draws[-1][0] and loss["step"] == end and loss["canvas"] >= 1
    assert loss["role"] == "img" and re.fullmatch(rf"Train loss by step: [\d.e-]+ at step {end}\.", loss["label"])
    assert loss["legend"] == ["train loss"]
    assert loss["values"][0] == str(end) and re.fullmatch(r"[\d.]+", loss["values"][1])  # the newest, unhovered
    assert metrics["points"] == 3 and metrics["step"] == end and metrics["canvas"] >= 1
    assert metrics["legend"] == ["test loss", "test accuracy"]
    said = rf"Held-out metrics by step: test loss [\d.]+ at step {end}, test accuracy [\d.]+ % at step {end}\."
    assert re.fullmatch(said, metrics["label"]), metrics["label"]
    assert page.is_hidden("#run-charts .run-chart-note")  # every loss was finite
    assert not loaded.errors
    screenshot(page, "light")


def test_a_new_run_starts_the_charts_over(loaded: LoadedApp) -> None:
    page = loaded.page
    train(page, 1, "12")
    loss, metrics = chart(page, "loss"), chart(page, "metrics")
    assert loss["step"] == STEPS_PER_EPOCH and loss["points"] <= STEPS_PER_EPOCH
    assert (metrics["points"], metrics["step"]) == (1, STEPS_PER_EPOCH)


def test_a_theme_change_recolours_the_charts(loaded: LoadedApp) -> None:
    page = loaded.page
    train(page, 1, "13")
    before = chart(page, "loss")["colour"]
    page.evaluate("() => document.documentElement.style.setProperty('--chart-1', 'rgb(200, 0, 100)')")
    assert chart(page, "loss")["colour"] == before  # read when a chart is made or the theme changes
    page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
    try:
        page.wait_for_function(MARKER_IS, arg="rgb(200, 0, 100)")
        # the chart is remade in one frame and filled in the next
        page.wait_for_function(
            "() => Number(document.querySelector('#run-charts [data-chart=loss]').dataset.points) > 0"
        )
        after = chart(page, "loss")
        assert after["points"] > 0 and after["step"] == STEPS_PER_EPOCH  # redrawn from the same series
        screenshot(page, "dark")
    finally:
        page.evaluate(
            "() => { document.documentElement.style.removeProperty('--chart-1');"
            " document.documentElement.dataset.theme = 'light'; }"
        )
    page.wait_for_function(MARKER_IS, arg=before)


def test_many_states_make_one_draw_a_frame_and_non_finite_losses_are_named(loaded: LoadedApp) -> None:
    """A RunCharts of its own (window.scellis.charts) on a copy of the panel's containers, fed 500 states at once."""
    out = loaded.page.evaluate(
        """async () => {
        const root = document.getElementById('run-charts').cloneNode(true);
        root.removeAttribute('id');
        document.getElementById('run-charts').after(root);
        const charts = new window.scellis.charts(root);
        const calls = [];
        const setData = charts.setData.bind(charts);
        charts.setData = (name, data, count) => { calls.push(name); setData(name, data, count); };
        const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
        charts.start();
        for (let step = 0; step <= 500; step += 1) {
          const rows = step % 100 ? [] : [{ steps: step, test: { loss: 1 / (step + 1), 'metric/r2': 0.5 } }];
          charts.feed({ step, loss: step % 200 === 7 ? 'nan' : 1 / (step + 1), epochs_done: rows });
        }
        for (let i = 0; i < 5; i += 1) await frame(); // each chart made in one frame, filled in the next
        const box = root.querySelector('[data-chart=loss]'), note = root.querySelector('.run-chart-note');
        const out = { calls, points: box.dataset.points, label: box.getAttribute('aria-label'),
          note: note.hidden ? null : note.textContent };
        root.remove();
        return out;
        }"""
    )
    assert sorted(out["calls"]) == ["loss", "metrics"]  # one setData each for 500 states
    assert out["points"] == "500"
    assert out["note"] == "Train loss: 3 non-finite losses (not drawn)."
    assert out["label"] == "Train loss by step: 0.001996 at step 500; 3 non-finite losses (not drawn)."


def test_the_charts_follow_the_panels_width(loaded: LoadedApp) -> None:
    page = loaded.page
    train(page, 1, "14")
    wide = [chart(page, "loss"), chart(page, "metrics")]
    assert all(abs(c["width"] - c["box"]) <= 1 for c in wide) and wide[0]["top"] == wide[1]["top"]  # side by side
    page.set_viewport_size({"width": 500, "height": 1400})
    try:
        page.wait_for_function(
            """() => [...document.querySelectorAll('#run-charts [data-chart]')].every((box) =>
            Math.abs(box.querySelector('.uplot').getBoundingClientRect().width - box.clientWidth) <= 1)"""
        )
        narrow = [chart(page, "loss"), chart(page, "metrics")]
        assert narrow[1]["top"] > narrow[0]["top"] and all(c["width"] <= 500 for c in narrow)  # stacked, fitting
        assert narrow[0]["width"] != wide[0]["width"] and narrow[1]["points"] == 1
        screenshot(page, "narrow")
    finally:
        page.set_viewport_size(VIEWPORT)
