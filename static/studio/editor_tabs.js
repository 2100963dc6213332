// Editor tabs: a change form whose sections carry a "tab-<name>" class is shown one tab at a
// time (Instructions, Model, Tools, Advanced…). Without JavaScript every section shows, as
// before. A tab holding a validation error is marked and opened first, so nobody has to hunt
// for the field that refused the save.
(function () {
  "use strict";
  const LABELS = {
    instructions: "Instructions",
    model: "Model",
    tools: "Tools",
    advanced: "Advanced",
  };
  function tabOf(el) {
    for (const cls of el.classList) {
      if (cls.startsWith("tab-") && LABELS[cls.slice(4)]) return cls.slice(4);
    }
    return null;
  }
  function hasError(el) {
    return el.querySelector(".errorlist, .errors") !== null;
  }
  function start() {
    const form = document.querySelector("#content-main form");
    if (!form) return;
    // Inline groups carry the class on their inner fieldset; the whole group moves with it.
    const sections = [];
    form.querySelectorAll("[class*='tab-']").forEach(function (el) {
      const name = tabOf(el);
      if (!name) return;
      const unit = el.closest(".inline-group") || el;
      if (!sections.some(function (s) { return s.el === unit; })) sections.push({ el: unit, name: name });
    });
    if (sections.length === 0) return;
    const names = Object.keys(LABELS).filter(function (n) {
      return sections.some(function (s) { return s.name === n; });
    });
    const bar = document.createElement("div");
    bar.className = "studio-tabs";
    bar.setAttribute("role", "tablist");
    const buttons = {};
    names.forEach(function (name) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "studio-tab";
      b.id = "tab-button-" + name;
      b.setAttribute("role", "tab");
      b.dataset.tab = name;
      b.textContent = LABELS[name];
      const wrong = sections.some(function (s) { return s.name === name && hasError(s.el); });
      if (wrong) {
        b.classList.add("studio-tab-error");
        b.title = "Something on this tab needs your attention";
        b.textContent += " ⚠";
      }
      b.addEventListener("click", function () { show(name, true); });
      buttons[name] = b;
      bar.appendChild(b);
    });
    const first = sections[0].el;
    first.parentNode.insertBefore(bar, first);
    function show(name, remember) {
      sections.forEach(function (s) { s.el.hidden = s.name !== name; });
      names.forEach(function (n) {
        buttons[n].setAttribute("aria-selected", n === name ? "true" : "false");
        buttons[n].classList.toggle("studio-tab-active", n === name);
      });
      if (remember) history.replaceState(null, "", "#tab-" + name);
      document.dispatchEvent(new CustomEvent("studio:tab-shown", { detail: name }));
    }
    const errored = names.find(function (n) {
      return sections.some(function (s) { return s.name === n && hasError(s.el); });
    });
    const fromHash = location.hash.startsWith("#tab-") ? location.hash.slice(5) : null;
    show(errored || (fromHash && buttons[fromHash] ? fromHash : names[0]), false);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
