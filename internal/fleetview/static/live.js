// fleetview: keep the page current without reloading it. The server says "change" on the page's event stream
// when the rollout moves; the page's <main> is fetched again and swapped in. Countdowns tick every second.
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  if (!main) { return; }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-until]").forEach(function (el) {
      var left = Math.max(0, Math.round((Date.parse(el.getAttribute("data-until")) - now) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor(left % 3600 / 60), s = left % 60;
      el.textContent = (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
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
