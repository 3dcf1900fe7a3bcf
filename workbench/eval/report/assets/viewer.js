// The report's viewer: sorts and filters the item table and opens an item's story.
// Every word it shows was written by Python (report/page.py and data.py); this script only arranges it.
// Text from models is set with textContent, never parsed as HTML.
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("data").textContent);

  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === "") continue;
      node.append(kid instanceof Node ? kid : String(kid));
    }
    return node;
  }

  // ------------------------------------------------------------ the item table
  const RUN_COLUMNS = [
    ["item", "item"], ["repeat", "repeat"], ["config", "config"], ["model", "answered by"],
    ["grade", "grade"], ["unanswered", "unanswered"], ["category", "category"],
    ["tags", "tags"], ["error", "error code"],
    ["depth", "fallback depth"], ["turns", "turns"], ["cached", "cached"],
    ["latency", "latency"],
  ];
  const COMPARE_COLUMNS = [
    ["item", "item"], ["repeat", "repeat"], ["config", "config"], ["category", "category"],
    ["A", "A"], ["B", "B"], ["change", "change"],
  ];
  const FILTERS = data.kind === "run"
    ? ["config", "model", "grade", "unanswered", "category", "tag", "error", "depth", "cached"]
    : ["config", "category", "change"];
  const columns = data.kind === "run" ? RUN_COLUMNS : COMPARE_COLUMNS;
  const sortValue = { latency: (r) => r.latency_ms };
  const state = { sort: null, descending: false, search: "", chosen: {} };

  function valuesOf(row, name) {
    if (name === "tag") return row.tags ? row.tags.split(", ") : [""];
    return [String(row[name])];
  }

  function buildFilters() {
    const box = document.getElementById("filters");
    if (!box) return;
    const search = el("input", {
      type: "search", id: "search",
      placeholder: data.kind === "run" ? "search items, models, tags…" : "search items, categories…",
      "aria-label": "search",
    });
    let typing = 0;  // a long table is drawn once typing pauses, not on every key
    search.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { state.search = search.value.toLowerCase(); draw(); }, 120);
    });
    box.append(search);
    for (const name of FILTERS) {
      const seen = new Set();
      for (const row of data.items) for (const v of valuesOf(row, name)) seen.add(v);
      const choices = [...seen].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
      const select = el("select", { "data-filter": name, "aria-label": name },
        el("option", { value: "*" }, `${name}: all`),
        choices.map((v) => el("option", { value: v }, v === "" ? "(none)" : v)));
      select.addEventListener("change", () => { state.chosen[name] = select.value; draw(); });
      box.append(el("label", {}, select));
    }
  }

  function shown(row) {
    for (const [name, value] of Object.entries(state.chosen)) {
      if (value !== "*" && !valuesOf(row, name).includes(value)) return false;
    }
    if (!state.search) return true;
    return columns.some(([key]) => String(row[key]).toLowerCase().includes(state.search));
  }

  function compare(a, b) {
    const key = state.sort;
    const get = sortValue[key] || ((r) => r[key]);
    const x = get(a), y = get(b);
    const order = typeof x === "number" && typeof y === "number"
      ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
    return state.descending ? -order : order;
  }

  function draw() {
    const table = document.getElementById("items");
    if (!table) return;
    const head = el("tr", {}, columns.map(([key, label]) => {
      const sorted = state.sort === key ? (state.descending ? "descending" : "ascending") : "none";
      return el("th", { "aria-sort": sorted, "data-column": key, scope: "col" },
        el("button", { type: "button", onclick: () => sortBy(key) }, label));
    }));
    let rows = data.items.filter(shown);
    if (state.sort) rows = [...rows].sort(compare);
    const body = rows.map((row) => el("tr", {
      "data-key": row.key, class: `grade-${row.grade || row.change || ""}`, tabindex: "0",
      onclick: () => open(row.key),
      onkeydown: (e) => { if (e.key === "Enter") open(row.key); },
    }, columns.map(([key]) => el("td", { "data-column": key }, cell(row, key)))));
    table.replaceChildren(el("thead", {}, head), el("tbody", {}, body));
    document.getElementById("count").textContent =
      `${rows.length} of ${data.items.length} ${data.kind === "run" ? "item(s)" : "flip(s)"} shown`;
  }

  // On the comparison page a flip's A and B grades open that run's story of the item.
  function cell(row, key) {
    if (data.kind !== "compare" || (key !== "A" && key !== "B")) return row[key];
    const run = key === "A" ? data.run_a : data.run_b;
    return el("a", {
      href: `${encodeURIComponent(run)}.html#item=${encodeURIComponent(row.key)}`,
      onclick: (e) => e.stopPropagation(),
    }, row[key]);
  }

  function sortBy(key) {
    state.descending = state.sort === key ? !state.descending : false;
    state.sort = key;
    draw();
  }

  // ------------------------------------------------------------ an item's story
  function table(head, rows) {
    if (!rows.length) return el("p", { class: "empty" }, "none");
    return el("table", {},
      el("thead", {}, el("tr", {}, head.map(([, label]) => el("th", {}, label)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, head.map(([key]) => el("td", {}, r[key]))))));
  }

  function block(title, text) {
    return [el("h3", {}, title), text ? el("pre", {}, text) : el("p", { class: "empty" }, "empty")];
  }

  function request(sent) {
    if (!sent) return el("p", { class: "empty" }, "nothing was sent (skipped or answered from the cache)");
    const how = sent.masked
      ? "masked before it left the machine (personal data, if any, replaced by placeholders)"
      : "sent as written (a provider on this machine, or masking turned off)";
    const parts = [el("p", { class: "meta" }, how)];
    // A system prompt is written once in the page and named by its number.
    const system = typeof sent.system === "number" ? data.texts[sent.system] : sent.system;
    if (system) parts.push(el("div", { class: "msg" }, el("b", {}, "system"), el("pre", {}, system)));
    for (const m of sent.messages || []) {
      const content = m.content == null ? ""
        : typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 1);
      const calls = (m.tool_calls || []).map((c) => {
        const f = c.function || c;
        return `${f.name}(${typeof f.arguments === "string" ? f.arguments : JSON.stringify(f.arguments)})`;
      });
      const said = [content, ...calls.map((c) => `→ ${c}`)].filter(Boolean).join("\n");
      parts.push(el("div", { class: "msg" }, el("b", {}, m.role || "?"), el("pre", {}, said)));
    }
    if ((sent.tools || []).length) {
      parts.push(el("p", {}, `tools (${sent.tools_sent}): ${sent.tools.join(", ")}`));
    }
    return el("div", { class: "request" }, parts);
  }

  function chain(turn) {
    const rows = turn.attempts.map((a) => el("tr", { class: `outcome-${a.outcome}` },
      el("td", {}, a.position), el("td", {}, el("code", {}, a.key)), el("td", {}, a.outcome),
      el("td", {}, a.status || ""), el("td", {}, a.latency), el("td", {}, a.start),
      el("td", {}, a.error_code), el("td", {}, a.why), el("td", {}, a.then),
      el("td", {}, el("details", {}, el("summary", {}, "request"), request(a.request)))));
    const head = ["#", "key", "outcome", "status", "latency", "started", "error code", "why", "then", ""];
    const title = `turn ${turn.turn} · ${turn.at} · ${turn.chosen ? `answered by ${turn.chosen}` : "nobody answered"}` +
      ` · fallback depth ${turn.fallback_depth} of ${turn.candidates} candidate(s)` +
      (turn.error_code ? ` · ${turn.error_code}` : "");
    return [el("h3", {}, title), el("table", { class: "chain" },
      el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
      turn.reply ? answer(turn.reply) : ""];
  }

  const CALL_COLUMNS = [["name", "name"], ["arguments", "arguments"], ["protocol", "protocol"],
    ["family", "family"], ["invalid", "invalid"]];

  function answer(reply) {
    const about = [reply.protocol && `protocol ${reply.protocol}`, reply.finish && `finish ${reply.finish}`,
      reply.tokens && `tokens ${reply.tokens}`, reply.cached && "from the cache"].filter(Boolean).join(" · ");
    return el("div", { class: "answer" },
      el("p", { class: "meta" }, `the answer${about ? ` · ${about}` : ""}`),
      reply.text ? el("pre", {}, reply.text) : el("p", { class: "empty" }, "no text"),
      reply.calls.length ? table(CALL_COLUMNS, reply.calls) : "");
  }

  function open(key) {
    if (data.kind !== "run") {  // a flip's row: B's story (its A cell links to A's)
      location.href = `${encodeURIComponent(data.run_b)}.html#item=${encodeURIComponent(key)}`;
      return;
    }
    const story = data.stories[key];
    const row = data.items.find((r) => r.key === key);
    if (!story || !row) return;
    const answered = story.turns.flatMap((t) => t.attempts.map((a) => ({ ...a, turn: t.turn })))
      .filter((a) => a.outcome === "ok" && a.request);
    const g = story.grade;
    const body = document.getElementById("story-body");
    body.replaceChildren(...[
      el("h2", { id: "story-title" }, `${row.item} · repeat ${row.repeat} · ${row.config}`),
      el("p", { class: "meta" }, [`grade ${g.result}`, g.score && `score ${g.score}`,
        row.model && `answered by ${row.model}`, row.latency, row.cached === "yes" && "cached"]
        .filter(Boolean).join(" · ")),
      story.error ? el("p", { class: "error" }, story.error) : "",
      el("h3", {}, "Grade"),
      el("p", { class: `verdict-${g.result}` }, g.result, g.reason ? ` — ${g.reason}` : ""),
      g.checks.length ? el("ul", {}, g.checks.map(([k, v]) => el("li", {}, `${k}: ${v}`))) : "",
      el("h2", {}, "Chain"),
      story.turns.length ? story.turns.flatMap(chain) : el("p", { class: "empty" }, "no route logged (a replayed answer)"),
      el("h3", {}, "Request as it left the machine",
        answered.length ? ` (turn ${answered[0].turn}, to ${answered[0].key})` : ""),
      request(answered.length ? answered[0].request : null),
      block("Raw reply (the final answer, as graded)", story.raw),
      block("Cleaned text", story.cleaned),
      el("h3", {}, `Tool calls, every turn${story.protocol ? ` (first turn: ${story.protocol})` : ""}`),
      table(CALL_COLUMNS, story.tool_calls),
      el("h3", {}, "Tool steps"),
      table([["tool", "tool"], ["arguments", "arguments"], ["result", "result"], ["at", "at"],
        ["took", "took"]], story.tool_steps),
      el("h3", {}, "Verdicts"),
      table([["model", "model"], ["capability", "capability"], ["verdict", "verdict"],
        ["family", "family"], ["recorded", "recorded"], ["evidence", "evidence"], ["via", "via"],
        ["at", "at"]], story.verdicts),
    ].flat());
    const dialog = document.getElementById("story");
    if (!dialog.open) dialog.showModal();
    body.scrollTop = 0;
    history.replaceState(null, "", `#item=${encodeURIComponent(key)}`);
  }

  // ------------------------------------------------------------ tabs and links
  for (const tab of document.querySelectorAll("[data-tab]")) {
    tab.addEventListener("click", () => {
      for (const other of document.querySelectorAll("[data-tab]")) {
        const on = other === tab;
        other.setAttribute("aria-selected", String(on));
        document.getElementById(`tab-${other.dataset.tab}`).hidden = !on;
      }
    });
  }
  const dialog = document.getElementById("story");
  if (dialog) dialog.addEventListener("close", () => history.replaceState(null, "", location.pathname));

  buildFilters();
  draw();
  const wanted = /^#item=(.*)$/.exec(location.hash);
  if (wanted && data.kind === "run") open(decodeURIComponent(wanted[1]));
})();
