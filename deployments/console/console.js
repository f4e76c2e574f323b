// raydiag console: chat with live progress, and a trace viewer. Plain browser JavaScript, no build
// step. Every piece of server text goes into the page through textContent (the el() helper), never as
// HTML: reports quote logs and runbooks, which are data.
"use strict";

const store = window.sessionStorage;
// The path prefix the service is mounted under ("" at the root; "/scripted" for an app with that
// route prefix): every API call and console route is relative to it.
const BASE = document.querySelector('meta[name="raydiag-base"]').content.replace(/\/$/, "");
const KEY = "raydiag.apiKey";
const SESSION = "raydiag.session";

// ---------------------------------------------------------------- small helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const key = store.getItem(KEY);
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function api(path, opts) {
  const res = await fetch(BASE + path, Object.assign({}, opts, { headers: headers((opts || {}).headers) }));
  let body = null;
  try { body = await res.json(); } catch (_) { body = null; }
  if (!res.ok) {
    const msg = body && body.error ? body.error.code + ": " + body.error.message : "HTTP " + res.status;
    throw new Error(msg);
  }
  return body;
}

function newSessionId() {
  const rnd = new Uint8Array(6);
  crypto.getRandomValues(rnd);
  return "web-" + Array.from(rnd, (b) => b.toString(16).padStart(2, "0")).join("");
}

function sessionId() {
  let id = store.getItem(SESSION);
  if (!id) { id = newSessionId(); store.setItem(SESSION, id); }
  return id;
}

function clock(t0) { return ((performance.now() - t0) / 1000).toFixed(1) + " s"; }

function json(value) { return el("pre", { text: JSON.stringify(value, null, 2) }); }

// ---------------------------------------------------------------- SSE over fetch (POST)

// EventSource cannot POST, so the stream is read from fetch and split into events here.
async function* sse(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "event") name = val;
        else if (field === "data") data.push(val);
      }
      if (data.length) yield { event: name, data: JSON.parse(data.join("\n")) };
    }
  }
}

// ---------------------------------------------------------------- chat view

