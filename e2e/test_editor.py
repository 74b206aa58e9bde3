"""The graph editor in Chromium, on the CPU path (the editor is the same on every device; the runs train on
the CPU path): the digits MLP opens with a palette from the engine's catalog; a node from the palette is
added and wired; a bad parameter is marked on its node, blocks the plan and the train button (which says
why) and clears once fixed, and the plan follows the program's width; undo and redo, copy and paste,
delete, an edge deleted by keyboard, fit; a remedy from the plan panel flows into the editor; the program
is exported, another example opened, the export imported again from the file picker and by a drop (a
palette op dropped lands too; a broken file is named by line and column); an edited program trains and
its manifest pins it; a reload finds it again; a narrow window stacks the layout. Each test starts from
the program it needs (the page's example, or an edited one opened from a file), whatever ran before it.
Screenshots of the editor go to e2e/artifacts/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp, launch, open_app, wait_ready
from playwright.sync_api import Locator, Page, Playwright

from scellis.examples import digits_mlp
from scellis.graph import palette, validate

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
VIEWPORT = {"width": 1400, "height": 1300}  # the editor, the plan panel and the train button in view


@pytest.fixture(scope="module")
def loaded(playwright: Playwright, base_url: str) -> Iterator[LoadedApp]:
    """The app on the CPU path only: nothing in the editor depends on the device."""
    browser = launch(playwright, webgpu=False)
    try:
        app = open_app(browser, base_url)
        app.page.set_viewport_size(VIEWPORT)
        yield app
    finally:
        browser.close()


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#editor").screenshot(path=str(ARTIFACTS / f"editor-{name}.png"))


def node(page: Page, node_id: str) -> Locator:
    return page.locator(f'.react-flow__node[data-id="{node_id}"]')


def handle(page: Page, node_id: str, port: str) -> Locator:
    return node(page, node_id).locator(f'.react-flow__handle[data-handleid="{port}"]')


def edge(page: Page, edge_id: str) -> Locator:
    return page.locator(f'.react-flow__edge[data-id="{edge_id}"]')


def problems(page: Page, count: int) -> list[str]:
    """Waits for the latest check to report `count` problems; returns the list's lines."""
    page.wait_for_selector(f".editor[data-checked=yes] .editor-problems[data-count='{count}']")
    return page.locator(".editor-problems li").all_inner_texts()


def plan_total(page: Page) -> int:
    text = page.locator("#plan-functions dd").last.inner_text()
    found = re.search(r"\(([\d,]+) bytes\)", text)
    assert found, text
    return int(found.group(1).replace(",", ""))


def wait_new_plan(page: Page, old_total: int | None = None) -> int:
    """Waits for a plan (other than one of `old_total` bytes, when given); returns its total."""
    page.wait_for_function(
        """(old) => {
          const plan = document.getElementById('plan');
          if (plan.dataset.state === 'error') return true;
          if (plan.dataset.state !== 'shown') return false;
          const line = [...document.querySelectorAll('#plan-functions dd')].at(-1).textContent;
          return old === null || !line.includes(`(${old.toLocaleString('en-US')} bytes)`);
        }""",
        arg=old_total,
    )
    assert page.get_attribute("#plan", "data-state") == "shown", page.inner_text("#plan")
    return plan_total(page)


def connect(page: Page, source: Locator, target: Locator) -> None:
    """A wire drawn with the mouse, from an output handle to an input handle."""
    a, b = source.bounding_box(), target.bounding_box()
    assert a and b
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=12)
    page.mouse.up()


def set_field(page: Page, name: str, text: str) -> None:
    field = page.locator(".editor-panel").get_by_label(name, exact=True)
    field.fill(text)
    field.press("Enter")


EXAMPLE_IDS = ["pixels", "digit", "hidden", "relu", "logits", "loss", "accuracy"]


