// citeline web page, part two: the trace panel and the documents page. Loaded after app.js (its
// helpers: $, el, api, clear, state). Document text is set with textContent only.
"use strict";

// ---- the trace panel ----------------------------------------------------------------------------

// `head`: column names; a name ending in "~" is a text column that wraps (its share of the width is
// set in app.css), the others are short values kept on one line
function table(head, rows) {
  const cols = head.map((h) => (h.endsWith("~") ? { name: h.slice(0, -1), cls: "text" } : { name: h, cls: "value" }));
  const t = el("table", {},
    el("thead", {}, el("tr", {}, ...cols.map((c) => el("th", { scope: "col", class: c.cls, text: c.name })))));
  const body = el("tbody");
  for (const r of rows) body.append(el("tr", {}, ...r.map((v, i) => el("td", { class: cols[i].cls, text: String(v) }))));
  t.append(body);
  // narrow screens scroll the table, never the page
  return el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": cols.map((c) => c.name).join(", ") }, t);
}

// what the question asked for (query/slot.py): "the default of smtpd_recipient_limit (a value)"
const ATTRIBUTES = { default: "the default", maximum: "the limit", minimum: "the minimum", quantity: "the amount",
  version: "the version", which: "which one", meaning: "what it means", procedure: "how to do it", reason: "why",
  yesno: "whether it holds", other: "an answer" };
const KINDS = { value: "a value", number: "a number", unit: "a unit", version: "a version number",
  identifier: "a name or option", definition: "a definition", procedure: "steps or a command", any: "any kind" };
function askedFor(slot) {
  const subject = (slot.subject || []).length ? " of " + slot.subject.join(", ") : "";
  return (ATTRIBUTES[slot.attribute] || slot.attribute) + subject + " (answered by " + (KINDS[slot.kind] || slot.kind) + ")";
}

async function loadTrace() {
  const box = $("trace-body");
  if (!state.traceId || box.dataset.loaded === state.traceId) return;
  clear(box);
  try {
    const t = await (await api("/v1/traces/" + encodeURIComponent(state.traceId))).json();
    box.dataset.loaded = state.traceId;
    const rel = t.relevance || {};
    const hidden = "(a document you may not read)";
    // passages are numbered as the answer shows them ([1], [2]); "—" for one the answer does not cite
    const shown = (numbers) => numbers.length ? numbers.map((n) => "[" + n + "]").join(", ") : "—";
    const citedAs = new Map((t.context || []).map((h) => [h.n, h.cited_as]));
    const cites = (v) => v.answer_citations && v.answer_citations.length ? shown(v.answer_citations)
      : shown(v.citations.map((n) => citedAs.get(n)).filter((n) => n));
    box.append(el("p", { text: "Generator " + t.generator + ", verifier " + t.verifier + ". Relevance " +
      (rel.score !== undefined ? Number(rel.score).toFixed(2) : "?") + " (threshold " + t.threshold + ")" +
      (t.refusal_reason ? ". Refused: " + t.refusal_reason : ".") }));
    if (t.fallback) box.append(el("p", { class: "fallback", text: "The model's answer (" + t.fallback.from +
      ") was refused: " + t.fallback.reason + ". This answer quotes the same passages instead." }));
    const slot = t.slot || {};
    if (slot.attribute) box.append(el("p", { class: "slot", text: "Asked for: " + askedFor(slot) }));
    if (t.redacted) box.append(el("p", { class: "muted", text: "Parts of this trace come from documents you may not read; they are left out." }));
    box.append(el("h3", { text: "Time per stage (ms)" }),
      table(["stage", "ms"], Object.entries(t.timings_ms || {}).map(([k, v]) => [k, Number(v).toFixed(1)])));
    box.append(el("h3", { text: "Passages given to the generator" }),
      table(["cited as", "source~", "heading~", "span"], (t.context || []).map((h) => h.redacted
        ? [h.cited_as ? "[" + h.cited_as + "]" : "—", hidden, "", "—"]
        : [h.cited_as ? "[" + h.cited_as + "]" : "—", h.source, h.heading, h.start + ":" + h.end])));
    const fused = ((t.candidates || {}).fused || []).slice(0, 10);
    box.append(el("h3", { text: "Top candidates after fusion" }),
      table(["rank", "source~", "heading~", "score"], fused.map((h, i) => [i + 1, h.redacted ? hidden : h.source, h.heading, Number(h.score).toFixed(4)])));
    box.append(el("h3", { text: "Claim checks" }),
      table(["sentence~", "cites", "supported", "score"], (t.verification || []).map((v) => [v.redacted ? "(left out: written from " + hidden + ")" : v.text, cites(v), v.supported ? "yes" : "no", Number(v.score).toFixed(2)])));
  } catch (e) {
    box.append(el("p", { class: "error", text: "Could not load the trace: " + (e.message || e) }));
  }
}

// ---- documents ----------------------------------------------------------------------------------

function sizeText(n) { return n > 1048576 ? (n / 1048576).toFixed(1) + " MB" : Math.max(1, Math.round(n / 1024)) + " KB"; }

async function loadDocuments(reset) {
  if (reset) { state.docsOffset = 0; clear($("docs-list")); }
  try {
    const page = await (await api("/v1/documents?limit=50&offset=" + state.docsOffset)).json();
    for (const d of page.documents) {
      const li = el("li", { "data-id": d.id },
        el("span", { class: "title", text: d.title || d.source }),
        el("span", { class: "info", text: d.collection + " / " + d.source + " — " + d.format + ", " + sizeText(d.size) +
          (d.page_count ? ", " + d.page_count + " pages" : "") + " — readers: " + (d.acl.length ? d.acl.join(", ") : "everyone signed in") }));
      if (d.deletable) {
        li.append(el("button", { type: "button", class: "link", text: "Delete", "aria-label": "Delete " + d.source,
          onclick: () => deleteDocument(d) }));
      }
      $("docs-list").append(li);
    }
    state.docsOffset += page.documents.length;
    $("docs-count").textContent = page.total + " document" + (page.total === 1 ? "" : "s") + " you may read";
    $("docs-more").hidden = state.docsOffset >= page.total;
  } catch (e) {
    if (state.key) $("upload-error").textContent = String(e.message || e);
  }
}

async function deleteDocument(d) {
  if (!window.confirm("Delete " + d.source + "?")) return;
  try {
    await api("/v1/documents/" + encodeURIComponent(d.id), { method: "DELETE" });
    $("upload-status").textContent = "Deleted " + d.source + ".";
    loadDocuments(true);
  } catch (e) {
    $("upload-error").textContent = String(e.message || e);
  }
}

async function upload(form) {
  $("upload-error").textContent = "";
  const file = $("upload-file").files[0];
  if (!file) return;
  $("upload-button").disabled = true;
  $("upload-status").textContent = "Uploading " + file.name + "…";
  try {
    const response = await api("/v1/documents", { method: "POST", body: new FormData(form) });
    let body = await response.json();
    if (response.status === 202) {
      $("upload-status").textContent = "Indexing " + file.name + " in the background…";
      for (;;) {
        await new Promise((r) => setTimeout(r, 700));
        body = await (await api(body.poll || "/v1/jobs/" + body.job.id)).json();
        if (body.state === "failed") throw new Error(body.error);
        if (body.state === "done") { body = body.result; break; }
      }
    }
    $("upload-status").textContent = "Indexed " + file.name + ".";
    form.reset();
    loadDocuments(true);
  } catch (e) {
    $("upload-status").textContent = "";
    $("upload-error").textContent = String(e.message || e);
  } finally {
    $("upload-button").disabled = false;
  }
}
