// Model editor: pick the model from the provider's own list (search, pages) and fill the id,
// prices and capabilities the provider states; "Test connection" sends one one-token request.
// The server resolves the API key and asks the vendor: the key never reaches this page.
// Vendor text is shown with textContent only (it is not ours to trust).
(function () {
  "use strict";

  function byId(id) {
    return document.getElementById(id);
  }

  function start() {
    const root = document.querySelector(".studio-model-picker");
    const provider = byId("id_provider");
    const model = byId("id_model");
    if (!root || !provider || !model) return;
    const baseUrl = byId("id_base_url");
    const icon = root.querySelector(".studio-provider-icon");
    const openButton = root.querySelector(".studio-picker-open");
    const testButton = root.querySelector(".studio-test-connection");
    const result = root.querySelector(".studio-connection-result");
    const panel = root.querySelector(".studio-picker-panel");
    const search = root.querySelector(".studio-picker-search");
    const refresh = root.querySelector(".studio-picker-refresh");
    const status = root.querySelector(".studio-picker-status");
    const list = root.querySelector(".studio-picker-results");
    const more = root.querySelector(".studio-picker-more");
    let page = 1;
    let seq = 0;
    let timer = null;

    function showIcon() {
      if (!provider.value) {
        icon.hidden = true;
        return;
      }
      icon.src = root.dataset.iconUrl.replace("__name__", encodeURIComponent(provider.value));
      icon.alt = provider.options[provider.selectedIndex].text + " icon";
      icon.hidden = false;
    }

    function price(value) {
      return value === undefined || value === null ? "?" : "$" + value;
    }

    function describe(m) {
      const bits = [m.id];
      if (m.contextLength) bits.push(m.contextLength.toLocaleString() + " tokens context");
      if (m.inputPrice !== undefined || m.outputPrice !== undefined) {
        bits.push(price(m.inputPrice) + " in / " + price(m.outputPrice) + " out per million");
      }
      const caps = m.capabilities || {};
      if (caps.vision) bits.push("images");
      if (caps.functionCalling) bits.push("tools");
      if (caps.structuredOutputs) bits.push("structured output");
      if (caps.reasoning) bits.push("reasoning");
      return bits.join(" · ");
    }

    function setNumber(id, value) {
      const field = byId(id);
      if (!field || value === undefined || value === null) return false;
      field.value = String(value);
      field.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    }

    function setBox(id, value) {
      const box = byId(id);
      if (!box || typeof value !== "boolean") return false;
      box.checked = value;
      box.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    }

    function pick(m) {
      model.value = m.id;
      model.dispatchEvent(new Event("change", { bubbles: true }));
      const filled = ["the model id"];
      const prices = [
        setNumber("id_input_price", m.inputPrice),
        setNumber("id_output_price", m.outputPrice),
        setNumber("id_cached_price", m.cachedPrice),
      ];
      if (prices.some(Boolean)) filled.push("prices");
      const caps = m.capabilities || {};
      const boxes = [
        setBox("id_capabilities_vision", caps.vision),
        setBox("id_capabilities_function_calling", caps.functionCalling),
        setBox("id_capabilities_structured_outputs", caps.structuredOutputs),
      ];
      if (boxes.some(Boolean)) filled.push("capabilities");
      status.textContent =
        "Filled " + filled.join(", ") + " from " + m.name + ". Check them, then save.";
      panel.hidden = true;
      openButton.setAttribute("aria-expanded", "false");
      model.focus();
    }

    function option(m) {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "studio-picker-option";
      button.dataset.modelId = m.id;
      const title = document.createElement("strong");
      title.textContent = m.name;
      const detail = document.createElement("small");
      detail.textContent = describe(m);
      button.append(title, detail);
      button.addEventListener("click", function () {
        pick(m);
      });
      item.append(button);
      return item;
    }

    async function load(reset, fresh) {
      const mine = ++seq;
      if (reset) page = 1;
      const params = new URLSearchParams({
        provider: provider.value,
        base_url: baseUrl ? baseUrl.value : "",
        search: search.value,
        page: String(page),
      });
      if (fresh) params.set("refresh", "true");
      status.textContent = "Asking the provider for its models…";
      try {
        const response = await fetch(root.dataset.listUrl + "?" + params.toString(), {
          credentials: "same-origin",
          headers: { Accept: "application/json" },
        });
        const data = await response.json();
        if (mine !== seq) return; // a newer search is on its way
        if (reset) list.replaceChildren();
        if (!response.ok) {
          status.textContent = data.error || "The list is not available (" + response.status + ").";
          more.hidden = true;
          return;
        }
        data.models.forEach(function (m) {
          list.append(option(m));
        });
        status.textContent =
          data.total === 0
            ? "No model matches."
            : data.total +
              (data.total === 1 ? " model" : " models") +
              (search.value ? (data.total === 1 ? " matches" : " match") : "") +
              ". Pick one to fill the form.";
        more.hidden = !data.hasNextPage;
      } catch (err) {
        if (mine === seq) status.textContent = "The list could not be loaded.";
      }
    }

    function later() {
      clearTimeout(timer);
      timer = setTimeout(function () {
        load(true, false);
      }, 250);
    }

    openButton.addEventListener("click", function () {
      panel.hidden = !panel.hidden;
      openButton.setAttribute("aria-expanded", String(!panel.hidden));
      if (!panel.hidden) {
        load(true, false);
        search.focus();
      }
    });
    search.addEventListener("input", later);
    refresh.addEventListener("click", function () {
      load(true, true);
    });
    more.addEventListener("click", function () {
      page += 1;
      load(false, false);
    });
    provider.addEventListener("change", function () {
      showIcon();
      if (!panel.hidden) load(true, false);
    });

    testButton.addEventListener("click", async function () {
      const form = model.form;
      const token = form ? new FormData(form).get("csrfmiddlewaretoken") : "";
      const body = new FormData();
      body.set("provider", provider.value);
      body.set("model", model.value);
      body.set("base_url", baseUrl ? baseUrl.value : "");
      const api = byId("id_api");
      body.set("api", api ? api.value : "");
      result.hidden = false;
      result.className = "studio-connection-result";
      result.textContent = "Sending a one-token request…";
      testButton.disabled = true;
      try {
        const response = await fetch(root.dataset.testUrl, {
          method: "POST",
          body: body,
          credentials: "same-origin",
          headers: { "X-CSRFToken": token || "", Accept: "application/json" },
        });
        const data = await response.json();
        result.classList.add(data.ok ? "is-ok" : "is-error");
        result.textContent = data.message || data.error || "No answer (" + response.status + ").";
      } catch (err) {
        result.classList.add("is-error");
        result.textContent = "The test could not be run.";
      } finally {
        testButton.disabled = false;
      }
    });

    showIcon();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
