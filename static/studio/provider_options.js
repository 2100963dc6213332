// A provider tool's options as form fields (issue #40 item 8): for each tool row named
// "provider:NAME", the fields come from the vendor's own description of that tool's options
// (the JSON Schema each offer declares, embedded in the page as #provider-tool-options, by the
// prompt's model). The options textarea stays the source of truth and stays visible; options
// the form has no field for leave it as JSON, untouched.
(function () {
  "use strict";

  const SIMPLE = new Set(["string", "integer", "number", "boolean"]);

  const { el } = window.StudioDom;


  // The editable leaves of an options schema: [{path: ["user_location", "city"], schema}], or
  // null when a property is of a kind the form cannot edit.
  function leaves(schema, path) {
    const out = [];
    for (const [name, prop] of Object.entries(schema.properties || {})) {
      const at = [...path, name];
      if (prop.const !== undefined) continue; // fixed: written with its parent
      if (prop.type === "object") {
        const inner = leaves(prop, at);
        if (inner === null) return null;
        out.push(...inner);
      } else if (SIMPLE.has(prop.type) || (prop.type === "array" && prop.items && prop.items.type === "string")) {
        out.push({ path: at, schema: prop });
      } else {
        return null;
      }
    }
    return out;
  }

  function consts(schema, path, into) {
    for (const [name, prop] of Object.entries(schema.properties || {})) {
      if (prop.const !== undefined) into.push({ path: [...path, name], value: prop.const });
      else if (prop.type === "object") consts(prop, [...path, name], into);
    }
    return into;
  }

  function get(value, path) {
    return path.reduce((at, key) => (at && typeof at === "object" ? at[key] : undefined), value);
  }

  function set(value, path, leaf) {
    let at = value;
    for (const key of path.slice(0, -1)) at = at[key] = at[key] && typeof at[key] === "object" ? at[key] : {};
    at[path[path.length - 1]] = leaf;
  }

  // Every key of `value` is a field of the form (so nothing typed in JSON would be lost).
  function covered(value, schema) {
    if (!value || typeof value !== "object" || Array.isArray(value)) return false;
    return Object.entries(value).every(([key, inner]) => {
      const prop = (schema.properties || {})[key];
      if (!prop) return false;
      return prop.type === "object" ? covered(inner, prop) : true;
    });
  }

  function build(textarea, schema) {
    const fields = leaves(schema, []);
    const box = el("div", { className: "json-builder", "data-builder": "provider-options" });
    // Above the JSON, not squeezed beside it (json_builders.css); rebuilt in the same wrap.
    let wrap = textarea.parentElement;
    if (!wrap.classList.contains("builder-wrap")) {
      wrap = el("div", { className: "builder-wrap" });
      textarea.before(wrap);
      wrap.append(textarea);
    }
    textarea.before(box);
    if (fields === null || !fields.length) {
      box.append(el("p", { className: "builder-note", text: fields === null ? "These options have no form yet: write them as JSON below." : "This tool takes no options." }));
      return;
    }
    const note = el("p", { className: "builder-note", role: "status" });
    const inputs = [];
    const row = el("div", { className: "builder-row" });
    for (const field of fields) {
      const { type, description } = field.schema;
      const input = type === "boolean" ? el("input", { type: "checkbox" }) : el("input", { type: type === "string" || type === "array" ? "text" : "number", step: type === "integer" ? "1" : "any" });
      input.dataset.field = field.path.join(".");
      if (type === "array") input.placeholder = "comma-separated";
      const label = el("label", { className: "builder-field" }, el("span", { text: field.path.join(" › ") }), input);
      if (description) label.title = description;
      row.append(label);
      inputs.push({ field, input });
    }
    box.append(el("p", { className: "builder-title", text: "Options (from the vendor's description of this tool):" }), row, note);

    function save() {
      const value = {};
      for (const { field, input } of inputs) {
        const type = field.schema.type;
        let leaf;
        if (type === "boolean") leaf = input.checked ? true : undefined;
        else if (type === "array") {
          const items = input.value.split(",").map((s) => s.trim()).filter(Boolean);
          leaf = items.length ? items : undefined;
        } else if (type === "integer" || type === "number") leaf = input.value === "" ? undefined : Number(input.value);
        else leaf = input.value === "" ? undefined : input.value;
        if (leaf !== undefined) set(value, field.path, leaf);
      }
      for (const fixed of consts(schema, [], [])) {
        if (get(value, fixed.path.slice(0, -1)) !== undefined) set(value, fixed.path, fixed.value);
      }
      textarea.value = Object.keys(value).length ? JSON.stringify(value, null, 2) : "";
    }

    function load() {
      let value = {};
      if (textarea.value.trim()) {
        try {
          value = JSON.parse(textarea.value);
        } catch (error) {
          note.textContent = "The JSON below has a mistake; the form shows it again once the JSON is valid.";
          row.hidden = true;
          return;
        }
      }
      if (!covered(value, schema)) {
        note.textContent = "These options include some the form has no field for: edit them as JSON below.";
        row.hidden = true;
        return;
      }
      note.textContent = "";
      row.hidden = false;
      for (const { field, input } of inputs) {
        const leaf = get(value, field.path);
        if (field.schema.type === "boolean") input.checked = leaf === true;
        else if (Array.isArray(leaf)) input.value = leaf.join(", ");
        else input.value = leaf === undefined || leaf === null ? "" : String(leaf);
      }
    }

    for (const { input } of inputs) input.addEventListener(input.type === "checkbox" ? "change" : "input", save);
    textarea.addEventListener("input", load);
    load();
  }

  function start() {
    const data = document.getElementById("provider-tool-options");
    const model = document.getElementById("id_model");
    if (!data || !model) return;
    const byModel = JSON.parse(data.textContent || "{}");
    function refresh() {
      document.querySelectorAll('.json-builder[data-builder="provider-options"]').forEach((node) => node.remove());
      const offers = byModel[model.value] || {};
      document.querySelectorAll('textarea[name$="-options"]:not([name*="__prefix__"])').forEach((textarea) => {
        const name = document.getElementsByName(textarea.name.replace(/-options$/, "-name"))[0];
        const tool = name && name.value.startsWith("provider:") ? name.value.slice("provider:".length) : null;
        if (tool && offers[tool]) build(textarea, offers[tool]);
      });
    }
    model.addEventListener("change", refresh);
    document.addEventListener("change", (event) => {
      if (event.target instanceof HTMLInputElement && /-\d+-name$/.test(event.target.name)) refresh();
    });
    refresh();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