def edited_program() -> dict:
    """The digits MLP as the tests below edit it: the hidden layer 32 wide, a tanh reading it."""
    program = digits_mlp()
    for n in program["nodes"]:
        if n["id"] == "hidden":
            n["params"]["features"] = 32
    program["nodes"].append({"id": "tanh1", "op": "tanh"})
    program["edges"].append({"from": {"node": "hidden", "port": "out"}, "to": {"node": "tanh1", "port": "x"}})
    validate(program)
    return program


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("editor") / "edited.json"
    path.write_text(json.dumps(edited_program()))
    return path


def open_example(page: Page) -> None:
    """The page's example as shipped in the editor (its nodes, and the hidden layer 128 wide), checked; no
    memory limit."""
    page.get_by_role("button", name="Reset to example").click()
    page.wait_for_function(
        """(ids) => JSON.stringify([...document.querySelectorAll('.react-flow__node')].map((n) => n.dataset.id))
          === JSON.stringify(ids)
          && document.querySelector('.react-flow__node[data-id=hidden]').textContent.includes('features 128')""",
        arg=EXAMPLE_IDS,
    )
    assert problems(page, 0) == []
    clear_cap(page)


def open_edited(page: Page, path: Path) -> None:
    """The edited program opened from its file (the example first, so the file's tanh appearing is this
    opening's), checked; no memory limit."""
    open_example(page)
    page.set_input_files(".editor-toolbar input[type=file]", str(path))
    node(page, "tanh1").wait_for()
    assert problems(page, 0) == []


def clear_cap(page: Page) -> None:
    if page.input_value("#plan-cap"):
        page.click("#plan-cap-clear")


def wait_plan_of(page: Page, ending: str) -> int:
    """Waits for a plan of the program the page names with `ending` (its changes); returns its total."""
    page.wait_for_function(
        """(ending) => document.getElementById('plan').dataset.state === 'shown'
          && document.getElementById('plan-program').textContent.endsWith(ending)""",
        arg=ending,
    )
    return plan_total(page)


def test_the_example_opens_with_the_engines_palette(loaded: LoadedApp) -> None:
    page = loaded.page
    open_example(page)
    ids = page.locator(".react-flow__node").evaluate_all("(nodes) => nodes.map((n) => n.dataset.id)")
    assert ids == EXAMPLE_IDS
    catalog = palette()  # one source of truth: the palette is the engine's catalog, grouped
    groups = page.locator(".editor-palette summary").all_inner_texts()
    assert [g.lower() for g in groups] == catalog["categories"]
    names = page.locator(".editor-palette .palette-op").all_inner_texts()
    assert sorted(names) == sorted(op["name"] for op in catalog["ops"])
    hidden = node(page, "hidden")
    assert "linear" in hidden.inner_text() and "features 128" in hidden.inner_text()
    assert handle(page, "hidden", "x").get_attribute("aria-label") == "input x (float)"
    assert "kind-int" in (handle(page, "digit", "out").get_attribute("class") or "")
    page.select_option("#train-level", "debug")
    wait_plan_of(page, "(the example as shipped)")
    screenshot(page, "example")


def test_a_node_from_the_palette_is_added_and_wired(loaded: LoadedApp) -> None:
    page = loaded.page
    open_example(page)
    page.select_option("#train-level", "debug")
    page.get_by_role("button", name=re.compile(r"^Add tanh:")).click()
    tanh = node(page, "tanh1")
    tanh.wait_for()
    [problem] = problems(page, 1)
    assert "tanh1" in problem and "input 'x' of tanh is not connected" in problem
    assert tanh.locator(".op-node").get_attribute("data-issues") == "1"
    assert "port-issue" in (handle(page, "tanh1", "x").get_attribute("class") or "")
    assert page.is_disabled("#train-button")
    assert "Training waits: the program in the editor has a problem: tanh1 input x" in page.inner_text("#train-blocked")
    page.wait_for_selector("#plan[data-state=blocked]")
    connect(page, handle(page, "hidden", "out"), handle(page, "tanh1", "x"))
    edge(page, "hidden.out->tanh1.x").wait_for()
    assert problems(page, 0) == []
    assert tanh.locator(".op-node").get_attribute("data-issues") == "0"
    wait_plan_of(page, "(changed: edited)")
    assert page.is_enabled("#train-button") and page.is_hidden("#train-blocked")


