// The page's polled feed, for a page served by `foundry-mcp view --serve` or a team server.
//
// While the research runs (data.live), fetch ./data (same origin, relative to the page's own
// address, so the access token in that address and any path prefix come along) every 1.5 s
// and hand it to FoundryView.render. On a failure, wait longer each time (up to 30 s) and say
// so in a status line that a screen reader announces; a refusal (403, 404: the link expired,
// the research was deleted) stops the polling and says why, as text. Once the research has
// ended, one last render and no more requests. A hidden tab waits until it is shown again.
(function () {
  "use strict";
  var POLL_MS = 1500, MAX_WAIT_MS = 30000, DATA = "./data";
  var doc = document, view = window.FoundryView;
  if (!view) return;
  var timer = null, failures = 0, stopped = false, line = null;

  function embedded() {
    var node = doc.getElementById("foundry-data");
    if (!node || !node.textContent.trim()) return null;
    try { return JSON.parse(node.textContent); } catch (e) { return null; }
  }

  // The status line: created on first need, styled through the CSSOM (the page's policy
  // allows no style attribute), kept after the page's header.
  function status(text, alarm) {
    if (!line) {
      line = doc.createElement("p");
      line.id = "connection";
      line.className = "connection";
      line.setAttribute("role", "status");
      line.setAttribute("aria-live", "polite");
      line.style.margin = "0.5rem 1rem";
      line.style.padding = "0.5rem 0.75rem";
      line.style.borderRadius = "0.375rem";
      line.style.border = "1px solid currentColor";
      var main = doc.getElementById("main");
      main.parentNode.insertBefore(line, main);
    }
    line.hidden = !text;
    line.textContent = text || "";
    line.setAttribute("data-state", alarm ? "lost" : "ok");
  }

  function schedule(ms) {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(poll, ms);
  }

  function poll() {
    if (doc.hidden) return; // resumed by visibilitychange
    fetch(DATA, { cache: "no-store", credentials: "same-origin", redirect: "error",
      headers: { Accept: "application/json" } })
      .then(function (answer) {
        if (answer.ok) return answer.json().then(arrived);
        return answer.text().then(function (text) { refused(answer.status, text); });
      })
      .catch(lost);
  }

  function arrived(data) {
    failures = 0;
    status("");
    view.render(data);
    if (data && data.live) schedule(POLL_MS);
    else stopped = true;
  }

  function refused(code, text) {
    if (code === 403 || code === 404 || code === 401) {
      stopped = true;
      var said = String(text || "").split("\n").join(" ").slice(0, 500);
      status("Updates stopped: " + (said || "this page's address is no longer valid."), true);
      return;
    }
    lost();
  }

  function lost() {
    failures += 1;
    var wait = Math.min(MAX_WAIT_MS, POLL_MS * Math.pow(2, failures));
    status("Connection lost, retrying in " + Math.round(wait / 1000) + " s…", true);
    schedule(wait);
  }

  doc.addEventListener("visibilitychange", function () {
    if (!doc.hidden && !stopped) schedule(0);
  });

  var first = embedded();
  if (!first || first.live) schedule(first ? POLL_MS : 0);
  else stopped = true;
})();
