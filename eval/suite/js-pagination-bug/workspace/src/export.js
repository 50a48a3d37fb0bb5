import { listPage } from "./paginate.js";

/** Every item of the feed, fetched page by page (as the nightly export does). */
export function exportAll(store, { pageSize = 50, order = "asc" } = {}) {
  const out = [];
  let cursor = null;
  do {
    const page = listPage(store, { limit: pageSize, cursor, order });
    out.push(...page.items);
    cursor = page.next;
  } while (cursor);
  return out;
}