def test_a_bad_parameter_is_marked_and_the_plan_follows_the_width(loaded: LoadedApp) -> None:
    page = loaded.page
    open_example(page)
    page.select_option("#train-level", "debug")
    before = wait_plan_of(page, "(the example as shipped)")
    node(page, "hidden").click()
    field = page.locator(".editor-panel").get_by_label("features", exact=True)
    assert field.input_value() == "128"
    set_field(page, "features", "0")
    [problem] = problems(page, 1)
    assert "hidden" in problem and "features: must be at least 1, got 0" in problem
    hidden = node(page, "hidden").locator(".op-node")
    assert hidden.get_attribute("data-issues") == "1" and "must be at least 1, got 0" in hidden.inner_text()
    assert field.get_attribute("aria-invalid") == "true"
    assert "must be at least 1, got 0" in page.inner_text(".editor-panel .field-error")
    assert page.is_disabled("#train-button") and "hidden features: must be at least 1" in page.inner_text(
        "#train-blocked"
    )
    page.wait_for_selector("#plan[data-state=blocked]")
    screenshot(page, "error")
    set_field(page, "features", "32")
    assert problems(page, 0) == []
    assert hidden.get_attribute("data-issues") == "0" and "features 32" in hidden.inner_text()
    after = wait_new_plan(page, before)
    assert after < before  # 64x32 + 32x10 weights and their Adam state instead of 64x128 + 128x10
    assert page.is_enabled("#train-button")


def focus_canvas_on(page: Page, node_id: str) -> None:
    node(page, node_id).click()  # selects it; the keyboard is then in the editor


def test_undo_redo_copy_paste_delete_and_fit(loaded: LoadedApp, edited: Path) -> None:
    page = loaded.page
    open_edited(page, edited)
    node(page, "hidden").click()
    features = page.locator(".editor-panel").get_by_label("features", exact=True)
    set_field(page, "features", "0")
    problems(page, 1)
    set_field(page, "features", "32")
    problems(page, 0)
    focus_canvas_on(page, "hidden")  # the keyboard in the drawing, not in the field (its own undo)
    page.keyboard.press("Control+z")
    problems(page, 1)
    assert features.input_value() == "0"
    page.keyboard.press("Control+Shift+z")
    problems(page, 0)
    assert features.input_value() == "32"
    page.keyboard.press("Control+z")
    page.keyboard.press("Control+y")
    assert features.input_value() == "32" and problems(page, 0) == []
    focus_canvas_on(page, "tanh1")
    page.keyboard.press("Control+c")
    page.keyboard.press("Control+v")
    pasted = node(page, "tanh2")
    pasted.wait_for()
    assert "selected" in (pasted.get_attribute("class") or "")  # the paste is selected, ready to move
    [problem] = problems(page, 1)  # the copy's input was not copied with it
    assert "tanh2" in problem
    page.keyboard.press("Delete")
    pasted.wait_for(state="detached")
    assert problems(page, 0) == []
    wire = edge(page, "hidden.out->tanh1.x")
    box = wire.bounding_box()
    assert box
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector('.react-flow__edge.selected[data-id="hidden.out->tanh1.x"]')
    page.keyboard.press("Backspace")
    wire.wait_for(state="detached")
    problems(page, 1)
    page.get_by_role("button", name="Undo", exact=True).click()
    wire.wait_for()
    assert problems(page, 0) == []
    viewport = page.locator(".react-flow__viewport")
    fitted = viewport.get_attribute("style")
    page.get_by_role("button", name="Zoom In").click()
    page.wait_for_function("(old) => document.querySelector('.react-flow__viewport').style.cssText !== old", arg=fitted)
    focus_canvas_on(page, "loss")
    page.keyboard.press("f")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.react-flow__node')].every((n) => {"
        " const r = n.getBoundingClientRect(), c = document.querySelector('.editor-canvas').getBoundingClientRect();"
        " return r.top >= c.top && r.bottom <= c.bottom && r.left >= c.left && r.right <= c.right; })"
    )


