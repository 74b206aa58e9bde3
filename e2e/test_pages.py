"""The pages around the app in headless Chromium: Getting started and Honest limits load and their links
resolve, every page's header links the others, the theme toggle (light or dark, kept across reloads and
pages, set before the first paint, usable by keyboard; the system's theme until the user chooses), text
contrast in both themes, the limits page's live figures (this browser's quota and WebGPU adapter), the new
files in the offline copy, and screenshots of the main, start and limits pages in both themes, written to
e2e/artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from appdriver import launch, open_app, patient
from playwright.sync_api import Browser, Page, Playwright

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
PAGES = ["index.html", "start.html", "correctness.html", "limits.html"]
LIGHT_BG, DARK_BG = "rgb(247, 249, 251)", "rgb(15, 19, 23)"  # style.css's --bg in each set
VIEWPORT = {"width": 1280, "height": 900}

# Records the theme <html> carries when <body> first exists: a theme set before then is painted first.
THEME_AT_BODY = """
new MutationObserver((_, observer) => {
  if (!document.body) return;
  window.themeAtBody = document.documentElement.dataset.theme ?? null;
  observer.disconnect();
}).observe(document, { childList: true, subtree: true });
"""

# Text samples of every coloured kind the pages show (as the app's own classes and ids style them), each
# with an id; the editor's port names need its stylesheet (main.css) ahead of style.css.
SAMPLES = """async () => {
  const css = Object.assign(document.createElement("link"), { rel: "stylesheet", href: "main.css" });
  const loaded = new Promise((resolve) => { css.onload = resolve; });
  document.head.insertBefore(css, document.querySelector('link[href="style.css"]'));
  await loaded;
  const box = document.createElement("section");
  box.className = "card";
  box.id = "guide";
  box.innerHTML = `<p id="s-text">text</p><p class="plan-note" id="s-note">note</p><a href="#" id="s-link">link</a>
    <p class="banner" id="s-banner">banner</p><p class="banner error" id="s-error">error</p>
    <span class="plan-error" id="s-plan-error">refused</span>
    <span class="verdict-badge verdict-green" id="s-green">green</span>
    <span class="verdict-badge verdict-yellow" id="s-yellow">yellow</span>
    <span class="verdict-badge verdict-red" id="s-red">red</span>
    <button class="remedy verdict-edge-green" id="s-remedy">remedy</button>
    <pre id="s-pre">code</pre><pre class="guide-code"><span class="guide-line marked" id="s-marked">marked</span></pre>
    <div class="editor"><span class="port-name kind-float" id="s-float">x</span>
      <span class="port-name kind-int" id="s-int">i</span><span class="port-name kind-bool" id="s-bool">b</span>
      <span class="port-name" id="s-any">a</span><p class="field-error" id="s-field-error">bad</p></div>`;
  document.querySelector("main").prepend(box);
}"""

# Each sample's text colour and the colour of the first opaque background behind it.
COLOURS = """() => [...document.querySelectorAll("[id^=s-]")].map((node) => {
  let back = node;
  while (back && getComputedStyle(back).backgroundColor.endsWith(", 0)")) back = back.parentElement;
  const bg = back ? getComputedStyle(back).backgroundColor : "rgb(255, 255, 255)";
  return [node.id, getComputedStyle(node).color, bg];
})"""


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Chromium with WebGPU (SwiftShader), so the limits page has an adapter to show."""
    browser = launch(playwright, webgpu=True)
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh context (no theme chosen yet), the main page's module kept out: these tests need no engine."""
    context = patient(browser.new_context(viewport=VIEWPORT))
    context.route("**/main.js", lambda route: route.abort())
    yield context.new_page()
    context.close()


def theme(page: Page) -> tuple[str | None, str, str]:
    """The chosen theme (None: the system's), the toggle's aria-pressed and the page's background."""
    chosen, pressed, background = page.evaluate(
        """() => [document.documentElement.dataset.theme ?? null,
                  document.getElementById("theme-toggle").getAttribute("aria-pressed"),
                  getComputedStyle(document.body).backgroundColor]"""
    )
    return chosen, pressed, background


