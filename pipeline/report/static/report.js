/* rt4chart report: unpacks the trace views, sorts and filters the flagged traces (charts are
   inline SVG). No network. */
(function () {
  "use strict";

  function flaggedRows() {
    var table = document.getElementById("flagged-table");
    return table ? Array.prototype.slice.call(table.tBodies[0].rows) : [];
  }

  function applyFilters() {
    var get = function (name) {
      var el = document.querySelector('[data-filter="' + name + '"]');
      return el ? el.value.trim() : "";
    };
    var route = get("route"), label = get("label"), from = get("from"), to = get("to");
    var text = get("text").toLowerCase();
    var rows = flaggedRows(), shown = 0;
    rows.forEach(function (tr) {
      var d = tr.dataset;
      var ok = (!route || d.route === route) && (!label || d.label === label) &&
        (!from || d.date >= from) && (!to || d.date <= to) &&
        (!text || d.trace.toLowerCase().indexOf(text) >= 0);
      tr.hidden = !ok;
      if (ok) { shown += 1; }
    });
    var count = document.getElementById("flagged-count");
    if (count) { count.textContent = shown + " of " + rows.length + " shown."; }
  }

  function sortBy(button) {
    var th = button.parentElement, col = Number(button.dataset.col);
    var asc = th.getAttribute("aria-sort") !== "ascending";
    th.parentElement.querySelectorAll("th").forEach(function (h) {
      h.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var rows = flaggedRows();
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.sort, y = b.cells[col].dataset.sort;
      var num = /^-?[0-9]+(\.[0-9]+)?$/, r;
      if (num.test(x) && num.test(y)) {
        r = parseFloat(x) - parseFloat(y);
      } else {
        r = x < y ? -1 : (x > y ? 1 : 0);
      }
      return asc ? r : -r;
    });
    var body = document.getElementById("flagged-table").tBodies[0];
    rows.forEach(function (tr) { body.appendChild(tr); });
  }

  function openTarget() {
    if (!location.hash) { return; }
    var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (!el) { return; }
    for (var p = el.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    if (el.hasAttribute("tabindex")) { el.focus({preventScroll: true}); }
    el.scrollIntoView();
  }

  /* A trace view is packed in the file (gzip, base64: pipeline/report/packing.py); it is put
     in place of its placeholder as the same HTML the report rendered. */
  function unpack(el) {
    var raw = atob(el.getAttribute("data-gz")), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i += 1) { bytes[i] = raw.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(function (html) {
      el.insertAdjacentHTML("afterend", html);
      el.remove();
    });
  }

  function unpackAll() {
    var packed = Array.prototype.slice.call(document.querySelectorAll("div.packed[data-gz]"));
    return Promise.all(packed.map(unpack));
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-filter]").forEach(function (el) {
      el.addEventListener("input", applyFilters);
      el.addEventListener("change", applyFilters);
    });
    document.querySelectorAll("#flagged-table th button").forEach(function (b) {
      b.addEventListener("click", function () { sortBy(b); });
    });
    window.addEventListener("hashchange", openTarget);
    applyFilters();
    unpackAll().then(openTarget);
  });
}());
