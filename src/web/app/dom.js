// @ts-check
/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// Building the page. Everything shown comes from the ledger, which holds model and tool output: it
// is treated as hostile. Text only ever reaches the DOM through text nodes and attribute values
// (h() below); nothing here assigns innerHTML, and the server's CSP forbids inline script anyway.

/**
 * @typedef {Node | string | number | boolean | null | undefined | any[]} Child
 * What h() and append() take as children: nodes, text (as text nodes), nested lists; null, undefined and false are skipped.
 */

/** @param {string} id */
export const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * Builds an element. Strings become text nodes; only known-safe properties are set.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any> | null} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = Array.isArray(v) ? v.filter(Boolean).join(" ") : v;
    else if (k === "onclick" || k === "onchange" || k === "ontoggle") el.addEventListener(k.slice(2), v);
    else if (k === "href") el.setAttribute("href", String(v).startsWith("#") ? v : "#/");
    else if (k === "style") for (const [p, val] of Object.entries(v)) el.style.setProperty(p, String(val));
    else if (k === "open" || k === "hidden" || k === "disabled") /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (el))[k] = Boolean(v);
    else if (k === "dataset") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

/**
 * @template {Element} E
 * @param {E} el
 * @param {Child[]} children
 * @returns {E}
 */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/**
 * @template {Element} E
 * @param {E} el
 * @returns {E}
 */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/**
 * @param {string | null | undefined} status
 * @param {string} [extra]
 */
export function statusPill(status, extra) {
  return h("span", { class: ["pill", `st-${status || "unknown"}`], title: extra }, (status || "unknown").replace(/_/g, " "));
}

/**
 * @param {Element} container
 * @param {unknown} err
 */
export function renderError(container, err) {
  const e = /** @type {{ status?: number; message?: string }} */ (err ?? {});
  clear(container).append(h("div", { class: "error-box" }, h("strong", {}, e.status === 404 ? "Not found. " : "Could not load. "), e.message || String(err)));
}
