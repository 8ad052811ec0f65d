// lsm console: progressive enhancement only; every page works without this file.
// - <select data-autosubmit> submits its form on change (environment switcher)
// - [data-live] elements reload their page fragment when the event stream reports a change
"use strict";
(function () {
  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }
  window.lsmConsole = { csrf: csrf };

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target && target.matches && target.matches("select[data-autosubmit]")) {
      target.form.submit();
    }
  });

  // Live regions: <div data-live="/fragment/url" data-live-instances="id1 id2" data-live-entity="e">
  // are refetched (same origin, cookies sent) when an instance_state event concerns them.
  function refresh(region) {
    var url = region.getAttribute("data-live");
    return fetch(url, { credentials: "same-origin", headers: { "X-Console-Fragment": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html !== null) {
          region.innerHTML = html;
          region.setAttribute("data-refreshed", String(Date.now()));
        }
      });
  }

  function concerns(region, data) {
    var entity = region.getAttribute("data-live-entity");
    var ids = region.getAttribute("data-live-instances");
    if (ids !== null && ids !== "") {
      return ids.split(" ").indexOf(data.instance_id || data.id || "") >= 0;
    }
    return !entity || !data.service_entity || data.service_entity === entity;
  }

  function connect() {
    var regions = Array.prototype.slice.call(document.querySelectorAll("[data-live]"));
    if (!regions.length || !window.EventSource) { return; }
    var status = document.querySelector("[data-live-status]");
    var source = new EventSource("/console/events");
    var pending = null;
    function schedule(data) {
      var hit = regions.filter(function (r) { return data === null || concerns(r, data); });
      if (!hit.length) { return; }
      if (pending) { clearTimeout(pending); }
      pending = setTimeout(function () { pending = null; hit.forEach(refresh); }, 150);
    }
    source.addEventListener("open", function () { if (status) { status.textContent = "live"; } });
    source.addEventListener("error", function () { if (status) { status.textContent = "reconnecting…"; } });
    source.addEventListener("instance_state", function (e) {
      var data = null;
      try { data = JSON.parse(e.data); } catch (err) { data = null; }
      schedule(data);
    });
    source.addEventListener("compile_finished", function () { schedule(null); });
  }
  document.addEventListener("DOMContentLoaded", connect);
})();
