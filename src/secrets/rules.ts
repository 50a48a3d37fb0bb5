import { isPlaceholderValue } from "./key-value.js";
import { keyBlockEnd } from "./pem.js";

/**
 * Credential formats recognised on their own, wherever they appear (the shapes a secret scanner
 * such as gitleaks knows, written here as our own patterns). Each rule names the format it hides,
 * so a reader of the ledger can tell what was there.
 *
 * Every pattern must stay linear on adversarial input: bounded or literal-anchored quantifiers only,
 * no nested unbounded repetition. `keywords` (any one must occur, case-sensitive) let most rules
 * skip a text without running their regex at all.
 */

export interface FormatRule {
  /** Short name shown in the replacement: `[REDACTED]:<id>`. */
  id: string;
  re: RegExp;
  /** Literal substrings one of which every match contains (a cheap pre-check). */
  keywords?: string[];
  /** A pre-check regex starting with a literal, for a rule whose own regex starts with a class. */
  gate?: RegExp;
  /**
   * When the match carries context that must stay (`AccountKey=` of a connection string, the user
   * of a URL): group 1 is that leading context, group 2 the secret. Default: the whole match.
   */
  group?: 2;
  /** Whether a match really is a secret (for shapes that ordinary prose can also take). */
  accept?: (secret: string) => boolean;
  /**
   * For a secret whose extent no linear regex can bound (a key block): `re` matches its start, and
   * this gives where it ends (exclusive), from the end of that match.
   */
  span?: (text: string, from: number) => number;
}

const b = String.raw;

// A token ends at a character that cannot continue it (letters, digits, - and _).
const END = b`(?![A-Za-z0-9_-])`;

