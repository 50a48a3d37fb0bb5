// The run viewer's page. Plain JS, no build step, no dependencies.
//
// Everything shown comes from the ledger, which holds model and tool output: it is treated as
// hostile. Text only ever reaches the DOM through text nodes and attribute values (h() below);
// nothing here assigns innerHTML, and the server's CSP forbids inline script anyway.

const POLL_MS = 2000;
const LIST_REFRESH_MS = 10000;
const IDLE_POLL_MS = 10000;
const IDLE_WARN_MS = 120000;
/** Steps drawn at first (the end of the run) and fetched per "load earlier steps". */
const STEP_PAGE = 100;

const $ = (id) => document.getElementById(id);

/** Builds an element. Strings become text nodes; only known-safe properties are set. */
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = Array.isArray(v) ? v.filter(Boolean).join(" ") : v;
    else if (k === "onclick" || k === "onchange" || k === "ontoggle") el.addEventListener(k.slice(2), v);
    else if (k === "href") el.setAttribute("href", String(v).startsWith("#") ? v : "#/");
    else if (k === "style") for (const [p, val] of Object.entries(v)) el.style.setProperty(p, val);
    else if (k === "open" || k === "hidden" || k === "disabled") el[k] = Boolean(v);
    else if (k === "dataset") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// ---------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, "0");
function clock(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? "" : `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function dateTime(ts) {
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? "" : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(ts)}`;
}
function ago(ts) {
  const ms = Date.now() - new Date(ts).getTime();
  if (!Number.isFinite(ms)) return "";
  if (ms < 5000) return "just now";
  if (ms < 60000) return `${Math.round(ms / 1000)} s ago`;
  if (ms < 3600000) return `${Math.round(ms / 60000)} min ago`;
  if (ms < 86400000) return `${Math.round(ms / 3600000)} h ago`;
  return `${Math.round(ms / 86400000)} d ago`;
}
function duration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}
function tokens(n) {
  if (n === null || n === undefined) return "";
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : n >= 1000 ? `${(n / 1000).toFixed(2)}k` : String(n);
}
function oneLine(s, max = 160) {
  const t = String(s ?? "").replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}
function modelName(m) {
  if (!m) return "";
  // A scripted model's spec is a file path: its name is enough in a header.
  if (m.startsWith("scripted:")) return `scripted:${m.slice(9).split("/").pop()}`;
  return m;
}
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

// ---------------------------------------------------------------------------------------------
// API
// ---------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path) {
  let res;
  try {
    res = await fetch(path, { headers: { accept: "application/json" }, cache: "no-store" });
  } catch {
    throw new ApiError(0, "the viewer server is not reachable (was `ledgerloop web` stopped?)");
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, (body && body.error) || `HTTP ${res.status}`);
  return body;
}

const enc = encodeURIComponent;
const threadPath = (id) => `/api/threads/${enc(id)}`;

// ---------------------------------------------------------------------------------------------
// State and routing
// ---------------------------------------------------------------------------------------------

const state = {
  threads: [],
  threadId: null,
  detail: null,
  steps: new Map(),
  before: [],
  /** Steps of the run before the first one loaded, and all of them. */
  earlier: 0,
  totalSteps: 0,
  /** Bumped whenever the steps are loaded afresh, so that an older page in flight is dropped. */
  stepsGen: 0,
  loadingEarlier: null,
  lastSeq: 0,
  selectedStep: null,
  tab: "timeline",
  polling: false,
  rendered: null,
  lastPoll: null,
  ledger: { type: "", events: [], next: 0, more: false },
  token: 0,
};

function parseRoute() {
  const m = /^#\/t\/([^/]+)(?:\/(timeline|ledger|checkpoints))?(?:\/s\/(\d+))?$/.exec(location.hash);
  if (!m) return { thread: null, tab: "timeline", step: null };
  let thread;
  try {
    thread = decodeURIComponent(m[1]);
  } catch {
    return { thread: null, tab: "timeline", step: null };
  }
  return { thread, tab: m[2] || "timeline", step: m[3] ? Number(m[3]) : null };
}

function routeTo(thread, { tab = "timeline", step = null } = {}) {
  let hash = `#/t/${enc(thread)}`;
  if (tab !== "timeline") hash += `/${tab}`;
  if (step !== null) hash += `/s/${step}`;
  if (location.hash !== hash) location.hash = hash;
}

async function onRoute() {
  const r = parseRoute();
  const token = ++state.token;
  if (!r.thread) {
    state.threadId = null;
    state.detail = null;
    state.rendered = null;
    closePanel();
    renderThreadList();
    renderHome();
    return;
  }
  if (r.thread !== state.threadId) {
    state.threadId = r.thread;
    state.detail = null;
    state.steps = new Map();
    state.before = [];
    state.earlier = 0;
    state.totalSteps = 0;
    state.lastSeq = 0;
    state.ledger = { type: "", events: [], next: 0, more: false };
    state.rendered = null;
    renderThreadList();
    clear($("main")).append(h("p", { class: "empty" }, "Loading run…"));
    try {
      await loadThread(r.thread);
    } catch (err) {
      if (token !== state.token) return;
      renderError($("main"), err);
      closePanel();
      return;
    }
    if (token !== state.token) return;
  }
  // Choosing a step only opens its context: the timeline stays as it is (scroll, open outputs).
  if (r.tab !== state.tab || state.rendered !== state.threadId) {
    state.tab = r.tab;
    renderThread();
  }
  if (r.step !== null) {
    // A link to a step before the loaded ones (a reload, the context panel) loads down to it.
    const first = firstLoadedStep();
    if (r.step >= 1 && !state.steps.has(r.step) && state.earlier > 0 && first !== null && r.step < first) {
      await loadEarlier(r.step);
      if (token !== state.token) return;
    }
    openContext(r.step);
  } else closePanel();
}

