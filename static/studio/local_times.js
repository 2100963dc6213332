// Times the server wrote as <time data-local> (people_format.local_time) are shown in the
// reader's own time zone and language; the exact instant stays in the tooltip.
(function () {
  "use strict";
  function localize() {
    document.querySelectorAll("time[data-local]").forEach(function (el) {
      const when = new Date(el.dateTime);
      if (Number.isNaN(when.getTime())) return;
      el.textContent = when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", localize);
  else localize();
})();
