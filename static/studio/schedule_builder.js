// Schedule form (issue #55): "Repeat" decides which timing fields show. Every few minutes or
// hours shows "Every N minutes|hours"; every day and every weekday the time; every week the
// time and the days; every month the time and the day; Advanced the cron expression or the
// interval in seconds (the server builds the cron behind the presets and ignores the rest).
// A new schedule starts in the browser's own time zone.
(function () {
  "use strict";
  const SHOWN = {
    minutes: ["every"],
    hours: ["every"],
    daily: ["at"],
    weekdays: ["at"],
    weekly: ["at", "days"],
    monthly: ["at", "day_of_month"],
    advanced: [],
  };
  function row(name) {
    const field = document.querySelector(`.form-row.field-${name}`);
    return field || null;
  }
  function start() {
    const repeat = document.getElementById("id_repeat");
    if (!repeat) return;
    const every = document.getElementById("id_every");
    const unit = document.createElement("span");
    unit.className = "studio-unit";
    if (every) every.after(unit);
    const advanced = document.querySelector("fieldset.studio-schedule-advanced");
    function sync() {
      const chosen = repeat.value || "advanced";
      const shown = SHOWN[chosen] || [];
      for (const name of ["every", "at", "days", "day_of_month"]) {
        const r = row(name);
        if (r) r.hidden = !shown.includes(name);
      }
      unit.textContent = chosen === "hours" ? "hours" : "minutes";
      if (advanced) advanced.hidden = chosen !== "advanced";
    }
    repeat.addEventListener("change", sync);
    sync();
    const zone = document.getElementById("id_timezone");
    const fresh = location.pathname.endsWith("/add/") && !document.querySelector(".errornote, #schedule-confirm");
    if (zone && fresh && zone.value === zone.defaultValue) {
      try {
        const mine = Intl.DateTimeFormat().resolvedOptions().timeZone;
        if (mine) zone.value = mine;
      } catch (error) {
        // An old browser without the zone: the server's default stays.
      }
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