/** Loads the run's header and its last page of steps; earlier ones come on request. */
async function loadThread(id) {
  const [detail, steps] = await Promise.all([api(threadPath(id)), api(`${threadPath(id)}/steps?last=${STEP_PAGE}`)]);
  state.stepsGen += 1;
  state.detail = detail;
  state.before = steps.before;
  state.steps = new Map(steps.steps.map((s) => [s.step, s]));
  state.earlier = steps.earlier;
  state.totalSteps = steps.total;
  state.lastSeq = Math.max(detail.lastSeq, steps.lastSeq);
}

function firstLoadedStep() {
  let first = null;
  for (const n of state.steps.keys()) if (first === null || n < first) first = n;
  return first;
}

/**
 * Fetches the page of steps before the first one loaded (or every step from `downTo` on) and
 * draws it above the timeline's first step, keeping that step where the reader sees it.
 */
async function loadEarlier(downTo = null) {
  const id = state.threadId;
  const gen = state.stepsGen;
  const first = firstLoadedStep();
  if (!id || first === null || state.earlier <= 0 || state.loadingEarlier === gen) return;
  state.loadingEarlier = gen;
  const button = document.querySelector("#load-earlier button");
  if (button) {
    button.disabled = true;
    button.textContent = "Loading earlier steps…";
  }
  const q = downTo !== null && downTo < first ? `from=${downTo}&to=${first - 1}` : `to=${first - 1}&last=${STEP_PAGE}`;
  try {
    const page = await api(`${threadPath(id)}/steps?${q}`);
    if (state.threadId !== id || state.stepsGen !== gen) return;
    for (const s of page.steps) state.steps.set(s.step, s);
    state.earlier = page.earlier;
    state.totalSteps = page.total;
    if (page.earlier === 0) state.before = page.before;
    insertEarlier(page.steps);
  } catch (err) {
    if (state.threadId !== id || state.stepsGen !== gen) return;
    const control = $("load-earlier");
    if (control) control.replaceWith(earlierControl(`could not load: ${err.message}`));
  } finally {
    if (state.loadingEarlier === gen) state.loadingEarlier = null;
  }
}

/** Puts newly loaded earlier steps into the drawn timeline (if it is drawn) without moving what is in view. */
function insertEarlier(steps) {
  const timeline = $("timeline");
  if (!timeline || state.rendered !== state.threadId) return;
  const scroller = $("main");
  const anchor = timeline.querySelector(":scope > li.step");
  const top = anchor ? anchor.getBoundingClientRect().top : 0;
  const nodes = [...steps].sort((a, b) => a.step - b.step).filter((s) => !$(`step-${s.step}`)).map(renderStep);
  if (anchor) anchor.before(...nodes);
  else timeline.append(...nodes);
  const control = $("load-earlier");
  const next = earlierControl();
  if (control && next) control.replaceWith(next);
  else if (control) control.remove();
  if (!next && state.before.length && !timeline.querySelector(":scope > li.before")) timeline.prepend(beforeNode());
  if (anchor) scroller.scrollTop += anchor.getBoundingClientRect().top - top;
}

// ---------------------------------------------------------------------------------------------
// Thread list
// ---------------------------------------------------------------------------------------------

async function refreshThreads() {
  try {
    const r = await api("/api/threads");
    state.threads = r.threads;
    state.workspace = r.workspace;
    $("workspace").textContent = r.workspace;
    $("workspace").title = r.workspace;
  } catch (err) {
    state.threads = [];
    state.threadsError = err.message;
  }
  renderThreadList();
  if (!state.threadId) renderHome();
}

function statusPill(status, extra) {
  return h("span", { class: ["pill", `st-${status || "unknown"}`], title: extra }, (status || "unknown").replace(/_/g, " "));
}

function renderThreadList() {
  const ol = clear($("threads"));
  if (!state.threads.length) {
    ol.append(h("li", { class: "thread-empty" }, state.threadsError || "No runs yet."));
    return;
  }
  for (const t of state.threads) {
    ol.append(
      h(
        "li",
        {},
        h(
          "a",
          { class: ["thread-item", t.thread === state.threadId && "active"], href: `#/t/${enc(t.thread)}`, title: t.goal || t.thread, dataset: { thread: t.thread } },
          h("div", { class: "thread-item-top" }, statusPill(t.status), h("span", { class: "muted small" }, t.lastActivity ? ago(t.lastActivity) : "")),
          h("div", { class: "thread-goal" }, oneLine(t.goal || "(no goal recorded)", 110)),
          h("div", { class: "thread-meta" }, h("span", { class: "mono" }, t.thread), t.steps !== null ? ` · ${plural(t.steps, "step")}` : ""),
        ),
      ),
    );
  }
}

