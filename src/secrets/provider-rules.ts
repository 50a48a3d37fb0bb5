import { b, END, rx, type FormatRule } from "./format-rule.js";

/**
 * Tokens of providers that give them a recognisable shape (a fixed prefix, a checksum layout): the
 * shapes a secret scanner such as gitleaks knows, written here as our own patterns. Providers whose
 * tokens have no shape of their own (a bare hex string) are caught by the name they are assigned to
 * (key-value.ts). Order matters where prefixes overlap: the more specific rule comes first.
 */

const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

const CLOUD: FormatRule[] = [
  { id: "aws", re: /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g, keywords: ["A3T", "AKIA", "ASIA", "ABIA", "ACCA"] },
  {
    id: "aws-bedrock",
    re: /\b(?:ABSK[A-Za-z0-9+/]{109,269}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&_-]{20,2000})/g,
    keywords: ["ABSK", "bedrock-api-key-"],
  },
  { id: "gcp-api-key", re: rx(b`\bAIza[0-9A-Za-z_-]{35}${END}`), keywords: ["AIza"] },
  { id: "gcp-oauth", re: rx(b`\b(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[0-9A-Za-z_-]{20,})${END}`), keywords: ["GOCSPX-", "ya29."] },
  // Azure storage / service bus connection strings and SAS signatures: keep the field name.
  { id: "azure", re: /\b((?:Account|SharedAccess)Key=)([A-Za-z0-9+/]{20,}={0,2})/g, keywords: ["AccountKey=", "SharedAccessKey="], group: 2 },
  { id: "azure-sas", re: /([?&]sig=)([A-Za-z0-9%+/=]{20,})/g, keywords: ["sig="], group: 2 },
  { id: "azure-ad", re: /(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])/g, keywords: ["Q~"] },
  // Azure DevOps personal access tokens of the 84-character format carry two fixed signatures.
  { id: "azure-devops", re: rx(b`\b[A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9]{18}AZDO[A-Za-z0-9]{4}\b`), keywords: ["JQQJ9"] },
  { id: "alibaba", re: rx(b`\bLTAI[A-Za-z0-9]{20}${END}`), keywords: ["LTAI"] },
  { id: "tencent", re: rx(b`\bAKID[A-Za-z0-9]{32}${END}`), keywords: ["AKID"] },
  { id: "yandex", re: rx(b`\b(?:AQVN[A-Za-z0-9_-]{35,38}|t1\.[A-Za-z0-9_-]{1,200}={0,2}\.[A-Za-z0-9_-]{86}={0,2})${END}`), keywords: ["AQVN", "t1."] },
  { id: "digitalocean", re: rx(b`\bdo[opr]_v1_[a-f0-9]{64}${END}`), keywords: ["_v1_"] },
  { id: "heroku", re: rx(b`\bHRKU-[A-Za-z0-9_-]{20,}`), keywords: ["HRKU-"] },
  // Heroku's classic API key is a bare UUID: recognisable only next to the word "heroku".
  { id: "heroku", re: rx(b`(heroku[\w.-]{0,30}["'\x60]?[ \t]*(?::=|=>|[=:])[ \t]*["'\x60]?)(${UUID})`, "gi"), group: 2 },
  { id: "cloudflare", re: /\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}/g, keywords: ["v1.0-"] },
  { id: "openshift", re: rx(b`\bsha256~[A-Za-z0-9_-]{43}${END}`), keywords: ["sha256~"] },
  { id: "clickhouse", re: rx(b`\b4b1d[A-Za-z0-9]{38}${END}`), keywords: ["4b1d"] },
  { id: "netlify", re: rx(b`\bnfp_[A-Za-z0-9]{36,40}${END}`), keywords: ["nfp_"] },
  { id: "render", re: rx(b`\brnd_[A-Za-z0-9]{32}${END}`), keywords: ["rnd_"] },
  { id: "vercel-blob", re: rx(b`\bvercel_blob_rw_[A-Za-z0-9]{10,}_[A-Za-z0-9]{20,}`), keywords: ["vercel_blob_rw_"] },
  { id: "neon", re: rx(b`\bnapi_[a-z0-9]{64}${END}`), keywords: ["napi_"] },
  { id: "defined-networking", re: /\bdnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52}/g, keywords: ["dnkey-"] },
  { id: "scalingo", re: rx(b`\btk-us-[A-Za-z0-9_-]{48}${END}`), keywords: ["tk-us-"] },
];

