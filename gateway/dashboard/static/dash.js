// Hermes dashboard: live updates by short polling of server-rendered fragments.
// Every page reads without this script; it only refreshes the element marked data-poll.
(function () {
  "use strict";
  var el = document.querySelector("[data-poll]");
  if (!el || !window.fetch) { return; }
  var url = el.getAttribute("data-poll");
  var busy = false;
  function tick() {
    if (busy || document.hidden) { return; }
    if (el.contains(document.activeElement) && document.activeElement !== document.body) { return; }
    busy = true;
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { el.innerHTML = html; el.setAttribute("data-updated", String(Date.now())); } })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  window.setInterval(tick, 2000);
})();