function renderReferenceList(refs, keys, used) {
  // An analysis item cites evidence keys (a runbook chunk "doc#chunk-n", a tool call id); each
  // expands to the reference that carries the cited excerpt. References come in citation order, so
  // several chunks of one document take that document's references in turn (``used``).
  const out = [];
  used = used || new Set();
  for (const key of keys) {
    const doc = key.split("#")[0];
    const matches = refs.filter((r) => r.tool_call_id === key || r.source === key || r.source === doc);
    const ref = matches.find((r) => !used.has(r)) || matches[0];
    if (ref) used.add(ref);
    out.push(el("details", { class: "ref" },
      el("summary", { text: key }),
      ref ? el("div", {},
        el("div", {}, el("span", { class: "badge", text: ref.source_type }), ref.source,
          ref.tool_call_id ? el("span", { class: "muted" }, "  · call ", el("code", { text: ref.tool_call_id })) : null,
          // Only an http(s) page address becomes a link: a reference is built from stored data.
          /^https?:\/\//.test(ref.url || "") ? el("span", {}, "  · ", el("a", { href: ref.url, target: "_blank", rel: "noopener", text: "page" })) : null),
        el("div", { class: "muted", text: ref.scope }),
        ref.excerpt ? el("pre", { class: "excerpt", text: ref.excerpt }) : el("em", { text: "no excerpt" }))
        : el("em", { text: "no reference carries this key" })));
  }
  return out;
}

const KIND_TITLES = {
  finding: "Findings — what the tools measured",
  guidance: "Guidance — what the runbooks say to check or do (quoted)",
  hypothesis: "Hypotheses — suggested by the evidence, not shown by it",
};

function renderAnalysisItem(a, refs, used) {
  const badges = [el("span", { class: "badge kind-" + (a.kind || "finding"), text: a.kind || "finding" })];
  if (a.status !== "NORMAL") badges.push(el("span", { class: "badge warn", text: a.status }));
  if (a.added) badges.push(el("span", { class: "badge", text: "added by raydiag" }));
  return el("div", { class: "analysis " + a.status + " kind-" + (a.kind || "finding") },
    el("div", {}, badges, el("code", { text: a.id }), " ", a.text,
      a.source ? el("span", { class: "muted", text: "  — runbook " + a.source }) : null,
      a.needs ? el("div", { class: "muted", text: "would need: " + a.needs }) : null),
    renderReferenceList(refs, a.evidence_keys || [], used));
}

function renderRootCauses(causes) {
  if (!causes || !causes.length) return [el("h4", { text: "Root cause" }), el("p", { class: "muted", text: "none named: the evidence does not show one" })];
  return [el("h4", { text: "Root cause" }), el("ul", {}, causes.map((c) => el("li", {},
    el("strong", { text: c.component }), c.cause ? " — " + c.cause : "",
    el("span", { class: "muted", text: "  (" + c.category + ", " + c.confidence + " confidence" +
      (c.added_by ? ", added from the " + (c.added_by === "ranking" ? "anomaly ranking" : c.added_by) : "") + ")" }))))];
}

function renderReport(payload) {
  const r = payload.report;
  const refs = payload.references || [];
  const used = new Set();
  const kinds = ["finding", "guidance", "hypothesis"];
  return el("div", { class: "report" },
    el("div", { class: "banner success", text: "Diagnosis report — findings cite tool calls, guidance quotes runbooks" }),
    el("h4", { text: "Conclusion" }), el("p", { class: "conclusion", text: r.conclusion.text }),
    renderRootCauses(payload.root_causes),
    kinds.map((kind) => {
      const items = r.analysis.filter((a) => (a.kind || "finding") === kind);
      return items.length ? [el("h4", { text: KIND_TITLES[kind] }), items.map((a) => renderAnalysisItem(a, refs, used))] : null;
    }),
    r.action_plan.length ? [el("h4", { text: "Action plan" }), el("ol", {}, r.action_plan.map((x) => el("li", { text: x })))] : null,
    r.recommendations.length ? [el("h4", { text: "Recommendations" }), el("ul", {}, r.recommendations.map((x) => el("li", { text: x })))] : null,
    el("h4", { text: "Limitations" }), el("p", { text: r.limitations.scope }),
    r.limitations.missing_info.length ? el("ul", {}, r.limitations.missing_info.map((x) => el("li", { text: x }))) : null,
    el("h4", { text: "References" }),
    el("ul", {}, refs.map((ref) => el("li", {}, el("span", { class: "badge", text: ref.source_type }), ref.source,
      ref.tool_call_id ? el("code", { text: "  " + ref.tool_call_id }) : null))));
}

function renderFallback(payload) {
  const label = { INSUFFICIENT_EVIDENCE: "Safe fallback — not enough evidence",
    LOW_CONFIDENCE: "Safe fallback — low confidence", GUARD_FAILED: "Safe fallback — the draft failed its checks",
    TOOL_ERROR: "Safe fallback — the evidence tools failed",
    MODEL_TIMEOUT: "Safe fallback — the model ran out of time; what the tools measured" };
  return el("div", { class: "report fallback" },
    el("div", { class: "banner fallback", text: (label[payload.fallback_type] || "Safe fallback") + " (" + payload.fallback_type + ")" }),
    (payload.measured || []).length ? [el("h4", { text: "Measured by the tools (their output, not analysed)" }),
      el("ul", { class: "measured" }, payload.measured.map((x) => el("li", { text: x })))] : null,
    payload.confirmed.length ? [el("h4", { text: "Confirmed" }), el("ul", {}, payload.confirmed.map((x) => el("li", { text: x })))] : null,
    payload.gaps.length ? [el("h4", { text: "Evidence gaps" }), el("ul", {}, payload.gaps.map((x) => el("li", { text: x })))] : null,
    payload.next_steps.length ? [el("h4", { text: "Suggested next steps (runbook guidance, quoted)" }), el("ul", {}, payload.next_steps.map((x) => el("li", { text: x })))] : null,
    (payload.root_causes || []).length ? [el("h4", { text: "Anomaly ranking's suspects (measured, not confirmed)" }),
      el("ul", { class: "suspects" }, payload.root_causes.map((c) => el("li", { text: c.component + " (" + c.category + ")" })))] : null,
    payload.references.length ? [el("h4", { text: "References" }), renderReferenceList(payload.references,
      payload.references.map((r) => r.tool_call_id || r.source))] : null);
}

function renderContent(ev) {
  if (ev.content_type === "DIAGNOSIS_REPORT") return renderReport(ev.payload);
  if (ev.content_type === "SAFE_FALLBACK") return renderFallback(ev.payload);
  return el("div", { class: "report answer" }, el("p", { class: "chat-answer", text: ev.payload.text }));
}

async function ask(question) {
  const sid = sessionId();
  const t0 = performance.now();
  const progress = el("ul", { class: "progress" });
  const result = el("div", { class: "result" });
  const links = el("div", { class: "actions" });
  const turn = el("article", { class: "turn" }, el("div", { class: "question", text: question }), progress, result, links);
  document.getElementById("conversation").append(turn);
  turn.scrollIntoView({ block: "end" });
  const tools = new Map();
  let runId = null;
  let sawDone = false;
  const step = (text, cls) => { const li = el("li", { class: cls || "" }, el("span", { class: "t", text: clock(t0) }), text); progress.append(li); return li; };
  try {
    const res = await fetch(BASE + "/api/chat", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", "Accept": "text/event-stream" }),
      body: JSON.stringify({ Id: sid, Question: question }),
    });
    if (!res.ok) {
      let msg = "HTTP " + res.status;
      try { const b = await res.json(); msg = b.error.code + ": " + b.error.message; } catch (_) { /* not JSON */ }
      const retry = res.headers.get("Retry-After");
      result.append(el("div", { class: "banner failure", text: msg + (retry ? " — retry after " + retry + " s" : "") }));
      return;
    }
    for await (const { event, data } of sse(res)) {
      if (event === "metadata") {
        runId = data.run_id;
        turn.dataset.runId = runId;
        step("run " + runId + " started");
      } else if (event === "status") {
        const m = /^tool (\S+) (started|finished: (\S+))/.exec(data.detail || "");
        if (m && m[2] === "started") {
          const li = step("", "tool running");
          li.append("tool ", el("code", { text: m[1] }), " running");
          tools.set(m[1], li);
        } else if (m) {
          const li = tools.get(m[1]);
          const ok = m[3] === "success";
          if (li) { li.className = "tool " + (ok ? "done-ok" : "done-bad"); li.lastChild.textContent = " " + m[3] + " (" + clock(t0) + ")"; }
          tools.delete(m[1]);
        } else if (/^(FINDING|GUIDANCE) /.test(data.detail || "")) {
          // What the tools measured, shown while the model writes: tool output, not yet checked.
          step(data.detail, "early " + data.detail.split(" ")[0].toLowerCase());
        } else {
          step(data.code + " — " + data.detail, "stage");
        }
      } else if (event === "content") {
        result.append(renderContent(data));
        turn.dataset.contentType = data.content_type;
      } else if (event === "failure") {
        result.append(el("div", { class: "banner failure", text: "Failed: " + data.error_code + " — " + data.message }));
      } else if (event === "done") {
        sawDone = true;
        turn.dataset.outcome = data.outcome;
        step("done: " + data.outcome, data.outcome === "FAILED" ? "done-bad" : "done-ok");
      }
    }
  } catch (err) {
    result.append(el("div", { class: "banner failure", text: "Connection lost: " + err.message }));
  }
  if (!sawDone) result.append(el("div", { class: "banner failure", text: "The stream ended without done" }));
  if (runId) {
    links.append(el("a", { href: tracePath(sid, runId), "data-nav": true, class: "trace-link", text: "Open trace" }));
  }
  turn.dataset.finished = "true";
}

