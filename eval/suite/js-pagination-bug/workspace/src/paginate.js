import { decodeCursor, encodeCursor } from "./cursor.js";
import { sorted } from "./store.js";

/** One page of the feed: { items, next } where next is a cursor or null on the last page. */
export function listPage(store, { limit = 20, cursor = null, order = "asc" } = {}) {
  let items = sorted(store, order);
  if (cursor) {
    const pos = decodeCursor(cursor);
    items = items.filter((i) => (order === "desc" ? i.createdAt < pos.t : i.createdAt > pos.t));
  }
  const page = items.slice(0, limit);
  const next = items.length > limit ? encodeCursor(page[page.length - 1]) : null;
  return { items: page, next };
}
