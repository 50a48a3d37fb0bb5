/** An in-memory activity store: items {id, createdAt (ms), kind, text}. */
export function createStore(items = []) {
  return { items: items.map((i) => ({ ...i })) };
}

export function add(store, item) {
  store.items.push({ ...item });
}

/** The items in feed order. */
export function sorted(store, order = "asc") {
  const dir = order === "desc" ? -1 : 1;
  return [...store.items].sort((a, b) => (a.createdAt > b.createdAt ? dir : -dir));
}
