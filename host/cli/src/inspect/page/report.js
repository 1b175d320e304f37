// prompt-host inspect --html: draws the report embedded as JSON in #report. Every string in
// it came from plugins, MCP servers or logs: it reaches the page as text nodes and attribute
// values only, never as markup.
(function () {
  "use strict";
  var app = document.getElementById("app");

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "class") node.className = attrs[key];
      else node.setAttribute(key, String(attrs[key]));
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    });
    return node;
  }
  function text(value) { return value === null || value === undefined ? "-" : String(value); }
  // A colour per plugin (and per category), told apart: each new name turns the hue by the
  // golden angle, so neighbours never look alike however many there are.
  var hues = {};
  var named = 0;
  function hue(name) {
    if (!Object.prototype.hasOwnProperty.call(hues, name)) hues[name] = (named++ * 137.508 + 200) % 360;
    return hues[name];
  }
  function colour(name, light) { return "hsl(" + hue(name) + " 65% " + (light ? "90%" : "50%") + ")"; }
  function paint(node, plugin, prop) { node.style.setProperty(prop, colour(plugin, prop === "background-color")); }
  function section(title) { app.appendChild(el("h2", {}, [title])); }
  function meter(value, of, plugin) {
    var bar = el("div", { class: "meter" + (of && value > of ? " over" : "") }, [el("div")]);
    var share = of ? Math.min(100, (value * 100) / of) : 0;
    bar.firstChild.style.width = share + "%";
    paint(bar.firstChild, plugin, "background");
    return bar;
  }
  function table(headers, rows, attrsOf) {
    var head = el("tr", {}, headers.map(function (h) {
      return el("th", { class: h.num ? "num" : (h.bar ? "bar" : "") }, [h.name]);
    }));
    var body = rows.map(function (cells, row) {
      return el("tr", attrsOf ? attrsOf(row) : {}, cells.map(function (cell, i) {
        var h = headers[i];
        var td = el("td", { class: h.num ? "num" : (h.bar ? "bar" : "") }, [typeof cell === "object" && cell !== null ? cell : text(cell)]);
        if (typeof cell !== "object" || cell === null) td.title = text(cell);
        return td;
      }));
    });
    return el("table", {}, [el("thead", {}, [head]), el("tbody", {}, body)]);
  }

  // Draw `report` (again: the live page of `dev --ui` draws each new one in place).
  function draw(report) {
  while (app.firstChild) app.removeChild(app.firstChild);
  document.title = "prompt-host inspect: " + report.scope;
  var tokens = report.tokens;
  app.appendChild(el("h1", {}, ["Scope ", el("span", { class: "name", id: "scope" }, [report.scope])]));
  var summary = report.sections.filter(function (s) { return s.start !== null; }).length +
    " sections, " + report.prompt_bytes + " bytes";
  if (tokens) summary += ", " + tokens.prompt + " tokens (" + tokens.tokenizer + ")";
  app.appendChild(el("p", { class: "muted" }, [summary]));
  if (report.overrun) app.appendChild(el("div", { class: "banner", id: "overrun" }, ["Over budget: " + report.overrun]));
  if (report.error) app.appendChild(el("div", { class: "banner", id: "error" }, [report.error]));

  // Live: what the last edit changed.
  if (report.changes) {
    var ch = report.changes;
    var list = el("ul");
    [["added", ch.added], ["removed", ch.removed], ["changed", ch.changed]].forEach(function (kind) {
      kind[1].forEach(function (name) {
        list.appendChild(el("li", { class: kind[0], "data-change": kind[0], "data-name": name }, [kind[0] + ": " + name]));
      });
    });
    var lines = [ch.cause, ch.prefix_kept ? "cache prefix kept" : "cache prefix broken at byte " + ch.reusable_bytes +
      (ch.first_changed_section ? " (section " + ch.first_changed_section + ")" : "")];
    if (ch.tokens_delta !== null && ch.tokens_delta !== undefined) lines.push((ch.tokens_delta >= 0 ? "+" : "") + ch.tokens_delta + " tokens");
    app.appendChild(el("div", { id: "changes" }, [el("strong", {}, ["Last change (" + report.generation + "): "]), lines.join(" · "),
      list.childNodes.length ? list : el("p", { class: "muted" }, ["no section added, removed or changed"])]));
  }

  // A session's timeline, when there is one, comes first: it is what was asked for.
  var first = el("div", { id: "timeline" });
  app.appendChild(first);

  // Where the tokens go, by category.
  if (tokens) {
    section("Tokens by category");
    var total = tokens.categories.reduce(function (n, c) { return n + c.tokens; }, 0);
    var whole = tokens.context_window || total || 1;
    var stack = el("div", { class: "stack", id: "categories" });
    var legend = el("div", { class: "legend" });
    tokens.categories.forEach(function (c) {
      var part = el("div", { title: c.name + ": " + c.tokens });
      part.style.width = (c.tokens * 100) / whole + "%";
      paint(part, c.name, "background");
      stack.appendChild(part);
      var share = tokens.context_window ? " (" + ((c.tokens * 100) / tokens.context_window).toFixed(1) + "%)" : "";
      var swatch = el("span", { class: "swatch" });
      paint(swatch, c.name, "background");
      legend.appendChild(el("span", { "data-category": c.name, "data-tokens": c.tokens }, [swatch, c.name + " " + c.tokens + share]));
    });
    app.appendChild(stack);
    app.appendChild(legend);
    if (tokens.context_window) {
      app.appendChild(el("p", { class: "muted" }, [total + " of a " + tokens.context_window + "-token context window"]));
    }
  }

  // The prompt, a block per section coloured by plugin.
  section("System prompt");
  var plugins = [];
  report.sections.forEach(function (s) { if (plugins.indexOf(s.plugin) < 0) plugins.push(s.plugin); });
  var legend2 = el("div", { class: "legend" });
  plugins.forEach(function (p) {
    var swatch = el("span", { class: "swatch" });
    paint(swatch, p, "background");
    legend2.appendChild(el("span", {}, [swatch, p]));
  });
  app.appendChild(legend2);
  report.sections.forEach(function (s) {
    var shadows = s.shadows.map(function (x) { return x.plugin + " in " + x.layer; }).join(", ");
    var header = el("header", {}, [
      el("span", { class: "name" }, [s.name]),
      el("span", {}, ["order " + text(s.order)]),
      el("span", {}, [s.plugin]),
      el("span", { class: "muted" }, ["layer " + s.layer]),
      el("span", { class: "muted" }, [s.bytes + " bytes"]),
      s.tokens === null ? null : el("span", {}, [s.tokens + " tokens"]),
      shadows ? el("span", { class: "muted", title: shadows }, ["shadows " + shadows]) : null,
    ]);
    var block = el("section", {
      class: "part" + (s.start === null ? " empty" : ""),
      "data-section": s.name, "data-plugin": s.plugin, "data-layer": s.layer,
      "data-bytes": s.bytes, "data-tokens": s.tokens === null ? "" : s.tokens,
    }, [header, el("pre", {}, [s.text])]);
    paint(block, s.plugin, "border-left-color");
    paint(block, s.plugin, "background-color");
    app.appendChild(block);
  });

  if (report.contexts.length) {
    section("Runtime context");
    report.contexts.forEach(function (c) {
      var block = el("section", {
        class: "part" + (c.text ? "" : " empty"),
        "data-context": c.name, "data-plugin": c.plugin, "data-tokens": c.tokens === null ? "" : c.tokens,
      }, [el("header", {}, [
        el("span", { class: "name" }, [c.name]), el("span", {}, [c.plugin]),
        el("span", { class: "muted" }, ["layer " + c.layer]),
        c.tokens === null ? null : el("span", {}, [c.tokens + " tokens"]),
      ]), el("pre", {}, [c.text])]);
      paint(block, c.plugin, "border-left-color");
      paint(block, c.plugin, "background-color");
      app.appendChild(block);
    });
  }

  // Tokens against the budgets, per plugin and per section.
  if (tokens) {
    var budget = report.budgets.max_prompt_tokens;
    section(budget ? "Tokens against max_prompt_tokens = " + budget : "Tokens per plugin (no max_prompt_tokens set)");
    var top = budget || tokens.prompt || 1;
    app.appendChild(table(
      [{ name: "Plugin" }, { name: "Layer" }, { name: "Tokens", num: true }, { name: "", bar: true }],
      report.plugins.filter(function (p) { return p.tokens; }).map(function (p) {
        return [p.name, p.layer, p.tokens, meter(p.tokens, top, p.name)];
      })));
    app.appendChild(el("h3", {}, ["Sections"]));
    app.appendChild(table(
      [{ name: "Section" }, { name: "Plugin" }, { name: "Tokens", num: true }, { name: "", bar: true }],
      report.sections.filter(function (s) { return s.tokens; }).map(function (s) {
        return [s.name, s.plugin, s.tokens, meter(s.tokens, top, s.plugin)];
      })));
  }
  if (report.cuts.length) {
    section("MCP instructions cut to their budgets");
    report.cuts.forEach(function (c) {
      app.appendChild(el("p", { class: "cut" }, [c.server + " (generation " + c.generation + "): kept " +
        c.kept_tokens + " of " + text(c.tokens) + " tokens, budget " + c.budget + " (" + c.tokenizer + ")"]));
    });
  }

  section("Tools, in request order" + (tokens && tokens.tools_as ? " (tokens as " + tokens.tools_as + " sends them)" : ""));
  app.appendChild(table(
    [{ name: "Tool" }, { name: "Provider" }, { name: "Layer" }, { name: "Tokens", num: true }, { name: "Description" }],
    report.tools.map(function (t) { return [t.name, t.provider, t.layer, t.tokens, t.description]; }),
    function (i) { return { "data-tool": report.tools[i].name, "data-provider": report.tools[i].provider }; }));
  app.appendChild(el("p", { class: "muted" }, ["Tool providers: " + (report.tool_providers.join(", ") || "(none)")]));

  section("Listeners, outermost first");
  app.appendChild(el("p", {}, [report.listeners.join(" → ") || "(none)"]));
  var changed = (report.listener_changes || []).filter(function (c) {
    return c.added.length || c.removed.length || c.rewritten.length;
  });
  if (changed.length) {
    app.appendChild(table(
      [{ name: "Listener" }, { name: "Layer" }, { name: "Added" }, { name: "Removed" }, { name: "Rewrote" }],
      changed.map(function (c) {
        return [c.plugin + (c.key ? " " + JSON.stringify(c.key) : ""), c.layer,
          c.added.join(", ") || "-", c.removed.join(", ") || "-", c.rewritten.join(", ") || "-"];
      }),
      function (i) { return { "data-listener": changed[i].plugin, "data-rewrote": changed[i].rewritten.join("\n") }; }));
  }
  app.appendChild(el("p", { class: "muted" }, ["Runtime context suppressed by: " + (report.suppressors.join(", ") || "(none)")]));

  section("Variables");
  app.appendChild(table(
    [{ name: "Variable" }, { name: "Plugin" }, { name: "Layer" }, { name: "Value" }],
    report.variables.map(function (v) { return [v.name, v.plugin, v.layer, v.value === null ? "(no value)" : v.value]; })));

  section("Plugins");
  app.appendChild(table(
    [{ name: "Plugin" }, { name: "Layer" }, { name: "Tokens", num: true }, { name: "Grants" }],
    report.plugins.map(function (p) { return [p.name, p.layer, p.tokens, p.grants]; })));
  if (report.mcp_servers.length) {
    section("MCP servers");
    app.appendChild(table(
      [{ name: "Server" }, { name: "Provider" }, { name: "Layer" }, { name: "Transport" }, { name: "Protocol" }, { name: "Instructions", num: true }],
      report.mcp_servers.map(function (s) {
        return [s.server, s.plugin, s.layer, s.transport, s.protocol, s.instructions_enabled ? s.instructions_bytes + " B" : "off"];
      })));
  }
  if (report.timings) {
    section("Plugin calls, slowest first");
    var calls = report.timings.calls.slice().sort(function (a, b) { return b.micros - a.micros; });
    app.appendChild(table(
      [{ name: "Call" }, { name: "Kind" }, { name: "Plugin" }, { name: "Layer" }, { name: "µs", num: true }],
      calls.map(function (c) { return [c.name, c.kind, c.plugin, c.layer, c.micros.toFixed(1)]; })));
  }
  // With --session: the steps of the conversation, and where each broke the cache prefix.
  if (report.timeline) {
    var tl = report.timeline;
    first.appendChild(el("h2", {}, ["Session " + tl.session + (tl.earlier_steps ? " (newest " + tl.steps.length + " steps; " + tl.earlier_steps + " earlier not shown)" : "")]));
    var rows = tl.steps.map(function (st) {
      var commits = st.commits.map(function (c) {
        return c.op + " #" + c.seq + (c.replaced !== null ? " over #" + c.replaced : "") + " (" + c.bytes + " B)";
      }).join(", ");
      var prefix = st.step === tl.steps[0].step && !st.prefix.kept && st.prefix.differs_at === null ? "-" :
        st.prefix.kept ? "kept" : "breaks at byte " + st.prefix.differs_at + " in " + st.prefix.part +
          (st.prefix.section ? ": section " + st.prefix.section + " of " + st.prefix.plugin : "");
      if (st.compaction) prefix += "; after compaction #" + st.compaction.seq + " (" + st.compaction.replaced + " nodes replaced)";
      var usage = st.usage ? (text(st.usage.input_tokens) + " in, " + text(st.usage.cached_input_tokens) + " cached, " + text(st.usage.output_tokens) + " out") : "-";
      return [st.step, st.route + (st.model ? " / " + st.model : ""), st.branch, commits || "-",
        st.snapshot_bytes === null ? "-" : st.snapshot_bytes + " B", st.breakpoints.join(", ") || "-", prefix, usage];
    });
    first.appendChild(table(
      [{ name: "Step", num: true }, { name: "Route / model" }, { name: "Projection" }, { name: "System commits" },
        { name: "Runtime context" }, { name: "Cache breakpoints" }, { name: "Cache prefix" }, { name: "Usage" }],
      rows,
      function (i) {
        var st = tl.steps[i];
        var attrs = { "data-step": st.step, "class": st.prefix.differs_at === null ? "" : "broke" };
        if (st.prefix.section) attrs["data-changed-section"] = st.prefix.section;
        if (st.prefix.plugin) attrs["data-changed-plugin"] = st.prefix.plugin;
        if (st.compaction) attrs["data-compaction"] = st.compaction.seq;
        return attrs;
      }));
  }
  document.body.setAttribute("data-ready", String(report.generation || 1));
  }

  // The live page asks its server for the next report and draws it in place.
  function poll(after) {
    fetch("/updates?after=" + after, { cache: "no-store" }).then(function (response) {
      if (response.status !== 200) return poll(after);
      return response.json().then(function (next) { draw(next); poll(next.generation); });
    }, function () { setTimeout(function () { poll(after); }, 2000); });
  }
  var initial = JSON.parse(document.getElementById("report").textContent);
  draw(initial);
  if (initial.live) poll(initial.generation);
})();
