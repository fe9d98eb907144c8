/* The research view inside an MCP Apps host (extension io.modelcontextprotocol/ui, SEP-1865).
 *
 * The page talks to its host, not to the server: JSON-RPC 2.0 over postMessage with the parent
 * window. It says ui/initialize, then ui/notifications/initialized; the host then passes the
 * research tool's arguments (ui/notifications/tool-input) and result (ui/notifications/
 * tool-result, our envelope {success, data, error, meta}). The research it names is read whole
 * through the host (resources/read research://{id}/view) and drawn with FoundryView.render;
 * while it runs, read again every two seconds, not while the page is hidden. A follow-up
 * question is the tool's deep-research-ask (tools/call through the host); links open through
 * ui/open-link. Light or dark follows the host (data-theme on the root). No SDK: the page
 * stays one small file.
 */
(function () {
  "use strict";

  var PROTOCOL = "2026-01-26";
  var TOOL = "research";
  var POLL_MS = 2000;
  var INPUT_GRACE_MS = 500;
  var LIVE = { queued: 1, running: 1, cancelling: 1 }; // a tool result's status, before a read
  var host = window.parent;
  var pending = {};
  var nextId = 1;
  var hostCaps = {};
  var shown = { id: null, live: false, timer: null, stopped: false };

  function send(message) {
    message.jsonrpc = "2.0";
    host.postMessage(message, "*");
  }

  function request(method, params) {
    var id = nextId++;
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
      send({ id: id, method: method, params: params || {} });
    });
  }

  function notify(method, params) {
    send({ method: method, params: params || {} });
  }

  function view() {
    return window.FoundryView;
  }

  // ---- the host's messages

  var notifications = {
    "ui/notifications/tool-input": function (params) {
      var args = params.arguments || {};
      // The call may take long (a status that waits): show the research meanwhile, unless
      // its result comes first.
      if (typeof args.research_id === "string") show(args.research_id, false, INPUT_GRACE_MS);
    },
    "ui/notifications/tool-result": function (params) {
      var envelope = params.structuredContent || {};
      var data = envelope.data || {};
      if (envelope.success && typeof data.research_id === "string") {
        show(data.research_id, LIVE[data.status] === 1, 0);
      } else if (!envelope.success) {
        say([envelope.error, data.remediation].filter(Boolean).join(" ") || "The tool failed.");
      } else if (!shown.id) {
        say("This answer of the research tool is not about one research.");
      }
    },
    "ui/notifications/host-context-changed": applyContext,
  };

  var requests = {
    ping: function () {
      return {};
    },
    "ui/resource-teardown": function () {
      shown.stopped = true;
      schedule();
      return {};
    },
  };

  window.addEventListener("message", function (event) {
    var message = event.data;
    if (event.source !== host || !message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) {
      var waiting = pending[message.id];
      if (!waiting) return;
      delete pending[message.id];
      if (message.error) waiting.reject(new Error(message.error.message || "host error"));
      else waiting.resolve(message.result || {});
      return;
    }
    if (message.id !== undefined) {
      var handler = requests[message.method];
      if (handler) send({ id: message.id, result: handler(message.params || {}) });
      else send({ id: message.id, error: { code: -32601, message: "Method not found" } });
      return;
    }
    var notice = notifications[message.method];
    if (notice) notice(message.params || {});
  });

  // ---- the research shown

  function show(researchId, live, delay) {
    if (researchId !== shown.id || live) shown.live = live;
    shown.id = researchId;
    clearTimeout(shown.timer);
    shown.timer = delay ? setTimeout(refresh, delay) : null;
    if (!delay) refresh();
  }

  // Before the first drawing only: the page's own "loading" line says what went wrong.
  function say(text) {
    var waiting = document.getElementById("waiting");
    if (waiting) waiting.textContent = text;
  }

  function refresh() {
    clearTimeout(shown.timer);
    shown.timer = null;
    var researchId = shown.id;
    if (!researchId || !view() || !initialized) return;
    if (!hostCaps.serverResources) {
      say("This host does not let the view read the research: ask the assistant instead.");
      return;
    }
    var uri = "research://" + encodeURIComponent(researchId) + "/view";
    request("resources/read", { uri: uri }).then(
      function (result) {
        if (researchId !== shown.id) return; // another research was passed meanwhile
        var data = JSON.parse(result.contents[0].text);
        shown.live = data.live === true;
        view().render(data);
        schedule();
      },
      function (error) {
        say("The research could not be read: " + error.message);
        schedule(); // the host or the server said no: try again while the research runs
      }
    );
  }

  function callTool(args) {
    return request("tools/call", { name: TOOL, arguments: args }).then(function (result) {
      var envelope = result.structuredContent || {};
      if (!envelope.success) throw new Error(envelope.error || "the research tool failed");
      return envelope.data;
    });
  }

  function schedule() {
    clearTimeout(shown.timer);
    shown.timer = null;
    if (shown.live && !shown.stopped && document.visibilityState !== "hidden") {
      shown.timer = setTimeout(refresh, POLL_MS);
    }
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") schedule();
    else if (!shown.timer && shown.live) refresh();
  });

  // ---- what the view asks of the server: follow-up questions

  function onAction(request) {
    if (!request || request.action !== "ask" || !hostCaps.serverTools || !shown.id) {
      return Promise.reject(new Error("this host cannot send that to the server"));
    }
    var args = { action: "deep-research-ask", research_id: shown.id, query: request.query };
    return callTool(args).then(function (answer) {
      refresh(); // the research keeps the follow-up: the view shows it with the others
      return answer;
    });
  }

  // ---- links, theme, size

  document.addEventListener(
    "click",
    function (event) {
      var link = event.target && event.target.closest ? event.target.closest("a[href]") : null;
      if (!link || !hostCaps.openLinks || !/^https?:/i.test(link.href)) return;
      event.preventDefault();
      request("ui/open-link", { url: link.href }).catch(function () {});
    },
    true
  );

  function applyContext(context) {
    if (context && (context.theme === "light" || context.theme === "dark")) {
      document.documentElement.setAttribute("data-theme", context.theme);
      document.documentElement.style.colorScheme = context.theme; // the browser's own controls
    }
  }

  var lastSize = "";

  function reportSize() {
    var root = document.documentElement;
    var size = { width: Math.ceil(root.scrollWidth), height: Math.ceil(root.scrollHeight) };
    if (size.width + "x" + size.height === lastSize) return; // said already
    lastSize = size.width + "x" + size.height;
    notify("ui/notifications/size-changed", size);
  }

  // ---- start

  var initialized = false;

  function start() {
    request("ui/initialize", {
      appInfo: { name: "foundry-mcp research view", version: "1" },
      appCapabilities: {},
      protocolVersion: PROTOCOL,
    }).then(function (result) {
      hostCaps = result.hostCapabilities || {};
      applyContext(result.hostContext);
      initialized = true;
      // The follow-up form only where the host lets the view call the server's tools.
      if (view() && hostCaps.serverTools) view().onAction(onAction);
      notify("ui/notifications/initialized");
      if (window.ResizeObserver) new ResizeObserver(reportSize).observe(document.documentElement);
      reportSize();
      refresh(); // a tool input may have come first
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