function renderHome() {
  const main = clear($("main"));
  if (!state.threads.length) {
    main.append(
      h(
        "div",
        { class: "home" },
        h("h1", {}, "No runs yet"),
        h("p", {}, "Start one in this workspace, e.g. ", h("code", {}, 'ledgerloop run "<task>" --model …'), " or ", h("code", {}, "ledgerloop demo"), "; it appears here."),
      ),
    );
    return;
  }
  main.append(
    h(
      "div",
      { class: "home" },
      h("h1", {}, plural(state.threads.length, "run")),
      h("p", { class: "muted" }, "Pick a run on the left to see its plan, its steps, and what the model saw at each step."),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Thread view
// ---------------------------------------------------------------------------------------------

function renderError(container, err) {
  clear(container).append(
    h("div", { class: "error-box" }, h("strong", {}, err.status === 404 ? "Not found. " : "Could not load. "), err.message || String(err)),
  );
}

const SUBTASK_ICON = { completed: "✓", in_progress: "◐", pending: "○", blocked: "⊘" };

function renderHeader(d) {
  const idle = d.status === "running" && d.lastActivity && Date.now() - new Date(d.lastActivity).getTime() > IDLE_WARN_MS;
  const completed = d.plan.filter((s) => s.status === "completed").length;
  const facts = [
    ["steps", d.maxSteps ? `${d.steps} of at most ${d.maxSteps}` : String(d.steps)],
    d.model && ["model", modelName(d.model)],
    (d.sandbox.level || d.sandbox.requested) && ["sandbox", d.sandbox.level ? d.sandbox.level + (d.sandbox.requested && d.sandbox.requested !== d.sandbox.level ? ` (asked: ${d.sandbox.requested})` : "") : `${d.sandbox.requested} (nothing run yet)`],
    d.lastTests && ["last tests", `${d.lastTests.passed} passed, ${d.lastTests.failed} failed${d.lastTests.skipped ? `, ${d.lastTests.skipped} skipped` : ""}`],
    d.lastPrompt && ["last prompt", `${tokens(d.lastPrompt.tokens)} of ${tokens(d.lastPrompt.budget)} tokens`],
    ["ledger", `${plural(d.events, "event")}`],
    d.createdAt && ["started", dateTime(d.createdAt)],
    d.lastActivity && ["last activity", ago(d.lastActivity)],
  ].filter(Boolean);

  const unisolated = d.sandbox.level === "none";
  return h(
    "section",
    { class: "card header-card", id: "thread-header" },
    h(
      "div",
      { class: "header-top" },
      statusPill(d.status),
      idle ? h("span", { class: "idle-note", title: "No event for a while: the process may have stopped. `ledgerloop resume` continues it." }, `idle ${ago(d.lastActivity).replace(" ago", "")}`) : null,
      h("span", { class: "mono muted small thread-id" }, d.thread),
      d.forked ? h("span", { class: "tag" }, "branched") : null,
    ),
    h("h1", { class: "goal" }, d.goal || "(no goal recorded)"),
    d.awaitingApproval
      ? h(
          "div",
          { class: "approval-wait" },
          h("strong", {}, "Waiting for approval: "),
          h("code", {}, d.awaitingApproval.command || d.awaitingApproval.tool || "a command"),
          d.awaitingApproval.reason ? h("span", { class: "muted" }, ` — ${d.awaitingApproval.reason}`) : null,
          h("div", { class: "small muted" }, "Answer with: ", h("code", {}, `ledgerloop resume ${d.thread}${state.workspace ? ` -w ${state.workspace}` : ""} --approve`), " (or --reject)"),
        )
      : null,
    d.finishSummary ? h("div", { class: "finish-summary" }, h("span", { class: "label" }, "Finished: "), d.finishSummary) : null,
    h(
      "dl",
      { class: "facts" },
      facts.map(([k, v]) =>
        h("div", { class: ["fact", k === "sandbox" && unisolated && "fact-warn"], title: k === "sandbox" && unisolated ? "commands ran without isolation" : null }, h("dt", {}, k), h("dd", {}, k === "sandbox" && unisolated ? `${v} (not isolated)` : v)),
      ),
    ),
    h(
      "div",
      { class: "header-cols" },
      h(
        "div",
        { class: "plan" },
        h("h2", {}, "Plan ", h("span", { class: "muted count" }, d.plan.length ? `${completed}/${d.plan.length} completed` : "")),
        d.plan.length
          ? h(
              "ol",
              { class: "subtasks", id: "plan" },
              d.plan.map((s) =>
                h(
                  "li",
                  { class: ["subtask", `sub-${s.status}`], dataset: { status: s.status } },
                  h("span", { class: "sub-icon", title: s.status.replace("_", " ") }, SUBTASK_ICON[s.status] || "•"),
                  h("span", { class: "sub-text" }, h("span", { class: "sub-desc" }, s.description), h("span", { class: "sub-id mono" }, s.id)),
                  h("span", { class: "sub-status" }, s.status.replace("_", " ")),
                ),
              ),
            )
          : h("p", { class: "muted small" }, "No plan yet."),
      ),
      h(
        "div",
        { class: "decisions" },
        h("h2", {}, "Pinned decisions ", h("span", { class: "muted count" }, d.decisions.length ? String(d.decisions.length) : "")),
        d.decisions.length
          ? h(
              "ol",
              { class: "decision-list" },
              d.decisions.map((x) => h("li", {}, h("span", { class: "decision-step" }, `step ${x.step}`), h("span", {}, x.text))),
            )
          : h("p", { class: "muted small" }, "None recorded."),
      ),
    ),
    d.filesTouched.length
      ? h(
          "div",
          { class: "touched" },
          h("span", { class: "label" }, "Files changed by the run: "),
          d.filesTouched.map((f) => h("code", { class: "file" }, f)),
        )
      : null,
  );
}

function renderTabs() {
  const tabs = [
    ["timeline", "Timeline"],
    ["ledger", "Ledger"],
    ["checkpoints", "Checkpoints"],
  ];
  return h(
    "div",
    { class: "tabs", role: "tablist" },
    tabs.map(([id, label]) =>
      h("a", { class: ["tab", state.tab === id && "active"], href: `#/t/${enc(state.threadId)}${id === "timeline" ? "" : `/${id}`}`, role: "tab" }, label),
    ),
  );
}

function renderThread() {
  const d = state.detail;
  if (!d) return;
  document.title = `${d.status} · ${oneLine(d.goal, 60)} · ledgerloop`;
  const main = clear($("main"));
  state.rendered = state.threadId;
  main.append(renderHeader(d), renderTabs());
  const body = h("div", { id: "tab-body" });
  main.append(body);
  if (state.tab === "ledger") renderLedgerTab(body);
  else if (state.tab === "checkpoints") renderCheckpointsTab(body);
  else renderTimeline(body);
  updateLive();
}

// ---------------------------------------------------------------------------------------------
// Timeline
// ---------------------------------------------------------------------------------------------

function renderTimeline(body) {
  const list = h("ol", { class: "timeline", id: "timeline" });
  body.append(list);
  const more = earlierControl();
  if (more) list.append(more);
  else if (state.before.length) list.append(beforeNode());
  const steps = [...state.steps.values()].sort((a, b) => a.step - b.step);
  if (!steps.length) list.append(h("li", { class: "empty" }, "No steps yet."));
  for (const s of steps) list.append(renderStep(s));
}

function beforeNode() {
  return h("li", { class: "interludes before" }, state.before.map(renderInterlude));
}

/** The "load earlier steps" control at the top of a timeline that does not start at the first step. */
function earlierControl(problem) {
  if (state.earlier <= 0) return null;
  const n = Math.min(STEP_PAGE, state.earlier);
  return h(
    "li",
    { class: "load-earlier", id: "load-earlier" },
    h("button", { class: "button", type: "button", onclick: () => loadEarlier() }, `Load ${plural(n, "earlier step")}`),
    h(
      "span",
      { class: "muted small" },
      `${plural(state.steps.size, "step")} of ${state.totalSteps} shown; ${state.earlier} earlier not loaded`,
    ),
    problem ? h("span", { class: "warn small" }, problem) : null,
  );
}

function argsSummary(a) {
  const args = a.args && typeof a.args === "object" ? a.args : null;
  if (a.invalid) return a.argsText ?? JSON.stringify(a.args ?? {});
  if (!args) return a.argsText ?? "";
  if (typeof args.command === "string") return args.command;
  if (typeof args.path === "string") {
    const range = args.startLine ? `:${args.startLine}${args.endLine ? `-${args.endLine}` : ""}` : "";
    return args.path + range;
  }
  if (typeof args.text === "string") return args.text;
  if (typeof args.summary === "string") return args.summary;
  if (typeof args.query === "string") return args.query;
  if (Array.isArray(args.subtasks)) return args.subtasks.map((s) => `${s.id}: ${s.status}`).join(", ");
  if (typeof args.glob === "string") return args.glob;
  const s = JSON.stringify(args);
  return s === "{}" ? "" : s;
}

function testsChip(t) {
  if (!t) return null;
  return h(
    "span",
    { class: ["tests", t.failed ? "tests-fail" : "tests-pass"], title: t.failedTests.length ? `failing: ${t.failedTests.join("; ")}` : `${t.framework}` },
    h("span", { class: "t-pass" }, `${t.passed} passed`),
    t.failed ? h("span", { class: "t-fail" }, `${t.failed} failed`) : null,
    t.skipped ? h("span", { class: "t-skip" }, `${t.skipped} skipped`) : null,
  );
}

function filesChips(c) {
  if (!c) return null;
  const chips = [
    ...c.created.map((f) => h("code", { class: "file f-created", title: "created" }, `+ ${f}`)),
    ...c.modified.map((f) => h("code", { class: "file f-modified", title: "modified" }, `~ ${f}`)),
    ...c.deleted.map((f) => h("code", { class: "file f-deleted", title: "deleted" }, `− ${f}`)),
  ];
  return chips.length ? h("span", { class: "files" }, chips) : null;
}

function outputBlock(key, label, clipped, eventId) {
  if (!clipped || clipped.text === "") return null;
  const pre = h("pre", { class: "output" }, clipped.text);
  const more = clipped.fullLength
    ? h(
        "button",
        {
          class: "link-button",
          type: "button",
          onclick: async (ev) => {
            ev.target.disabled = true;
            try {
              const e = await api(`${threadPath(state.threadId)}/events/${enc(eventId)}`);
              pre.textContent = e.payload[key] ?? "";
              ev.target.remove();
            } catch (err) {
              ev.target.textContent = `could not load: ${err.message}`;
            }
          },
        },
        `show all ${clipped.fullLength.toLocaleString()} characters`,
      )
    : null;
  return h("details", { class: "out", dataset: { key: `${eventId}:${key}` } }, h("summary", {}, label, clipped.fullLength ? h("span", { class: "muted" }, " (clipped)") : null), pre, more);
}

function renderAction(a) {
  const f = a.feedback;
  const waiting = !f && state.detail && state.detail.awaitingApproval && state.detail.awaitingApproval.actionId === a.id;
  const status = a.invalid ? "invalid" : f ? f.status : waiting ? "awaiting approval" : "pending";
  const summary = argsSummary(a);
  const exit = f && f.exitCode !== null && f.exitCode !== undefined ? `exit ${f.exitCode}` : f && f.signal ? `signal ${f.signal}` : null;
  return h(
    "li",
    { class: ["action", `ac-${waiting ? "waiting" : status}`], dataset: { tool: a.tool, status: waiting ? "waiting" : status } },
    h(
      "div",
      { class: "action-line" },
      h("span", { class: "tool" }, a.tool),
      h("code", { class: "action-args", title: summary }, oneLine(summary, 220)),
      h(
        "span",
        { class: "action-result" },
        h("span", { class: ["status", `s-${waiting ? "waiting" : status}`] }, status, f && f.errorClass ? ` · ${f.errorClass.replace(/_/g, " ")}` : ""),
        exit ? h("span", { class: ["exit", f.exitCode === 0 ? "exit-ok" : "exit-bad"] }, exit) : null,
        f ? h("span", { class: "muted small" }, duration(f.durationMs)) : null,
      ),
    ),
    a.invalid ? h("div", { class: "invalid-note" }, `rejected before running: ${a.invalid}`) : null,
    f && (f.tests || f.filesChanged)
      ? h("div", { class: "action-facts" }, testsChip(f.tests), f.tests && f.tests.failedTests.length ? h("span", { class: "failing" }, "failing: ", f.tests.failedTests.map((t) => h("span", { class: "failing-test" }, t))) : null, filesChips(f.filesChanged))
      : null,
    a.approvals.map((p) =>
      h(
        "div",
        { class: ["approval", p.decision === "approved" ? "approval-yes" : "approval-no"] },
        `${p.decision} by ${p.by === "auto" ? "policy (auto)" : "the user"}`,
        h("span", { class: "muted" }, ` — rule ${p.rule}: ${p.reason}`),
      ),
    ),
    f
      ? h(
          "div",
          { class: "outputs" },
          outputBlock("output", "tool result (what the model read)", f.output, f.id),
          outputBlock("stdout", "stdout", f.stdout, f.id),
          outputBlock("stderr", "stderr", f.stderr, f.id),
          a.args && typeof a.args === "object" && Object.keys(a.args).length
            ? h("details", { class: "out", dataset: { key: `${a.id}:args` } }, h("summary", {}, "arguments"), h("pre", { class: "output" }, JSON.stringify(a.args, null, 2)))
            : null,
        )
      : null,
  );
}

function renderStep(s) {
  const selected = state.selectedStep === s.step;
  const li = h(
    "li",
    { class: ["step", `outcome-${s.outcome}`, selected && "selected"], id: `step-${s.step}`, dataset: { step: s.step } },
    h(
      "div",
      {
        class: "step-head",
        role: "button",
        tabindex: "0",
        title: "show what the model saw at this step",
        onclick: () => selectStep(s.step),
      },
      h("span", { class: "step-no" }, `Step ${s.step}`),
      h("span", { class: "muted small" }, clock(s.startedAt)),
      h("span", { class: "muted small" }, duration(new Date(s.endedAt) - new Date(s.startedAt))),
      h("span", { class: "spacer" }),
      testsChip(s.tests),
      s.context
        ? h(
            "span",
            { class: ["ctx-button", selected && "active"], title: "the prompt of this step" },
            `context · ${tokens(s.context.tokens)} tok`,
            s.context.omitted ? h("span", { class: "omitted-badge" }, ` · ${s.context.omitted} left out`) : null,
          )
        : null,
    ),
    s.model && s.model.content ? h("p", { class: "model-text" }, s.model.content) : null,
    s.actions.length ? h("ol", { class: "actions" }, s.actions.map(renderAction)) : h("p", { class: "muted small no-actions" }, s.model ? "No tool calls." : "Waiting for the model…"),
    s.after.length ? h("div", { class: "interludes" }, s.after.map(renderInterlude)) : null,
  );
  li.querySelector(".step-head").addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      selectStep(s.step);
    }
  });
  return li;
}

