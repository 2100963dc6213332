// One way to write a prompt. The simple case is one box of instructions; "Build from parts"
// turns it into an ordered list of parts (text, another prompt, an env value), moving what
// was typed into the first text part. Each part row shows only the field its kind uses.
(function () {
  "use strict";
  const KIND_FIELDS = { text: "content", include: "include", env: "env_key" };
  function partRows() {
    return Array.from(document.querySelectorAll("#parts-group tr.form-row"))
      .filter(function (row) { return !row.classList.contains("empty-form"); });
  }
  function field(row, name) {
    return row.querySelector("[name$='-" + name + "']");
  }
  function filled(row) {
    const deleted = row.querySelector("input[name$='-DELETE']");
    if (deleted && deleted.checked) return false;
    return ["content", "include", "env_key"].some(function (n) {
      const f = field(row, n);
      return f && f.value && f.value.trim() !== "";
    });
  }
  function syncRow(row) {
    const kind = field(row, "type");
    if (!kind) return;
    Object.keys(KIND_FIELDS).forEach(function (k) {
      const f = field(row, KIND_FIELDS[k]);
      if (!f) return;
      const cell = f.closest("td") || f.parentNode;
      cell.classList.toggle("studio-part-unused", kind.value !== k);
    });
  }
  function start() {
    const group = document.getElementById("parts-group");
    const text = document.getElementById("id_text");
    if (!group || !text) return;
    const textSection = text.closest("fieldset");
    const switcher = document.createElement("p");
    switcher.className = "studio-parts-switch";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button";
    button.id = "build-from-parts";
    button.textContent = "Build from parts instead (other prompts, env values)…";
    switcher.appendChild(button);
    textSection.appendChild(switcher);

    function mode(parts) {
      const textHasError = textSection.querySelector(".errorlist") !== null;
      // A class, not ``hidden``: the editor's tabs own ``hidden`` on whole sections.
      group.classList.toggle("studio-off", !parts);
      // Both filled is refused at save; then both stay visible so the person can choose.
      textSection.classList.toggle(
        "studio-off", parts && text.value.trim() === "" && !textHasError
      );
      switcher.classList.toggle("studio-off", parts);
    }
    button.addEventListener("click", function () {
      const rows = partRows();
      let row = rows[0];
      if (!row) {
        const add = group.querySelector(".add-row a");
        if (add) add.click();
        row = partRows()[0];
      }
      if (row && text.value.trim() !== "") {
        field(row, "type").value = "text";
        field(row, "content").value = text.value;
        text.value = "";
        syncRow(row);
        text.dispatchEvent(new Event("input", { bubbles: true }));
      }
      mode(true);
      const first = row && field(row, "content");
      if (first) first.focus();
    });
    partRows().forEach(syncRow);
    group.addEventListener("change", function (event) {
      const row = event.target.closest("tr.form-row");
      if (row && event.target.name && event.target.name.endsWith("-type")) syncRow(row);
    });
    document.addEventListener("formset:added", function (event) {
      const row = event.target && event.target.closest ? event.target.closest("tr.form-row") : null;
      if (row) syncRow(row);
    });
    mode(partRows().some(filled) || group.querySelector(".errorlist") !== null);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