def test_a_remedy_flows_into_the_editor(loaded: LoadedApp, edited: Path) -> None:
    page = loaded.page
    open_edited(page, edited)
    page.select_option("#train-level", "debug")
    total = wait_plan_of(page, "(changed: edited)")
    page.fill("#plan-cap", repr(int(total * 0.9) / (1 << 20)))
    page.press("#plan-cap", "Enter")
    page.wait_for_selector("#plan[data-state=shown][data-verdict=red]")
    button = page.locator("#plan-remedies button", has_text="Apply: batch ")
    batch = int(re.search(r"batch (\d+)", button.inner_text()).group(1))  # type: ignore[union-attr]
    button.click()
    wait_plan_of(page, f"(changed: edited, batch {batch})")
    assert page.get_attribute("#plan", "data-verdict") == "green"
    page.locator(".react-flow__pane").click(position={"x": 10, "y": 10})  # nothing selected: the program
    loop = page.locator(".editor-panel").get_by_label("loop", exact=True)
    assert json.loads(loop.input_value())["batch_size"] == batch
    assert page.inner_text(".editor-notice") == f"Opened the remedy batch {batch}."
    page.get_by_role("button", name="Undo", exact=True).click()  # the remedy, taken back in the editor
    assert json.loads(loop.input_value())["batch_size"] == 64
    wait_plan_of(page, "batch 64 (changed: edited)")
    assert page.get_attribute("#plan", "data-verdict") == "red"
    page.click("#plan-cap-clear")
    page.wait_for_selector("#plan[data-state=shown][data-verdict=green]")


OP_DRAG_TYPE = "application/x-scellis-op"  # what a palette drag carries (Palette.jsx)


def drop(page: Page, item: dict, at: tuple[float, float] = (0.5, 0.5)) -> None:
    """A drop on the canvas at a fraction of its box: a palette op ({type, data}) or a file ({name, data})."""
    box = page.locator(".editor-canvas").bounding_box()
    assert box
    where = {"clientX": box["x"] + box["width"] * at[0], "clientY": box["y"] + box["height"] * at[1]}
    carried = page.evaluate_handle(
        """(item) => {
          const data = new DataTransfer();
          if (item.name) data.items.add(new File([item.data], item.name, { type: "application/json" }));
          else data.setData(item.type, item.data);
          return data;
        }""",
        item,
    )
    page.dispatch_event(".editor-canvas", "dragover", {"dataTransfer": carried, **where})
    page.dispatch_event(".editor-canvas", "drop", {"dataTransfer": carried, **where})


