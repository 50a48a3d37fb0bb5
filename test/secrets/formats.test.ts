import { describe, it, expect } from "vitest";
import { createRedactor, REDACTED } from "../../src/secrets.js";

// Samples are assembled from parts so that this file is not itself a secret-scanner hit.
const rep = (c: string, n: number) => c.repeat(n);
const mix = (n: number, alphabet = "aZ3kQ9xW2mP7vB5nR8tY4") => Array.from({ length: n }, (_, i) => alphabet[(i * 7 + 3) % alphabet.length]).join("");
const hex = (n: number) => Array.from({ length: n }, (_, i) => "0123456789abcdef"[(i * 5 + 1) % 16]).join("");
const b64 = (s: string) => Buffer.from(s).toString("base64");
const pem = (kind: string) =>
  `-----BEGIN ${kind}-----\n${mix(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")}\n${mix(40, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC")}==\n-----END ${kind}-----`;

/** [format, text holding it, the secret part that must disappear]. */
const MUST_REDACT: Array<[string, string, string]> = [
  ["AWS access key id", `aws_access_key_id = ${"AKIA" + "Z7QW3XK9PLM2NB4V"}`, "AKIA" + "Z7QW3XK9PLM2NB4V"],
  ["AWS STS key id", `"AccessKeyId": "${"ASIA" + "Q2W3E4R5T6Y7U8I9"}"`, "ASIA" + "Q2W3E4R5T6Y7U8I9"],
  ["AWS secret key (credentials file)", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
  ["AWS secret key (env)", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
  ["AWS secret key (sts json)", `{"SecretAccessKey": "${mix(40)}", "SessionToken": "${mix(60)}"}`, mix(40)],
  ["GCP API key", `const key = "${"AIza" + mix(35)}";`, "AIza" + mix(35)],
  [
    "GCP service account private_key",
    `{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC${mix(40)}\\n-----END PRIVATE KEY-----\\n", "client_email": "x@y.iam.gserviceaccount.com"}`,
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
  ],
  ["GCP OAuth client secret", `client: ${"GOCSPX-" + mix(28)}`, "GOCSPX-" + mix(28)],
  ["Azure storage connection string", `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${mix(86)}==;EndpointSuffix=core.windows.net`, mix(86)],
  ["Azure SAS", `https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=${mix(40)}%3D`, mix(40)],
  ["Azure AD client secret", `secret: ${"abc8Q~" + mix(34)}`, "abc8Q~" + mix(34)],
  ["GitHub classic PAT", `token ${"ghp_" + mix(36)}`, "ghp_" + mix(36)],
  ["GitHub OAuth", "gho_" + mix(36), "gho_" + mix(36)],
  ["GitHub user-to-server", "ghu_" + mix(36), "ghu_" + mix(36)],
  ["GitHub server-to-server", "ghs_" + mix(36), "ghs_" + mix(36)],
  ["GitHub refresh", "ghr_" + mix(36), "ghr_" + mix(36)],
  ["GitHub fine-grained PAT", "github_pat_" + mix(22) + "_" + mix(59), "github_pat_" + mix(22)],
  ["GitLab PAT", `PRIVATE-TOKEN: ${"glpat-" + mix(20)}`, "glpat-" + mix(20)],
  ["Slack bot token", "xoxb-" + "123456789012-1234567890123-" + mix(24), mix(24)],
  ["Slack user token", "xoxp-" + "123456789012-1234567890123-" + mix(24), mix(24)],
  ["Slack webhook", `curl -X POST https://hooks.slack.com/services/T0${mix(8)}/B0${mix(8)}/${mix(24)}`, mix(24)],
  ["Stripe live secret", "sk_live_" + mix(24), "sk_live_" + mix(24)],
  ["Stripe restricted", "rk_live_" + mix(24), "rk_live_" + mix(24)],
  ["Stripe webhook secret", "whsec_" + mix(32), "whsec_" + mix(32)],
  ["OpenAI legacy", "sk-" + mix(48), "sk-" + mix(48)],
  ["OpenAI project", "sk-proj-" + mix(80), "sk-proj-" + mix(80)],
  ["Anthropic", "sk-ant-api03-" + mix(93) + "AA", "sk-ant-api03-" + mix(93)],
  ["Hugging Face", "hf_" + mix(34, "abcdefghijklmnopqrstuvwxyzABCDEFGH"), "hf_" + mix(34, "abcdefghijklmnopqrstuvwxyzABCDEFGH")],
  ["npm", `//registry.npmjs.org/:_authToken=${"npm_" + mix(36)}`, "npm_" + mix(36)],
  ["PyPI", "pypi-AgEIcHlwaS5vcmc" + mix(70), "pypi-AgEIcHlwaS5vcmc"],
  ["Twilio API key", "SK" + hex(32), "SK" + hex(32)],
  ["Twilio auth token (by key)", `TWILIO_AUTH_TOKEN=${hex(32)}`, hex(32)],
  ["SendGrid", "SG." + mix(22) + "." + mix(43), "SG." + mix(22)],
  ["Mailgun", "key-" + hex(32), "key-" + hex(32)],
  ["Discord bot token", "MT" + mix(24) + "." + mix(6) + "." + mix(38), mix(38)],
  ["Discord webhook", `https://discord.com/api/webhooks/123456789012345678/${mix(68)}`, mix(68)],
  ["Telegram bot token", `bot${"123456789"}:AA${mix(33)}`, "AA" + mix(33)],
  ["Shopify", "shpat_" + hex(32), "shpat_" + hex(32)],
  ["DigitalOcean", "dop_v1_" + hex(64), "dop_v1_" + hex(64)],
  ["Heroku (new)", "HRKU-" + mix(60), "HRKU-" + mix(60)],
  ["Heroku (by context)", "heroku_api_key: 01234567-89ab-cdef-0123-456789abcdef", "01234567-89ab-cdef-0123-456789abcdef"],
  ["Vault", "hvs." + mix(90), "hvs." + mix(90)],
  ["Databricks", "dapi" + hex(32), "dapi" + hex(32)],
  ["age", "AGE-SECRET-KEY-1" + rep("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 2).slice(0, 58).toUpperCase(), "AGE-SECRET-KEY-1"],
  ["JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + mix(43), "eyJzdWIiOiIxMjM0NTY3ODkwIn0"],
  ["RSA private key", pem("RSA PRIVATE KEY"), "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC".slice(0, 20)],
  ["PKCS#8 private key", pem("PRIVATE KEY"), mix(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")],
  ["EC private key", pem("EC PRIVATE KEY"), mix(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")],
  ["encrypted private key", pem("ENCRYPTED PRIVATE KEY"), mix(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")],
  ["OpenSSH private key", pem("OPENSSH PRIVATE KEY"), mix(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/")],
  ["PGP private key block", `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF${mix(60)}\n=${mix(4)}\n-----END PGP PRIVATE KEY BLOCK-----`, "lQOYBF" + mix(60)],
  ["truncated private key", `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA${mix(40)}`, "b3BlbnNzaC1rZXktdjEAAAAA"],
  ["postgres URL", "DATABASE_URL=postgres://app:s3cr3t-Pw@db.internal:5432/app", "s3cr3t-Pw"],
  ["mongodb+srv URL", "mongodb+srv://admin:hunter2x@cluster0.abcde.mongodb.net/test", "hunter2x"],
  ["redis URL, empty user", "redis://:r3d1sPass@cache:6379/0", "r3d1sPass"],
  ["Bearer header", `curl -H "Authorization: Bearer ${mix(40)}" https://api`, mix(40)],
  ["Basic header", `Authorization: Basic ${b64("alice:opensesame1")}`, b64("alice:opensesame1")],
  ["curl -u", "curl -u alice:0pen5esame https://x", "0pen5esame"],
  // Key/value heuristics.
  ["password=", "password=hunter2", "hunter2"],
  ["password= (letters only)", "mysql_connect password=hunter", "hunter"],
  ["PASSWORD env", "DB_PASSWORD=correcthorse", "correcthorse"],
  ["export TOKEN", "export API_TOKEN=abcdefghij", "abcdefghij"],
  ["STRIPE_KEY env", "STRIPE_KEY=plainletters", "plainletters"],
  ["passwd yaml", "passwd: s3cr3t!", "s3cr3t!"],
  ["json secret", `{"client_secret": "myClientSecretValue"}`, "myClientSecretValue"],
  ["yaml quoted", "api_key: 'some api key value'", "some api key value"],
  ["code string", `const apiKey = "k-12345-abcde";`, "k-12345-abcde"],
  ["private_key field", `private_key = "${mix(30)}"`, mix(30)],
  ["access_key", `access_key: ${mix(20)}`, mix(20)],
  ["auth field", `"auth": "${b64("user:pass1234")}"`, b64("user:pass1234")],
  ["--password flag", "mysqladmin --password s3cretpw status", "s3cretpw"],
  ["--password= flag", "psql --password=s3cretpw", "s3cretpw"],
  ["--token flag", "gh auth login --token abc123def456", "abc123def456"],
  ["go :=", `token := "tok_abc_123"`, "tok_abc_123"],
  ["passphrase", "PASSPHRASE='long pass phrase'", "long pass phrase"],
  ["query string", "https://x/api?user=bob&password=pa55word&x=1", "pa55word"],
  // Base64 of a file holding keys, wrapped at 76 columns as `base64` prints it.
  [
    "base64 of credentials",
    b64("[default]\naws_access_key_id = AKIA" + "Z7QW3XK9PLM2NB4V\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n").replace(
      /(.{76})/g,
      "$1\n",
    ),
    b64("[default]\naws_access_key_id").slice(0, 20),
  ],
  ["base64 of password line", b64("password=hunter2\n"), b64("password=hunter2\n")],
  [
    "base64 url-safe of token",
    Buffer.from("token: " + "ghp_" + mix(36)).toString("base64url"),
    Buffer.from("token: " + "ghp_" + mix(36)).toString("base64url"),
  ],
];

/** Text that must come out unchanged. */
const MUST_KEEP: Array<[string, string]> = [
  ["identifiers", "const passwordField = form.password; tokenizer.tokens(); keyboard.key = 'Enter';"],
  ["TS types", "interface Login { password: string; token?: string; apiKey: ApiKey; secret: Buffer }"],
  ["member access", "const token = config.token;\nconst password = opts.password"],
  ["calls", "password = getpass.getpass(); token = os.environ['TOKEN']; secret = read_secret()"],
  ["kwargs same name", "connect(host=host, password=password, token=token)"],
  [
    "placeholders",
    'PASSWORD=\nAPI_KEY=""\npassword: null\ntoken: ${GITHUB_TOKEN}\nsecret: "{{ vault_secret }}"\napi_key: <your-api-key>\nTOKEN=$TOKEN\npassword=changeme\npassword: "xxxxxxxx"',
  ],
  [
    "names ending in a non-secret word",
    "SECRET_NAME=my-secret\napi_key_id=123456789\nTOKEN_URL=https://auth.example.com/token\npassword_hint: first pet\ntoken_count=4096",
  ],
  ["git SHAs", "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39\nMerge: 1a2b3c4 5d6e7f8"],
  ["UUIDs", "thread 01234567-89ab-cdef-0123-456789abcdef run 7c9e6679-7425-40de-944b-e07fc1f90ae7"],
  ["base64 of ordinary text", b64("The quick brown fox jumps over the lazy dog, twice over.")],
  ["base64 of binary", Buffer.from(Array.from({ length: 120 }, (_, i) => (i * 37) % 256)).toString("base64")],
  ["hashes", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 integrity sha512-" + mix(86)],
  ["prose", "The password is checked against the policy. A Bearer token is sent. Basic authentication is off.\nUse a token: it expires after an hour."],
  ["URL without password", "https://user@example.com/path?x=1 and ssh://git@github.com:22/org/repo.git"],
  ["paths", "/work/wt/secrets/src/secrets/key-value.ts:12:3 node_modules/@langchain/langgraph-checkpoint-sqlite/dist/index.js"],
  ["sk- words", "the scikit sk-learn package; task-queue-depth-limit-exceeded-error"],
  ["log lines", "2024-05-01T12:00:00Z INFO auth: ok user=alice status=200 elapsed=12ms key: value"],
  ["hash of a password", "password_hash = bcrypt(password)"],
  ["curl without password", "git push -u origin main; curl -u alice https://x"],
  // Code found to be garbled by a first version (this repository's sources and node_modules).
  ["a ternary", 'const s = r.ok ? "PASS" : "MISS";'],
  ["UPPER_SNAKE constants in code", 'declare const DOCUMENT_KEY = "#document";\nconst NOT_SECRET = new Set(["X"]);'],
  ["type comparisons", 'if (typeof fields.apiKey === "function") {}'],
  ["env var names and doc placeholders", 'apiKey: "OPENAI_API_KEY",\nexport OPENAI_API_KEY="your-api-key"\nconst MCP_CREDENTIALS_REDACTED = "**REDACTED**";'],
  ["model tokens in a logprobs listing", "{ token: ' la', logprob: 0 }, { token: 'J' }"],
  [
    "templates and expressions",
    "headers: { authorization: `Bearer ${o.apiKey}` }\nconst token = ++state.token;\ntoken: 0,\nsecret: Array<string | null>;\ncredentials: ~/.ssh, ~/.aws",
  ],
  ["URL templates", "`mongodb://${string}:${string}@${string}` and mongodb://username:password@host"],
  // The command-line, .netrc, key-body and key-name rules of issue 32.
  [
    "flags that are not passwords",
    "mysql -u root -p shop\nmysql -P 3306 -h db\nssh -p 2222 host\ndocker run -p 8080:80 img\npsql -p 5432 -U app\ncp -a src dst\ngit commit -a -m wip\nredis-cli --askpass\nsshpass -f pw.txt ssh host\nzip -r a.zip dir\nopenssl rsa -passin env:KEY_PASS\nkeytool -storepass:env STORE_PASS",
  ],
  ["prose about default passwords", "The default password is admin123 until you change it; the machine password is in the vault."],
  [
    "code naming keys",
    'const cacheKey = "user:42:profile";\nsortKey: "created_at_v2",\n<Row key={item.id} />\nprimary_key = "id"\napi_version = "2023-05-15"\nkey: "images/2024/photo-01.png"\naccess_log: /var/log/nginx/access.log\nidempotency_key: "t1:decide:3"\nkeyboard_layout = "us-intl-2"\nkeyEncoder = require_hash.sha256;\n"Unexpected_token_A_constructor_method_accessor_or_property_was_expected_1068": "Unexpected token 1068.",',
  ],
  [
    "a certificate and a public key",
    `-----BEGIN CERTIFICATE-----\n${rep(mix(64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789+/") + "\n", 4)}-----END CERTIFICATE-----\n-----BEGIN PUBLIC KEY-----\n${rep(mix(64, "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA") + "\n", 3)}-----END PUBLIC KEY-----`,
  ],
  ["an ssh public key", `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${mix(43)} alice@laptop`],
  ["sha256 digests, one per line", rep(hex(64) + "\n", 5)],
  ["a data URI image", `<img src="data:image/png;base64,${Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 53) % 256)).toString("base64")}">`],
  [
    "76-column base64 of binary",
    Buffer.from(Array.from({ length: 400 }, (_, i) => (i * 91) % 256))
      .toString("base64")
      .replace(/(.{76})/g, "$1\n"),
  ],
];

describe("redactor: credential formats and key/value heuristics", () => {
  const r = createRedactor();
  it.each(MUST_REDACT)("hides %s", (_name, text, secret) => {
    const out = r.redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain(REDACTED);
  });
  it.each(MUST_KEEP)("leaves %s alone", (_name, text) => {
    expect(r.redact(text)).toBe(text);
  });

  it("keeps the key of an assignment and the rest of the line", () => {
    expect(r.redact("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY # prod")).toBe(`aws_secret_access_key = ${REDACTED} # prod`);
    expect(r.redact(`{"password": "hunter2", "user": "bob"}`)).toBe(`{"password": "${REDACTED}", "user": "bob"}`);
    expect(r.redact("postgres://app:s3cr3t@db:5432/x")).toBe(`postgres://app:${REDACTED}:url-password@db:5432/x`);
  });

  it("keeps line numbers when a multi-line secret is hidden", () => {
    const text = `a\n${pem("RSA PRIVATE KEY")}\nb`;
    const out = r.redact(text);
    expect(out.split("\n")).toHaveLength(text.split("\n").length);
    expect(out.split("\n").at(-1)).toBe("b");
  });

  it("hides a string under a secret-looking field of a structure", () => {
    const out = r.redactDeep({ env: { DB_PASSWORD: "plainletters", HOME: "/root" }, args: { password: "x", path: "a.txt" } });
    expect(out).toEqual({ env: { DB_PASSWORD: REDACTED, HOME: "/root" }, args: { password: REDACTED, path: "a.txt" } });
  });

  it("hides known values and their base64", () => {
    const k = createRedactor(["plain-value-123"]);
    expect(k.redact("echo plain-value-123")).toBe(`echo ${REDACTED}`);
    expect(k.redact(`x ${b64("the value is plain-value-123 ok")} y`)).toBe(`x ${REDACTED}:base64 y`);
  });
});