const CODE_AND_CI: FormatRule[] = [
  { id: "github", re: rx(b`\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{20,255})${END}`), keywords: ["gh", "github_pat_"] },
  {
    id: "gitlab",
    re: rx(b`\b(?:gl(?:pat|dt|ptt|rt|cbt|ft|ffct|imt|oas|soat|agent)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,})`),
    keywords: ["gl", "GR1348941"],
  },
  { id: "gitlab", re: /(_gitlab_session=)([0-9a-z]{32})/g, keywords: ["_gitlab_session="], group: 2 },
  { id: "bitbucket", re: rx(b`\bATBB[A-Za-z0-9_=.-]{28,}`), keywords: ["ATBB"] },
  { id: "atlassian", re: /\bAT(?:ATT|CTT)3[A-Za-z0-9_=-]{100,}/g, keywords: ["ATATT3", "ATCTT3"] },
  { id: "buildkite", re: rx(b`\bbk(?:ua|ct|at)_[A-Za-z0-9]{40}${END}`), keywords: ["bkua_", "bkct_", "bkat_"] },
  { id: "circleci", re: rx(b`\bCCIP(?:AT|RJ)_[A-Za-z0-9]{22}_[a-f0-9]{40}${END}`), keywords: ["CCIPAT_", "CCIPRJ_"] },
  { id: "sourcegraph", re: rx(b`\bsgp_(?:(?:[a-fA-F0-9]{16}|local)_)?[a-fA-F0-9]{40}${END}`), keywords: ["sgp_"] },
  { id: "sonar", re: rx(b`\bsq[pua]_[a-f0-9]{40}${END}`), keywords: ["sqp_", "squ_", "sqa_"] },
  { id: "harness", re: rx(b`\b(?:pat|sat)\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}${END}`), keywords: ["pat.", "sat."] },
  { id: "octopus", re: rx(b`\bAPI-[A-Z0-9]{26}${END}`), keywords: ["API-"] },
  { id: "infracost", re: rx(b`\bico-[A-Za-z0-9]{32}${END}`), keywords: ["ico-"] },
  { id: "prefect", re: rx(b`\bpnu_[A-Za-z0-9]{36}${END}`), keywords: ["pnu_"] },
  // Package registries.
  { id: "npm", re: rx(b`\bnpm_[A-Za-z0-9]{36}${END}`), keywords: ["npm_"] },
  { id: "pypi", re: /\bpypi-AgE[A-Za-z0-9_-]{50,}/g, keywords: ["pypi-AgE"] },
  { id: "rubygems", re: rx(b`\brubygems_[a-f0-9]{48}${END}`), keywords: ["rubygems_"] },
  { id: "dockerhub", re: rx(b`\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}`), keywords: ["dckr_"] },
  { id: "nuget", re: rx(b`\boy2[a-z0-9]{43}${END}`), keywords: ["oy2"] },
  { id: "crates-io", re: rx(b`\bcio[A-Za-z0-9]{32}${END}`), keywords: ["cio"] },
  { id: "clojars", re: rx(b`\bCLOJARS_[a-z0-9]{60}${END}`), keywords: ["CLOJARS_"] },
  { id: "artifactory", re: rx(b`\b(?:AKCp[A-Za-z0-9]{69}|cmVmdGtu[A-Za-z0-9]{56})${END}`), keywords: ["AKCp", "cmVmdGtu"] },
];

const AI: FormatRule[] = [
  // Anthropic before OpenAI: both start with sk-.
  { id: "anthropic", re: /\bsk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{20,}/g, keywords: ["sk-ant-"] },
  { id: "openai", re: /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}/g, keywords: ["sk-"] },
  { id: "elevenlabs", re: rx(b`\bsk_[a-f0-9]{48}${END}`), keywords: ["sk_"] },
  { id: "huggingface", re: rx(b`\b(?:hf_|api_org_)[A-Za-z]{30,}${END}`), keywords: ["hf_", "api_org_"] },
  { id: "groq", re: rx(b`\bgsk_[A-Za-z0-9]{40,}${END}`), keywords: ["gsk_"] },
  { id: "xai", re: rx(b`\bxai-[A-Za-z0-9]{60,}${END}`), keywords: ["xai-"] },
  { id: "perplexity", re: rx(b`\bpplx-[A-Za-z0-9]{40,}${END}`), keywords: ["pplx-"] },
  { id: "replicate", re: rx(b`\br8_[A-Za-z0-9]{37}${END}`), keywords: ["r8_"] },
  { id: "langsmith", re: rx(b`\b(?:lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|ls__[a-f0-9]{32})${END}`), keywords: ["lsv2_", "ls__"] },
  { id: "tavily", re: rx(b`\btvly-(?:dev-|prod-)?[A-Za-z0-9]{32}${END}`), keywords: ["tvly-"] },
  { id: "pinecone", re: rx(b`\bpcsk_[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,}${END}`), keywords: ["pcsk_"] },
  { id: "together", re: rx(b`\btgp_v1_[A-Za-z0-9_-]{40,}`), keywords: ["tgp_v1_"] },
  { id: "cerebras", re: rx(b`\bcsk-[a-z0-9]{40,}${END}`), keywords: ["csk-"] },
  { id: "firecrawl", re: rx(b`\bfc-[a-f0-9]{32}${END}`), keywords: ["fc-"] },
  { id: "e2b", re: rx(b`\be2b_[a-f0-9]{40}${END}`), keywords: ["e2b_"] },
];

