// The eval run form's version selects (agents_app/forms/eval_pins.py) list what one agent
// uses: when another agent is chosen, press the form's own "List what the chosen agent uses"
// button, which draws them for it (the form works the same without this script).
(function () {
  "use strict";
  function init() {
    const agent = document.getElementById("id_agent");
    const button = document.querySelector("[data-eval-pins] button[name=_list_versions]");
    if (!agent || !button || !agent.form) return;
    agent.addEventListener("change", () => agent.form.requestSubmit(button));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
