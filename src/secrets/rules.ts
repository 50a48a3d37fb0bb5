import { CONTEXT_RULES } from "./context-rules.js";
import type { FormatRule } from "./format-rule.js";
import { KEY_RULES } from "./key-rules.js";
import { PROVIDER_RULES } from "./provider-rules.js";

/**
 * Credential formats recognised on their own, wherever they appear, each rule naming the format it
 * hides so that a reader of the ledger can tell what was there. gitleaks' rule set is the floor:
 * every family of its shaped rules has one here (key-rules.ts: private keys and key bodies;
 * provider-rules.ts: cloud, CI, registries, AI, chat, payments, SaaS; context-rules.ts: JWTs,
 * headers, URLs, command-line passwords, .netrc). Its keyword-and-entropy rules (a provider's
 * name or `api_key` assigned a random value) are key-value.ts's.
 */

export type { FormatRule } from "./format-rule.js";

/** The format rules, most specific first (a later rule never sees what an earlier one replaced). */
export const FORMAT_RULES: FormatRule[] = [...KEY_RULES, ...PROVIDER_RULES, ...CONTEXT_RULES];