const CHAT_AND_PAYMENTS: FormatRule[] = [
  { id: "slack", re: /\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxoxe\.xox[bp]-\d-[A-Za-z0-9-]{20,}|\bxapp-\d-[A-Za-z0-9-]{20,}/g, keywords: ["xox", "xapp-"] },
  { id: "slack-webhook", re: /\bhooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9+/_-]{20,}/g, keywords: ["hooks.slack.com"] },
  { id: "teams-webhook", re: /\bwebhook\.office\.com\/webhookb2\/[A-Za-z0-9@/_-]{40,400}/g, keywords: ["webhook.office.com"] },
  { id: "zapier-webhook", re: /\bhooks\.zapier\.com\/hooks\/catch\/\d{1,12}\/[A-Za-z0-9]{4,}/g, keywords: ["hooks.zapier.com"] },
  {
    id: "stripe",
    re: rx(b`\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}${END}|\bwhsec_[A-Za-z0-9]{20,}`),
    keywords: ["k_live_", "k_test_", "k_prod_", "whsec_"],
  },
  { id: "twilio", re: rx(b`\bSK[0-9a-fA-F]{32}${END}`), keywords: ["SK"] },
  { id: "sendgrid", re: rx(b`\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}${END}`), keywords: ["SG."] },
  { id: "sendinblue", re: rx(b`\bx(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}${END}`), keywords: ["xkeysib-", "xsmtpsib-"] },
  { id: "mailgun", re: rx(b`\bkey-[0-9a-f]{32}${END}`), keywords: ["key-"] },
  { id: "mailchimp", re: rx(b`\b[0-9a-f]{32}-us\d{1,2}${END}`), gate: /-us\d/ },
  { id: "discord", re: rx(b`\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}${END}`) },
  { id: "discord-webhook", re: /\bdiscord(?:app)?\.com\/api\/webhooks\/\d{5,25}\/[A-Za-z0-9_-]{30,}/g, keywords: ["/api/webhooks/"] },
  { id: "telegram", re: rx(b`(?<![0-9])\d{5,16}:A[A-Za-z0-9_-]{34}${END}`), keywords: [":A"] },
  { id: "shopify", re: rx(b`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}${END}`), keywords: ["shp"] },
  { id: "square", re: rx(b`\b(?:sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}|EAAA[A-Za-z0-9_-]{60})${END}`), keywords: ["sq0", "EAAA"] },
  { id: "facebook", re: rx(b`\bEAA[MC][A-Za-z0-9]{100,}${END}`), keywords: ["EAAM", "EAAC"] },
  { id: "twitter-bearer", re: /(?<![A-Za-z0-9+/])A{22}[A-Za-z0-9%]{80,100}(?![A-Za-z0-9%+/])/g, keywords: ["AAAAAAAAAAAAAAAAAAAAAA"] },
  { id: "plaid", re: rx(b`\baccess-(?:sandbox|development|production)-${UUID}${END}`), keywords: ["access-"] },
  { id: "braintree", re: /\baccess_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}/g, keywords: ["access_token$"] },
  { id: "flutterwave", re: rx(b`\bFLW(?:SECK|PUBK)_TEST-[a-hA-H0-9]{12,32}(?:-X)?${END}`), keywords: ["FLWSECK_TEST-", "FLWPUBK_TEST-"] },
  { id: "duffel", re: rx(b`\bduffel_(?:test|live)_[A-Za-z0-9_=-]{43}`), keywords: ["duffel_"] },
  { id: "easypost", re: rx(b`\bEZ[AT]K[A-Za-z0-9]{54}${END}`), keywords: ["EZAK", "EZTK"] },
  { id: "shippo", re: rx(b`\bshippo_(?:live|test)_[a-fA-F0-9]{40}${END}`), keywords: ["shippo_"] },
];

