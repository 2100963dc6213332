// Agent editor: the Side B section only matters when side B is an AI (AI <-> AI agents, or
// the person on side A), so it is hidden otherwise (unless it holds an error to see). Each side's stop
// tool and end-session tool are suggested from the tools that side's prompt really has.
(function () {
  "use strict";
  function promptTools() {
    const data = document.getElementById("side-prompt-tools");
    if (!data) return null;
    try {
      return JSON.parse(data.textContent);
    } catch (err) {
      return null;
    }
  }
  function suggestTools(side, tools) {
    const prompt = document.getElementById("id_side_" + side + "_prompt");
    if (!prompt) return;
    const inputs = ["stop_tool", "end_session_tool"]
      .map((f) => document.getElementById("id_side_" + side + "_" + f))
      .filter(Boolean);
    function sync() {
      const names = tools[prompt.value] || [];
      inputs.forEach((input) => {
        const list = input.list;
        if (!list) return;
        list.replaceChildren(
          ...names.map((name) => {
            const option = document.createElement("option");
            option.value = name;
            option.textContent = "a tool of this side's prompt";
            return option;
          })
        );
        let hint = input.parentNode.querySelector(".studio-side-tools");
        if (!hint) {
          hint = document.createElement("div");
          hint.className = "help studio-side-tools";
          input.parentNode.appendChild(hint);
        }
        // Any other name still works: the runtime offers it as a tool that only ends the turn.
        const other = " A name not listed is offered to the model as a tool that only stops.";
        hint.textContent = !prompt.value
          ? "Choose the side's prompt first: its tools are suggested here."
          : names.length
            ? "This side's prompt has: " + names.join(", ") + "." + other
            : "This side's prompt has no tools yet." + other;
      });
    }
    prompt.addEventListener("change", sync);
    sync();
  }
  function start() {
    const type = document.getElementById("id_type");
    const person = document.getElementById("id_human_side");
    const prompt = document.getElementById("id_side_b_prompt");
    if (type && prompt) {
      const section = prompt.closest("fieldset");
      if (section) {
        // Side B is an AI in AI <-> AI agents and when the person is side A (spec 0.2.0).
        const sync = function () {
          const hasError = section.querySelector(".errorlist") !== null;
          const personFirst = person !== null && person.value === "a";
          section.hidden = type.value !== "dual_ai" && !personFirst && !hasError;
        };
        type.addEventListener("change", sync);
        if (person) person.addEventListener("change", sync);
        sync();
      }
    }
    const tools = promptTools();
    if (tools) ["a", "b"].forEach((side) => suggestTools(side, tools));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
