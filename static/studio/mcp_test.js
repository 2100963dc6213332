// "Test connection" on an MCP server's page: with unsaved edits on screen it tests those (the
// outcome under the button; nothing saved, issue #40 item 11). Without edits the button posts
// as before: the saved settings are tested and the listed tools kept for the prompt editor.
(function () {
  "use strict";
  function start() {
    const button = document.getElementById("mcp-test-connection");
    if (!button) return;
    const snapshot = (form) => new URLSearchParams(new FormData(form)).toString();
    // The saved settings are the form as the server sent it, not as it is when this script
    // runs: someone may have typed before it loaded. A detached copy, reset, has those values.
    const pristine = button.form.cloneNode(true);
    pristine.reset();
    const saved = snapshot(pristine);
    const result = document.createElement("p");
    result.className = "studio-connection-result";
    result.setAttribute("role", "status");
    result.hidden = true;
    button.after(result);
    button.addEventListener("click", async function (event) {
      if (snapshot(button.form) === saved) return; // nothing edited: the saved settings' test
      event.preventDefault();
      button.disabled = true;
      result.hidden = false;
      result.className = "studio-connection-result";
      result.textContent = "Connecting…";
      try {
        const response = await fetch(button.getAttribute("formaction"), {
          method: "POST",
          body: new FormData(button.form),
          headers: { Accept: "application/json" },
          credentials: "same-origin",
        });
        const data = await response.json();
        result.textContent = data.text;
        result.classList.add(data.ok ? "is-ok" : "is-error");
      } catch (error) {
        result.textContent = `The test could not run: ${error.message}`;
        result.classList.add("is-error");
      } finally {
        button.disabled = false;
      }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
