// Model editor: choosing the Test provider opens the "scripted replies" section, since the
// script is then what the model answers from.
(function () {
  "use strict";
  function start() {
    const provider = document.getElementById("id_provider");
    const script = document.getElementById("id_script");
    if (!provider || !script) return;
    const section = script.closest("details");
    function sync() {
      if (section && provider.value === "test") section.open = true;
    }
    provider.addEventListener("change", sync);
    sync();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
