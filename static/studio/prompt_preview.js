// Live preview of the system prompt on the prompt editor: posts the unsaved form to the
// preview endpoint (debounced) and shows the rendered text. No build step, no library.
(function () {
  "use strict";
  function start() {
    const panel = document.getElementById("prompt-preview");
    const out = document.getElementById("prompt-preview-text");
    const form = document.getElementById("prompt_form");
    if (!panel || !out || !form) return;
    let timer = null;
    let seq = 0;
    async function refresh() {
      const mine = ++seq;
      const body = new FormData(form);
      try {
        const response = await fetch(panel.dataset.url, {
          method: "POST",
          body: body,
          headers: { "X-CSRFToken": body.get("csrfmiddlewaretoken") || "" },
          credentials: "same-origin",
        });
        if (mine !== seq) return; // a newer request is on its way
        if (!response.ok) {
          out.textContent = "The preview is not available right now (" + response.status + ").";
          return;
        }
        const data = await response.json();
        out.textContent = data.text || "(empty: write a system prompt or add parts)";
      } catch (err) {
        if (mine === seq) out.textContent = "The preview could not be loaded.";
      }
    }
    function later() {
      clearTimeout(timer);
      timer = setTimeout(refresh, 300);
    }
    form.addEventListener("input", later);
    form.addEventListener("change", later);
    // Rows added with "Add another part" also count.
    document.addEventListener("formset:added", later);
    document.addEventListener("formset:removed", later);
    refresh();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
