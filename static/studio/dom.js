// Building DOM nodes for the studio's scripts (json_builders.js, provider_options.js): text
// always goes in as textContent, never as markup. Loaded before them (classic scripts).
(function () {
  "use strict";
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }
  window.StudioDom = { el };
})();
