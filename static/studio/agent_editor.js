// Agent editor: the Side B section only matters for AI <-> AI agents, so it is hidden while
// Type is "AI <-> human" (unless it holds an error the person must see).
(function () {
  "use strict";
  function start() {
    const type = document.getElementById("id_type");
    const prompt = document.getElementById("id_side_b_prompt");
    if (!type || !prompt) return;
    const section = prompt.closest("fieldset");
    if (!section) return;
    function sync() {
      const hasError = section.querySelector(".errorlist") !== null;
      section.hidden = type.value !== "dual_ai" && !hasError;
    }
    type.addEventListener("change", sync);
    sync();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
