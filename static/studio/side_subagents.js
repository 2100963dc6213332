// A side's subagents (templates/admin/agents_app/agent/subagents.html). Without this script the
// page works as a plain form: one empty row per side to fill in, Delete boxes to remove, and
// the rows are enabled only when the page was served for a spec 0.2.0 agent. With it:
// "Add another subagent" copies the empty row, the rows follow the Spec select, and a side a
// person or a handler takes hides its section (unless it holds rows or an error to see).
(function () {
  "use strict";
  function filled(section) {
    return Array.from(section.querySelectorAll(".studio-subagent-rows select[name$='-agent']")).some(
      (select) => select.value !== ""
    );
  }
  function addRow(section) {
    const template = section.querySelector("template.studio-subagent-template");
    const rows = section.querySelector(".studio-subagent-rows");
    const total = section.querySelector("input[name$='-TOTAL_FORMS']");
    if (!template || !rows || !total) return;
    const index = Number(total.value);
    const row = template.content.firstElementChild.cloneNode(true);
    row.querySelectorAll("[name], [id], [for], [aria-describedby]").forEach((el) => {
      ["name", "id", "for", "aria-describedby"].forEach((attr) => {
        const value = el.getAttribute(attr);
        if (value) el.setAttribute(attr, value.replaceAll("__prefix__", String(index)));
      });
    });
    row.querySelector(".studio-subagent-title").textContent = "Subagent " + (index + 1);
    rows.appendChild(row);
    total.value = String(index + 1);
    const first = row.querySelector("select");
    if (first) first.focus();
  }
  function start() {
    const sections = Array.from(document.querySelectorAll(".studio-subagents"));
    if (!sections.length) return;
    const spec = document.getElementById("id_spec_version");
    const type = document.getElementById("id_type");
    const person = document.getElementById("id_human_side");
    function sync() {
      sections.forEach((section) => {
        const side = section.dataset.side;
        const has = filled(section) || section.querySelector(".errorlist") !== null;
        const on = !spec || spec.value === "0.2.0";
        // Rows already filled stay editable on a switch to 0.1.0: the save then says why it
        // refuses, instead of dropping them unseen.
        section.querySelector(".studio-subagent-rows").disabled = !on && !has;
        section.querySelector(".studio-subagents-needs").hidden = on;
        section.querySelector(".studio-subagent-add").hidden = !on;
        const personFirst = person !== null && person.value === "a";
        const aiHuman = type !== null && type.value !== "dual_ai";
        // The person's side cannot start subagents: side A when the person is side A, side B
        // in an AI <-> human agent whose person is side B.
        const persons = aiHuman && ((side === "a" && personFirst) || (side === "b" && !personFirst));
        // Nor can a side a handler takes: only a prompt's model starts subagents.
        const handler = document.getElementById("id_side_" + side + "_handler");
        const coded = handler !== null && handler.value.trim() !== "";
        section.hidden = (persons || coded) && !has;
      });
    }
    sections.forEach((section) => {
      const add = section.querySelector(".studio-subagent-add");
      if (add) add.addEventListener("click", () => addRow(section));
    });
    const handlers = ["a", "b"].map((side) => document.getElementById("id_side_" + side + "_handler"));
    [spec, type, person, ...handlers].forEach((el) => {
      if (el) el.addEventListener("change", sync);
    });
    sync();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
