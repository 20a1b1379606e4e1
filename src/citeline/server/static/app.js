// citeline web page. No build step, no dependencies. Every piece of document text is set with
// textContent (never parsed as HTML). Server offsets are Unicode code points; JavaScript strings
// are UTF-16, so offsets are converted before slicing (see cpToUtf16).
"use strict";

const KEY_STORAGE = "citeline.key";
const $ = (id) => document.getElementById(id);
const state = { key: sessionStorage.getItem(KEY_STORAGE), me: null, citations: new Map(), traceId: null,
  docsOffset: 0, pressed: null, opener: null, asking: false };

// ---- helpers ------------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

// UTF-16 index of each code-point offset in `offsets` (ascending or not), in one pass over `text`.
function cpToUtf16(text, offsets) {
  const wanted = [...new Set(offsets)].sort((a, b) => a - b);
  const out = new Map();
  let cp = 0;
  let i = 0;
  for (const target of wanted) {
    while (cp < target && i < text.length) {
      const code = text.codePointAt(i);
      i += code > 0xffff ? 2 : 1;
      cp += 1;
    }
    out.set(target, i);
  }
  return offsets.map((o) => out.get(o));
}
window.cpToUtf16 = cpToUtf16;

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (state.key) h.Authorization = "Bearer " + state.key;
  return h;
}

async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = headers(opts.headers);
  const response = await fetch(path, opts);
  if (response.status === 401) {
    forgetKey("The key was not accepted: " + (await errorText(response)));
    throw new Error("not signed in");
  }
  if (!response.ok) throw new Error(await errorText(response));
  return response;
}

async function errorText(response) {
  try {
    const body = await response.json();
    return (body.error && body.error.message) || response.statusText;
  } catch (e) {
    return response.status + " " + response.statusText;
  }
}

function clear(node) { node.replaceChildren(); }

// ---- key and views --------------------------------------------------------------------------------

function forgetKey(message) {
  state.key = null;
  state.me = null;
  sessionStorage.removeItem(KEY_STORAGE);
  $("who").hidden = true;
  show("key");
  $("key-error").textContent = message || "";
}

async function useKey(key) {
  state.key = key;
  const response = await fetch("/v1/me", { headers: headers() });
  if (!response.ok) {
    forgetKey("The key was not accepted: " + (await errorText(response)));
    return false;
  }
  state.me = await response.json();
  sessionStorage.setItem(KEY_STORAGE, key);
  $("who-label").textContent = "Signed in as " + (state.me.user || "anonymous") + " (" + state.me.role + ")";
  $("who").hidden = false;
  return true;
}

function show(view) {
  $("key-view").hidden = view !== "key";
  $("ask-view").hidden = view !== "ask";
  $("docs-view").hidden = view !== "docs";
  $("nav-ask").toggleAttribute("aria-current", view === "ask");
  $("nav-docs").toggleAttribute("aria-current", view === "docs");
  if (view === "ask") $("nav-ask").setAttribute("aria-current", "page");
  if (view === "docs") { $("nav-docs").setAttribute("aria-current", "page"); loadDocuments(true); }
}

function route() {
  if (!state.key) return show("key");
  show(location.pathname === "/documents" ? "docs" : "ask");
}

// ---- asking ---------------------------------------------------------------------------------------

// `quote`: what supports the sentence the button follows ({quote_start, quote_end}); without it, the
// citation's own quote (the Sources list)
function citeButton(n, citation, quote) {
  const label = citation ? "Source " + n + ": " + citation.source : "Source " + n;
  const button = el("button", { type: "button", class: "cite", "data-n": String(n), "aria-label": label,
    "aria-pressed": "false", text: "[" + n + "]" });
  button.addEventListener("click", () => openCitation(n, quote, button));
  return button;
}

function sentenceNode(text, numbers, supported, quotes) {
  const span = el("span", { class: "sentence" + (supported ? "" : " unverified"), text: text });
  const frag = el("span", { class: "sentence-wrap" }, span);
  const own = new Map((quotes || []).map((q) => [q.n, q]));
  for (const n of numbers) frag.append(" ", citeButton(n, state.citations.get(n), own.get(n)));
  if (!supported) frag.append(" (unverified)");
  frag.append(" ");
  return frag;
}

function resetAnswer() {
  state.citations = new Map();
  state.traceId = null;
  clear($("answer"));
  clear($("sources"));
  clear($("removed"));
  clear($("trace-body"));
  $("refusal").hidden = true;
  $("sources-block").hidden = true;
  $("removed-block").hidden = true;
  $("trace-panel").hidden = true;
  $("trace-panel").open = false;
  $("answer-section").hidden = false;
  $("ask-error").textContent = "";
  closeSource();
}

