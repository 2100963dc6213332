// Forms over the JSON that non-developers edit (issue #40 item 8): a script builder for the
// Test model's scripted replies (#id_script) and a schema builder for a prompt's required and
// response schemas (#id_required_schema, #id_response_schema).
//
// The textarea stays the source of truth and stays visible, labelled as the JSON the builder
// writes: every change in the builder rewrites it, and a valid edit of the JSON redraws the
// builder. JSON the builder cannot show (options it has no field for) is left untouched and
// the builder says so, rather than dropping what it does not understand.
(function () {
  "use strict";

  const { el } = window.StudioDom;


  function labelled(text, input) {
    return el("label", { className: "builder-field" }, el("span", { text }), input);
  }

  function parse(text) {
    if (!text.trim()) return { ok: true, value: null };
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (error) {
      return { ok: false };
    }
  }

  // A builder over one textarea: `read(value)` gives rows or null (not representable),
  // `write(rows)` gives the JSON value (null: empty), `row(item, onChange)` draws one row.
  function attach(textarea, spec) {
    const box = el("div", { className: "json-builder", "data-builder": spec.name });
    const list = el("div", { className: "builder-rows" });
    const note = el("p", { className: "builder-note", role: "status" });
    const add = el("div", { className: "builder-add" });
    box.append(el("p", { className: "builder-title", text: spec.title }), list, add, note);
    // One block for the builder, the JSON's label and the JSON: the admin lays a field's
    // label and widgets out in a row, which would squeeze the builder beside the JSON.
    const wrap = el("div", { className: "builder-wrap" });
    textarea.before(wrap);
    textarea.setAttribute("aria-label", spec.jsonLabel);
    const jsonLabel = el("p", { className: "builder-json-label", text: spec.jsonLabel });
    wrap.append(box, jsonLabel, textarea);
    let rows = [];

    function save() {
      const value = spec.write(rows);
      textarea.value = value === null ? "" : JSON.stringify(value, null, 2);
    }

    function draw() {
      list.replaceChildren(
        ...rows.map((item, index) => {
          const remove = el("button", { type: "button", className: "builder-remove", text: "Remove" });
          remove.addEventListener("click", () => {
            rows.splice(index, 1);
            save();
            draw();
          });
          const row = spec.row(item, () => save());
          row.classList.add("builder-row");
          row.append(remove);
          return row;
        }),
      );
      if (!rows.length) list.append(el("p", { className: "builder-empty", text: spec.empty }));
    }

    function load() {
      const parsed = parse(textarea.value);
      if (!parsed.ok) {
        note.textContent = "The JSON below has a mistake; the builder shows it again once the JSON is valid.";
        box.classList.add("builder-off");
        return;
      }
      const read = spec.read(parsed.value);
      if (read === null) {
        note.textContent = spec.unsupported;
        box.classList.add("builder-off");
        return;
      }
      note.textContent = "";
      box.classList.remove("builder-off");
      rows = read;
      draw();
    }

    for (const [label, make] of spec.adders) {
      const button = el("button", { type: "button", className: "builder-add-button", text: label });
      button.addEventListener("click", () => {
        if (box.classList.contains("builder-off")) return;
        rows.push(make());
        save();
        draw();
      });
      add.append(button);
    }
    textarea.addEventListener("input", load);
    load();
  }

  // --- the Test model's script -------------------------------------------------------------

  const SCRIPT_KEYS = new Set(["content", "toolCalls", "delayMs", "error"]);

  function readScript(value) {
    if (value === null) return [];
    if (!Array.isArray(value)) return null;
    const rows = [];
    for (const item of value) {
      if (!item || typeof item !== "object" || Array.isArray(item)) return null;
      if (Object.keys(item).some((key) => !SCRIPT_KEYS.has(key))) return null;
      const delay = item.delayMs ?? "";
      const calls = item.toolCalls || [];
      if (item.error) {
        if (calls.length || item.content) return null;
        rows.push({ kind: "error", text: String(item.error.message || ""), delay });
      } else if (calls.length) {
        const call = calls[0];
        if (calls.length > 1 || item.content || Object.keys(call).some((k) => k !== "name" && k !== "arguments")) return null;
        const args = call.arguments && typeof call.arguments === "object" ? call.arguments : {};
        rows.push({ kind: "tool", name: String(call.name || ""), args: JSON.stringify(args), delay });
      } else {
        rows.push({ kind: "reply", text: String(item.content ?? ""), delay });
      }
    }
    return rows;
  }

  function writeScript(rows) {
    if (!rows.length) return null;
    return rows.map((row) => {
      const item = {};
      if (row.kind === "reply") item.content = row.text;
      if (row.kind === "error") item.error = { message: row.text };
      if (row.kind === "tool") {
        const args = parse(row.args || "{}");
        // Arguments that are not (yet) valid JSON are written as text: saving then says why.
        item.toolCalls = [{ name: row.name, arguments: args.ok && args.value !== null ? args.value : row.args }];
      }
      const delay = parseInt(row.delay, 10);
      if (!Number.isNaN(delay) && delay > 0) item.delayMs = delay;
      return item;
    });
  }

  function scriptRow(item, changed) {
    const kinds = { reply: "Reply with text", tool: "Call a tool", error: "Fail with an error" };
    const row = el("div", { "data-kind": item.kind }, el("strong", { className: "builder-kind", text: kinds[item.kind] }));
    function input(key, attrs, label) {
      const field = attrs.rows ? el("textarea", attrs) : el("input", attrs);
      field.value = item[key] ?? "";
      field.addEventListener("input", () => {
        item[key] = field.value;
        changed();
      });
      row.append(labelled(label, field));
    }
    if (item.kind === "reply") input("text", { rows: 2, "data-field": "text" }, "Text");
    if (item.kind === "error") input("text", { type: "text", "data-field": "text" }, "Error message");
    if (item.kind === "tool") {
      input("name", { type: "text", "data-field": "name", placeholder: "lookup_order" }, "Tool name");
      input("args", { rows: 2, "data-field": "args", placeholder: '{"order_id": "A-1"}' }, "Arguments (JSON)");
    }
    input("delay", { type: "number", min: "0", step: "100", "data-field": "delay" }, "Wait before answering (ms)");
    return row;
  }

  // --- JSON Schema objects --------------------------------------------------------------------

  const TYPES = ["string", "number", "integer", "boolean", "list of texts"];

  function typeOf(prop) {
    if (prop.type === "array") {
      return prop.items && prop.items.type === "string" && Object.keys(prop).every((k) => ["type", "items", "description"].includes(k)) ? "list of texts" : null;
    }
    const simple = ["string", "number", "integer", "boolean"].includes(prop.type);
    return simple && Object.keys(prop).every((k) => k === "type" || k === "description") ? prop.type : null;
  }

  function readSchema(value) {
    if (value === null) return [];
    if (!value || value.type !== "object" || Object.keys(value).some((k) => !["type", "properties", "required"].includes(k))) return null;
    const required = new Set(value.required || []);
    const rows = [];
    for (const [name, prop] of Object.entries(value.properties || {})) {
      const type = prop && typeof prop === "object" ? typeOf(prop) : null;
      if (type === null) return null;
      rows.push({ name, type, required: required.has(name), description: prop.description || "" });
    }
    return rows;
  }

  function writeSchema(rows) {
    if (!rows.length) return null;
    const properties = {};
    for (const row of rows) {
      const prop = row.type === "list of texts" ? { type: "array", items: { type: "string" } } : { type: row.type };
      if (row.description) prop.description = row.description;
      properties[row.name] = prop;
    }
    const schema = { type: "object", properties };
    const required = rows.filter((row) => row.required).map((row) => row.name);
    if (required.length) schema.required = required;
    return schema;
  }

  function schemaRow(item, changed) {
    const row = el("div", {});
    const name = el("input", { type: "text", "data-field": "name", placeholder: "city" });
    name.value = item.name;
    name.addEventListener("input", () => {
      item.name = name.value;
      changed();
    });
    const type = el("select", { "data-field": "type" }, ...TYPES.map((t) => el("option", { value: t, text: t })));
    type.value = item.type;
    type.addEventListener("change", () => {
      item.type = type.value;
      changed();
    });
    const required = el("input", { type: "checkbox", "data-field": "required" });
    required.checked = item.required;
    required.addEventListener("change", () => {
      item.required = required.checked;
      changed();
    });
    const description = el("input", { type: "text", "data-field": "description" });
    description.value = item.description;
    description.addEventListener("input", () => {
      item.description = description.value;
      changed();
    });
    row.append(labelled("Field", name), labelled("Type", type), labelled("Required", required), labelled("Description", description));
    return row;
  }

  function start() {
    const script = document.getElementById("id_script");
    if (script) {
      attach(script, {
        name: "script",
        title: "Scripted replies, in order: the first request gets the first reply, and so on.",
        jsonLabel: "The script as JSON (what the builder writes; edit it for options the builder has no field for)",
        empty: "No replies yet: the model answers with a default text.",
        unsupported: "This script uses options the builder has no field for (usage, expectInput, several tool calls in one reply…): edit it as JSON below.",
        adders: [
          ["Add a text reply", () => ({ kind: "reply", text: "", delay: "" })],
          ["Add a tool call", () => ({ kind: "tool", name: "", args: "{}", delay: "" })],
          ["Add an error", () => ({ kind: "error", text: "", delay: "" })],
        ],
        read: readScript,
        write: writeScript,
        row: scriptRow,
      });
    }
    for (const [id, what] of [["id_required_schema", "arguments"], ["id_response_schema", "answer"]]) {
      const textarea = document.getElementById(id);
      if (!textarea) continue;
      attach(textarea, {
        name: id.slice(3),
        title: `The ${what}'s fields:`,
        jsonLabel: "The schema as JSON (what the builder writes)",
        empty: "No fields: leave it empty for none.",
        unsupported: "This schema uses JSON Schema features the builder has no field for (nested objects, enums…): edit it as JSON below.",
        adders: [["Add a field", () => ({ name: "", type: "string", required: true, description: "" })]],
        read: readSchema,
        write: writeSchema,
        row: schemaRow,
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
