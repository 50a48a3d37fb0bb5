/**
 * Crash injection for the crash-and-resume tests: `LEDGERLOOP_FAILPOINT=<name>:<n>` makes the
 * process SIGKILL itself right after the n-th time it passes the named point (e.g.
 * `ledger-append:7`, `checkpoint-put:3`). A real kill at an exact moment, with no test double in
 * the code path; a no-op when the variable is unset.
 */
const spec = process.env.LEDGERLOOP_FAILPOINT?.match(/^([a-z-]+):(\d+)$/);
const counts = new Map<string, number>();

/** Marks a point a crash test may kill the process at. */
export function failpoint(name: string): void {
  if (!spec || spec[1] !== name) return;
  const n = (counts.get(name) ?? 0) + 1;
  counts.set(name, n);
  if (n === Number(spec[2])) process.kill(process.pid, "SIGKILL");
}