/** The format rules, most specific first (a later rule never sees what an earlier one replaced). */
export const FORMAT_RULES: FormatRule[] = [
  // Private keys: PEM (RSA, EC, DSA, PKCS#8, encrypted, OpenSSH), SSH2 and PGP armour. The block
  // ends where a key's lines end (pem.ts): a truncated key hides its own lines, not what follows.
  {
    id: "private-key",
    re: /-----BEGIN[A-Z0-9 ]{0,40} (?:PRIVATE|SECRET) KEY(?: BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----/g,
    keywords: ["PRIVATE KEY", "SECRET KEY"],
    span: keyBlockEnd,
  },
  { id: "putty-key", re: /Private-Lines: *\d+\r?\n(?:[A-Za-z0-9+/=]{1,80}\r?\n?){1,200}/g, keywords: ["Private-Lines"] },
  { id: "age-key", re: /AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}/g, keywords: ["AGE-SECRET-KEY-1"] },

  // Cloud providers.
  { id: "aws", re: /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g, keywords: ["A3T", "AKIA", "ASIA", "ABIA", "ACCA"] },
  { id: "gcp-api-key", re: new RegExp(b`\bAIza[0-9A-Za-z_-]{35}${END}`, "g"), keywords: ["AIza"] },
  { id: "gcp-oauth", re: new RegExp(b`\b(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[0-9A-Za-z_-]{20,})${END}`, "g"), keywords: ["GOCSPX-", "ya29."] },
  // Azure storage / service bus connection strings and SAS signatures: keep the field name.
  {
    id: "azure",
    re: /\b((?:Account|SharedAccess)Key=)([A-Za-z0-9+/]{20,}={0,2})/g,
    keywords: ["AccountKey=", "SharedAccessKey="],
    group: 2,
  },
  { id: "azure-sas", re: /([?&]sig=)([A-Za-z0-9%+/=]{20,})/g, keywords: ["sig="], group: 2 },
  { id: "azure-ad", re: /(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])/g, keywords: ["Q~"] },
  { id: "alibaba", re: new RegExp(b`\bLTAI[A-Za-z0-9]{20}${END}`, "g"), keywords: ["LTAI"] },
  { id: "digitalocean", re: new RegExp(b`\bdo[opr]_v1_[a-f0-9]{64}${END}`, "g"), keywords: ["_v1_"] },
  { id: "heroku", re: new RegExp(b`\bHRKU-[A-Za-z0-9_-]{20,}`, "g"), keywords: ["HRKU-"] },
  // Heroku's classic API key is a bare UUID: recognisable only next to the word "heroku".
  {
    id: "heroku",
    re: /(heroku[\w.-]{0,30}["'`]?[ \t]*(?::=|=>|[=:])[ \t]*["'`]?)([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})/gi,
    group: 2,
  },
  { id: "cloudflare", re: /\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}/g, keywords: ["v1.0-"] },

  // Source hosting and package registries.
  { id: "github", re: new RegExp(b`\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{20,255})${END}`, "g"), keywords: ["gh", "github_pat_"] },
  {
    id: "gitlab",
    re: new RegExp(b`\b(?:gl(?:pat|dt|ptt|rt|cbt|ft|imt|oas|soat|agent)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,})`, "g"),
    keywords: ["gl", "GR1348941"],
  },
  { id: "npm", re: new RegExp(b`\bnpm_[A-Za-z0-9]{36}${END}`, "g"), keywords: ["npm_"] },
  { id: "pypi", re: /\bpypi-AgE[A-Za-z0-9_-]{50,}/g, keywords: ["pypi-AgE"] },
  { id: "rubygems", re: new RegExp(b`\brubygems_[a-f0-9]{48}${END}`, "g"), keywords: ["rubygems_"] },
  { id: "dockerhub", re: new RegExp(b`\bdckr_pat_[A-Za-z0-9_-]{20,}`, "g"), keywords: ["dckr_pat_"] },
  { id: "atlassian", re: /\bATATT3[A-Za-z0-9_=-]{100,}/g, keywords: ["ATATT3"] },

  // AI providers (Anthropic before OpenAI: both start with sk-).
  { id: "anthropic", re: /\bsk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{20,}/g, keywords: ["sk-ant-"] },
  { id: "openai", re: /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}/g, keywords: ["sk-"] },
  { id: "huggingface", re: new RegExp(b`\b(?:hf_|api_org_)[A-Za-z]{30,}${END}`, "g"), keywords: ["hf_", "api_org_"] },
  { id: "groq", re: new RegExp(b`\bgsk_[A-Za-z0-9]{40,}${END}`, "g"), keywords: ["gsk_"] },
  { id: "xai", re: new RegExp(b`\bxai-[A-Za-z0-9]{60,}${END}`, "g"), keywords: ["xai-"] },
  { id: "perplexity", re: new RegExp(b`\bpplx-[A-Za-z0-9]{40,}${END}`, "g"), keywords: ["pplx-"] },
  { id: "replicate", re: new RegExp(b`\br8_[A-Za-z0-9]{37}${END}`, "g"), keywords: ["r8_"] },

  // Messaging and payments.
  { id: "slack", re: /\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxoxe\.xox[bp]-\d-[A-Za-z0-9-]{20,}|\bxapp-\d-[A-Za-z0-9-]{20,}/g, keywords: ["xox", "xapp-"] },
  { id: "slack-webhook", re: /\bhooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9+/_-]{20,}/g, keywords: ["hooks.slack.com"] },
  { id: "stripe", re: new RegExp(b`\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}${END}|\bwhsec_[A-Za-z0-9]{20,}`, "g"), keywords: ["k_live_", "k_test_", "k_prod_", "whsec_"] },
  { id: "twilio", re: new RegExp(b`\bSK[0-9a-fA-F]{32}${END}`, "g"), keywords: ["SK"] },
  { id: "sendgrid", re: new RegExp(b`\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}${END}`, "g"), keywords: ["SG."] },
  { id: "mailgun", re: new RegExp(b`\bkey-[0-9a-f]{32}${END}`, "g"), keywords: ["key-"] },
  { id: "mailchimp", re: new RegExp(b`\b[0-9a-f]{32}-us\d{1,2}${END}`, "g"), gate: /-us\d/ },
  {
    id: "discord",
    re: new RegExp(b`\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}${END}`, "g"),
  },
  {
    id: "discord-webhook",
    re: /\bdiscord(?:app)?\.com\/api\/webhooks\/\d{5,25}\/[A-Za-z0-9_-]{30,}/g,
    keywords: ["/api/webhooks/"],
  },
  { id: "telegram", re: new RegExp(b`(?<![0-9])\d{5,16}:A[A-Za-z0-9_-]{34}${END}`, "g"), keywords: [":A"] },
  { id: "shopify", re: new RegExp(b`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}${END}`, "g"), keywords: ["shp"] },
  { id: "square", re: new RegExp(b`\b(?:sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}|EAAA[A-Za-z0-9_-]{60})${END}`, "g"), keywords: ["sq0", "EAAA"] },

  // Infrastructure and SaaS tokens with a fixed prefix.
  { id: "vault", re: new RegExp(b`\bhv[sbr]\.[A-Za-z0-9_-]{24,}`, "g"), keywords: ["hvs.", "hvb.", "hvr."] },
  { id: "terraform", re: /\b[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_=-]{60,}/g, keywords: [".atlasv1."] },
  { id: "doppler", re: /\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}/g, keywords: ["dp."] },
  { id: "databricks", re: new RegExp(b`\bdapi[a-f0-9]{32}(?:-\d)?${END}`, "g"), keywords: ["dapi"] },
  { id: "grafana", re: /\b(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8})/g, keywords: ["glc_", "glsa_"] },
  { id: "sentry", re: /\bsntr[ysu]_[A-Za-z0-9+/=_-]{40,}/g, keywords: ["sntr"] },
  { id: "linear", re: new RegExp(b`\blin_api_[A-Za-z0-9]{40}${END}`, "g"), keywords: ["lin_api_"] },
  { id: "postman", re: /\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}/g, keywords: ["PMAK-"] },
  { id: "pulumi", re: new RegExp(b`\bpul-[a-f0-9]{40}${END}`, "g"), keywords: ["pul-"] },
  { id: "newrelic", re: new RegExp(b`\bNR(?:AK|II|JS)-[A-Za-z0-9]{19,32}${END}`, "g"), keywords: ["NRAK-", "NRII-", "NRJS-"] },
  { id: "notion", re: new RegExp(b`\b(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})${END}`, "g"), keywords: ["ntn_", "secret_"] },
  { id: "figma", re: new RegExp(b`\bfigd_[A-Za-z0-9_-]{40,}`, "g"), keywords: ["figd_"] },
  { id: "planetscale", re: /\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,64}/g, keywords: ["pscale_"] },
  { id: "supabase", re: new RegExp(b`\bsbp_[a-f0-9]{40}${END}`, "g"), keywords: ["sbp_"] },
  { id: "onepassword", re: /\bops_eyJ[A-Za-z0-9+/]{100,}={0,3}/g, keywords: ["ops_eyJ"] },
  { id: "dynatrace", re: /\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}/g, keywords: ["dt0c01."] },
  { id: "fly", re: /\b(?:fo1_[A-Za-z0-9_-]{43}|FlyV1 fm[12][ar]?_[A-Za-z0-9+/=,_-]{100,})/g, keywords: ["fo1_", "FlyV1"] },

  // JSON Web Tokens (the payload of a JWT is JSON, so both parts start with eyJ).
  { id: "jwt", re: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, keywords: ["eyJ"] },

  // Authorization headers (and the same words in a curl -H). Prose ("Basic authentication") is a
  // letters-only word: a credential has a digit or a symbol, or is long.
  {
    id: "auth-header",
    re: /\b((?:Bearer|Basic|Token)[ \t]+)([A-Za-z0-9._~+/-]{8,}=*)/g,
    keywords: ["Bearer", "Basic", "Token"],
    group: 2,
    accept: (s) => s.length >= 24 || /[^A-Za-z]/.test(s),
  },

  // Credentials in URLs: scheme://user:password@host, also with an empty user (redis://:pw@host).
  // (The match starts at "://", a literal, so that the scan is fast; the scheme needs no check.)
  {
    id: "url-password",
    re: /(:\/\/[^\s:/@]{0,200}:)([^\s@/]{1,200})@/g,
    keywords: ["://"],
    group: 2,
    accept: (s) => !isPlaceholderValue(s), // `user:${PASSWORD}@`, `username:password@` in docs
  },
  // curl -u user:password / --user=user:password.
  { id: "curl-user", re: /(\s(?:-u|--user)(?:=|[ \t]+)["']?[^\s:"']{1,100}:)([^\s"']{1,200})/g, keywords: ["-u", "--user"], group: 2 },
];
