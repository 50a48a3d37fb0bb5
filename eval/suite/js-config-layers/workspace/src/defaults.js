/** Every setting the app has, with its default. */
export const defaults = {
  server: { host: "127.0.0.1", port: 8080 },
  log: { level: "info", json: false },
  db: { url: "sqlite://app.db", poolSize: 5 },
};