// ---------------------------------------------------------------- trace view

function tracePath(sid, rid) { return BASE + "/runs/" + encodeURIComponent(sid) + "/" + encodeURIComponent(rid); }

function ms(t) { return Date.parse(t.endsWith("Z") ? t : t + "Z"); }

function ganttRows(trace) {
  // Stages: from the phase's first event to its last (a stage's events are written as it goes);
  // model steps and tool calls: a bar that ends at the event's time and lasts its duration_ms.
  const tl = trace.timeline;
  if (!tl.length) return { rows: [], t0: 0, span: 1 };
  const t0 = ms(tl[0].created_at);
  const tEnd = ms(tl[tl.length - 1].created_at);
  const rows = [];
  const phases = new Map();
  for (const e of tl) {
    const t = ms(e.created_at);
    if (e.phase === "RUN" || e.phase === "TOOL") continue;
    const p = phases.get(e.phase) || { start: t, end: t };
    p.end = t;
    phases.set(e.phase, p);
  }
  for (const [phase, p] of phases) rows.push({ kind: "stage", label: phase, start: p.start, end: p.end });
  for (const e of tl) {
    const t = ms(e.created_at);
    const d = e.details || {};
    if (e.event_type === "AGENT_MODEL_STEP") {
      rows.push({ kind: "model", label: "model · " + d.agent_name + " #" + d.step_index, start: t - (d.duration_ms || 0), end: t });
    } else if (e.event_type === "TOOL_INVOCATION") {
      rows.push({ kind: "tool", label: "tool · " + d.tool_name + " " + d.tool_call_id, start: t - (d.duration_ms || 0), end: t,
        failed: e.status !== "success" });
    }
  }
  rows.sort((a, b) => a.start - b.start);
  const start = Math.min(t0, ...rows.map((r) => r.start));
  return { rows, t0: start, span: Math.max(tEnd - start, 1) };
}

