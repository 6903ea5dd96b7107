// fleetview: keep the page current without reloading it. The server says "change" on the page's event stream
// when the rollout (or, on /fleet/apps, the apps the page shows) moves; the page's live part (its <main>, or the
// apps page's table) is fetched again and swapped in. Countdowns and "out of sync for" durations tick every second.
(function () {
  "use strict";
  var main = document.querySelector("[data-live]");
  if (!main) { return; }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-until]").forEach(function (el) {
      var left = Math.max(0, Math.round((Date.parse(el.getAttribute("data-until")) - now) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor(left % 3600 / 60), s = left % 60;
      el.textContent = (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
    });
    // Elapsed since a time, as the server writes it (apps.go elapsed): 42s, 5m 3s, 2h 7m, 3d 4h.
    document.querySelectorAll("[data-since]").forEach(function (el) {
      var t = Math.max(0, Math.floor((now - Date.parse(el.getAttribute("data-since"))) / 1000));
      var d = Math.floor(t / 86400), h = Math.floor(t % 86400 / 3600), m = Math.floor(t % 3600 / 60), s = t % 60;
      el.textContent = d ? d + "d " + h + "h" : h ? h + "h " + m + "m" : m ? m + "m " + s + "s" : s + "s";
    });
  }
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(main.getAttribute("data-fragment"), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null) {
          main.innerHTML = html;
          main.setAttribute("data-updated", String(Date.now()));
          tick();
        }
      })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource(main.getAttribute("data-live"));
  es.addEventListener("change", refresh);
  tick();
  setInterval(tick, 1000);
})();
