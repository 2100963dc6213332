// The eval case editor (issue #55): a case's conversation, checks and env values are rows of
// form controls drawn over the JSON the form posts (textarea[data-eval-builder]), which is
// hidden while the rows can show it. Every change rewrites the JSON; the server checks it and
// answers in sentences naming the row ("Check 2: the tool's name is required"), and the row
// it names is marked. JSON the rows cannot show is left visible and untouched.
(function () {
  "use strict";

  const { el } = window.StudioDom;

  const ROLES = [
    ["user", "The person"],
    ["assistant", "The agent (an earlier reply)"],
  ];
  const CHECKS = [
    ["contains", "The reply contains…"],
    ["not_contains", "The reply does not contain…"],
    ["matches", "The reply matches a pattern"],
    ["json_schema", "The reply is JSON that fits a schema"],
    ["tool_called", "The agent used the tool…"],
    ["tool_not_called", "The agent did not use the tool…"],
    ["stop_reason", "The turn ended because…"],
    ["judge", "A judge agent says…"],
  ];
  const FIELDS = {
    contains: ["text", "case_sensitive"],
    not_contains: ["text", "case_sensitive"],
    matches: ["pattern"],
    json_schema: ["schema"],
    tool_called: ["name", "arguments"],
    tool_not_called: ["name"],
    stop_reason: ["equals"],
    judge: ["agent", "criteria", "pass_at"],
  };

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  function labelled(text, input, size) {
    return el("label", { className: size || "eval-wide" }, el("span", { text }), input);
  }

  function select(options, value) {
    const node = el("select");
    const known = options.map(([v]) => v);
    if (value && !known.includes(value)) options = [...options, [value, value]];
    for (const [v, label] of options) {
      const option = el("option", { value: v, text: label });
      if (v === value) option.selected = true;
      node.append(option);
    }
    return node;
  }

  function input(value, attrs) {
    const node = el("input", Object.assign({ type: "text" }, attrs || {}));
    node.value = value === undefined || value === null ? "" : String(value);
    return node;
  }

  function area(value, rows) {
    const node = el("textarea", { rows: rows || 3 });
    node.value = value || "";
    return node;
  }

  // "name = value" lines <-> an arguments object (a value that reads as JSON is JSON).
  function argumentsText(args) {
    return Object.entries(args || {})
      .map(([k, v]) => {
        if (typeof v === "string") {
          let readsAsJson = false;
          try {
            JSON.parse(v);
            readsAsJson = true;
          } catch (error) {
            readsAsJson = false;
          }
          return `${k} = ${readsAsJson ? JSON.stringify(v) : v}`;
        }
        return `${k} = ${JSON.stringify(v)}`;
      })
      .join("\n");
  }

  function argumentsObject(text) {
    const out = {};
    for (const line of (text || "").split("\n")) {
      if (!line.trim()) continue;
      const at = line.indexOf("=");
      const key = (at < 0 ? line : line.slice(0, at)).trim();
      const raw = at < 0 ? "" : line.slice(at + 1).trim();
      let value = raw;
      try {
        value = JSON.parse(raw);
      } catch (error) {
        value = raw;
      }
      out[key] = value;
    }
    return out;
  }

  // --- the three kinds of rows ---------------------------------------------------------

  const MESSAGES = {
    none: "No messages yet: add the person's question.",
    adders: [
      ["Add a message from the person", () => ({ role: "user", content: "" })],
      ["Add an earlier reply of the agent", () => ({ role: "assistant", content: "" })],
    ],
    read(value) {
      if (value === null) return [];
      if (!Array.isArray(value)) return null;
      const rows = [];
      for (const item of value) {
        if (!isObject(item) || Object.keys(item).some((k) => k !== "role" && k !== "content")) return null;
        if (typeof (item.content ?? "") !== "string") return null;
        rows.push({ role: item.role || "user", content: item.content || "" });
      }
      return rows;
    },
    write(rows) {
      return rows.map((r) => ({ role: r.role, content: r.content }));
    },
    row(r, index, changed) {
      const role = select(ROLES, r.role);
      const text = area(r.content, 3);
      text.setAttribute("data-field", "content");
      role.setAttribute("data-field", "role");
      role.addEventListener("change", () => {
        r.role = role.value;
        changed(true);
      });
      text.addEventListener("input", () => {
        r.content = text.value;
        changed(false);
      });
      return {
        className: `eval-msg-${r.role}`,
        title: `Message ${index + 1}`,
        fields: [labelled("Who says it", role, "eval-narrow"), labelled("What they say", text)],
      };
    },
  };

  function checksSpec(textarea) {
    const agents = JSON.parse(textarea.dataset.agents || "[]");
    const reasons = JSON.parse(textarea.dataset.stopReasons || "[]");
    return {
      none: "No checks yet: the case passes whatever the agent answers.",
      adders: [["Add a check", () => ({ type: "contains", text: "" })]],
      read(value) {
        if (value === null) return [];
        if (!Array.isArray(value)) return null;
        const rows = [];
        for (const item of value) {
          if (!isObject(item) || !FIELDS[item.type]) return null;
          const allowed = ["type", ...FIELDS[item.type]];
          if (Object.keys(item).some((k) => !allowed.includes(k))) return null;
          if ("arguments" in item && item.arguments !== null && !isObject(item.arguments)) return null;
          if ("schema" in item && !isObject(item.schema)) return null;
          const row = Object.assign({}, item);
          if ("schema" in item) row.schema = JSON.stringify(item.schema, null, 2);
          if ("arguments" in item) row.arguments = argumentsText(item.arguments);
          rows.push(row);
        }
        return rows;
      },
      write(rows) {
        return rows.map((r) => {
          const out = { type: r.type };
          for (const field of FIELDS[r.type]) {
            const value = r[field];
            if (field === "case_sensitive") {
              if (value) out.case_sensitive = true;
            } else if (field === "schema") {
              try {
                out.schema = JSON.parse(value || "");
              } catch (error) {
                out.schema = value || ""; // the server says it is not a JSON object
              }
            } else if (field === "arguments") {
              const args = argumentsObject(value);
              if (Object.keys(args).length) out.arguments = args;
            } else if (field === "pass_at") {
              if (value !== undefined && value !== "") out.pass_at = Number(value);
            } else if (field === "equals") {
              out.equals = value || (reasons[0] || [""])[0]; // the select shows the first
            } else {
              out[field] = value === undefined ? "" : value;
            }
          }
          return out;
        });
      },
      row(r, index, changed) {
        const kind = select(CHECKS, r.type);
        kind.setAttribute("data-field", "type");
        kind.addEventListener("change", () => {
          r.type = kind.value;
          changed(true);
        });
        const fields = [labelled("Passes when", kind, "eval-narrow")];
        const bind = (node, field, value) => {
          node.setAttribute("data-field", field);
          const event = node.tagName === "SELECT" || node.type === "checkbox" ? "change" : "input";
          node.addEventListener(event, () => {
            r[field] = node.type === "checkbox" ? node.checked : value ? value(node) : node.value;
            changed(false);
          });
          return node;
        };
        const t = r.type;
        if (t === "contains" || t === "not_contains") {
          fields.push(labelled(t === "contains" ? "The text it must contain" : "The text it must not contain", bind(input(r.text), "text")));
          const box = bind(el("input", { type: "checkbox" }), "case_sensitive");
          box.checked = Boolean(r.case_sensitive);
          fields.push(el("label", { className: "eval-narrow eval-check" }, el("span", { text: "Match capitals exactly" }), box));
        } else if (t === "matches") {
          fields.push(labelled("The pattern (a regular expression, like A-\\d+)", bind(input(r.pattern), "pattern")));
        } else if (t === "json_schema") {
          fields.push(labelled("The JSON Schema the reply must fit", bind(area(r.schema, 5), "schema")));
        } else if (t === "tool_called" || t === "tool_not_called") {
          fields.push(labelled("The tool's name", bind(input(r.name), "name"), "eval-narrow"));
          if (t === "tool_called") {
            fields.push(labelled("With these arguments (optional), one per line: name = value", bind(area(r.arguments, 2), "arguments")));
          }
        } else if (t === "stop_reason") {
          fields.push(labelled("Why the turn ended", bind(select(reasons, r.equals || ""), "equals")));
        } else if (t === "judge") {
          const options = [["", "Choose an agent"], ...agents.map((a) => [a, a])];
          fields.push(labelled("The judge agent", bind(select(options, r.agent || ""), "agent"), "eval-narrow"));
          fields.push(labelled("What the judge looks for", bind(area(r.criteria, 2), "criteria")));
          const score = input(r.pass_at ?? "0.5", { type: "number", min: "0", max: "1", step: "0.05" });
          fields.push(labelled("Passes at a score of at least (0 to 1)", bind(score, "pass_at"), "eval-narrow"));
        }
        return { className: `eval-check-${t}`, title: `Check ${index + 1}`, fields };
      },
    };
  }

  const ENV = {
    none: "No env values for this case.",
    adders: [["Add an env value", () => ({ name: "", value: "" })]],
    read(value) {
      if (value === null) return [];
      if (!isObject(value) || Object.values(value).some((v) => typeof v !== "string")) return null;
      return Object.entries(value).map(([name, v]) => ({ name, value: v }));
    },
    write(rows) {
      const out = {};
      for (const r of rows) out[r.name] = r.value;
      return out;
    },
    row(r, index, changed) {
      const name = input(r.name, { "data-field": "name" });
      const value = input(r.value, { "data-field": "value" });
      name.addEventListener("input", () => {
        r.name = name.value;
        changed(false);
      });
      value.addEventListener("input", () => {
        r.value = value.value;
        changed(false);
      });
      return {
        className: "eval-env",
        title: `Env value ${index + 1}`,
        fields: [labelled("Name", name, "eval-narrow"), labelled("Value", value)],
      };
    },
  };

  // --- one editor over one textarea ----------------------------------------------------

  function rowsWithErrors(textarea) {
    const marked = new Set();
    const row = textarea.closest(".form-row");
    for (const item of row ? row.querySelectorAll(".errorlist li") : []) {
      const found = /^(Message|Check|Env value) (\d+)/.exec(item.textContent);
      if (found) marked.add(Number(found[2]));
    }
    return marked;
  }

  function attach(textarea) {
    if (textarea.dataset.evalAttached || textarea.name.includes("__prefix__")) return;
    textarea.dataset.evalAttached = "1";
    const kind = textarea.dataset.evalBuilder;
    const spec = kind === "checks" ? checksSpec(textarea) : kind === "env" ? ENV : MESSAGES;
    let value;
    try {
      value = textarea.value.trim() ? JSON.parse(textarea.value) : null;
    } catch (error) {
      return; // not JSON: left as written, the server says what is wrong
    }
    let rows = spec.read(value);
    if (rows === null) return; // more than the rows can show: the JSON stays visible
    textarea.classList.add("eval-json-source");
    textarea.setAttribute("aria-hidden", "true");
    const editor = el("div", { className: "eval-editor", "data-editor": kind });
    const list = el("div", { className: "eval-rows" });
    const adders = el("div", { className: "eval-adders" });
    editor.append(list, adders);
    textarea.after(editor);
    const errors = rowsWithErrors(textarea);

    function save() {
      textarea.value = JSON.stringify(spec.write(rows), null, 1);
    }

    function draw() {
      list.replaceChildren();
      rows.forEach((item, index) => {
        const drawn = spec.row(item, index, (redraw) => {
          save();
          if (redraw) draw();
        });
        const remove = el("button", { type: "button", className: "button eval-remove", text: "Remove" });
        remove.addEventListener("click", () => {
          rows.splice(index, 1);
          save();
          draw();
        });
        const head = el("div", { className: "eval-row-head" }, el("span", { text: drawn.title }), remove);
        const node = el("div", { className: `eval-row ${drawn.className}`, "data-row": kind }, head, ...drawn.fields);
        if (errors.has(index + 1)) node.classList.add("eval-row-error");
        list.append(node);
      });
      if (!rows.length) list.append(el("p", { className: "eval-empty", text: spec.none }));
    }

    for (const [label, make] of spec.adders) {
      const button = el("button", { type: "button", className: "button eval-add", text: label });
      button.addEventListener("click", () => {
        rows.push(make());
        errors.clear();
        save();
        draw();
        const last = list.lastElementChild;
        const first = last && last.querySelector("input[type=text], textarea");
        if (first) first.focus();
      });
      adders.append(button);
    }
    draw();
  }

  function attachAll(root) {
    for (const textarea of root.querySelectorAll("textarea[data-eval-builder]")) attach(textarea);
  }

  function start() {
    attachAll(document);
    // A case added with "Add another Eval case" is a copy of the empty template row.
    document.addEventListener("formset:added", (event) => attachAll(event.target));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
