// The report's viewer: a virtual item table that filters, searches and sorts every row, and an
// item's story opened on demand. Every word it shows was written by Python (report/page.py and
// data.py); this script only arranges it. Text from models is set with textContent, never
// parsed as HTML.
//
// The data arrives in chunks (the format is docs' "report data format", version 1): the page
// carries the first rows inline, so they show before anything else loads; the other rows
// chunks and the stories chunks come through `window.workbenchData(chunk)`, either passed
// inline (a single-file report) or from `data/rows-NNNNN.js` / `data/stories-NNNNN.js` loaded
// as script elements with a src (a report folder opened from disk, where Chromium forbids
// fetch(), or the same URLs served by `workbench view`). One code path for the three.
//
// Rows are kept by column, one typed array per coded or numeric field over the whole run (a
// million rows are a few tens of MB, never a million objects), and the table draws only the
// rows in sight.
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("data").textContent);
  const isRun = data.kind === "run";
  const TOTAL = data.rows;
  const ROWS_PER_CHUNK = data.rows_per_chunk;
  // The first row of each stories chunk: chunks are cut by their stories' bytes, so a row's
  // chunk is found by search, not by division.
  const STORY_STARTS = data.story_starts || [];
  const ROW_CHUNKS = Math.ceil(TOTAL / ROWS_PER_CHUNK);
  const IN_FLIGHT = 3; // rows files requested at once: parallel downloads, run in order
  const OVERSCAN = 8; // rows drawn beyond the visible ones, above and below
  const KEPT_STORIES = 16; // stories chunks kept once read (up to 1,000 rows' stories each)
  const MAX_HEIGHT = 8000000; // px; Chromium lays out no box taller than ~33 M px
  const dicts = data.dicts || {};
  const columns = data.columns; // [field, label] in table order
  const noun = isRun ? "item(s)" : "flip(s)";

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

  function natural(a, b) { // the order a person expects: item-2 before item-10
    return a.localeCompare(b, undefined, { numeric: true });
  }

  // A text whose plain order is (nearly) natural's: lower case, and each run of digits written
  // as a character for its length, then its digits without leading zeros.
  function naturalKey(v) {
    return v.toLowerCase().replace(/\d+/g, (d) => {
      const digits = d.replace(/^0+(?=\d)/, "");
      return String.fromCharCode(1 + Math.min(digits.length, 30)) + digits;
    });
  }

  // ------------------------------------------------------------ the rows, by column
  // A field is CODED when the page has its dictionary (codes index dicts[field]), NUMERIC when
  // its first values are numbers or null (null kept as NaN), else TEXT (kept per chunk).
  const kinds = {};
  const cols = {}; // coded: Uint32Array, numeric: Float64Array, text: array of chunk arrays
  for (const [field, values] of Object.entries(data.first)) {
    if (!Array.isArray(values)) continue;
    if (dicts[field]) {
      kinds[field] = "coded";
      const n = dicts[field].length;
      cols[field] = new (n <= 256 ? Uint8Array : n <= 65536 ? Uint16Array : Uint32Array)(TOTAL);
    } else if (values.every((v) => v === null || typeof v === "number")) {
      kinds[field] = "numeric";
      cols[field] = new Float64Array(TOTAL);
    } else {
      kinds[field] = "text";
      cols[field] = new Array(ROW_CHUNKS);
    }
  }
  const chunkLoaded = new Uint8Array(ROW_CHUNKS);
  let loaded = 0; // rows [0, loaded) are here: chunks run in order, so this is a prefix

  function ingestRows(chunk) {
    const k = chunk.index;
    if (chunkLoaded[k]) return;
    for (const field of Object.keys(kinds)) {
      const values = chunk[field];
      if (!values) continue;
      if (kinds[field] === "text") cols[field][k] = values;
      else if (kinds[field] === "coded") cols[field].set(values, chunk.start);
      else {
        const out = cols[field];
        for (let i = 0; i < values.length; i++) {
          out[chunk.start + i] = values[i] === null ? NaN : values[i];
        }
      }
    }
    chunkLoaded[k] = 1;
    let j = 0;
    while (j < ROW_CHUNKS && chunkLoaded[j]) j++;
    loaded = Math.min(TOTAL, j * ROWS_PER_CHUNK);
  }

  function raw(field, i) {
    const kind = kinds[field];
    if (kind === "text") {
      const part = cols[field][Math.floor(i / ROWS_PER_CHUNK)];
      return part ? part[i % ROWS_PER_CHUNK] : "";
    }
    return cols[field] ? cols[field][i] : undefined;
  }

  function text(field, i) { // what the row shows in this field
    const kind = kinds[field];
    if (kind === "coded") {
      const v = dicts[field][cols[field][i]];
      return v === null || v === undefined ? "" : String(v);
    }
    if (kind === "numeric") {
      const v = cols[field][i];
      return Number.isNaN(v) ? "" : String(v);
    }
    const v = raw(field, i);
    return v === null || v === undefined ? "" : String(v);
  }

  function keyOf(i) {
    return `${text("item", i)}|${text("repeat", i)}|${text("config", i)}`;
  }

  // A row's address: its INDEX, opened as soon as its chunk is here, and its key, which says
  // whether that INDEX is still the row meant (a resumed run's report, written again, has
  // rows the link's page did not).
  function rowHash(i, key) { return `#row=${i}&item=${encodeURIComponent(key)}`; }

  // ------------------------------------------------------------ loading chunks
  const loadedLine = () => document.getElementById("loaded");

  function failed(path) {
    const line = loadedLine();
    if (!line) return;
    line.classList.add("error");
    line.textContent = `could not load ${path}: the table covers the ${loaded} of ${TOTAL} ` +
      "rows loaded before it (reload the page to try again)";
  }

  let nextChunk = 1;
  let pending = 0;
  let stopped = false;

  function rowsPath(k) { return `data/rows-${String(k).padStart(5, "0")}.js`; }
  function storiesPath(k) { return `data/stories-${String(k).padStart(5, "0")}.js`; }

  // The stories chunk holding row i: the last whose first row is at or before it.
  function storyChunkOf(i) {
    let lo = 0, hi = STORY_STARTS.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (STORY_STARTS[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  // Rows files run in the order they were added (`ordered`); a stories file runs as soon as
  // it is here, never behind rows files still loading (each says which chunk it is).
  function addScript(path, onerror, ordered = true) {
    const script = document.createElement("script");
    script.src = path;
    script.async = !ordered;
    script.onerror = () => { script.remove(); onerror(); };
    script.onload = () => script.remove();
    document.head.append(script);
    return script;
  }

  function loadMoreRows() {
    while (!stopped && pending < IN_FLIGHT && nextChunk < ROW_CHUNKS) {
      const k = nextChunk++;
      if (chunkLoaded[k]) continue;
      pending++;
      addScript(rowsPath(k), () => { stopped = true; failed(rowsPath(k)); });
    }
  }

  const stories = new Map(); // stories chunk index -> chunk
  const waiting = new Map(); // stories chunk index -> [resolve, reject] callbacks

  function storyChunk(k) {
    if (stories.has(k)) return Promise.resolve(stories.get(k));
    return new Promise((resolve, reject) => {
      const first = !waiting.has(k);
      if (first) waiting.set(k, []);
      waiting.get(k).push([resolve, reject]);
      if (!first || data.inline) {
        if (data.inline) reject(new Error(`the page holds no story for rows from ${STORY_STARTS[k]}`));
        return;
      }
      addScript(storiesPath(k), () => {
        for (const [, no] of waiting.get(k) || []) no(new Error(`could not load ${storiesPath(k)}`));
        waiting.delete(k);
      }, false);
    });
  }

  let redraws = 0; // one redraw per frame, however many chunks ran in it
  window.workbenchData = (chunk) => {
    if (chunk.kind === "stories") {
      // A folder's stories are read again if need be: the page keeps the last few it read.
      if (!data.inline && stories.size >= KEPT_STORIES) stories.delete(stories.keys().next().value);
      stories.set(chunk.index, chunk);
      for (const [yes] of waiting.get(chunk.index) || []) yes(chunk);
      waiting.delete(chunk.index);
      return;
    }
    if (chunk.kind !== "rows") return;
    const before = loaded;
    ingestRows(chunk);
    if (pending > 0 && chunk.index > 0 && !data.inline) pending--;
    if (loaded !== before && started) {
      if (!redraws) {
        redraws = requestAnimationFrame(() => { redraws = 0; rowsArrived(); });
      }
    }
    if (!data.inline) loadMoreRows();
  };

  // ------------------------------------------------------------ filters, search, sort
  const state = { sort: null, descending: false, search: "", chosen: {} };
  let view = null; // null: every loaded row in index order; else a Uint32Array of row indices
  let viewCovers = 0; // how many rows the view was computed over

  function filterField(name) { return name === "tag" ? "tags" : name; }

  // The choices of a filter: a coded field's dictionary (every value, loaded or not), the
  // single tags for the tag filter, the distinct values loaded so far for a numeric one.
  function choicesOf(name) {
    if ((name === "tag" || name === "tags") && data.tag_values) return [...data.tag_values];
    const field = filterField(name);
    if (kinds[field] === "coded") return [...new Set(dicts[field].map((v) => (v == null ? "" : String(v))))];
    const seen = new Set();
    for (let i = 0; i < loaded; i++) seen.add(text(field, i));
    return [...seen];
  }

  function fillChoices(select, name) {
    const keep = select.value || "*";
    const choices = choicesOf(name).sort(natural);
    select.replaceChildren(el("option", { value: "*" }, `${name}: all`),
      ...choices.map((v) => el("option", { value: v }, v === "" ? "(none)" : v)));
    select.value = choices.includes(keep) ? keep : "*";
  }

  function buildFilters() {
    const box = document.getElementById("filters");
    if (!box) return;
    const search = el("input", {
      type: "search", id: "search",
      placeholder: isRun ? "search items, models, tags…" : "search items, categories…",
      "aria-label": "search",
    });
    let typing = 0; // a million rows are searched once typing pauses, not on every key
    search.addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { state.search = search.value.toLowerCase(); refresh(); }, 150);
    });
    box.append(search);
    for (const name of data.filters || []) {
      const select = el("select", { "data-filter": name, "aria-label": name });
      fillChoices(select, name);
      select.addEventListener("change", () => { state.chosen[name] = select.value; refresh(); });
      box.append(el("label", {}, select));
    }
  }

  function refillNumericChoices() { // once every row is here, a numeric filter knows them all
    for (const select of document.querySelectorAll("select[data-filter]")) {
      const name = select.dataset.filter;
      if (kinds[filterField(name)] !== "coded" && !(name === "tag" && data.tag_values)) {
        fillChoices(select, name);
      }
    }
  }

  // One test per active filter, each a lookup in a typed array: a million rows in tens of ms.
  function tests() {
    const out = [];
    for (const [name, value] of Object.entries(state.chosen)) {
      if (value === "*") continue;
      const field = filterField(name);
      if (field === "tags" && data.tag_values && kinds.tags === "coded") {
        const tag = data.tag_values.indexOf(value); // the dictionary lists each entry's tags
        const ok = Uint8Array.from(data.tag_sets, (set) => (set.includes(tag) ? 1 : 0));
        const codes = cols.tags;
        out.push((i) => ok[codes[i]] === 1);
      } else if (kinds[field] === "coded") {
        const ok = Uint8Array.from(dicts[field], (v) => ((v == null ? "" : String(v)) === value ? 1 : 0));
        const codes = cols[field];
        out.push((i) => ok[codes[i]] === 1);
      } else if (kinds[field] === "numeric") {
        const want = value === "" ? NaN : Number(value);
        const values = cols[field];
        out.push(Number.isNaN(want) ? (i) => Number.isNaN(values[i]) : (i) => values[i] === want);
      } else {
        out.push((i) => text(field, i) === value);
      }
    }
    if (state.search) {
      const q = state.search;
      const parts = columns.map(([field]) => {
        if (kinds[field] === "coded") {
          const ok = Uint8Array.from(dicts[field], (v) => (String(v ?? "").toLowerCase().includes(q) ? 1 : 0));
          const codes = cols[field];
          return ok.some((x) => x) ? (i) => ok[codes[i]] === 1 : null;
        }
        if (kinds[field] === "numeric") return (i) => text(field, i).includes(q);
        return (i) => String(raw(field, i) ?? "").toLowerCase().includes(q);
      }).filter(Boolean);
      out.push((i) => parts.some((p) => p(i)));
    }
    return out;
  }

  // A rank per row for each sorted column, so that sorting a million rows sorts numbers:
  // a coded field ranks its dictionary once, a numeric field ranks its distinct values, a text
  // field (the item id) its distinct values in natural order (already so in index order, as
  // a run's rows are written, the ranks are the row numbers).
  const ranks = {}; // field -> {covers, rank: Uint32Array, top}

  function sortField(field) {
    return kinds[`${field}_ms`] === "numeric" ? `${field}_ms` : field;
  }

  function rankOf(field) {
    const cached = ranks[field];
    if (cached && cached.covers === loaded) return cached;
    const n = loaded;
    const rank = new Uint32Array(n);
    let top = 0;
    if (kinds[field] === "coded") {
      const order = dicts[field].map((v, code) => [String(v ?? ""), code]).sort((a, b) => natural(a[0], b[0]));
      const byCode = new Uint32Array(dicts[field].length);
      order.forEach(([v, code], j) => { byCode[code] = j > 0 && v === order[j - 1][0] ? byCode[order[j - 1][1]] : j; });
      const codes = cols[field];
      for (let i = 0; i < n; i++) rank[i] = byCode[codes[i]];
      top = order.length;
    } else if (kinds[field] === "numeric") {
      const values = cols[field].subarray(0, n).map((v) => (Number.isNaN(v) ? -Infinity : v));
      const sorted = Float64Array.from(values).sort();
      let m = 0;
      for (let j = 0; j < n; j++) if (j === 0 || sorted[j] !== sorted[m - 1]) sorted[m++] = sorted[j];
      for (let i = 0; i < n; i++) {
        let lo = 0, hi = m - 1;
        const v = values[i];
        while (lo < hi) { const mid = (lo + hi) >> 1; if (sorted[mid] < v) lo = mid + 1; else hi = mid; }
        rank[i] = lo;
      }
      top = m;
    } else {
      // Natural order without a collator per comparison (a million localeCompare calls take
      // seconds): each value's key spells every digit run as its length then its digits.
      let previous = null;
      let inOrder = true;
      for (let i = 0; i < n && inOrder; i++) {
        const v = naturalKey(text(field, i));
        if (previous !== null && v < previous) inOrder = false;
        previous = v;
      }
      if (inOrder) { // the common case: ids written in the order a person reads them
        previous = null;
        for (let i = 0; i < n; i++) {
          const v = text(field, i);
          if (previous !== null && v !== previous) top++;
          rank[i] = top;
          previous = v;
        }
        top++;
      } else {
        const seen = new Map();
        for (let i = 0; i < n; i++) seen.set(text(field, i), 0);
        const distinct = [...seen.keys()].map((v) => [naturalKey(v), v])
          .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        distinct.forEach(([, v], j) => seen.set(v, j));
        for (let i = 0; i < n; i++) rank[i] = seen.get(text(field, i));
        top = distinct.length;
      }
    }
    ranks[field] = { covers: n, rank, top };
    return ranks[field];
  }

  function busy() {
    return state.search !== "" || state.sort !== null ||
      Object.values(state.chosen).some((v) => v !== "*");
  }

  function compute() {
    viewCovers = loaded;
    if (!busy()) { view = null; return; }
    const checks = tests();
    let shown = new Uint32Array(loaded);
    let m = 0;
    const tried = checks.length;
    for (let i = 0; i < loaded; i++) {
      let c = 0;
      while (c < tried && checks[c](i)) c++;
      if (c === tried) shown[m++] = i;
    }
    shown = shown.subarray(0, m);
    if (state.sort) {
      // Sorted as numbers: rank × rows + index (a stable order within a rank) in a Float64Array,
      // whose own sort is numeric and fast; exact while rank × rows stays below 2^53.
      const { rank, top } = rankOf(sortField(state.sort));
      const keys = new Float64Array(m);
      const width = loaded;
      for (let j = 0; j < m; j++) {
        const i = shown[j];
        keys[j] = (state.descending ? top - rank[i] : rank[i]) * width + i;
      }
      keys.sort();
      for (let j = 0; j < m; j++) shown[j] = keys[j] % width;
    }
    view = shown;
  }

  function shownCount() { return view === null ? loaded : view.length; }
  function rowAt(p) { return view === null ? p : view[p]; }

  function countLine() {
    const count = document.getElementById("count");
    if (!count) return;
    const partial = loaded < TOTAL || viewCovers < TOTAL;
    count.textContent = view === null
      ? `${loaded} of ${TOTAL} ${noun} shown`
      : `${view.length} of ${TOTAL} ${noun} shown` +
        (partial ? ` (of the ${viewCovers} rows loaded so far: counted again when every row is here)` : "");
  }

  function loadedText() {
    const line = loadedLine();
    if (!line || line.classList.contains("error")) return;
    line.textContent = `loaded ${loaded} of ${TOTAL} rows`;
    line.dataset.complete = String(loaded >= TOTAL);
  }

  function refresh() {
    if (!table) return;
    compute();
    countLine();
    drawHead();
    scroller.scrollTop = 0;
    drawNow();
  }

  function rowsArrived() {
    loadedText();
    if (view === null) {
      countLine();
      drawNow();
      if (loaded >= TOTAL) refillNumericChoices();
    } else if (loaded >= TOTAL) { // the result covered part of the rows: counted again over all
      refillNumericChoices();
      compute();
      countLine();
      drawNow();
    }
    tryHash();
  }

  // ------------------------------------------------------------ the virtual table
  const table = document.getElementById("items");
  const scroller = table ? table.parentElement : null;
  let rowHeight = 30;
  const head = el("thead");
  const topSpace = el("tr", { class: "space", "aria-hidden": "true" });
  const body = el("tbody");
  const bottomSpace = el("tr", { class: "space", "aria-hidden": "true" });
  let frame = 0;
  let started = false;

  function setupTable() {
    scroller.classList.add("viewport");
    table.classList.add("virtual", data.kind); // "run" or "compare": the run's column widths
    table.replaceChildren(
      el("colgroup", {}, columns.map(([field]) => el("col", { "data-column": field }))),
      head, body, el("tfoot", {}, bottomSpace));
    topSpace.append(el("td", { colspan: String(columns.length) }));
    bottomSpace.append(el("td", { colspan: String(columns.length) }));
    scroller.addEventListener("scroll", () => {
      if (!frame) frame = requestAnimationFrame(() => { frame = 0; drawNow(); });
    }, { passive: true });
    body.addEventListener("click", (e) => {
      const a = e.target.closest("a");
      if (a) return;
      const tr = e.target.closest("tr[data-index]");
      if (tr) open(Number(tr.dataset.index));
    });
    body.addEventListener("keydown", (e) => {
      const tr = e.target.closest("tr[data-index]");
      if (!tr) return;
      if (e.key === "Enter") { e.preventDefault(); open(Number(tr.dataset.index)); }
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const p = Number(tr.dataset.position) + (e.key === "ArrowDown" ? 1 : -1);
        if (p >= 0 && p < shownCount()) focusPosition(p);
      }
    });
    window.addEventListener("resize", () => drawNow());
  }

  function drawHead() {
    const row = el("tr", {}, columns.map(([field, label]) => {
      const sorted = state.sort === field ? (state.descending ? "descending" : "ascending") : "none";
      return el("th", { "aria-sort": sorted, "data-column": field, scope: "col", title: label },
        el("button", { type: "button", onclick: () => sortBy(field) }, label));
    }));
    head.replaceChildren(row, topSpace);
  }

  // Which rows are in sight: with the full height (rows × row height) the first one is
  // scrollTop / row height; past MAX_HEIGHT the scroll bar's position is scaled to the rows.
  function window_() {
    const m = shownCount();
    const viewH = Math.max(scroller.clientHeight || 0, 200);
    const visible = Math.ceil(viewH / rowHeight) + 1;
    const full = m * rowHeight;
    const height = Math.min(full, MAX_HEIGHT);
    const top = scroller.scrollTop;
    let first;
    let offset;
    if (full <= MAX_HEIGHT) {
      first = Math.max(0, Math.floor(top / rowHeight) - OVERSCAN);
      offset = first * rowHeight;
    } else {
      const room = Math.max(1, height - viewH);
      first = Math.min(m - visible, Math.round((Math.min(top, room) / room) * (m - visible)));
      first = Math.max(0, first);
      offset = Math.min(top, height - visible * rowHeight);
    }
    const last = Math.min(m, first + visible + 2 * OVERSCAN);
    return { first, last, offset: Math.max(0, offset), height };
  }

  function drawRow(tr, p) {
    const i = rowAt(p);
    tr.dataset.index = String(i);
    tr.dataset.position = String(p);
    tr.dataset.key = keyOf(i);
    tr.className = `grade-${isRun ? text("grade", i) : text("change", i)}`;
    const cells = tr.cells;
    columns.forEach(([field], c) => {
      const td = cells[c];
      const value = text(field, i);
      if (!isRun && (field === "A" || field === "B")) {
        const side = field === "A" ? "a" : "b";
        const target = raw(`${side}_index`, i);
        if (Number.isNaN(target) || target === undefined) td.textContent = value;
        else td.replaceChildren(el("a", { href: `${data.links[side]}${rowHash(target, keyOf(i))}` }, value));
      } else {
        td.textContent = value;
      }
      td.title = value.length > 24 ? value : "";
    });
  }

  function newRow() {
    return el("tr", { tabindex: "0" }, columns.map(([field]) => el("td", { "data-column": field })));
  }

  function drawNow() {
    if (!table) return;
    const { first, last, offset, height } = window_();
    const count = Math.max(0, last - first);
    while (body.rows.length > count) body.lastElementChild.remove();
    while (body.rows.length < count) body.append(newRow());
    for (let j = 0; j < count; j++) drawRow(body.rows[j], first + j);
    topSpace.firstElementChild.style.height = `${offset}px`;
    bottomSpace.firstElementChild.style.height = `${Math.max(0, height - offset - count * rowHeight)}px`;
    topSpace.hidden = offset === 0;
    if (count && !measured) {
      const h = body.rows[0].getBoundingClientRect().height;
      if (h > 0) {
        measured = true;
        if (Math.abs(h - rowHeight) > 0.5) { rowHeight = h; drawNow(); }
      }
    }
  }
  let measured = false;

  function focusPosition(p) {
    const viewH = scroller.clientHeight - head.rows[0].getBoundingClientRect().height;
    const m = shownCount();
    if (m * rowHeight <= MAX_HEIGHT) {
      const y = p * rowHeight;
      if (y < scroller.scrollTop) scroller.scrollTop = y;
      else if (y + rowHeight > scroller.scrollTop + viewH) scroller.scrollTop = y + rowHeight - viewH;
    } else {
      const visible = Math.ceil(Math.max(scroller.clientHeight, 200) / rowHeight) + 1;
      const room = Math.max(1, MAX_HEIGHT - Math.max(scroller.clientHeight, 200));
      scroller.scrollTop = (Math.min(p, m - visible) / Math.max(1, m - visible)) * room;
    }
    drawNow();
    const tr = body.querySelector(`tr[data-position="${p}"]`);
    if (tr) tr.focus({ preventScroll: true });
  }

  function sortBy(field) {
    state.descending = state.sort === field ? !state.descending : false;
    state.sort = field;
    refresh();
  }

  // ------------------------------------------------------------ an item's story
  function smallTable(headings, rows) {
    if (!rows.length) return el("p", { class: "empty" }, "none");
    return el("table", {},
      el("thead", {}, el("tr", {}, headings.map(([, label]) => el("th", {}, label)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, headings.map(([key]) => el("td", {}, r[key]))))));
  }

  function block(title, body) {
    return [el("h3", {}, title), body ? el("pre", {}, body) : el("p", { class: "empty" }, "empty")];
  }

  function request(sent, texts) {
    if (!sent) return el("p", { class: "empty" }, "nothing was sent (skipped or answered from the cache)");
    const how = sent.masked
      ? "masked before it left the machine (personal data, if any, replaced by placeholders)"
      : "sent as written (a provider on this machine, or masking turned off)";
    const parts = [el("p", { class: "meta" }, how)];
    // A system prompt is written once per stories chunk and named by its number.
    const system = typeof sent.system === "number" ? texts[sent.system] : sent.system;
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

  function chain(turn, texts) {
    const rows = turn.attempts.map((a) => el("tr", { class: `outcome-${a.outcome}` },
      el("td", {}, a.position), el("td", {}, el("code", {}, a.key)), el("td", {}, a.outcome),
      el("td", {}, a.status || ""), el("td", {}, a.latency), el("td", {}, a.start),
      el("td", {}, a.error_code), el("td", {}, a.why), el("td", {}, a.then),
      el("td", {}, el("details", {}, el("summary", {}, "request"), request(a.request, texts)))));
    const headings = ["#", "key", "outcome", "status", "latency", "started", "error code", "why", "then", ""];
    const title = `turn ${turn.turn} · ${turn.at} · ${turn.chosen ? `answered by ${turn.chosen}` : "nobody answered"}` +
      ` · fallback depth ${turn.fallback_depth} of ${turn.candidates} candidate(s)` +
      (turn.error_code ? ` · ${turn.error_code}` : "");
    return [el("h3", {}, title), el("table", { class: "chain" },
      el("thead", {}, el("tr", {}, headings.map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
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
      reply.calls.length ? smallTable(CALL_COLUMNS, reply.calls) : "");
  }

  function showStory(i, story, texts) {
    const answered = story.turns.flatMap((t) => t.attempts.map((a) => ({ ...a, turn: t.turn })))
      .filter((a) => a.outcome === "ok" && a.request);
    const g = story.grade;
    const storyBody = document.getElementById("story-body");
    storyBody.replaceChildren(...[
      el("h2", { id: "story-title" }, `${text("item", i)} · repeat ${text("repeat", i)} · ${text("config", i)}`),
      el("p", { class: "meta" }, [`grade ${g.result}`, g.score && `score ${g.score}`,
        text("model", i) && `answered by ${text("model", i)}`, text("latency", i),
        text("cached", i) === "yes" && "cached"].filter(Boolean).join(" · ")),
      story.error ? el("p", { class: "error" }, story.error) : "",
      el("h3", {}, "Grade"),
      el("p", { class: `verdict-${g.result}` }, g.result, g.reason ? ` — ${g.reason}` : ""),
      g.checks.length ? el("ul", {}, g.checks.map(([k, v]) => el("li", {}, `${k}: ${v}`))) : "",
      el("h2", {}, "Chain"),
      story.turns.length ? story.turns.flatMap((t) => chain(t, texts))
        : el("p", { class: "empty" }, "no route logged (a replayed answer)"),
      el("h3", {}, "Request as it left the machine",
        answered.length ? ` (turn ${answered[0].turn}, to ${answered[0].key})` : ""),
      request(answered.length ? answered[0].request : null, texts),
      block("Raw reply (the final answer, as graded)", story.raw),
      block("Cleaned text", story.cleaned),
      el("h3", {}, `Tool calls, every turn${story.protocol ? ` (first turn: ${story.protocol})` : ""}`),
      smallTable(CALL_COLUMNS, story.tool_calls),
      el("h3", {}, "Tool steps"),
      smallTable([["tool", "tool"], ["arguments", "arguments"], ["result", "result"], ["at", "at"],
        ["took", "took"]], story.tool_steps),
      el("h3", {}, "Verdicts"),
      smallTable([["model", "model"], ["capability", "capability"], ["verdict", "verdict"],
        ["family", "family"], ["recorded", "recorded"], ["evidence", "evidence"], ["via", "via"],
        ["at", "at"]], story.verdicts),
    ].flat());
    storyBody.scrollTop = 0;
  }

  let opening = 0; // the latest open() wins when two stories load at once

  function open(i) {
    if (!(i >= 0 && i < loaded)) return;
    if (!isRun) { // a flip's row: B's story (its A cell links to A's)
      location.href = `${data.links.b}${rowHash(raw("b_index", i), keyOf(i))}`;
      return;
    }
    const ticket = ++opening;
    const dialog = document.getElementById("story");
    const storyBody = document.getElementById("story-body");
    const k = storyChunkOf(i);
    history.replaceState(null, "", rowHash(i, keyOf(i)));
    if (!stories.has(k)) {
      storyBody.replaceChildren(
        el("h2", { id: "story-title" }, `${text("item", i)} · repeat ${text("repeat", i)} · ${text("config", i)}`),
        el("p", { class: "meta", id: "story-loading" }, "reading the story…"));
      if (!dialog.open) dialog.showModal();
    }
    storyChunk(k).then((chunk) => {
      if (ticket !== opening) return;
      const story = chunk.stories[i - chunk.start];
      if (!story) return;
      showStory(i, story, chunk.texts || []);
      if (!dialog.open) dialog.showModal();
    }, (err) => {
      if (ticket !== opening) return;
      storyBody.replaceChildren(
        el("h2", { id: "story-title" }, `${text("item", i)} · repeat ${text("repeat", i)} · ${text("config", i)}`),
        el("p", { class: "error" }, `${err.message}: the story cannot be shown (reload the page to try again)`));
      if (!dialog.open) dialog.showModal();
    });
  }

  // #row=<index>&item=<key> opens the row as soon as its chunk is here, when it is still the
  // key's; otherwise (the report was written again with other rows), and for #item=<key>
  // alone, the key's row once every row is here, since a key can be anywhere.
  let hashDone = false;
  function tryHash() {
    if (hashDone || !isRun) return;
    const byRow = /^#row=(\d+)(?:&item=(.*))?$/.exec(location.hash);
    const byKey = /^#item=(.*)$/.exec(location.hash);
    if (!byRow && !byKey) { hashDone = true; return; }
    const written = byRow ? byRow[2] : byKey[1];
    let key = null;
    try { key = written === undefined ? null : decodeURIComponent(written); } catch {
      hashDone = true; // a mangled address (a cut "%" escape) opens nothing, and breaks nothing
      return;
    }
    if (byRow) {
      const i = Number(byRow[1]);
      if (i < loaded && (key === null || keyOf(i) === key)) { hashDone = true; open(i); return; }
      if (key === null) { if (i >= TOTAL) hashDone = true; return; }
    }
    if (loaded < TOTAL) return;
    hashDone = true;
    for (let i = 0; i < loaded; i++) if (keyOf(i) === key) { open(i); return; }
  }

  // ------------------------------------------------------------ tabs and start
  for (const tab of document.querySelectorAll("[data-tab]")) {
    tab.addEventListener("click", () => {
      for (const other of document.querySelectorAll("[data-tab]")) {
        const on = other === tab;
        other.setAttribute("aria-selected", String(on));
        document.getElementById(`tab-${other.dataset.tab}`).hidden = !on;
      }
      drawNow(); // the table had no height while its tab was hidden
    });
  }
  const dialog = document.getElementById("story");
  if (dialog) {
    dialog.addEventListener("close", () => {
      opening++; // a story still being read when its dialog was closed is not shown after all
      history.replaceState(null, "", location.pathname + location.search);
    });
  }

  window.workbenchData(data.first);
  for (const chunk of data.row_chunks || []) window.workbenchData(chunk);
  for (const chunk of data.story_chunks || []) window.workbenchData(chunk);
  const count = document.getElementById("count");
  if (count && !document.getElementById("loaded")) {
    count.after(el("p", { class: "count loaded", id: "loaded", role: "status" }));
  }
  if (table) {
    setupTable();
    buildFilters();
    drawHead();
    countLine();
    loadedText();
    drawNow();
  }
  started = true;
  tryHash();
  if (!data.inline) loadMoreRows();
  else if (loaded < TOTAL) failed("the page's inline rows");
})();
