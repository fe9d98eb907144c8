/* A research's page: draws a ViewData JSON (foundry_mcp.view.data) and updates it in place.
   Every text from the data becomes a text node: nothing of it is ever parsed as markup. */
(function () {
  "use strict";
  var doc = document;
  var VERDICT = {
    supported: "Supported", partial: "Partly supported",
    unsupported: "Not supported", unverified: "Not verified"
  };
  var PHASES = ["planning", "gathering", "analysis", "synthesis", "refinement"];
  var view = { data: null, handler: null, options: {}, drawn: {}, cites: {}, said: "" };
  var frame = null;

  // ------------------------------------------------------------------ small helpers

  function h(tag, props, kids) {
    var node = doc.createElement(tag);
    for (var k in props || {}) {
      var v = props[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "cls") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    add(node, kids);
    return node;
  }
  function add(node, kids) {
    (Array.isArray(kids) ? kids : [kids]).forEach(function (kid) {
      if (kid === null || kid === undefined || kid === false) return;
      if (Array.isArray(kid)) add(node, kid);
      else node.appendChild(typeof kid === "object" ? kid : doc.createTextNode(String(kid)));
    });
    return node;
  }
  function svg(tag, attrs, text) {
    var node = doc.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) node.setAttribute(k, String(attrs[k]));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function num(n) { return Number(n || 0).toLocaleString("en-US"); }
  function count(n, word) { return num(n) + " " + word + (n === 1 ? "" : "s"); }
  function money(v) {
    v = Number(v || 0);
    return "$" + (v > 0 && v < 1 ? v.toFixed(4) : v.toFixed(2));
  }
  function duration(s) {
    s = Math.round(Number(s || 0));
    if (s < 60) return s + " s";
    var m = Math.floor(s / 60);
    return m < 60 ? m + " min " + (s % 60) + " s" : Math.floor(m / 60) + " h " + (m % 60) + " min";
  }
  function words(s) { return String(s || "").replace(/_/g, " "); }
  function badge(text, kind) { return h("span", { cls: "badge " + kind, text: text }); }
  function safeUrl(url) {
    return typeof url === "string" && /^https?:\/\/[^\s]+$/i.test(url) ? url : null;
  }
  function link(url, text) {
    var href = safeUrl(url);
    if (!href) return doc.createTextNode(text);
    var a = h("a", { href: href, target: "_blank", rel: "noopener noreferrer", text: text });
    a.addEventListener("click", function (event) {
      if (view.handler && view.options.open) {
        event.preventDefault();
        act({ action: "open", url: href });
      }
    });
    return a;
  }
  function act(request) {
    try { return Promise.resolve(view.handler(request)); } catch (e) { return Promise.reject(e); }
  }
  function byKey(key) {
    var all = doc.querySelectorAll("[data-key]");
    for (var i = 0; i < all.length; i++) if (all[i].getAttribute("data-key") === key) return all[i];
    return null;
  }
  function sources() {
    var map = {};
    (view.data.sources || []).forEach(function (s) { if (s.number) map[s.number] = s; });
    return map;
  }

  // ------------------------------------------------------------------ markdown, safely

  // Mirrors the fact-checker's reading of a sentence (research/verification/claims.py).
  function norm(s) {
    s = s.replace(/\[\d+\]/g, "").replace(/\[([^\[\]]+)\]\([^()\s]+\)/g, "$1")
      .replace(/\*\*|__|\*|`/g, "").replace(/\s*\|\s*/g, " | ").replace(/^[ |]+|[ |]+$/g, "");
    return s.replace(/\s+/g, " ").replace(/\s+([.,;:!?])/g, "$1").trim();
  }
  function context(raw, claims, fallback) {
    var whole = norm(raw), spans = [];
    claims.forEach(function (claim) {
      var text = norm(claim.sentence || "");
      for (var at = text ? whole.indexOf(text) : -1; at >= 0; at = whole.indexOf(text, at + 1)) {
        spans.push({ start: at, end: at + text.length, claim: claim });
      }
    });
    return { raw: raw, spans: spans, fallback: fallback || null };
  }
  // The checked sentence a citation at raw offset `pos` closes, if any.
  function claimFor(ctx, n, pos) {
    var at = norm(ctx.raw.slice(0, pos)).length, best = null;
    ctx.spans.forEach(function (sp) {
      if (sp.claim.numbers.indexOf(n) < 0) return;
      if (sp.start < at && at <= sp.end + 1 && (!best || sp.end < best.end)) best = sp;
    });
    return best ? best.claim : ctx.fallback;
  }
  function citeButton(n, ctx, pos) {
    var claim = claimFor(ctx, n, pos), source = sources()[n];
    var key = "cite-" + ctx.prefix + "-" + ctx.count++;
    view.cites[key] = { n: n, claim: claim };
    var label = "Source " + n + (source ? ": " + source.title : "") +
      (claim && claim.verdict ? " (" + VERDICT[claim.verdict] + ")" : "");
    var b = h("button", {
      type: "button", cls: "cite" + (claim && claim.verdict ? " v-" + claim.verdict : ""),
      "data-key": key, "aria-haspopup": "dialog", "aria-label": label, text: "[" + n + "]"
    });
    b.addEventListener("click", function () { openCitation(key); });
    return b;
  }
  // Whether `mark` at `at` can end an emphasis (CommonMark's right-flanking, roughly).
  function closes(text, at, mark) {
    var before = text.charAt(at - 1), after = text.charAt(at + mark.length);
    if (/\s/.test(before) || (/[^\w\s]/.test(before) && /\w/.test(after))) return false;
    return mark.charAt(0) !== "_" || !/\w/.test(after);
  }
  function inline(parent, text, ctx, base) {
    var buf = "", i = 0, m;
    function flush() { if (buf) parent.appendChild(doc.createTextNode(buf)); buf = ""; }
    while (i < text.length) {
      var c = text.charAt(i), rest = text.slice(i);
      if (c === "\\" && /^\\[\\`*_[\]()#+\-.!|>]/.test(rest)) { buf += text.charAt(i + 1); i += 2; continue; }
      if (c === "`" && (m = /^`([^`]+)`/.exec(rest))) {
        flush(); parent.appendChild(h("code", { text: m[1] })); i += m[0].length; continue;
      }
      if (c === "[" && ctx && (m = /^\[(\d{1,4})\]/.exec(rest))) {
        flush(); parent.appendChild(citeButton(+m[1], ctx, base + i)); i += m[0].length; continue;
      }
      if (c === "[" && (m = /^\[([^[\]]+)\]\(([^()\s]+)\)/.exec(rest))) {
        flush();
        var a = link(m[2], "");
        if (a.nodeType === 1) inline(a, m[1], ctx, base + i + 1); else inline(parent, m[1], ctx, base + i + 1);
        if (a.nodeType === 1) parent.appendChild(a);
        i += m[0].length; continue;
      }
      if ((c === "*" || c === "_") && (c === "*" || !/\w/.test(text.charAt(i - 1)))) {
        var mark = rest.charAt(1) === c ? c + c : c, from = i + mark.length;
        var close = text.indexOf(mark, from + 1);
        while (close > 0 && !closes(text, close, mark)) close = text.indexOf(mark, close + 1);
        if (close > from && !/\s/.test(text.charAt(from))) {
          flush();
          var node = h(mark.length === 2 ? "strong" : "em");
          inline(node, text.slice(from, close), ctx, base + from);
          parent.appendChild(node); i = close + mark.length; continue;
        }
      }
      buf += c; i++;
    }
    flush();
    return parent;
  }
  var FENCE = /^\s{0,3}(`{3,}|~{3,})/, HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  var RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/, ITEM = /^(\s*)([-*+]|\d{1,3}[.)])\s+/;
  var SEPARATOR = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/, QUOTE = /^\s{0,3}>\s?/;
  function starts(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || ITEM.test(line) || QUOTE.test(line);
  }
  function cells(row) {
    var lead = /^\s*\|?/.exec(row)[0].length, out = [], start = lead;
    var body = row.slice(lead).replace(/\|?\s*$/, "");
    body.split("|").forEach(function (cell) { out.push({ text: cell, at: start }); start += cell.length + 1; });
    return out;
  }
  function markdown(md, claims, prefix, fallback) {
    var out = doc.createDocumentFragment(), lines = String(md).replace(/\r\n?/g, "\n").split("\n");
    var count = { prefix: prefix, n: 0 };
    function ctxOf(raw) {
      var ctx = context(raw, claims, fallback);
      ctx.prefix = prefix; ctx.count = count.n;
      return ctx;
    }
    function block(parent, raw) {
      var ctx = ctxOf(raw);
      inline(parent, raw, ctx, 0);
      count.n = ctx.count;
      return parent;
    }
    var i = 0, m, line, buf;
    while (i < lines.length) {
      line = lines[i];
      if (!line.trim()) { i++; continue; }
      if ((m = FENCE.exec(line))) {
        buf = [];
        for (i++; i < lines.length && lines[i].trim().indexOf(m[1]) !== 0; i++) buf.push(lines[i]);
        i++;
        out.appendChild(h("pre", null, h("code", { text: buf.join("\n") })));
      } else if ((m = HEADING.exec(line))) {
        out.appendChild(block(h("h" + Math.min(6, m[1].length + 2)), m[2])); i++;
      } else if (RULE.test(line)) {
        out.appendChild(h("hr")); i++;
      } else if (line.indexOf("|") >= 0 && i + 1 < lines.length && SEPARATOR.test(lines[i + 1])) {
        var table = h("table"), head = h("tr"), tbody = h("tbody");
        cells(line).forEach(function (c) { head.appendChild(h("th", { scope: "col" }, c.text.trim())); });
        table.appendChild(h("thead", null, head));
        for (i += 2; i < lines.length && lines[i].indexOf("|") >= 0 && lines[i].trim(); i++) {
          var row = lines[i], tr = h("tr"), ctx = ctxOf(row);
          cells(row).forEach(function (c) {
            var lead = c.text.length - c.text.replace(/^\s+/, "").length;
            tr.appendChild(inline(h("td"), c.text.trim(), ctx, c.at + lead));
          });
          count.n = ctx.count;
          tbody.appendChild(tr);
        }
        table.appendChild(tbody);
        out.appendChild(table);
      } else if (QUOTE.test(line)) {
        buf = [];
        for (; i < lines.length && QUOTE.test(lines[i]); i++) buf.push(lines[i].replace(QUOTE, ""));
        var quote = h("blockquote");
        quote.appendChild(markdown(buf.join("\n"), claims, prefix + "q" + i, fallback));
        out.appendChild(quote);
      } else if ((m = ITEM.exec(line))) {
        var first = parseInt(m[2], 10);
        var list = h(isNaN(first) ? "ul" : "ol", { start: first > 1 ? first : null });
        while (i < lines.length && (m = ITEM.exec(lines[i]))) {
          buf = [lines[i].slice(m[0].length)];
          for (i++; i < lines.length && lines[i].trim() && !starts(lines[i]); i++) buf.push(lines[i].trim());
          list.appendChild(block(h("li"), buf.join("\n")));
        }
        out.appendChild(list);
      } else {
        buf = [];
        for (; i < lines.length && lines[i].trim() && !(buf.length && starts(lines[i])); i++) buf.push(lines[i]);
        out.appendChild(block(h("p"), buf.join("\n")));
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ the citation panel

  function openCitation(key) {
    var info = view.cites[key];
    if (!info) return;
    var dialog = frame.dialog;
    dialog.setAttribute("data-for", key);
    fillCitation(info);
    if (!dialog.open) dialog.showModal();
  }
  function fillCitation(info) {
    var dialog = frame.dialog, source = sources()[info.n], claim = info.claim;
    var body = [h("h2", { id: "cite-title", text: "Source [" + info.n + "]" })];
    if (source) {
      body.push(h("p", { cls: "cite-source" }, link(source.url, source.title)));
      if (source.url && !safeUrl(source.url)) body.push(h("p", { cls: "meta", text: source.url }));
    } else {
      body.push(h("p", { cls: "muted", text: "This source is not listed in the page's data." }));
    }
    if (claim && claim.sentence) {
      body.push(h("p", null, [badge(VERDICT[claim.verdict] || words(claim.verdict), "v-" + claim.verdict)]));
      body.push(h("p", { cls: "meta", text: "The sentence, as checked:" }));
      body.push(h("blockquote", { cls: "sentence", text: claim.sentence }));
      if (claim.reason) body.push(h("p", { cls: "meta", text: claim.reason }));
    }
    var quotes = claim ? claim.quotes.filter(function (q) { return q.number === info.n; }) : [];
    if (quotes.length) {
      body.push(h("p", { cls: "meta", text: quotes.length > 1 ? "What the source says:" : "What the source says (quoted):" }));
      quotes.forEach(function (q) { body.push(h("blockquote", { cls: "quote", text: q.text })); });
    } else {
      body.push(h("p", { cls: "muted", text: claim && claim.sentence
        ? "No passage of this source was quoted for this sentence."
        : "This sentence was not fact-checked." }));
    }
    var close = h("button", { type: "button", cls: "close", autofocus: true, "data-key": "cite-close", text: "Close" });
    close.addEventListener("click", function () { dialog.close(); });
    body.push(h("p", null, close));
    dialog.replaceChildren.apply(dialog, body);
  }

  // ------------------------------------------------------------------ the sections

  function header(d) {
    var done = d.phase_index - (d.live ? 1 : 0);
    var steps = h("ol", { cls: "steps", "aria-label": "Phases" }, PHASES.map(function (p, i) {
      return h("li", {
        cls: i < done ? "done" : "", "aria-current": d.live && i === d.phase_index - 1 ? "step" : null,
        text: p
      });
    }));
    var total = d.usage.total;
    return [
      h("h1", { text: d.question }),
      h("ul", { cls: "facts", "aria-label": "About this research" }, [
        h("li", null, badge(words(d.status), "s-" + d.status)),
        h("li", null, ["Phase ", h("b", { text: d.phase }), " (" + d.phase_index + " of " + d.phases + ")"]),
        h("li", null, ["Iteration ", h("b", { text: d.iteration + " of " + d.max_iterations })]),
        h("li", null, ["Mode ", h("b", { text: d.mode })]),
        h("li", null, ["Time ", h("b", { cls: "elapsed", text: duration(d.elapsed_s) })]),
        h("li", null, ["Cost ", h("b", { cls: "cost", text: money(total.cost_usd) })]),
        h("li", null, ["Tokens ", h("b", { cls: "tokens", text: num(total.input_tokens + total.output_tokens) })])
      ]),
      steps,
      h("p", { cls: "meta", text: d.live ? "Updating as the research runs." : "Research " + words(d.status) + "." })
    ];
  }
  function plan(d) {
    var kids = [];
    if (d.plan.brief) kids.push(h("div", { cls: "brief" }, markdown(d.plan.brief, [], "brief")));
    var parts = d.plan.parts;
    if (parts.length) {
      var doneCount = parts.filter(function (p) { return p.progress >= 1; }).length;
      kids.push(h("p", { cls: "meta parts-done", text: doneCount + " of " + parts.length + " parts done · " +
        count(d.findings, "finding") + " · " + count(d.sources_total, "source") }));
      kids.push(h("ol", { cls: "parts" }, parts.map(function (p, i) {
        var label = (p.kind === "hypothesis" ? "Hypothesis " : p.kind === "search" ? "Search " : "Part ") + (i + 1);
        var li = h("li", { "data-part": p.id }, [
          h("p", null, [badge(words(p.status), "s-" + p.status), " ", p.text]),
          h("progress", { max: 1, value: p.progress, "aria-label": label + " progress" }),
          h("p", { cls: "meta", text: [p.sources ? count(p.sources, "source") : "",
            count(p.findings_count, "finding"), p.detail].filter(Boolean).join(" · ") })
        ]);
        if (p.findings.length) {
          li.appendChild(h("details", { "data-key": "part-" + p.id }, [
            h("summary", { "data-key": "part-sum-" + p.id, text: "Findings so far" }),
            h("ul", null, p.findings.map(function (f) { return h("li", { text: f }); }))
          ]));
        }
        return li;
      })));
    }
    if (d.live && d.activity.length) {
      kids.push(h("details", { "data-key": "activity" }, [
        h("summary", { "data-key": "activity-sum", text: "Recent steps" }),
        h("ol", null, d.activity.slice(-8).map(function (a) {
          return h("li", null, [h("b", { text: a.agent + " · " + words(a.action) }), " ", a.text]);
        }))
      ]));
    }
    return kids.length ? kids : null;
  }
  function report(d) {
    if (d.report === null || d.report === undefined) return null;
    var note = d.version > 1 ? "Version " + d.version + " of the report." : null;
    return [note && h("p", { cls: "meta", text: note }),
      h("div", { cls: "report" }, markdown(d.report, d.claims, "r"))];
  }
  function checks(d) {
    var total = 0, kids = [];
    for (var k in d.verdicts) total += d.verdicts[k];
    if (!total) return null;
    kids.push(h("ul", { cls: "facts", "aria-label": "Verdicts" }, Object.keys(VERDICT).filter(function (v) {
      return d.verdicts[v];
    }).map(function (v) { return h("li", null, [badge(VERDICT[v], "v-" + v), " " + d.verdicts[v]]); })));
    kids.push(h("details", { "data-key": "claims" }, [
      h("summary", { "data-key": "claims-sum", text: "Every checked sentence (" + d.claims.length + ")" }),
      h("ol", null, d.claims.map(function (c) {
        return h("li", null, [
          h("p", null, [badge(VERDICT[c.verdict] || c.verdict, "v-" + c.verdict), " ", c.sentence,
            c.numbers.length ? " [" + c.numbers.join("], [") + "]" : ""]),
          c.quotes.map(function (q) {
            return h("blockquote", null, [q.number ? "[" + q.number + "] " : "", q.text]);
          })
        ]);
      }))
    ]));
    return kids;
  }
  function sourceItem(s) {
    var read = s.read ? (s.read.whole ? "read whole" : "read " + s.read.passages_read + " of " +
      s.read.passages + " passages") + " (" + num(s.read.tokens) + " tokens)" : "not read";
    return h("li", { value: s.number || null }, [
      h("p", null, [s.number ? "[" + s.number + "] " : "", link(s.url, s.title)]),
      h("p", { cls: "meta", text: [s.provider, "quality " + s.quality, read].filter(Boolean).join(" · ") })
    ]);
  }
  function sourcesSection(d) {
    if (!d.sources.length) return null;
    var cited = d.sources.filter(function (s) { return s.number; });
    var other = d.sources.filter(function (s) { return !s.number; });
    var kids = [h("p", { cls: "meta", text: cited.length + " cited of " + d.sources_total + " found." })];
    if (cited.length) kids.push(h("ol", { cls: "sources" }, cited.map(sourceItem)));
    if (other.length) {
      kids.push(h("details", { "data-key": "uncited" }, [
        h("summary", { "data-key": "uncited-sum", text: "Found, not cited (" + other.length + ")" }),
        h("ul", { cls: "sources" }, other.map(sourceItem))
      ]));
    }
    return kids;
  }
  function cost(d) {
    var rows = d.usage.by_phase;
    if (!rows.length) return null;
    var priced = d.usage.total.cost_usd > 0;
    function value(r) { return priced ? r.cost_usd : r.input_tokens + r.output_tokens; }
    var top = Math.max.apply(null, rows.map(value).concat([1e-9]));
    var chart = svg("svg", { "class": "chart", viewBox: "0 0 480 " + rows.length * 26, "aria-hidden": "true", focusable: "false" });
    rows.forEach(function (r, i) {
      var y = i * 26;
      chart.appendChild(svg("text", { x: 0, y: y + 16 }, r.phase));
      chart.appendChild(svg("rect", { "class": "track", x: 110, y: y + 5, width: 250, height: 14, rx: 2 }));
      chart.appendChild(svg("rect", { "class": "bar", x: 110, y: y + 5, width: Math.max(1, 250 * value(r) / top), height: 14, rx: 2 }));
      chart.appendChild(svg("text", { x: 368, y: y + 16 }, priced ? money(r.cost_usd) : num(value(r)) + " tok"));
    });
    var table = h("table", { cls: "sr-only" }, [
      h("caption", { text: "Cost by phase" }),
      h("thead", null, h("tr", null, ["Phase", "Cost", "Tokens", "Calls"].map(function (t) {
        return h("th", { scope: "col", text: t });
      }))),
      h("tbody", null, rows.map(function (r) {
        return h("tr", null, [h("th", { scope: "row", text: r.phase }), h("td", { text: money(r.cost_usd) }),
          h("td", { text: num(r.input_tokens + r.output_tokens) }), h("td", { text: num(r.calls) })]);
      }))
    ]);
    var t = d.usage.total;
    return [h("p", { cls: "meta", text: money(t.cost_usd) + " (estimated) · " + num(t.input_tokens + t.output_tokens) +
      " tokens · " + count(t.calls, "model call") + " · " + num(d.usage.search_calls) + " searches" +
      (t.unpriced_calls ? " · " + t.unpriced_calls + " calls of unknown price" : "") }), chart, table];
  }
  function versions(d) {
    if (d.versions.length < 2) return null;
    return h("table", { cls: "grid" }, [
      h("thead", null, h("tr", null, ["Version", "Made by", "Date", "Cost", "Tokens", "Searches"].map(function (t) {
        return h("th", { scope: "col", text: t });
      }))),
      h("tbody", null, d.versions.map(function (v) {
        return h("tr", null, [h("th", { scope: "row", text: v.number + (v.number === d.version ? " (shown)" : "") }),
          h("td", { text: v.label }), h("td", { text: v.created_at.slice(0, 10) }), h("td", { text: money(v.cost_usd) }),
          h("td", { text: num(v.tokens) }), h("td", { text: num(v.search_calls) })]);
      }))
    ]);
  }
  function followUps(d) {
    if (!d.follow_ups.length) return null;
    return d.follow_ups.map(function (f, i) {
      var asked = { sentence: null, verdict: null, numbers: f.numbers, quotes: f.quotes };
      return h("article", { "aria-label": "Follow-up " + (i + 1) }, [
        h("h3", { text: f.question }),
        f.answerable ? null : h("p", { cls: "muted", text: "The saved sources do not answer this." }),
        h("div", null, markdown(f.answer, [], "f" + i, asked))
      ]);
    });
  }
  function notes(d) {
    var kids = [];
    if (d.error) kids.push(h("p", { cls: "error", text: d.error }));
    var items = d.warnings.concat(d.omitted);
    if (items.length) kids.push(h("ul", { cls: "notes" }, items.map(function (w) { return h("li", { text: w }); })));
    return kids.length ? kids : null;
  }

  // Each section with the data it draws: a section whose data did not change is left as it is.
  var SECTIONS = [
    { id: "notes", title: "Notes", draw: notes, uses: ["error", "warnings", "omitted"] },
    { id: "plan", title: "Plan", draw: plan, uses: ["plan", "findings", "sources_total", "live", "activity"] },
    { id: "report", title: "Report", draw: report, uses: ["report", "claims", "sources", "version"] },
    { id: "checks", title: "Fact-check", draw: checks, uses: ["verdicts", "claims"] },
    { id: "sources", title: "Sources", draw: sourcesSection, uses: ["sources", "sources_total"] },
    { id: "cost", title: "Cost by phase", draw: cost, uses: ["usage"] },
    { id: "versions", title: "Versions", draw: versions, uses: ["versions", "version"] },
    { id: "followups", title: "Follow-up questions", draw: followUps, uses: ["follow_ups", "sources"] }
  ];

  // ------------------------------------------------------------------ the frame and the form

  function askForm() {
    var input = h("input", { id: "ask-query", type: "text", name: "query", autocomplete: "off", maxlength: 2000 });
    // A button and Enter, not the form's submit: a frame sandboxed without allow-forms (a
    // strict MCP Apps host) never fires submit.
    var send = h("button", { type: "button", text: "Ask" });
    var state = h("p", { cls: "meta", role: "status", "aria-live": "polite" });
    var form = h("form", { cls: "ask", "aria-label": "Ask a follow-up question" }, [
      h("label", { "for": "ask-query", cls: "sr-only", text: "Your follow-up question" }), input, send]);
    function ask(event) {
      event.preventDefault();
      var query = input.value.trim();
      if (!query || !view.handler) return;
      send.disabled = true;
      state.textContent = "Asking…";
      act({ action: "ask", query: query }).then(function () {
        input.value = "";
        state.textContent = "Asked. The answer appears here when it is ready.";
      }, function (error) {
        state.textContent = "Could not ask: " + (error && error.message ? error.message : String(error));
      }).then(function () { send.disabled = false; });
    }
    send.addEventListener("click", ask);
    input.addEventListener("keydown", function (event) { if (event.key === "Enter") ask(event); });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    return h("div", { hidden: true }, [form, state]);
  }
  function ensureFrame() {
    if (frame) return;
    var main = doc.getElementById("main"), dialog = doc.getElementById("cite");
    frame = { top: doc.getElementById("top"), main: main, dialog: dialog,
      announce: doc.getElementById("announce"), sections: {} };
    main.replaceChildren();
    SECTIONS.forEach(function (s) {
      var body = h("div"), section = h("section", { id: s.id, "aria-labelledby": s.id + "-h", hidden: true }, [
        h("h2", { id: s.id + "-h", text: s.title }), body]);
      frame.sections[s.id] = { section: section, body: body };
      main.appendChild(section);
    });
    frame.ask = askForm();
    frame.sections.followups.section.appendChild(frame.ask);
    dialog.addEventListener("close", function () {
      var back = byKey(dialog.getAttribute("data-for") || "");
      dialog.removeAttribute("data-for");
      if (back) back.focus();
    });
    dialog.addEventListener("click", function (event) { if (event.target === dialog) dialog.close(); });
  }
  function announce(d) {
    var parts = d.plan.parts, done = parts.filter(function (p) { return p.progress >= 1; }).length;
    var text = "Research " + words(d.status) + ", phase " + d.phase + " (" + d.phase_index + " of " + d.phases + ")" +
      (parts.length ? ", " + done + " of " + parts.length + " parts done" : "") + ".";
    if (text !== view.said) { view.said = text; frame.announce.textContent = text; }
  }
  function canAsk(d) { return !!view.handler && view.options.ask !== false && d.status === "completed"; }

  function render(data) {
    if (!data || typeof data !== "object") return;
    ensureFrame();
    var active = doc.activeElement, focusKey = active && active.getAttribute && active.getAttribute("data-key");
    var open = {};
    Array.prototype.forEach.call(doc.querySelectorAll("details[data-key]"), function (el) {
      if (el.open) open[el.getAttribute("data-key")] = true;
    });
    view.data = data;
    doc.title = data.question + " · research";
    frame.top.replaceChildren.apply(frame.top, header(data));
    SECTIONS.forEach(function (s) {
      var slice = JSON.stringify(s.uses.map(function (k) { return data[k]; }));
      if (view.drawn[s.id] === slice) return;
      view.drawn[s.id] = slice;
      var kids = s.draw(data), box = frame.sections[s.id];
      box.filled = !!kids;
      box.body.replaceChildren.apply(box.body, kids ? [].concat(kids) : []);
    });
    var ask = canAsk(data);
    frame.ask.hidden = !ask;
    SECTIONS.forEach(function (s) {
      var box = frame.sections[s.id];
      box.section.hidden = !box.filled && !(s.id === "followups" && ask);
    });
    Array.prototype.forEach.call(doc.querySelectorAll("details[data-key]"), function (el) {
      if (open[el.getAttribute("data-key")]) el.open = true;
    });
    var shown = frame.dialog.getAttribute("data-for");
    if (frame.dialog.open && shown && view.cites[shown]) fillCitation(view.cites[shown]);
    if (focusKey && !doc.contains(active)) { var again = byKey(focusKey); if (again) again.focus(); }
    frame.main.setAttribute("aria-busy", "false");
    announce(data);
  }
  function onAction(handler, options) {
    view.handler = typeof handler === "function" ? handler : null;
    view.options = options || {};
    if (view.data) render(view.data);
  }

  window.FoundryView = { render: render, onAction: onAction };
  var embedded = doc.getElementById("foundry-data");
  if (embedded && embedded.textContent.trim()) {
    try { render(JSON.parse(embedded.textContent)); } catch (e) {
      doc.getElementById("main").replaceChildren(h("p", { cls: "error", text: "This page's data could not be shown." }));
    }
  }
})();