function renderInterlude(e) {
  const p = e.payload;
  let icon = "•";
  let title = e.type;
  let body = null;
  switch (e.type) {
    case "task_spec":
      icon = "◇";
      title = `Plan made (${p.source})`;
      body = h("ol", { class: "mini-plan" }, (p.subtasks || []).map((s) => h("li", {}, h("span", { class: "mono" }, s.id), ` — ${s.description}`)));
      break;
    case "plan_update": {
      icon = "◇";
      const done = (p.subtasks || []).filter((s) => s.status === "completed").length;
      title = `Plan updated: ${done}/${(p.subtasks || []).length} completed`;
      body = h("span", { class: "muted" }, (p.subtasks || []).map((s) => `${s.id} ${s.status.replace("_", " ")}`).join(" · "));
      break;
    }
    case "decision":
      icon = "📌";
      title = "Decision pinned";
      body = h("span", {}, p.text);
      break;
    case "reflection":
      icon = "✎";
      title = `Reflection (${String(p.trigger).replace(/_/g, " ")})`;
      body = h("ul", { class: "lessons" }, (p.lessons || []).map((l) => h("li", {}, l)));
      break;
    case "summary":
      icon = "≡";
      title = `Summary (${p.tier}, seq ${p.fromSeq}–${p.toSeq}, ${plural((p.eventIds || []).length, "event")})`;
      body = h("details", {}, h("summary", {}, oneLine(p.text, 120)), h("pre", { class: "output" }, p.text));
      break;
    case "time_travel":
      icon = "⟲";
      title =
        p.kind === "restore"
          ? `Continued from an earlier checkpoint (replay or fork from Studio, the SDK or a script)`
          : `${p.kind === "fork" ? "Forked" : "Rewound"} to checkpoint ${String(p.toCheckpoint).slice(0, 13)}…`;
      body = h(
        "span",
        { class: "muted" },
        (p.revision ? `workspace files restored to revision ${String(p.revision).slice(0, 12)}` : "") +
          (p.savedRevision ? `; edits made outside the run saved as revision ${String(p.savedRevision).slice(0, 12)}` : ""),
      );
      break;
    case "run_status":
      icon = "■";
      title = `Run ${p.status} after ${plural(p.steps, "step")}`;
      body = p.reason ? h("span", { class: "muted" }, p.reason) : null;
      break;
    default:
      break;
  }
  return h("div", { class: ["interlude", `il-${e.type}`, e.type === "run_status" && `st-${p.status}`] }, h("span", { class: "il-icon" }, icon), h("div", { class: "il-body" }, h("div", { class: "il-title" }, title, h("span", { class: "muted small" }, `  ${clock(e.ts)}`)), body));
}

