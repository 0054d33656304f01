// A probe that tests/it/view.rs appends to a copy of the view's page: once the view is ready, it
// measures what a reader sees in the browser and writes its findings as JSON into the element
// #probe (an error thrown here is written there too), which `chromium --dump-dom` then shows. It checks, with its own rules rather than the view's:
// every booking's label is the client's full name, initials of it (with the full name in the
// title), the mark of its state alone, or nothing, and is not cut by its box; each day's count reads
// "12 sessions" or "12" and says it in full in its title; each offline label is readable (not cut)
// and its box meets no booking's box nor the outline of where one was; and how wide the document
// and the timeline are against the window. It changes nothing in the view.
(function () {
  "use strict";
  function rect(el) { var r = el.getBoundingClientRect(); return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; }
  function meets(a, b) { return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; }
  function visible(el) { var r = el.getBoundingClientRect(); return !el.closest("[hidden]") && r.width > 0 && r.height > 0; }
  // The first letter or digit of each word, in order: "The Saltwater Sirens" -> T, S, S.
  function firsts(name) {
    return String(name).split(/\s+/).map(function (w) { var m = /[\p{L}\p{N}]/u.exec(w); return m ? m[0].toUpperCase() : ""; }).filter(Boolean);
  }
  function isInitials(text, name) {
    var want = firsts(name);
    if (text.length < 2 || text.length > want.length) return false;
    // The initials are a run of the words' first letters, from the first word on.
    return text === want.slice(0, text.length).join("");
  }
  function run() {
    var out = { problems: [], labels: { name: 0, initials: 0, mark: 0, none: 0 }, counts: [], offline: [] };
    var problem = function (what) { if (out.problems.length < 40) out.problems.push(what); };
    var data = null;
    try { data = JSON.parse(document.getElementById("sf-data").textContent); } catch (e) { data = null; }
    var names = {};
    ((data && data.bookings) || []).forEach(function (b) { names[b.id] = b.client_name || b.client; });

    var bars = Array.prototype.filter.call(document.querySelectorAll("#timeline .bar"), visible);
    var ghosts = Array.prototype.filter.call(document.querySelectorAll("#timeline .ghost"), visible);
    out.bars = bars.length;
    bars.forEach(function (el) {
      var id = el.getAttribute("data-bar"), state = el.getAttribute("data-state"), name = names[id];
      var text = el.textContent, title = el.getAttribute("title") || "", label = el.getAttribute("aria-label") || "";
      var mark = state === "moved" ? "↪" : state === "unresolved" ? "✕" : "";
      if (name == null) return problem(id + ": not in the page's data");
      if (title.indexOf(name) < 0 || label.indexOf(name) < 0) problem(id + ": the title and accessible name lack " + JSON.stringify(name));
      if (el.scrollWidth > el.clientWidth) problem(id + ": " + JSON.stringify(text) + " is cut (" + el.scrollWidth + " > " + el.clientWidth + " px)");
      if (text === "") { out.labels.none++; return; }
      var rest = text;
      if (mark) {
        if (text.indexOf(mark) !== 0) return problem(id + " (" + state + "): " + JSON.stringify(text) + " does not start with " + mark);
        rest = text.slice(mark.length).replace(/^ /, "");
        if (rest === "") { out.labels.mark++; return; }
      }
      if (rest === name) out.labels.name++;
      else if (isInitials(rest, name)) out.labels.initials++;
      else problem(id + ": " + JSON.stringify(text) + " is neither " + JSON.stringify(name) + " nor its initials");
    });

    Array.prototype.filter.call(document.querySelectorAll("#timeline .daycount"), visible).forEach(function (el) {
      var text = el.textContent, title = el.getAttribute("title") || "", m = /^(\d+)( sessions?)?$/.exec(text);
      var row = el.closest("[data-room]"), room = row ? row.getAttribute("data-room") : "";
      if (text === "") return;
      if (!m) return problem("day count " + JSON.stringify(text) + " is not a count");
      if (title.indexOf(m[1] + (m[1] === "1" ? " session" : " sessions") + " in " + room + " on ") !== 0) problem("day count " + text + ": title " + JSON.stringify(title));
      if (el.scrollWidth > el.clientWidth) problem("day count " + text + " is cut");
      out.counts.push({ room: room, day: el.getAttribute("data-day"), n: +m[1] });
    });

    var boxes = bars.concat(ghosts).map(function (el) { return { el: el, r: rect(el) }; });
    Array.prototype.filter.call(document.querySelectorAll("#timeline .offlabel"), visible).forEach(function (el) {
      var r = rect(el), lane = el.parentNode.getBoundingClientRect(), text = el.textContent, title = el.getAttribute("title") || "";
      var hits = boxes.filter(function (b) { return meets(r, b.r); }).map(function (b) { return b.el.getAttribute("data-bar") || "outline of " + b.el.getAttribute("data-ghost-of"); });
      out.offline.push({ room: el.getAttribute("data-offline"), text: text, title: title, meets: hits.slice(0, 10),
        cut: el.scrollWidth > el.clientWidth, inside: r.left >= lane.left - 0.5 && r.right <= lane.right + 0.5 });
    });

    var root = document.documentElement, wrap = document.getElementById("tl-wrap");
    out.window = window.innerWidth;
    out.document_width = root.scrollWidth;
    out.timeline = { scroll: wrap.scrollWidth, client: wrap.clientWidth };
    var headline = document.getElementById("headline"), figures = document.getElementById("figures");
    out.headline = headline && visible(headline) ? headline.textContent : null;
    out.figures = figures && visible(figures) ? figures.textContent.replace(/\s+/g, " ").trim() : null;
    var pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  function guarded() {
    try { run(); } catch (e) {
      var pre = document.createElement("pre");
      pre.id = "probe";
      pre.textContent = JSON.stringify({ error: String(e && e.stack || e) });
      document.body.appendChild(pre);
    }
  }
  // After the view has drawn and its resize observer has had its turn.
  function wait() {
    if (document.documentElement.getAttribute("data-ready") !== "true") return setTimeout(wait, 20);
    setTimeout(guarded, 200);
  }
  wait();
})();
