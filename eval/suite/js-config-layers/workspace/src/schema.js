/** The type of every setting, by dotted key. A list is the set of allowed strings. */
export const schema = {
  "server.host": "string",
  "server.port": "port",
  "log.level": ["debug", "info", "warn", "error"],
  "log.json": "boolean",
  "db.url": "string",
  "db.poolSize": "int",
};