function bar(kind, left, width) {
  // Through the CSSOM, not a style attribute: the page's CSP allows no inline styles.
  const b = el("div", { class: "bar " + kind });
  b.style.left = left.toFixed(2) + "%";
  b.style.width = width.toFixed(2) + "%";
  return b;
}

function renderGantt(trace) {
  const { rows, t0, span } = ganttRows(trace);
  return el("div", { class: "gantt", id: "gantt" }, rows.map((r) => {
    const left = ((r.start - t0) / span) * 100;
    const width = Math.max(((r.end - r.start) / span) * 100, 0.3);
    return el("div", { class: "row", "data-kind": r.kind, "data-label": r.label },
      el("div", { class: "label", title: r.label, text: r.label }),
      el("div", { class: "lane" }, bar(r.kind + (r.failed ? " failed" : ""), left, width)),
      el("div", { class: "dur", text: (r.end - r.start).toFixed(0) + " ms" }));
  }));
}

function renderTokens(trace) {
  const usage = trace.timeline.filter((e) => e.event_type === "MODEL_TOKEN_USAGE");
  const total = usage.reduce((s, e) => s + (e.details.total_tokens || 0), 0);
  const s = trace.summary;
  const ok = s.tokens_reconciled;
  return el("div", {},
    el("table", { id: "tokens" },
      el("thead", {}, el("tr", {}, ["component", "round", "input", "output", "total"].map((h) => el("th", { text: h })))),
      el("tbody", {}, usage.map((e) => el("tr", {},
        el("td", { text: e.details.component }), el("td", { text: e.details.component_round }),
        el("td", { text: e.details.input_tokens }), el("td", { text: e.details.output_tokens }),
        el("td", { text: e.details.total_tokens })))),
      el("tfoot", {}, el("tr", {}, el("th", { text: "total", colspan: 4 }), el("th", { id: "token-total", text: total })))),
    el("p", {}, el("span", { class: "badge " + (ok ? "ok" : "bad"), id: "reconciled", text: ok ? "reconciled" : "NOT reconciled" }),
      " audited " + s.audited_total_tokens + " tokens, run total " + s.run_total_tokens +
      "; stored " + JSON.stringify(s.stored) + ", emitted " + JSON.stringify(s.emitted) +
      (s.complete ? " (complete)" : " (INCOMPLETE: missing " + JSON.stringify(s.missing) + ")")));
}