function addRemoved(text, reason) {
  $("removed-block").hidden = false;
  const li = el("li", {}, el("span", { text: text }), el("span", { class: "why", text: reason || "not supported" }));
  $("removed").append(li);
}

function onSentence(data) {
  for (const c of data.sources || []) if (!state.citations.has(c.n)) state.citations.set(c.n, c);
  $("answer").append(sentenceNode(data.text, data.citations, data.supported, data.quotes));
}

function renderFinal(answer) {
  state.traceId = answer.trace_id;
  clear($("answer"));
  clear($("sources"));
  clear($("removed"));
  $("removed-block").hidden = true;
  state.citations = new Map(answer.citations.map((c) => [c.n, c]));
  if (answer.refused) {
    $("refusal").hidden = false;
    $("refusal-text").textContent = answer.answer;
    $("refusal-reason").textContent = answer.refusal_reason ? "Why: " + answer.refusal_reason : "";
  } else {
    for (const s of answer.sentences) {
      if (!s.removed && s.citations.length) $("answer").append(sentenceNode(s.text, s.citations, s.supported, s.quotes));
    }
  }
  for (const s of answer.sentences) if (s.removed) addRemoved(s.text, "support score " + s.support_score);
  for (const c of answer.citations) {
    const where = [c.source, c.heading, c.page ? "page " + c.page : ""].filter(Boolean).join(" — ");
    $("sources").append(el("li", {}, citeButton(c.n, c), " ", el("span", { class: "where", text: where })));
  }
  $("sources-block").hidden = answer.citations.length === 0;
  $("trace-panel").hidden = !answer.trace_id;
}

function parseEvents(buffer, handle) {
  let cut;
  while ((cut = buffer.indexOf("\n\n")) >= 0) {
    const block = buffer.slice(0, cut);
    buffer = buffer.slice(cut + 2);
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    if (data.length) handle(event, JSON.parse(data.join("\n")));
  }
  return buffer;
}

async function ask(question) {
  if (state.asking) return;
  state.asking = true;
  $("ask-button").disabled = true;
  resetAnswer();
  $("ask-status").textContent = "Searching…";
  try {
    const response = await api("/v1/ask", { method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question: question, stream: true }) });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), (event, data) => {
        if (event === "progress") $("ask-status").textContent = data.message;
        else if (event === "sentence") onSentence(data);
        else if (event === "removed") addRemoved(data.text, data.reason);
        else if (event === "answer") renderFinal(data);
        else if (event === "error") $("ask-error").textContent = data.error.message;
      });
    }
    $("ask-status").textContent = $("refusal").hidden ? "Answered. Select a citation to open its source." : "No answer found.";
  } catch (e) {
    if (state.key) $("ask-error").textContent = String(e.message || e);
    $("ask-status").textContent = "";
  } finally {
    state.asking = false;
    $("ask-button").disabled = false;
  }
}

// ---- the source panel -------------------------------------------------------------------------

function closeSource(returnFocus) {
  const opener = state.opener;
  state.opener = null;
  $("source-panel").hidden = true;
  document.querySelector(".layout").classList.remove("with-source");
  for (const url of state.blobUrls || []) URL.revokeObjectURL(url);
  state.blobUrls = [];
  if (state.pressed) state.pressed.forEach((b) => b.setAttribute("aria-pressed", "false"));
  // back to the citation that opened the panel, not to <body>
  if (returnFocus === true && opener && opener.isConnected) opener.focus();
}

// Text with the cited span marked, and the supporting sentence marked inside it.
function markedText(text, base, c) {
  const rel = (o) => Math.min(Math.max(o - base, 0), [...text].length);
  const [a, q0, q1, b] = cpToUtf16(text, [rel(c.start), rel(c.quote_start), rel(c.quote_end), rel(c.end)]);
  const cited = el("mark", { class: "cited", "data-testid": "cited" });
  cited.append(text.slice(a, q0), el("mark", { class: "support", "data-testid": "support", text: text.slice(q0, q1) }),
    text.slice(q1, b));
  return [text.slice(0, a), cited, text.slice(b)];
}