function selectStep(step) {
  routeTo(state.threadId, { tab: "timeline", step: state.selectedStep === step && !$("panel").hidden ? null : step });
}

// ---------------------------------------------------------------------------------------------
// Context panel
// ---------------------------------------------------------------------------------------------

const SECTION_COLORS = {
  system: "#8c959f",
  tools: "#afb8c1",
  fixed: "#d0d7de",
  goal: "#8250df",
  plan: "#a475f9",
  decisions: "#bf3989",
  status: "#e16f24",
  recent: "#0969da",
  workspace: "#1b7c83",
  focus: "#1a7f37",
  retrieved: "#4ac26b",
  recalled: "#9a6700",
  lessons: "#d4a72c",
  history: "#57606a",
  summaries: "#57606a",
};
const sectionColor = (s) => SECTION_COLORS[s] || "#6e7781";

function closePanel() {
  state.selectedStep = null;
  const panel = $("panel");
  panel.hidden = true;
  clear(panel);
  $("layout").classList.remove("with-panel");
  for (const el of document.querySelectorAll(".step.selected")) el.classList.remove("selected");
  for (const el of document.querySelectorAll(".ctx-button.active")) el.classList.remove("active");
}

async function openContext(step) {
  state.selectedStep = step;
  for (const el of document.querySelectorAll(".step")) el.classList.toggle("selected", Number(el.dataset.step) === step);
  // Opened from a link (or a reload): bring the step into view; a click leaves it where it is.
  $(`step-${step}`)?.scrollIntoView({ block: "nearest" });
  for (const el of document.querySelectorAll(".step .ctx-button")) el.classList.toggle("active", Number(el.closest(".step").dataset.step) === step);
  const panel = $("panel");
  panel.hidden = false;
  $("layout").classList.add("with-panel");
  clear(panel).append(panelHead(step), h("p", { class: "empty" }, "Loading the prompt…"));
  const thread = state.threadId;
  let ctx;
  try {
    ctx = await api(`${threadPath(thread)}/context/${step}`);
  } catch (err) {
    if (state.threadId !== thread || state.selectedStep !== step) return;
    clear(panel).append(panelHead(step));
    const box = h("div", {});
    renderError(box, err);
    panel.append(box);
    return;
  }
  if (state.threadId !== thread || state.selectedStep !== step) return;
  renderContext(panel, ctx);
}