function renderTools(trace) {
  return el("div", {}, trace.toolInvocations.length ? trace.toolInvocations.map((t) => el("details", { class: "tool-call" },
    el("summary", {}, el("code", { text: t.tool_call_id }), " " + t.tool_name + " — ",
      el("span", { class: "badge " + (t.success ? "ok" : "bad"), text: t.status }),
      " " + t.duration_ms + " ms" + (t.relevance_level ? " · " + t.relevance_level : "")),
    el("div", { class: "muted", text: "input_params" }), json(t.input_params),
    el("div", { class: "muted", text: "output: " + (t.output_preview || "") + " (" + t.output_length + " chars)" }),
    t.retrieval_details ? [el("div", { class: "muted", text: "retrieval_details" }), json(t.retrieval_details)] : null,
    t.error_message ? el("div", { class: "banner failure", text: t.error_message }) : null))
    : el("p", { class: "muted", text: "no tool was called" }));
}

function renderFacts(run) {
  const v = ((run.self_evaluation || {}).verifier_evaluation) || null;
  if (!v) return el("p", { class: "muted", text: "the verifier did not run" });
  return el("div", {},
    el("p", {}, el("span", { class: "badge " + (v.verdict === "PASS" ? "ok" : v.verdict === "REJECT" ? "bad" : "warn"), text: v.verdict }),
      " groundedness " + v.groundedness_score + " · round " + v.round + " · " + (v.rationale || "")),
    el("table", { id: "facts" },
      el("thead", {}, el("tr", {}, ["fact", "critical", "verification", "evidence", "detail"].map((h) => el("th", { text: h })))),
      el("tbody", {}, (v.facts_checked || []).map((f) => el("tr", {},
        el("td", { text: f.fact }), el("td", { text: f.is_critical ? "yes" : "" }), el("td", { text: f.verification }),
        el("td", { text: (f.evidence_refs || []).flatMap((r) => r.source_invocation_ids || []).join(", ") }),
        el("td", { text: f.detail || "" }))))));
}

function renderFeedback(sid, rid) {
  const state = el("span", { class: "muted", id: "feedback-state" });
  const comment = el("textarea", { rows: 2, id: "feedback-comment", maxlength: 2000, placeholder: "What was right or wrong?" });
  const send = async (rating) => {
    try {
      await api("/api/diagnosis/" + encodeURIComponent(sid) + "/feedback", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ runId: rid, rating, comment: comment.value }),
      });
      state.textContent = "thanks — stored (" + rating + ")";
    } catch (err) { state.textContent = "not stored: " + err.message; }
  };
  return el("div", { class: "feedback" }, comment,
    el("button", { type: "button", id: "thumbs-up", onclick: () => send("up"), text: "+1 Helpful" }), " ",
    el("button", { type: "button", id: "thumbs-down", onclick: () => send("down"), text: "-1 Not helpful" }), " ", state);
}

