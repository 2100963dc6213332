// Model editor: the form shows what the chosen provider reads. Test opens its "scripted
// replies" section and hides what it never reads (the base URL, OpenAI's API choice,
// OpenRouter's providers); OpenAI's and OpenRouter's own sections show only for them (issue
// #40 item 11). A Test model's provider model id is optional ("scripted" when left empty), and
// it has no vendor to list models or test a connection against: those buttons hide (#55 item 9).
(function () {
  "use strict";
  function section(title) {
    const heading = Array.from(document.querySelectorAll("#content-main fieldset h2")).find(
      (h) => h.textContent.trim().startsWith(title),
    );
    return heading ? heading.closest("fieldset") : null;
  }
  function row(name) {
    const field = document.getElementById(`id_${name}`);
    return field ? field.closest(".form-row") : null;
  }
  function show(el, visible) {
    if (el) el.hidden = !visible;
  }
  function start() {
    const provider = document.getElementById("id_provider");
    const script = document.getElementById("id_script");
    if (!provider) return;
    const scripted = script ? script.closest("details") : null;
    function sync() {
      const chosen = provider.value;
      if (scripted && chosen === "test") scripted.open = true;
      show(section("OpenAI"), chosen === "openai");
      show(section("OpenRouter"), chosen === "openrouter");
      show(section("Test provider"), chosen === "test");
      for (const name of ["base_url", "send_instance_key_to_base_url"]) {
        show(row(name), chosen !== "test");
      }
      // The provider model id: optional for Test, and said so where the vendors' examples stood.
      const modelHelp = document.querySelector("#id_model_helptext div, #id_model_helptext");
      if (modelHelp) {
        if (!modelHelp.dataset.vendorText) modelHelp.dataset.vendorText = modelHelp.textContent;
        modelHelp.textContent = chosen === "test"
          ? "Optional for a Test model: a label of your own (\u201cscripted\u201d when left empty). It answers from the script below."
          : modelHelp.dataset.vendorText;
      }
      const picker = document.querySelector(".studio-model-picker");
      if (picker) {
        for (const part of picker.querySelectorAll(".studio-test-connection, .studio-picker-open")) {
          show(part, chosen !== "test");
        }
        if (chosen === "test") {
          for (const part of picker.querySelectorAll(".studio-connection-result, .studio-picker-panel")) {
            show(part, false);
          }
        }
      }
    }
    provider.addEventListener("change", sync);
    sync();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
