// The colour theme: light or dark as the user chose in the header's toggle (kept in localStorage), else as
// the system prefers (style.css's prefers-color-scheme rules). A classic script in each page's head, so a
// chosen theme is set on <html> before the first paint; it wires the toggle once the page is parsed.

(() => {
  const KEY = "scellis-theme";
  const root = document.documentElement;
  const system = matchMedia("(prefers-color-scheme: dark)");

  const read = () => {
    try {
      return localStorage.getItem(KEY);
    } catch {
      return null; // storage blocked: the system's theme, every visit
    }
  };
  const chosen = read();
  if (chosen === "dark" || chosen === "light") root.dataset.theme = chosen;

  const isDark = () => (root.dataset.theme ? root.dataset.theme === "dark" : system.matches);

  function wire() {
    const button = document.getElementById("theme-toggle");
    if (!button) return;
    const show = () => button.setAttribute("aria-pressed", String(isDark()));
    button.addEventListener("click", () => {
      root.dataset.theme = isDark() ? "light" : "dark";
      try {
        localStorage.setItem(KEY, root.dataset.theme);
      } catch {
        // kept for this page only
      }
      show();
    });
    system.addEventListener("change", show);
    show();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
