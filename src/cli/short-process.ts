import v8 from "node:v8";

// V8 optimises a function (TurboFan, on a background thread) once its interrupt budget has run out a
// few times: in a command that lives half a second, that compile work is spent on code that
// finishes before it pays back. `ledgerloop search` on a 2,000-file index spent ~80 ms of its
// ~480 ms CPU there (Node 20, bench/startup.ts). Four times the budget (Node 20's default is 67,584)
// keeps optimising code that stays hot, such as a first index of a large workspace, and skips the
// rest; turning the optimiser off (--no-opt) saved no more and would slow that first index.
const SHORT_PROCESS_INTERRUPT_BUDGET = 4 * 67_584;

/** Tunes V8 for a command that is expected to finish within a second: it optimises only code that stays hot. */
export function tuneForShortProcess(): void {
  v8.setFlagsFromString(`--interrupt-budget=${SHORT_PROCESS_INTERRUPT_BUDGET}`);
}
