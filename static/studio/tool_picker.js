// The prompt editor's tool picker: a search over every tool a prompt can offer (code tools,
// MCP tools, prompts, agents) with what each does, and an "Add" button that fills a tool row
// (the rows stay the one source of what is saved; see mcp_ticks.js).
(function () {
  "use strict";
  function start() {
    const search = document.getElementById("tool-search");
    const list = document.getElementById("tool-picker-list");
    const none = document.getElementById("tool-picker-none");
    if (!search || !list || !window.studioToolRows) return;
    const items = Array.from(list.querySelectorAll("li[data-name]"));
    function added() {
      return new Set(window.studioToolRows.names().map((input) => input.value.trim()));
    }
    function refresh() {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const have = added();
      let shown = 0;
      items.forEach((li) => {
        const hit = words.every((w) => li.dataset.search.includes(w));
        li.classList.toggle("studio-off", !hit);
        if (hit) shown += 1;
        const button = li.querySelector("button");
        const already = have.has(li.dataset.name);
        button.disabled = already;
        button.textContent = already ? "Added" : "Add";
      });
      if (none) none.classList.toggle("studio-off", shown > 0 || items.length === 0);
    }
    list.addEventListener("click", (event) => {
      const button = event.target.closest("button.studio-picker-add");
      if (!button) return;
      window.studioToolRows.add(button.dataset.name);
      refresh();
    });
    search.addEventListener("input", refresh);
    document.addEventListener("input", (event) => {
      if (event.target.name && /^tool_entries-\d+-name$/.test(event.target.name)) refresh();
    });
    refresh();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