def relative_luminance(css: str) -> float:
    channels = [int(v) / 255 for v in re.findall(r"\d+", css)[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(fg: str, bg: str) -> float:
    light, dark = sorted((relative_luminance(fg), relative_luminance(bg)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def dark_properties(dist: Path) -> list[str]:
    """The custom properties style.css's chosen-dark set gives."""
    block = re.search(r":root\[data-theme=dark\] \{(.*?)\}", (dist / "style.css").read_text(), re.S)
    assert block, "style.css has no :root[data-theme=dark] set"
    return re.findall(r"(--[\w-]+):", block.group(1))


def hrefs(page: Page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "(links) => links.map((a) => a.getAttribute('href'))")


def shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("name", PAGES)
def test_every_page_links_the_others_and_has_the_toggle(page: Page, base_url: str, name: str) -> None:
    page.goto(base_url + name, wait_until="domcontentloaded")
    assert {"start.html", "correctness.html", "limits.html"} <= set(hrefs(page, "header nav a"))
    assert hrefs(page, "nav [aria-current=page]") == ([] if name == "index.html" else [name])
    toggle = page.get_by_role("button", name="Dark theme")
    assert toggle.is_visible() and toggle.get_attribute("aria-pressed") == "false"


@pytest.mark.parametrize("name", ["start.html", "limits.html"])
def test_page_loads_and_its_links_resolve(page: Page, base_url: str, name: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    response = page.goto(base_url + name)
    assert response is not None and response.ok
    assert page.locator("main section.card").count() >= 5
    links = hrefs(page, "a[href]")
    assert links
    for href in links:
        url = urljoin(base_url + name, href)
        assert urlsplit(url).netloc == urlsplit(base_url).netloc, f"{name} links off the site: {href}"
        answer = page.request.get(url.split("#")[0])
        assert answer.ok, f"{name}: {href} answers {answer.status}"
        fragment = urlsplit(url).fragment
        if fragment:
            assert f'id="{fragment}"' in answer.text(), f"{name}: {href} names no element of its page"
    assert errors == []


def test_theme_toggle_switches_persists_and_is_set_before_the_first_paint(page: Page, base_url: str) -> None:
    page.add_init_script(THEME_AT_BODY)
    page.goto(base_url + "start.html")
    assert theme(page) == (None, "false", LIGHT_BG)
    page.get_by_role("button", name="Dark theme").click()
    assert theme(page) == ("dark", "true", DARK_BG)
    page.reload()
    assert theme(page) == ("dark", "true", DARK_BG)
    assert page.evaluate("() => window.themeAtBody") == "dark"
    page.goto(base_url + "limits.html")  # the choice is the site's, not the page's
    assert theme(page) == ("dark", "true", DARK_BG)
    assert page.evaluate("() => window.themeAtBody") == "dark"


def test_theme_toggle_by_keyboard(page: Page, base_url: str) -> None:
    page.goto(base_url + "start.html")
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "theme-toggle":
            break
    assert page.evaluate("() => document.activeElement.id") == "theme-toggle"
    page.keyboard.press("Enter")
    assert theme(page) == ("dark", "true", DARK_BG)
    page.keyboard.press("Space")
    assert theme(page) == ("light", "false", LIGHT_BG)
    page.reload()
    assert theme(page) == ("light", "false", LIGHT_BG)


def test_the_system_theme_applies_until_the_user_chooses(browser: Browser, base_url: str, dist: Path) -> None:
    context = patient(browser.new_context(color_scheme="dark"))
    try:
        page = context.new_page()
        page.goto(base_url + "limits.html")
        assert theme(page) == (None, "true", DARK_BG)
        names = dark_properties(dist)
        read = "(names) => names.map((n) => getComputedStyle(document.documentElement).getPropertyValue(n))"
        by_system = page.evaluate(read, names)
        page.get_by_role("button", name="Dark theme").click()
        assert theme(page) == ("light", "false", LIGHT_BG)  # chosen light over the system's dark
        page.reload()
        assert theme(page) == ("light", "false", LIGHT_BG)
        page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
        assert page.evaluate(read, names) == by_system  # the two dark sets are the same set
    finally:
        context.close()


@pytest.mark.parametrize("chosen", ["light", "dark"])
def test_text_contrast_is_wcag_aa_in_both_themes(page: Page, base_url: str, chosen: str) -> None:
    page.goto(base_url + "limits.html")
    page.evaluate("(chosen) => { document.documentElement.dataset.theme = chosen; }", chosen)
    page.evaluate(SAMPLES)
    samples = page.evaluate(COLOURS)
    assert len(samples) == 17
    low = {name: round(contrast(fg, bg), 2) for name, fg, bg in samples if contrast(fg, bg) < 4.5}
    assert low == {}, f"{chosen}: below 4.5:1: {low}"


def test_limits_page_shows_this_browsers_quota_and_adapter(page: Page, base_url: str) -> None:
    page.goto(base_url + "limits.html")
    page.wait_for_selector("#storage-live[data-state=ready]")
    shown = int(page.get_attribute("#storage-live data", "value") or "-1")
    assert shown == page.evaluate("async () => (await navigator.storage.estimate()).quota") > 0
    assert "Quota for this site" in page.inner_text("#storage-live")
    page.wait_for_selector("#gpu-live[data-state=ready]")
    binding = page.evaluate("async () => (await navigator.gpu.requestAdapter()).limits.maxStorageBufferBindingSize")
    live = page.inner_text("#gpu-live")
    assert "maxStorageBufferBindingSize" in live and "maxBufferSize" in live and "shader-f16" in live
    values = page.eval_on_selector_all("#gpu-live data", "(nodes) => nodes.map((n) => Number(n.value))")
    assert values[0] == binding
    assert "swiftshader" in live.lower()


def test_limits_page_without_webgpu_says_so(playwright: Playwright, base_url: str) -> None:
    browser = launch(playwright, webgpu=False)
    try:
        page = patient(browser.new_context()).new_page()
        page.goto(base_url + "limits.html")
        page.wait_for_selector("#gpu-live[data-state=none]", state="attached")
        assert "CPU path" in page.inner_text("#gpu-live-note")
        page.wait_for_selector("#storage-live[data-state=ready]")
    finally:
        browser.close()


def test_screenshots_of_the_pages_in_both_themes(page: Page, base_url: str) -> None:
    for name in ["start", "limits"]:
        page.goto(f"{base_url}{name}.html")
        page.wait_for_selector("#storage-live[data-state=ready]" if name == "limits" else "main")
        shoot(page, f"page-{name}-light")
        page.get_by_role("button", name="Dark theme").click()
        shoot(page, f"page-{name}-dark")
        page.get_by_role("button", name="Dark theme").click()


def test_main_page_in_both_themes_and_the_new_files_kept_offline(playwright: Playwright, base_url: str) -> None:
    """The main page on the CPU path (its banner shown), a plan drawn; then the offline copy."""
    browser = launch(playwright, webgpu=False)
    try:
        app = open_app(browser, base_url)
        page = app.page
        page.set_viewport_size(VIEWPORT)
        page.select_option("#train-level", "prod")
        page.wait_for_selector("#plan[data-state=shown]")
        shoot(page, "page-main-light")
        page.get_by_role("button", name="Dark theme").click()
        assert theme(page) == ("dark", "true", DARK_BG)
        shoot(page, "page-main-dark")
        page.wait_for_selector("body[data-offline=yes]")
        kept = page.evaluate(
            """async () => {
              for (const name of await caches.keys()) {
                const cache = await caches.open(name);
                if (!(await cache.match("build.json"))) continue;
                const files = ["start.html", "theme.js", "limits_page.js", "limits.html"];
                return Promise.all(files.map(async (f) => Boolean(await cache.match(f))));
              }
              return null;
            }"""
        )
        assert kept == [True, True, True, True]
        assert app.errors == []
    finally:
        browser.close()