function panelHead(step, sub) {
  return h(
    "div",
    { class: "panel-head" },
    h("div", {}, h("div", { class: "panel-title" }, `Step ${step} · what the model saw`), sub ? h("div", { class: "muted small" }, sub) : null),
    h("button", { class: "close", type: "button", title: "close", "aria-label": "close", onclick: () => routeTo(state.threadId) }, "×"),
  );
}

function renderContext(panel, ctx) {
  clear(panel);
  panel.append(panelHead(ctx.step, `prompt built ${clock(ctx.ts)} · event ${ctx.eventId.slice(0, 8)}`));
  const pct = ctx.budget ? Math.min(100, (ctx.tokens / ctx.budget) * 100) : 0;
  const leftOut = ctx.omitted.reduce((n, i) => n + i.tokens, 0);

  // Budget: one bar, a segment per section, scaled to the budget.
  const bar = h(
    "div",
    { class: "budget-bar", title: `${ctx.tokens} of ${ctx.budget} tokens` },
    ctx.sections.map((s) =>
      h("span", { class: "budget-seg", title: `${s.section}: ${s.tokens} tokens`, style: { width: `${ctx.budget ? (s.tokens / ctx.budget) * 100 : 0}%`, background: sectionColor(s.section) } }),
    ),
  );
  panel.append(
    h(
      "div",
      { class: "budget" },
      h("div", { class: "budget-numbers" }, h("strong", {}, `${ctx.tokens.toLocaleString()} tokens`), h("span", { class: "muted" }, ` of ${ctx.budget.toLocaleString()} (${pct.toFixed(1)}%)`), leftOut ? h("span", { class: "warn" }, ` · ${leftOut.toLocaleString()} left out`) : null),
      bar,
    ),
  );

  // Sections, each expandable into its items.
  const bySection = new Map();
  for (const i of ctx.items) {
    if (!bySection.has(i.section)) bySection.set(i.section, []);
    bySection.get(i.section).push(i);
  }
  panel.append(
    h("h3", {}, "Included"),
    h(
      "div",
      { class: "sections" },
      ctx.sections.map((s) =>
        h(
          "details",
          { class: "section" },
          h(
            "summary",
            {},
            h("span", { class: "swatch", style: { background: sectionColor(s.section) } }),
            h("span", { class: "section-name" }, s.section),
            h("span", { class: "muted small" }, s.items > 1 ? ` ${s.items} items` : ""),
            h("span", { class: "spacer" }),
            h("span", { class: "section-share", title: `${((s.tokens / Math.max(1, ctx.tokens)) * 100).toFixed(1)}% of the prompt` }, h("span", { style: { width: `${(s.tokens / Math.max(1, ctx.tokens)) * 100}%`, background: sectionColor(s.section) } })),
            h("span", { class: "section-tokens" }, `${s.tokens.toLocaleString()} tok`),
          ),
          h("ul", { class: "items" }, (bySection.get(s.section) || []).map(renderItem)),
        ),
      ),
    ),
    h("h3", {}, "Left out"),
    ctx.omitted.length ? h("ul", { class: "items omitted" }, ctx.omitted.map(renderItem)) : h("p", { class: "muted small" }, "Nothing: everything considered fit in the budget."),
    h("h3", {}, "Prompt ", h("span", { class: "muted count" }, plural(ctx.messages.length, "message"))),
    h("div", { class: "messages" }, ctx.messages.map((m, i) => renderMessage(m, i, ctx.messages))),
  );
}

function renderItem(i) {
  const m = /^turn:step(\d+):/.exec(i.source);
  const source = m
    ? h("a", { href: `#/t/${enc(state.threadId)}/s/${m[1]}`, class: "source mono", title: i.source }, `step ${m[1]} (action → feedback)`)
    : h("span", { class: "source mono", title: i.source }, i.source);
  return h(
    "li",
    { class: "item" },
    h("div", { class: "item-line" }, source, h("span", { class: "spacer" }), i.score !== undefined ? h("span", { class: "muted small" }, `score ${Number(i.score).toFixed(2)}`) : null, h("span", { class: "item-tokens" }, `${i.tokens.toLocaleString()}`)),
    i.note ? h("div", { class: "item-note" }, i.note) : null,
  );
}

