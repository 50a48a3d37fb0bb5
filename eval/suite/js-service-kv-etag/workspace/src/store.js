/** The values, by key (strings). */
export function createStore() {
  const values = new Map();
  return {
    get: (key) => values.get(key),
    set: (key, value) => values.set(key, value),
    delete: (key) => values.delete(key),
    keys: () => [...values.keys()],
  };
}
