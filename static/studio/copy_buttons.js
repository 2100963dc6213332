// "Copy" buttons (issue #55): a button with data-copy="#id" copies that element's text and says
// so beside it. The clipboard API needs a secure context; elsewhere the text is selected and
// copied the old way, or left selected for the person to copy.
(function () {
  "use strict";
  function selectText(node) {
    const range = document.createRange();
    range.selectNodeContents(node);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  async function copy(button) {
    const source = document.querySelector(button.dataset.copy);
    const status = button.parentElement.querySelector(".studio-copied");
    if (!source) return;
    const text = source.textContent;
    let done = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        done = true;
      }
    } catch (error) {
      done = false;
    }
    if (!done) {
      selectText(source);
      try {
        done = document.execCommand("copy");
      } catch (error) {
        done = false;
      }
    }
    if (status) status.textContent = done ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.";
  }
  function start() {
    for (const button of document.querySelectorAll("button[data-copy]")) {
      button.addEventListener("click", () => copy(button));
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