function renderMessage(m, i, all) {
  const label = m.role === "tool" ? `tool · ${m.name}` : m.role;
  const calls = m.role === "assistant" && m.toolCalls && m.toolCalls.length ? m.toolCalls : null;
  // Read first: the pinned user message (goal, decisions), the newest tool result (what the last
  // action gave) and the last message (run status, plan, files: the volatile part of the prompt).
  let lastTool = -1;
  for (let k = 0; k < all.length; k++) if (all[k].role === "tool") lastTool = k;
  const open = (m.role === "user" && i <= 1) || i === lastTool || i === all.length - 1;
  return h(
    "details",
    { class: ["message", `m-${m.role}`], open },
    h("summary", {}, h("span", { class: ["role", `r-${m.role}`] }, label), h("span", { class: "msg-preview" }, oneLine(m.content, 90) || (calls ? "" : "(empty)")), calls ? h("span", { class: "msg-calls" }, `→ ${calls.map((c) => c.name).join(", ")}`) : null, h("span", { class: "muted small msg-len" }, `${m.content.length.toLocaleString()} ch`)),
    h("pre", { class: "output message-body" }, m.content),
    calls ? h("pre", { class: "output message-calls" }, calls.map((c) => `${c.name}(${c.argsText ?? JSON.stringify(c.args ?? {})})`).join("\n")) : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Ledger and checkpoints tabs
// ---------------------------------------------------------------------------------------------

const EVENT_TYPES = ["task_spec", "plan_update", "agent_action", "environment_feedback", "workspace_snapshot", "decision", "context_built", "model_call", "reflection", "summary", "run_status", "time_travel", "approval"];

function eventLine(e) {
  const p = e.payload || {};
  switch (e.type) {
    case "agent_action":
      return `${p.tool} ${oneLine(JSON.stringify(p.args ?? p.argsText ?? {}), 120)}${p.invalid ? " [invalid]" : ""}`;
    case "environment_feedback":
      return `${p.tool} → ${p.status}${p.errorClass ? ` (${p.errorClass})` : ""}`;
    case "decision":
      return oneLine(p.text, 140);
    case "run_status":
      return `${p.status} after ${p.steps} steps`;
    case "model_call":
      return `${p.node} turn ${p.turn}: ${plural((p.toolCalls || []).length, "tool call")}`;
    case "context_built":
      return `step ${p.step}: ${p.tokens} of ${p.budget} tokens`;
    case "workspace_snapshot":
      return `${p.kind}${p.changed ? ` · ${p.changed.created.length + p.changed.modified.length + p.changed.deleted.length} changed` : ""}`;
    default:
      return oneLine(JSON.stringify(p), 140);
  }
}

async function loadLedgerPage(reset) {
  const L = state.ledger;
  if (reset) Object.assign(L, { events: [], next: 0, more: false });
  const q = new URLSearchParams({ after: String(L.next), limit: "200" });
  if (L.type) q.set("type", L.type);
  const page = await api(`${threadPath(state.threadId)}/events?${q}`);
  L.events.push(...page.events);
  L.next = page.next;
  L.more = page.more;
}

function renderLedgerTab(body) {
  const L = state.ledger;
  const select = h(
    "select",
    {
      "aria-label": "event type",
      onchange: async (ev) => {
        L.type = ev.target.value;
        await loadLedgerPage(true).catch((err) => renderError(body, err));
        renderLedgerTab(clear(body));
      },
    },
    h("option", { value: "" }, "all event types"),
    EVENT_TYPES.map((t) => {
      const o = h("option", { value: t }, t);
      if (t === L.type) o.selected = true;
      return o;
    }),
  );
  const table = h(
    "table",
    { class: "ledger" },
    h("thead", {}, h("tr", {}, h("th", {}, "seq"), h("th", {}, "time"), h("th", {}, "type"), h("th", {}, "what"))),
    h(
      "tbody",
      {},
      L.events.map((e) => {
        const detail = h("tr", { class: "ledger-detail", hidden: true }, h("td", { colspan: "4" }, h("pre", { class: "output" }, JSON.stringify(e, null, 2))));
        const row = h(
          "tr",
          { class: ["ledger-row", `ev-${e.type}`], onclick: () => (detail.hidden = !detail.hidden) },
          h("td", { class: "mono num" }, String(e.seq)),
          h("td", { class: "mono muted" }, clock(e.ts)),
          h("td", {}, h("span", { class: ["evtype", `evt-${e.type}`] }, e.type)),
          h("td", { class: "what" }, eventLine(e)),
        );
        return [row, detail];
      }),
    ),
  );
  body.append(
    h("div", { class: "toolbar" }, select, h("span", { class: "muted small" }, `${plural(L.events.length, "event")} shown · click a row for its JSON`)),
    table,
    L.more
      ? h(
          "button",
          {
            class: "button",
            type: "button",
            onclick: async () => {
              await loadLedgerPage(false).catch((err) => renderError(body, err));
              renderLedgerTab(clear(body));
            },
          },
          "load more",
        )
      : null,
  );
  if (!L.events.length && L.next === 0 && !L.loaded) {
    L.loaded = true;
    loadLedgerPage(true)
      .then(() => renderLedgerTab(clear(body)))
      .catch((err) => renderError(body, err));
  }
}

function renderCheckpointsTab(body) {
  body.append(h("p", { class: "empty" }, "Loading checkpoints…"));
  api(`${threadPath(state.threadId)}/checkpoints`)
    .then((r) => {
      clear(body).append(
        h("p", { class: "muted small" }, `${plural(r.checkpoints.length, "checkpoint")}${r.more ? " (newest shown)" : ""}, newest first. Rewind or fork with `, h("code", {}, "ledgerloop rewind <thread> --to <checkpoint>"), "."),
        h(
          "table",
          { class: "ledger checkpoints" },
          h("thead", {}, h("tr", {}, ["checkpoint", "time", "superstep", "next", "step", "status"].map((c) => h("th", {}, c)))),
          h(
            "tbody",
            {},
            r.checkpoints.map((c) =>
              h(
                "tr",
                {},
                h("td", { class: "mono", title: c.checkpointId }, c.checkpointId),
                h("td", { class: "mono muted" }, clock(c.createdAt)),
                h("td", { class: "num" }, c.superstep ?? ""),
                h("td", {}, c.interrupted ? h("span", { class: "pill st-interrupted" }, "awaiting approval") : c.next.join(", ") || h("span", { class: "muted" }, "(end)")),
                h("td", { class: "num" }, c.agentStep ?? ""),
                h("td", {}, c.status ? statusPill(c.status) : ""),
              ),
            ),
          ),
        ),
      );
    })
    .catch((err) => renderError(body, err));
}

// ---------------------------------------------------------------------------------------------
// Live updates
// ---------------------------------------------------------------------------------------------

function updateLive() {
  const live = $("live");
  const d = state.detail;
  if (!d || d.status !== "running") {
    live.hidden = true;
    return;
  }
  live.hidden = false;
  clear(live).append(h("span", { class: "live-dot" }), "live", state.lastPoll ? h("span", { class: "muted" }, ` · checked ${clock(state.lastPoll)}`) : null);
}

/** Keeps which <details> were open, so a refreshed step does not fold up under the reader. */
function openKeys(el) {
  return new Set([...el.querySelectorAll("details[open]")].map((d) => d.dataset.key).filter(Boolean));
}
function reopen(el, keys) {
  for (const d of el.querySelectorAll("details")) if (d.dataset.key && keys.has(d.dataset.key)) d.open = true;
}

async function poll() {
  const id = state.threadId;
  const d = state.detail;
  if (!id || !d || state.polling || document.hidden) return;
  // A run that is not running may still be resumed (an approval answered, a rewind): look now and then.
  if (d.status !== "running" && state.lastPoll && Date.now() - new Date(state.lastPoll).getTime() < IDLE_POLL_MS) return;
  state.polling = true;
  try {
    // Only what is new: events after the last seq seen. Most polls of a quiet run return nothing.
    let page = await api(`${threadPath(id)}/events?after=${state.lastSeq}&limit=1000`);
    const fresh = [...page.events];
    while (page.more && state.threadId === id) {
      page = await api(`${threadPath(id)}/events?after=${page.next}&limit=1000`);
      fresh.push(...page.events);
    }
    state.lastPoll = new Date().toISOString();
    if (state.threadId !== id) return;
    if (!fresh.length) {
      updateLive();
      return;
    }
    state.lastSeq = page.next;
    if (fresh.some((e) => e.type === "time_travel")) {
      // Another branch became current: every step may differ.
      await loadThread(id);
      if (state.threadId === id) renderThread();
      return;
    }
    const shown = [...state.steps.keys()];
    const from = shown.length ? Math.max(...shown) : 0;
    const [detail, steps] = await Promise.all([api(threadPath(id)), api(`${threadPath(id)}/steps?from=${from}`)]);
    if (state.threadId !== id) return;
    state.detail = detail;
    if (from <= 1 && state.earlier === 0) state.before = steps.before;
    for (const s of steps.steps) state.steps.set(s.step, s);
    state.totalSteps = steps.total;
    // Re-render the header and only the steps that changed; keep the reader's place and open outputs.
    const header = $("thread-header");
    if (header) header.replaceWith(renderHeader(detail));
    const body = $("tab-body");
    if (state.tab === "ledger" && body && !state.ledger.more && state.ledger.loaded) {
      state.ledger.events.push(...fresh.filter((e) => !state.ledger.type || e.type === state.ledger.type));
      state.ledger.next = state.lastSeq;
      renderLedgerTab(clear(body));
    }
    const timeline = $("timeline");
    if (timeline) {
      timeline.querySelector(":scope > li.empty")?.remove();
      if (from <= 1 && state.earlier === 0 && state.before.length) {
        const b = timeline.querySelector(":scope > li.before");
        const nb = beforeNode();
        if (b) b.replaceWith(nb);
        else timeline.prepend(nb);
      }
      // The count of steps shown grew; a load of earlier steps in flight redraws the control itself.
      const control = $("load-earlier");
      const next = earlierControl();
      if (control && next && state.loadingEarlier === null) control.replaceWith(next);
      for (const s of steps.steps) {
        const old = $(`step-${s.step}`);
        const node = renderStep(s);
        if (old) {
          const keys = openKeys(old);
          old.replaceWith(node);
          reopen(node, keys);
        } else timeline.append(node);
      }
    }
    document.title = `${detail.status} · ${oneLine(detail.goal, 60)} · ledgerloop`;
    updateLive();
    const t = state.threads.find((x) => x.thread === id);
    if (t && t.status !== detail.status) refreshThreads();
  } catch (err) {
    const live = $("live");
    live.hidden = false;
    clear(live).append(h("span", { class: "warn" }, `update failed: ${err.message}`));
  } finally {
    state.polling = false;
  }
}

// ---------------------------------------------------------------------------------------------

window.addEventListener("hashchange", onRoute);
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !$("panel").hidden) routeTo(state.threadId);
});

await refreshThreads();
await onRoute();
setInterval(poll, POLL_MS);
setInterval(() => {
  if (!document.hidden) refreshThreads();
}, LIST_REFRESH_MS);