const SAAS: FormatRule[] = [
  { id: "vault", re: rx(b`\bhv[sbr]\.[A-Za-z0-9_-]{24,}`), keywords: ["hvs.", "hvb.", "hvr."] },
  { id: "terraform", re: /\b[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_=-]{60,}/g, keywords: [".atlasv1."] },
  { id: "doppler", re: /\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}/g, keywords: ["dp."] },
  { id: "databricks", re: rx(b`\bdapi[a-f0-9]{32}(?:-\d)?${END}`), keywords: ["dapi"] },
  // Grafana's legacy API key is base64 of {"k":"…: before the JWT rule, which would take its eyJ.
  {
    id: "grafana",
    re: /\b(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,400}={0,3})/g,
    keywords: ["glc_", "glsa_", "eyJrIjoi"],
  },
  { id: "sentry", re: /\bsntr(?:ys|yu)_[A-Za-z0-9+/=_-]{40,}/g, keywords: ["sntry"] },
  { id: "linear", re: rx(b`\blin_api_[A-Za-z0-9]{40}${END}`), keywords: ["lin_api_"] },
  { id: "postman", re: /\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}/g, keywords: ["PMAK-"] },
  { id: "pulumi", re: rx(b`\bpul-[a-f0-9]{40}${END}`), keywords: ["pul-"] },
  { id: "newrelic", re: rx(b`\bNR(?:AK|II|JS)-[A-Za-z0-9]{19,32}${END}`), keywords: ["NRAK-", "NRII-", "NRJS-"] },
  { id: "notion", re: rx(b`\b(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})${END}`), keywords: ["ntn_", "secret_"] },
  { id: "figma", re: rx(b`\bfigd_[A-Za-z0-9_-]{40,}`), keywords: ["figd_"] },
  { id: "planetscale", re: /\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,64}/g, keywords: ["pscale_"] },
  { id: "supabase", re: rx(b`\b(?:sbp_[a-f0-9]{40}${END}|sb_secret_[A-Za-z0-9_-]{20,})`), keywords: ["sbp_", "sb_secret_"] },
  { id: "onepassword", re: /\bops_eyJ[A-Za-z0-9+/]{100,}={0,3}/g, keywords: ["ops_eyJ"] },
  { id: "dynatrace", re: /\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}/g, keywords: ["dt0c01."] },
  { id: "fly", re: /\b(?:fo1_[A-Za-z0-9_-]{43}|FlyV1 fm[12][ar]?_[A-Za-z0-9+/=,_-]{100,})/g, keywords: ["fo1_", "FlyV1"] },
  { id: "airtable", re: rx(b`\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}${END}`), keywords: ["pat"] },
  { id: "contentful", re: rx(b`\bCFPAT-[A-Za-z0-9_-]{43}`), keywords: ["CFPAT-"] },
  { id: "mapbox", re: rx(b`\b[st]k\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}`), keywords: ["k.eyJ"] },
  { id: "hubspot", re: rx(b`\bpat-(?:na|eu|ap)\d-${UUID}${END}`), keywords: ["pat-"] },
  { id: "typeform", re: rx(b`\btfp_[A-Za-z0-9_.=-]{59}`), keywords: ["tfp_"] },
  { id: "readme", re: rx(b`\brdme_[a-z0-9]{70}${END}`), keywords: ["rdme_"] },
  { id: "frameio", re: rx(b`\bfio-u-[A-Za-z0-9_=-]{64}`), keywords: ["fio-u-"] },
  { id: "adobe", re: rx(b`\bp8e-[A-Za-z0-9]{32}${END}`), keywords: ["p8e-"] },
  { id: "maxmind", re: rx(b`\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk${END}`), keywords: ["_mmk"] },
  { id: "settlemint", re: rx(b`\bsm_(?:aat|pat|sat)_[A-Za-z0-9]{16}${END}`), keywords: ["sm_aat_", "sm_pat_", "sm_sat_"] },
  { id: "intra42", re: rx(b`\bs-s4t2(?:ud|af)-[a-f0-9]{64}${END}`), keywords: ["s-s4t2"] },
  {
    id: "authress",
    re: /\b(?:sc|ext|scauth|authress)_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120}/g,
    keywords: [".acc_", ".acc-"],
  },
  { id: "dropbox", re: rx(b`\bsl\.(?:u\.)?[A-Za-z0-9_-]{130,}`), keywords: ["sl."] },
];

/** Provider token formats, most specific first. */
export const PROVIDER_RULES: FormatRule[] = [...CLOUD, ...CODE_AND_CI, ...AI, ...CHAT_AND_PAYMENTS, ...SAAS];
