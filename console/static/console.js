// fleetd console: live updates over Server-Sent Events. Served as a file
// (the CSP allows no inline script). Everything from the server is written
// with textContent, never as HTML. The pages work without this script.
"use strict";
(function () {
  var body = document.body;
  var live = body.dataset.live;
  var last = body.dataset.last || "0";
  if (!live || !window.EventSource) { return; }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null && text !== "") { e.textContent = String(text); }
    return e;
  }
  function when(iso) {
    var d = new Date(iso);
    return isNaN(d) ? "" : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  var sevs = ["critical", "high", "medium", "low", "info", "meta"];
  function sev(s) {
    return el("span", "sev sev-" + (sevs.indexOf(s) >= 0 ? s : "unknown"), s);
  }
  function safeId(s) { return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(s || ""); }

  function eventItem(ev) {
    var li = el("li", "ev fresh ev-" + String(ev.kind).replace(/[^a-z_]/g, ""));
    li.dataset.id = ev.id;
    var t = el("time", "", when(ev.time));
    t.dateTime = ev.time;
    li.appendChild(t);
    li.appendChild(el("span", "kind", ev.kind));
    if (ev.specialist) { li.appendChild(el("span", "who", ev.specialist)); }
    if (ev.severity) { li.appendChild(sev(ev.severity)); }
    if (ev.surface) { li.appendChild(el("span", "surface", ev.surface)); }
    if (ev.state) { li.appendChild(el("span", "state", ev.state)); }
    if (ev.outcome) { li.appendChild(el("span", "outcome", ev.outcome)); }
    li.appendChild(el("span", "text", ev.text));
    if (safeId(ev.run_id)) {
      var a = el("a", "run", ev.run_id);
      a.href = "/runs/" + encodeURIComponent(ev.run_id);
      li.appendChild(a);
    }
    if (ev.cluster && /^[A-Za-z0-9._-]+$/.test(ev.cluster)) {
      var c = el("a", "cluster", "cluster");
      c.href = "/clusters/" + encodeURIComponent(ev.cluster);
      li.appendChild(c);
    }
    return li;
  }

  function stream(query, onEvent, onState) {
    var src = new EventSource("/api/events?" + query + "&since=" + encodeURIComponent(last));
    src.onmessage = function (m) {
      var ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (m.lastEventId) { last = m.lastEventId; }
      onEvent(ev, src);
    };
    src.onopen = function () { if (onState) { onState("live"); } };
    src.onerror = function () { if (onState) { onState("reconnecting…"); } };
    return src;
  }

  var feed = document.getElementById("feed");
  if (feed && (live === "feed")) {
    var kinds = feed.dataset.kinds ? "kinds=" + encodeURIComponent(feed.dataset.kinds) : "all=1";
    var state = document.getElementById("feed-state");
    stream(kinds, function (ev) {
      if (ev.kind === "turn") { return; }
      var empty = feed.querySelector(".empty");
      if (empty) { empty.remove(); }
      feed.insertBefore(eventItem(ev), feed.firstChild);
      var max = feed.classList.contains("short") ? 20 : 300;
      while (feed.children.length > max) { feed.removeChild(feed.lastChild); }
    }, function (s) { if (state) { state.textContent = s; } });
  }

  if (live === "runs") {
    stream("kinds=run_started,run_finished", function () {
      var n = document.getElementById("runs-changed");
      if (n) { n.hidden = false; }
    });
  }

  if (live === "fleet") {
    var pending = false;
    stream("kinds=run_started,run_finished,control", function () {
      if (pending) { return; }
      pending = true;
      setTimeout(function () {
        pending = false;
        fetch("/api/fleet", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (f) {
          var d = document.getElementById("dial"); if (d) { d.textContent = f.dial; }
          var p = document.getElementById("paused"); if (p) { p.textContent = f.paused ? "paused" : "running"; }
          var r = document.getElementById("running"); if (r) { r.textContent = f.running.length ? f.running.join(", ") : "nothing"; }
        }).catch(function () {});
      }, 300);
    });
  }

  var run = body.dataset.run;
  if (live === "run" && safeId(run)) {
    var timer = null;
    var refresh = function (src) {
      fetch("/api/runs/" + encodeURIComponent(run), { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (d) {
        var tb = document.getElementById("timeline");
        if (!tb || !d.timeline) { return; }
        while (tb.firstChild) { tb.removeChild(tb.firstChild); }
        d.timeline.forEach(function (row) {
          var tr = el("tr", row.kind === "tool_disabled" ? "disabled" : "verdict-" + String(row.verdict).replace(/[^a-z]/g, "") + (row.findings ? " finding" : ""));
          tr.appendChild(el("td", "", row.index));
          tr.appendChild(el("td", "", row.time ? when(row.time) : ""));
          tr.appendChild(el("td", "", row.tool));
          tr.appendChild(el("td", "", row.kind === "tool_disabled" ? "disabled" : row.verdict + (row.findings ? " ★" : "")));
          tr.appendChild(el("td", "", row.latency_ms + "ms"));
          var args = el("td"); args.appendChild(el("code", "", row.args)); tr.appendChild(args);
          tr.appendChild(el("td", "", [row.detail, row.reason].filter(Boolean).join(" ")));
          tb.appendChild(tr);
        });
        var s = d.summary || {};
        var set = function (id, v) { var e = document.getElementById(id); if (e) { e.textContent = v; } };
        set("run-turns", s.turns);
        set("run-findings", s.findings);
        set("run-duration", (s.duration_ms / 1000).toFixed(1) + "s");
        if (d.footer) {
          set("run-outcome", d.footer.outcome + " (reload for the summary)");
          if (src) { src.close(); }
        } else {
          set("run-outcome", "running");
        }
      }).catch(function () {});
    };
    var es = stream("run=" + encodeURIComponent(run), function (ev, src) {
      clearTimeout(timer);
      timer = setTimeout(function () { refresh(src); }, ev.kind === "run_finished" ? 0 : 250);
    });
    refresh(null);
  }
})();