// `quote`: the supporting span of the sentence whose citation was chosen (each sentence has its own)
async function openCitation(n, quote, opener) {
  const cited = state.citations.get(n);
  if (!cited) return;
  const c = Object.assign({}, cited, quote ? { quote_start: quote.quote_start, quote_end: quote.quote_end } : {});
  closeSource();
  state.opener = opener || null;
  state.pressed = opener ? [opener] : [];
  state.pressed.forEach((b) => b.setAttribute("aria-pressed", "true"));
  const panel = $("source-panel");
  panel.hidden = false;
  document.querySelector(".layout").classList.add("with-source");
  $("source-title").textContent = "Source [" + n + "]: " + (c.title || c.source);
  $("source-doc").textContent = c.source;
  $("source-heading").textContent = c.heading || "—";
  $("source-page").textContent = c.page ? (c.page_end && c.page_end !== c.page ? c.page + "–" + c.page_end : String(c.page)) : "—";
  // the label printed on the page (a PDF's page labels: "ix", "9"), when it is not the page's number
  if (c.page && c.page_label && c.page_label !== String(c.page)) $("source-page").textContent += " (printed page " + c.page_label + ")";
  $("source-quote").textContent = c.quote.slice(...cpToUtf16(c.quote, [c.quote_start - c.start, c.quote_end - c.start]));
  clear($("pdf-pages"));
  clear($("source-text"));
  $("source-text").append("Loading…");
  $("source-title").focus();
  try {
    if (c.page) await showPdf(c);
    else await showText(c, Math.max(0, c.start - 4000), c.end + 4000);
  } catch (e) {
    clear($("source-text"));
    $("source-text").append("Could not load the source: " + (e.message || e));
  }
}

async function showText(c, lo, hi) {
  const doc = await (await api("/v1/documents/" + encodeURIComponent(c.document_id) + "/text?start=0&end=0")).json();
  const end = Math.min(hi, doc.length);
  const body = await (await api("/v1/documents/" + encodeURIComponent(c.document_id) + "/text?start=" + lo + "&end=" + end)).json();
  const box = $("source-text");
  clear(box);
  if (lo > 0) box.append("… ");
  box.append(...markedText(body.text, lo, c));
  if (end < doc.length) box.append(" …");
  const mark = box.querySelector("mark.support") || box.querySelector("mark.cited");
  if (mark) mark.scrollIntoView({ block: "center" });
}

async function showPdf(c) {
  const id = encodeURIComponent(c.document_id);
  const last = Math.min(c.page_end || c.page, c.page + 2);
  let pageStart = null;
  let pageEnd = null;
  for (let p = c.page; p <= last; p++) {
    const info = await (await api("/v1/documents/" + id + "/pages/" + p + "/boxes?start=" + c.start + "&end=" + c.end)).json();
    const quote = await (await api("/v1/documents/" + id + "/pages/" + p + "/boxes?start=" + c.quote_start + "&end=" + c.quote_end)).json();
    const blob = await (await api("/v1/documents/" + id + "/pages/" + p + ".png?scale=1.5")).blob();
    const url = URL.createObjectURL(blob);
    state.blobUrls.push(url);
    const page = el("div", { class: "page", "data-page": String(p) },
      el("img", { src: url, alt: "Page " + p + " of " + c.source + ", cited text marked" }));
    const boxes = info.boxes.map((b) => [b, "box"]).concat(quote.boxes.map((b) => [b, "box support"]));
    for (const [b, cls] of boxes) {
      const box = el("div", { class: cls, "data-testid": "box" });
      box.style.left = b.x * 100 + "%";
      box.style.top = b.y * 100 + "%";
      box.style.width = b.w * 100 + "%";
      box.style.height = b.h * 100 + "%";
      page.append(box);
    }
    const label = info.positions ? "" : " (character positions unavailable: re-add the document)";
    $("pdf-pages").append(page, el("p", { class: "page-label", text: "Page " + p + label }));
    if (pageStart === null) pageStart = info.page_start;
    pageEnd = info.page_end;
  }
  await showText(c, Math.min(pageStart, c.start), Math.max(pageEnd, c.end));
  const first = $("pdf-pages").querySelector(".box");
  if (first) first.scrollIntoView({ block: "center" });
}

// ---- wiring -------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", async () => {
  $("key-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("key-error").textContent = "";
    if (await useKey($("key-input").value.trim())) { $("key-input").value = ""; route(); }
  });
  $("sign-out").addEventListener("click", () => forgetKey(""));
  $("ask-form").addEventListener("submit", (ev) => { ev.preventDefault(); ask($("question").value); });
  $("close-source").addEventListener("click", () => closeSource(true));
  $("trace-panel").addEventListener("toggle", () => { if ($("trace-panel").open) loadTrace(); });
  $("upload-form").addEventListener("submit", (ev) => { ev.preventDefault(); upload(ev.target); });
  $("docs-more").addEventListener("click", () => loadDocuments(false));
  for (const link of document.querySelectorAll("nav a")) {
    link.addEventListener("click", (ev) => {
      ev.preventDefault();
      history.pushState({}, "", link.getAttribute("href"));
      route();
    });
  }
  window.addEventListener("popstate", route);
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !$("source-panel").hidden) closeSource(true); });
  if (state.key && !(await useKey(state.key))) return;
  route();
});