def test_export_and_import(loaded: LoadedApp, edited: Path, tmp_path: Path) -> None:
    page = loaded.page
    open_edited(page, edited)
    with page.expect_download() as download:
        page.get_by_role("button", name="Export JSON").click()
    assert download.value.suggested_filename == "digits-mlp.json"
    exported = tmp_path / "digits-mlp.json"
    download.value.save_as(exported)
    program = json.loads(exported.read_text())
    validate(program)  # what the editor writes is a program the engine takes
    nodes = {n["id"]: n for n in program["nodes"]}
    assert nodes["hidden"]["params"]["features"] == 32 and nodes["tanh1"]["op"] == "tanh"
    assert {"from": {"node": "hidden", "port": "out"}, "to": {"node": "tanh1", "port": "x"}} in program["edges"]
    assert {n["id"] for n in program["nodes"]} == {n["id"] for n in edited_program()["nodes"]}
    page.select_option(".editor-examples select", label="digits-cnn")
    page.get_by_role("button", name="Open", exact=True).click()
    node(page, "conv1").wait_for()
    assert problems(page, 0) == []
    screenshot(page, "cnn")
    page.set_input_files(".editor-toolbar input[type=file]", str(exported))
    node(page, "tanh1").wait_for()
    assert node(page, "conv1").count() == 0 and problems(page, 0) == []
    assert page.inner_text(".editor-notice") == "Opened digits-mlp.json."
    page.get_by_role("button", name="Open", exact=True).click()  # the CNN again; then things dropped on it
    node(page, "conv1").wait_for()
    drop(page, {"type": OP_DRAG_TYPE, "data": "relu"}, at=(0.5, 0.2))
    node(page, "relu3").wait_for()  # relu1 and relu2 are the CNN's
    drop(page, {"name": "dropped.json", "data": exported.read_text()})
    node(page, "tanh1").wait_for()
    assert node(page, "conv1").count() == 0 and page.inner_text(".editor-notice") == "Opened dropped.json."
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "nodes": [,]\n}\n')
    page.set_input_files(".editor-toolbar input[type=file]", str(broken))
    page.wait_for_selector(".editor-notice.error-text")
    assert page.inner_text(".editor-notice") == "Could not open broken.json: line 2, column 13: expected a value"
    assert node(page, "tanh1").count() == 1  # the program in the editor is unchanged


def test_the_edited_program_trains(loaded: LoadedApp, edited: Path, tmp_path: Path) -> None:
    page = loaded.page
    open_edited(page, edited)
    page.select_option("#train-level", "debug")
    wait_plan_of(page, "(changed: edited)")
    page.fill("#train-epochs", "1")
    page.click("#train-button")
    done = "#train[data-state=done], #train[data-state=refused], #train[data-state=error]"
    page.wait_for_selector(done, timeout=RUN_MS)
    assert page.get_attribute("#train", "data-state") == "done", page.inner_text("#train-status")
    assert page.locator("#train-log tbody tr").count() == 1
    with page.expect_download() as download:
        page.click("#run-manifest")
    path = tmp_path / "run.manifest.json"
    download.value.save_as(path)
    ran = {n["id"]: n for n in json.loads(path.read_text())["program"]["json"]["nodes"]}  # what the run pins
    assert ran["hidden"]["params"]["features"] == 32 and ran["tanh1"]["op"] == "tanh"
    screenshot(page, "trained")


def test_a_reload_finds_the_program_again(loaded: LoadedApp, edited: Path) -> None:
    page = loaded.page
    open_edited(page, edited)
    page.reload()
    wait_ready(page)
    node(page, "tanh1").wait_for()
    assert "features 32" in node(page, "hidden").inner_text()
    assert page.inner_text(".editor-notice") == "Opened the program kept in this browser."
    assert problems(page, 0) == []
    page.select_option("#train-level", "debug")
    wait_plan_of(page, "(changed: edited)")
    screenshot(page, "restored")
    page.get_by_role("button", name="Reset to example").click()
    node(page, "tanh1").wait_for(state="detached")
    assert problems(page, 0) == []
    wait_plan_of(page, "(the example as shipped)")


def test_the_layout_follows_a_narrow_window(loaded: LoadedApp) -> None:
    page = loaded.page
    page.set_viewport_size({"width": 600, "height": 1400})
    try:
        canvas = page.locator(".editor-canvas").bounding_box()
        palette_box = page.locator(".editor-palette").bounding_box()
        assert canvas and palette_box and palette_box["y"] >= canvas["y"] + canvas["height"] - 1  # stacked
        assert canvas["width"] <= 600
        screenshot(page, "narrow")
    finally:
        page.set_viewport_size(VIEWPORT)
