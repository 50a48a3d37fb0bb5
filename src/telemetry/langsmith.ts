// LangSmith tracing is LangChain's own: with LANGSMITH_TRACING=true (or the LANGCHAIN_ names) every
// graph step and model call is traced, no code of ours needed. Offline, the client reports each
// failed upload on stderr, a few lines per step. So a run checks once, at start, that the endpoint
// answers; when it does not, tracing is switched off for this process with one warning instead.

const TRACING_VARS = ["LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"];
const DEFAULT_ENDPOINT = "https://api.smith.langchain.com";

/** Whether the environment turns LangSmith tracing on. */
export function langSmithTracingOn(env: NodeJS.ProcessEnv = process.env): boolean {
  return TRACING_VARS.some((k) => env[k]?.trim().toLowerCase() === "true");
}

/** The endpoint traces would go to. */
export function langSmithEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return (env.LANGSMITH_ENDPOINT ?? env.LANGCHAIN_ENDPOINT ?? DEFAULT_ENDPOINT).replace(/\/+$/, "");
}

/** Checks are per process: a runtime built twice (fork, replay) asks once. */
let checked: Promise<boolean> | null = null;

/**
 * When LangSmith tracing is on, asks its endpoint once whether it answers (any HTTP status counts:
 * a wrong key is LangSmith's to report). Unreachable: tracing is turned off for this process and
 * `warn` says so once. Returns whether tracing stays on; false, and no request, when it was off.
 */
export function checkLangSmith(warn: (message: string) => void, env: NodeJS.ProcessEnv = process.env, timeoutMs = 3000): Promise<boolean> {
  if (!langSmithTracingOn(env)) return Promise.resolve(false);
  checked ??= (async () => {
    const endpoint = langSmithEndpoint(env);
    try {
      const res = await fetch(`${endpoint}/info`, { signal: AbortSignal.timeout(timeoutMs) });
      await res.body?.cancel().catch(() => {});
      return true;
    } catch (err) {
      for (const k of TRACING_VARS) if (env[k] !== undefined) env[k] = "false";
      const why =
        (err as Error).name === "TimeoutError"
          ? `no answer in ${timeoutMs} ms`
          : ((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
      warn(`LangSmith tracing is on but ${endpoint} cannot be reached (${why}): tracing is off for this run`);
      return false;
    }
  })();
  return checked;
}
