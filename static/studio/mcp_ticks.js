// The prompt editor's "Tools from MCP servers" checkboxes: ticking one adds a tool row named
// mcp:<server>/<tool> (using an empty row, or Django's "Add another" link); unticking clears a
// new row or marks a saved one for deletion. The rows stay the one source of what is saved.
(function () {
  "use strict";
  const NAME = /^tool_entries-\d+-name$/;

  function nameInputs() {
    return Array.from(document.querySelectorAll("input[name^='tool_entries-']")).filter(
      (input) => NAME.test(input.name)
    );
  }

  function deleteBox(input) {
    return document.querySelector(
      "input[name='" + input.name.replace(/-name$/, "-DELETE") + "']"
    );
  }

  function isSaved(input) {
    const id = document.querySelector("input[name='" + input.name.replace(/-name$/, "-id") + "']");
    return Boolean(id && id.value);
  }

  function add(tool) {
    const existing = nameInputs().find((input) => input.value.trim() === tool);
    if (existing) {
      const box = deleteBox(existing);
      if (box) box.checked = false;
      return;
    }
    let empty = nameInputs().find((input) => !input.value.trim());
    if (!empty) {
      const link = document.querySelector("#tool_entries-group .add-row a");
      if (link) link.click();
      empty = nameInputs().find((input) => !input.value.trim());
    }
    if (empty) {
      empty.value = tool;
      empty.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  function remove(tool) {
    nameInputs()
      .filter((input) => input.value.trim() === tool)
      .forEach((input) => {
        const box = deleteBox(input);
        if (isSaved(input) && box) box.checked = true;
        else input.value = "";
      });
  }

  // The tool picker (tool_picker.js) adds rows the same way.
  window.studioToolRows = { add: add, remove: remove, names: nameInputs };

  function start() {
    const boxes = document.querySelectorAll("#mcp-tools input[data-tool]");
    const listed = new Set(
      nameInputs()
        .filter((input) => !(deleteBox(input) || {}).checked)
        .map((input) => input.value.trim())
    );
    boxes.forEach((box) => {
      box.checked = listed.has(box.dataset.tool);
      box.addEventListener("change", () =>
        box.checked ? add(box.dataset.tool) : remove(box.dataset.tool)
      );
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
