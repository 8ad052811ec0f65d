// lsm console: progressive enhancement only; every page works without this file.
// - <select data-autosubmit> submits its form on change (environment switcher);
// - <form data-confirm="..."> asks before it is sent;
// - elements with an id and [data-live] are refetched from the page's own URL (meta page-url)
//   when the event stream (/console/events) reports a change that concerns them; a region
//   marked [data-keep-dirty] is left alone while one of its forms is being edited, so that a
//   change made meanwhile by someone else comes back as an explained 409, never overwritten;
// - [data-copy] buttons copy their value (a full UUID shown short); [data-filter-rows] hides
//   the table's rows that do not contain its text; a click on th[data-sort] sorts by that column;
// - a reference picker (select[data-picker]) gets a search box that narrows its options;
// - a form[data-check-fields] checks each input[data-rules] before its POST and as it is typed:
//   required, its type (the input's pattern), and the JSON schema's minimum/maximum,
//   minLength/maxLength, pattern and enum (data-* from lsm.api.console.bounds); a field that
//   fails says why under it and the form is not sent (the server still decides);
// - a drawing (.drawing svg) is fitted to the page by CSS; the wheel zooms it around the
//   pointer, dragging pans it, a double click fits it again (its viewBox changes, nothing else).
"use strict";
(function () {
  function meta(name) {
    var found = document.querySelector('meta[name="' + name + '"]');
    return found ? found.getAttribute("content") : null;
  }
  window.lsmConsole = { csrf: function () { return meta("csrf-token") || ""; } };

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target && target.matches && target.matches("select[data-autosubmit]")) {
      target.form.submit();
    }
  });
  document.addEventListener("input", function (event) {
    var form = event.target && event.target.form;
    if (form) { form.setAttribute("data-dirty", "1"); }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (button) {
      var value = button.getAttribute("data-copy");
      var done = function () { button.classList.add("copied"); button.setAttribute("data-copied", value); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(value).then(done, done);
      } else {
        var area = document.createElement("textarea");
        area.value = value; document.body.appendChild(area); area.select();
        try { document.execCommand("copy"); } catch (err) { /* nothing more to try */ }
        document.body.removeChild(area); done();
      }
      return;
    }
    var th = event.target.closest && event.target.closest("th[data-sort]");
    if (!th) { return; }
    var table = th.closest("table"), body = table.tBodies[0];
    var column = Array.prototype.indexOf.call(th.parentNode.children, th);
    var down = th.getAttribute("aria-sort") === "ascending";
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", down ? "descending" : "ascending");
    var rows = Array.prototype.slice.call(body.querySelectorAll("tr[data-instance]"));
    rows.sort(function (a, b) {
      var x = (a.children[column] || {}).textContent || "", y = (b.children[column] || {}).textContent || "";
      var order = x.trim().localeCompare(y.trim(), undefined, { numeric: true });
      return down ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
  document.addEventListener("input", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches("input[data-filter-rows]")) { return; }
    var table = document.querySelector(box.getAttribute("data-filter-rows"));
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    if (!table) { return; }
    table.querySelectorAll("tbody tr[data-instance]").forEach(function (row) {
      var text = row.textContent.toLowerCase();
      row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  });

  function drawingOf(target) {
    return target && target.closest ? target.closest(".drawing svg.lsm-graph") : null;
  }
  function viewBox(svg) {
    if (!svg.hasAttribute("data-fit")) { svg.setAttribute("data-fit", svg.getAttribute("viewBox")); }
    return svg.getAttribute("viewBox").split(/[ ,]+/).map(Number);
  }
  document.addEventListener("wheel", function (event) {
    var svg = drawingOf(event.target);
    if (!svg) { return; }
    event.preventDefault();
    var box = viewBox(svg), rect = svg.getBoundingClientRect();
    var factor = event.deltaY < 0 ? 0.8 : 1.25;
    var px = box[0] + (event.clientX - rect.left) / rect.width * box[2];
    var py = box[1] + (event.clientY - rect.top) / rect.height * box[3];
    var w = box[2] * factor, h = box[3] * factor;
    svg.setAttribute("viewBox", [px - (px - box[0]) * factor, py - (py - box[1]) * factor, w, h].join(" "));
  }, { passive: false });
  var panning = null;
  document.addEventListener("pointerdown", function (event) {
    var svg = drawingOf(event.target);
    if (!svg || event.button !== 0 || event.target.closest("a")) { return; }
    panning = { svg: svg, x: event.clientX, y: event.clientY, box: viewBox(svg) };
    svg.classList.add("panning");
  });
  document.addEventListener("pointermove", function (event) {
    if (!panning) { return; }
    var rect = panning.svg.getBoundingClientRect(), box = panning.box;
    var dx = (event.clientX - panning.x) / rect.width * box[2];
    var dy = (event.clientY - panning.y) / rect.height * box[3];
    panning.svg.setAttribute("viewBox", [box[0] - dx, box[1] - dy, box[2], box[3]].join(" "));
  });
  document.addEventListener("pointerup", function () {
    if (panning) { panning.svg.classList.remove("panning"); panning = null; }
  });
  document.addEventListener("dblclick", function (event) {
    var svg = drawingOf(event.target);
    if (svg && svg.hasAttribute("data-fit")) { svg.setAttribute("viewBox", svg.getAttribute("data-fit")); }
  });

  function concerns(region, data) {
    if (data === null) { return true; }
    var entity = region.getAttribute("data-live-entity");
    var ids = region.getAttribute("data-live-instances");
    if (ids) { return ids.split(" ").indexOf(data.instance_id || "") >= 0; }
    return !entity || !data.service_entity || data.service_entity === entity;
  }

  function refresh(regions) {
    var url = meta("page-url");
    if (!url) { return Promise.resolve(); }
    return fetch(url, { credentials: "same-origin", headers: { "X-Console-Live": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        regions.forEach(function (region) {
          if (region.hasAttribute("data-keep-dirty") && region.querySelector("form[data-dirty]")) { return; }
          var replacement = fresh.getElementById(region.id);
          if (replacement) {
            region.innerHTML = replacement.innerHTML;
            region.setAttribute("data-refreshed", String(Date.now()));
          }
        });
      });
  }

  function connect() {
    var regions = Array.prototype.slice.call(document.querySelectorAll("[data-live][id]"));
    if (!regions.length || !window.EventSource || !meta("page-url")) { return; }
    var status = document.querySelector("[data-live-status]");
    var source = new EventSource("/console/events");
    var pending = [];
    var timer = null;
    function schedule(data) {
      regions.forEach(function (r) { if (concerns(r, data) && pending.indexOf(r) < 0) { pending.push(r); } });
      if (!pending.length || timer) { return; }
      timer = setTimeout(function () {
        var batch = pending; pending = []; timer = null;
        refresh(batch);
      }, 100);
    }
    // the stream starts "from now": what changed between the page's render and the connection
    // (or during a reconnect) is caught up by one refetch when it opens
    source.addEventListener("open", function () {
      schedule(null);
      if (status) { status.textContent = "live"; }
    });
    source.addEventListener("error", function () { if (status) { status.textContent = "reconnecting…"; } });
    source.addEventListener("instance_state", function (e) {
      var data = null;
      try { data = JSON.parse(e.data); } catch (err) { data = null; }
      schedule(data);
    });
    source.addEventListener("compile_finished", function () { schedule(null); });
    window.addEventListener("pagehide", function () { source.close(); });
  }
  function problemOf(input) {
    var v = input.value, d = input.dataset;
    if (v === "") { return input.required ? "required" : null; }
    if (v === "null" && d.nullable) { return null; }
    if (input.pattern && !new RegExp("^(?:" + input.pattern + ")$").test(v)) {
      return "must be " + (input.title || "of its type");
    }
    var n = Number(v);
    if (d.minimum !== undefined && !(n >= Number(d.minimum))) { return "must be at least " + d.minimum; }
    if (d.maximum !== undefined && !(n <= Number(d.maximum))) { return "must be at most " + d.maximum; }
    if (d.exclusiveMinimum !== undefined && !(n > Number(d.exclusiveMinimum))) { return "must be more than " + d.exclusiveMinimum; }
    if (d.exclusiveMaximum !== undefined && !(n < Number(d.exclusiveMaximum))) { return "must be less than " + d.exclusiveMaximum; }
    var length = Array.from(v).length;
    if (d.minLength !== undefined && length < Number(d.minLength)) { return "must have at least " + d.minLength + " characters"; }
    if (d.maxLength !== undefined && length > Number(d.maxLength)) { return "must have at most " + d.maxLength + " characters"; }
    if (d.pattern !== undefined) {
      var re = null;
      try { re = new RegExp(d.pattern, "u"); } catch (err) { re = null; /* a Python-only pattern: the server checks it */ }
      if (re && !re.test(v)) { return "must match " + d.pattern; }
    }
    if (d.enum !== undefined) {
      var choices = JSON.parse(d.enum);
      var hit = choices.some(function (c) { return String(c) === v || JSON.stringify(c) === v; });
      if (!hit) { return "must be one of " + choices.join(", "); }
    }
    return null;
  }
  function check(input) {
    var problem = problemOf(input);
    var note = input.form && input.form.querySelector('[data-inline-error="' + input.dataset.rules + '"]');
    input.setAttribute("aria-invalid", problem ? "true" : "false");
    if (input.closest(".field")) { input.closest(".field").classList.toggle("invalid", !!problem); }
    if (note) { note.textContent = problem ? input.dataset.rules + " " + problem : ""; note.hidden = !problem; }
    return !problem;
  }
  document.addEventListener("input", function (event) {
    var input = event.target;
    if (input.matches && input.matches("form[data-check-fields] input[data-rules]")) { check(input); }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches("form[data-check-fields]")) { return; }
    var bad = Array.prototype.filter.call(form.querySelectorAll("input[data-rules]"), function (i) { return !check(i); });
    if (bad.length) {
      event.preventDefault();
      event.stopImmediatePropagation();
      bad[0].focus();
    }
  }, true);

  function pickers() {
    document.querySelectorAll("select[data-picker]").forEach(function (select) {
      var search = document.createElement("input");
      search.type = "search";
      search.placeholder = "search " + select.getAttribute("data-picker") + " by identity";
      search.setAttribute("aria-label", "search " + select.getAttribute("data-picker"));
      search.setAttribute("data-picker-search", select.id);
      search.addEventListener("input", function (event) {
        event.stopPropagation();
        var words = search.value.toLowerCase();
        var first = null;
        Array.prototype.forEach.call(select.options, function (option) {
          var hit = !option.value || option.textContent.toLowerCase().indexOf(words) >= 0;
          option.hidden = !hit;
          if (hit && option.value && first === null) { first = option; }
        });
        if (first && words) { select.value = first.value; }
      });
      select.parentNode.insertBefore(search, select);
    });
  }
  document.addEventListener("DOMContentLoaded", pickers);
  document.addEventListener("DOMContentLoaded", connect);
})();
