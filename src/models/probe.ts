import { errorMessage } from "../errors.js";
import { defaultRedactor } from "../secrets.js";

export interface EndpointProbe {
  ok: boolean;
  detail: string;
}

/**
 * Asks an OpenAI-compatible server which models it serves (GET <base>/models), so that a wrong URL,
 * a rejected key or a misspelt model name shows before a run instead of at its first step. Servers
 * without that route (some proxies) pass with a note: only a chat request would tell then.
 */
export async function probeEndpoint(o: { baseURL: string; apiKey?: string; model: string; timeoutMs?: number }): Promise<EndpointProbe> {
  const url = `${o.baseURL.replace(/\/+$/, "")}/models`;
  const timeoutMs = o.timeoutMs ?? 5000;
  const redact = (s: string) => {
    const out = o.apiKey ? s.split(o.apiKey).join("[REDACTED]") : s;
    return defaultRedactor.redact(out).replace(/\s+/g, " ").slice(0, 300);
  };
  let res: Response;
  try {
    res = await fetch(url, {
      headers: o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const cause = (err as { cause?: unknown })?.cause;
    const why = (err as Error)?.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : errorMessage(cause ?? err);
    return { ok: false, detail: `${o.baseURL} is unreachable (${redact(why)}); check OPENAI_BASE_URL and that the server is running` };
  }
  const body = await res.text().catch(() => "");
  if (res.status === 401 || res.status === 403) {
    return { ok: false, detail: `${o.baseURL} refused the API key (HTTP ${res.status}); check OPENAI_API_KEY` };
  }
  if (res.status === 404 || res.status === 405) {
    return { ok: true, detail: `${o.baseURL} answers but lists no models (HTTP ${res.status} on /models); "${o.model}" is checked at the first request` };
  }
  if (!res.ok) return { ok: false, detail: `${o.baseURL} answered HTTP ${res.status} on /models: ${redact(body)}` };
  let ids: string[] = [];
  try {
    const data = (JSON.parse(body) as { data?: Array<{ id?: unknown }> }).data ?? [];
    ids = data.map((m) => String(m.id ?? "")).filter(Boolean);
  } catch {
    return { ok: false, detail: `${o.baseURL}/models did not answer JSON; is OPENAI_BASE_URL the API root (often ending in /v1)?` };
  }
  if (!ids.includes(o.model)) {
    const shown = ids.slice(0, 10).join(", ") + (ids.length > 10 ? `, … (${ids.length} in all)` : "");
    return { ok: false, detail: `${o.baseURL} does not serve "${o.model}"; it serves: ${shown || "(none)"}` };
  }
  return { ok: true, detail: `${o.baseURL} serves "${o.model}" (${ids.length} model${ids.length === 1 ? "" : "s"} listed)` };
}