async function showTrace(sid, rid) {
  const box = document.getElementById("trace");
  box.replaceChildren(el("p", { class: "muted", text: "loading trace…" }));
  let trace, runs;
  try {
    [trace, runs] = await Promise.all([
      api("/api/diagnosis/" + encodeURIComponent(sid) + "/trace?runId=" + encodeURIComponent(rid)),
      api("/api/diagnosis/" + encodeURIComponent(sid) + "/runs"),
    ]);
  } catch (err) {
    box.replaceChildren(el("div", { class: "banner failure", text: "Cannot load the trace: " + err.message }));
    return;
  }
  const run = trace.run;
  box.replaceChildren(
    el("div", { class: "card" },
      el("h2", {}, "Run ", el("code", { text: run.run_id })),
      el("p", {}, el("span", { class: "badge " + (run.status === "SUCCEEDED" ? "ok" : "warn"), id: "run-status", text: run.status }),
        el("span", { class: "badge", text: run.content_type || "" }), el("span", { class: "badge", text: run.release_outcome || "" }),
        " session ", el("code", { text: run.session_id })),
      el("p", { class: "question", text: run.query })),
    el("div", { class: "card" }, el("h3", { text: "Timeline" }), renderGantt(trace)),
    el("div", { class: "card" }, el("h3", { text: "Tokens per component" }), renderTokens(trace)),
    el("div", { class: "card" }, el("h3", { text: "Tool invocations" }), renderTools(trace)),
    el("div", { class: "card" }, el("h3", { text: "Verifier: facts checked" }), renderFacts(run)),
    el("div", { class: "card" }, el("h3", { text: "Feedback" }), renderFeedback(sid, rid)),
    el("div", { class: "card" }, el("h3", { text: "Runs of this session" }), runList(sid, runs.runs)));
}

function runList(sid, runs) {
  return el("ul", { class: "runs" }, runs.map((r) => el("li", {},
    el("a", { href: tracePath(sid, r.run_id), "data-nav": true, text: r.run_id }),
    " " + (r.status || "") + " · " + (r.content_type || "") + " · " + (r.created_at || "") + " — ", r.query || "")));
}

async function showRuns() {
  const sid = sessionId();
  document.getElementById("runs-session").textContent = sid;
  const list = document.getElementById("runs-list");
  try {
    const runs = await api("/api/diagnosis/" + encodeURIComponent(sid) + "/runs");
    list.replaceWith(Object.assign(runList(sid, runs.runs), { id: "runs-list" }));
  } catch (err) {
    list.replaceChildren(el("li", { class: "banner failure", text: err.message }));
  }
}

// ---------------------------------------------------------------- routing

function route() {
  let path = window.location.pathname;
  if (BASE && path.startsWith(BASE)) path = path.slice(BASE.length) || "/";
  const m = /^\/runs\/([^/]+)\/([^/]+)$/.exec(path);
  document.getElementById("chat-view").hidden = !!m || path === "/runs";
  document.getElementById("trace-view").hidden = !m;
  document.getElementById("runs-view").hidden = path !== "/runs";
  if (m) showTrace(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
  else if (path === "/runs") showRuns();
}

function navigate(href) { window.history.pushState({}, "", href); route(); }

document.addEventListener("click", (e) => {
  const a = e.target.closest("a[data-nav]");
  if (a && !e.ctrlKey && !e.metaKey) { e.preventDefault(); navigate(a.getAttribute("href")); }
});
window.addEventListener("popstate", route);

document.getElementById("nav-runs").addEventListener("click", (e) => { e.preventDefault(); navigate(BASE + "/runs"); });
document.getElementById("session-id").textContent = sessionId();
document.getElementById("new-session").addEventListener("click", () => {
  store.setItem(SESSION, newSessionId());
  document.getElementById("session-id").textContent = sessionId();
  document.getElementById("conversation").replaceChildren();
});
document.getElementById("key-state").textContent = store.getItem(KEY) ? "key kept for this browser session" : "";
document.getElementById("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const v = document.getElementById("api-key").value.trim();
  if (v) store.setItem(KEY, v); else store.removeItem(KEY);
  document.getElementById("api-key").value = "";
  document.getElementById("key-state").textContent = v ? "key kept for this browser session" : "no key";
});
document.getElementById("ask-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const q = document.getElementById("question");
  const text = q.value.trim();
  if (!text) return;
  q.value = "";
  const button = document.getElementById("ask");
  button.disabled = true;
  try { await ask(text); } finally { button.disabled = false; }
});
route();
