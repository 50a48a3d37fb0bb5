// What a state location is, decided from its text alone: this module loads no database driver, so
// a run on a SQLite state never loads `pg` just to ask whether its state is PostgreSQL.

/** True when a state location is a PostgreSQL URL rather than a directory. */
export function isPostgresUrl(location: string | undefined | null): location is string {
  return typeof location === "string" && /^postgres(ql)?:\/\//i.test(location.trim());
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@");
  }
}
