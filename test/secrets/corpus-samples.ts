/**
 * The secret corpus: one fake credential per format, in the text it would sit in (a config line, a
 * command, a header), with the part that must disappear. Values are generated with each format's
 * shape from a seeded generator (never real keys), and the prefixes are assembled from parts so
 * that this file is not itself a scanner hit. Shapes follow the formats' documentation and
 * gitleaks' rule fixtures.
 */

export interface Sample {
  /** The format, as a reader of the report would name it. */
  name: string;
  /** The text holding the secret, with its surroundings. */
  text: string;
  /** What must not be stored: the secret, or a long enough piece of it. */
  secret: string;
  /** Surrounding text that must stay. */
  keep: string[];
}

let seed = 0x2f6b3a91;
function next(): number {
  // xorshift32: deterministic, so a failure names the same value on every run.
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed;
}

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = "0123456789abcdef";
const B64 = ALNUM + "+/";
const URLSAFE = ALNUM + "-_";

/** `n` random characters of `alphabet`, each digit and letter class present when the alphabet has it. */
function r(alphabet: string, n: number): string {
  for (;;) {
    let s = "";
    for (let i = 0; i < n; i++) s += alphabet[next() % alphabet.length];
    const needsDigit = /\d/.test(alphabet) && n >= 8;
    if (!needsDigit || /\d/.test(s)) return s;
  }
}
const uuid = () => `${r(HEX, 8)}-${r(HEX, 4)}-4${r(HEX, 3)}-a${r(HEX, 3)}-${r(HEX, 12)}`;
const j = (...parts: string[]) => parts.join("");
const b64 = (s: string) => Buffer.from(s).toString("base64");
const lines = (s: string, width: number) => s.replace(new RegExp(`(.{${width}})`, "g"), "$1\n").replace(/\n$/, "");

/** A sample whose whole token is the secret. */
const tok = (name: string, token: string, before = "found ", after = " in the log"): Sample => ({
  name,
  text: `${before}${token}${after}`,
  secret: token,
  keep: [before.trim(), after.trim()].filter(Boolean),
});
/** A sample whose text is made around its secret. */
const ctx = (name: string, secret: string, make: (secret: string) => string, keep: string[]): Sample => ({ name, text: make(secret), secret, keep });
/** A key (or part of one) between two lines of ordinary text. */
const keyText = (name: string, key: string, secret: string): Sample => ({
  name,
  text: `key file:\n${key}\nafter the key`,
  secret,
  keep: ["key file:", "after the key"],
});

const pemBody = r(B64, 64 * 6);
const sshBody = j("b3BlbnNzaC1rZXktdjE", "AAAAA", r(B64, 70 * 5 - 24));
const derBody = j("MIIEvQ", "IBADANBgkqhkiG9w0BAQEFAASC", r(B64, 64 * 5 - 32));
const pgpBody = j("lQOYBG", r(B64, 64 * 4 - 6));
const dockerAuth = b64(`alice:${r(ALNUM, 14)}`);

export const SAMPLES: Sample[] = [
  // Cloud.
  tok("AWS access key id", j("AK", "IA", r(UPPER + DIGITS, 16)), "aws_access_key_id = "),
  ctx("AWS secret access key", r(B64, 40), (v) => `aws_secret_access_key = ${v}`, ["aws_secret_access_key ="]),
  tok("AWS Bedrock API key", j("AB", "SK", r(B64, 132))),
  tok("GCP API key", j("AI", "za", r(URLSAFE, 35)), 'const key = "', '";'),
  tok("GCP OAuth client secret", j("GOC", "SPX-", r(URLSAFE, 28))),
  tok("GCP OAuth access token", j("ya", "29.", r(URLSAFE, 120))),
  ctx(
    "Azure storage connection string",
    r(B64, 86),
    (v) => `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${v}==;EndpointSuffix=core.windows.net`,
    ["AccountName=acct;AccountKey=", "EndpointSuffix=core.windows.net"],
  ),
  ctx("Azure SAS signature", r(ALNUM, 43), (v) => `https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=${v}%3D`, ["sp=r&sig="]),
  tok("Azure AD client secret", j(r(ALNUM, 3), "8Q~", r(ALNUM, 34))),
  tok("Azure DevOps PAT", j(r(ALNUM, 52), "JQQJ", "99", r(ALNUM, 18), "AZ", "DO", r(ALNUM, 4))),
  tok("Alibaba access key", j("LT", "AI", r(ALNUM, 20))),
  tok("Tencent secret id", j("AK", "ID", r(ALNUM, 32))),
  tok("Yandex API key", j("AQ", "VN", r(URLSAFE, 36))),
  tok("DigitalOcean PAT", j("dop", "_v1_", r(HEX, 64))),
  tok("Heroku API key v2", j("HR", "KU-", r(URLSAFE, 60))),
  tok("Cloudflare origin CA key", j("v1", ".0-", r(HEX, 24), "-", r(HEX, 146))),
  tok("OpenShift user token", j("sha", "256~", r(URLSAFE, 43))),
  tok("ClickHouse Cloud secret", j("4b", "1d", r(ALNUM, 38))),
  tok("Netlify PAT", j("nf", "p_", r(ALNUM, 36))),
  tok("Neon API key", j("na", "pi_", r(LOWER + DIGITS, 64))),
  // Source hosting, CI and registries.
  tok("GitHub classic PAT", j("gh", "p_", r(ALNUM, 36))),
  tok("GitHub fine-grained PAT", j("github", "_pat_", r(ALNUM, 22), "_", r(ALNUM, 59))),
  tok("GitHub app token", j("gh", "s_", r(ALNUM, 36))),
  tok("GitLab PAT", j("gl", "pat-", r(URLSAFE, 20)), "PRIVATE-TOKEN: "),
  tok("GitLab runner token", j("gl", "rt-", r(URLSAFE, 20))),
  tok("Bitbucket app password", j("AT", "BB", r(ALNUM, 32))),
  tok("Atlassian API token", j("ATA", "TT3", r(URLSAFE, 180))),
  tok("Buildkite token", j("bk", "ua_", r(HEX, 40))),
  tok("CircleCI PAT", j("CCI", "PAT_", r(ALNUM, 22), "_", r(HEX, 40))),
  tok("Sourcegraph token", j("sg", "p_", r(HEX, 16), "_", r(HEX, 40))),
  tok("SonarQube token", j("sq", "u_", r(HEX, 40))),
  tok("Harness PAT", j("pat", ".", r(URLSAFE, 22), ".", r(ALNUM, 24), ".", r(ALNUM, 20))),
  tok("Octopus Deploy key", j("AP", "I-", r(UPPER + DIGITS, 26))),
  tok("Prefect API key", j("pn", "u_", r(ALNUM, 36))),
  tok("npm token", j("np", "m_", r(ALNUM, 36)), "//registry.npmjs.org/:_authToken="),
  tok("PyPI upload token", j("pypi-", "AgEIcHlwaS5vcmc", r(URLSAFE, 70))),
  tok("RubyGems key", j("ruby", "gems_", r(HEX, 48))),
  tok("Docker Hub PAT", j("dckr", "_pat_", r(URLSAFE, 27))),
  tok("NuGet API key", j("oy", "2", r(LOWER + DIGITS, 43))),
  tok("Clojars token", j("CLO", "JARS_", r(LOWER + DIGITS, 60))),
  tok("Artifactory API key", j("AK", "Cp", r(ALNUM, 69))),
  // AI providers.
  tok("Anthropic API key", j("sk-", "ant-api03-", r(URLSAFE, 93), "AA")),
  tok("OpenAI project key", j("sk-", "proj-", r(URLSAFE, 120))),
  tok("ElevenLabs key", j("sk", "_", r(HEX, 48))),
  tok("Hugging Face token", j("hf", "_", r(UPPER + LOWER, 34))),
  tok("Groq key", j("gs", "k_", r(ALNUM, 52))),
  tok("xAI key", j("xa", "i-", r(ALNUM, 80))),
  tok("Perplexity key", j("pp", "lx-", r(ALNUM, 48))),
  tok("Replicate token", j("r8", "_", r(ALNUM, 37))),
  tok("LangSmith key", j("lsv2", "_pt_", r(HEX, 32), "_", r(HEX, 10))),
  tok("Tavily key", j("tv", "ly-", r(ALNUM, 32))),
  tok("Pinecone key", j("pc", "sk_", r(ALNUM, 6), "_", r(ALNUM, 64))),
  // Chat, mail and payments.
  tok("Slack bot token", j("xo", "xb-", r(DIGITS, 12), "-", r(DIGITS, 13), "-", r(ALNUM, 24))),
  tok("Slack webhook", j("https://hooks.", "slack.com/services/T0", r(UPPER + DIGITS, 8), "/B0", r(UPPER + DIGITS, 8), "/", r(ALNUM, 24)), "curl -X POST "),
  tok("Teams webhook", j("https://acme.", "webhook.office.com/webhookb2/", uuid(), "@", uuid(), "/IncomingWebhook/", r(HEX, 32), "/", uuid())),
  tok("Discord bot token", j("MT", r(URLSAFE, 24), ".", r(URLSAFE, 6), ".", r(URLSAFE, 38))),
  tok("Discord webhook", j("https://discord.com/api/", "webhooks/", r(DIGITS, 18), "/", r(URLSAFE, 68))),
  tok("Telegram bot token", j(r(DIGITS, 10), ":A", r(URLSAFE, 34)), "bot"),
  tok("Stripe secret key", j("sk", "_live_", r(ALNUM, 24))),
  tok("Stripe webhook secret", j("wh", "sec_", r(ALNUM, 32))),
  tok("Twilio API key", j("S", "K", r(HEX, 32))),
  tok("SendGrid key", j("S", "G.", r(URLSAFE, 22), ".", r(URLSAFE, 43))),
  tok("Brevo (Sendinblue) key", j("xkey", "sib-", r(HEX, 64), "-", r(ALNUM, 16))),
  tok("Mailgun key", j("ke", "y-", r(HEX, 32))),
  tok("Mailchimp key", j(r(HEX, 32), "-us", "14")),
  tok("Shopify token", j("shp", "at_", r(HEX, 32))),
  tok("Square token", j("sq0", "atp-", r(URLSAFE, 22))),
  tok("Plaid access token", j("access-", "production-", uuid())),
  tok("Flutterwave secret key", j("FLW", "SECK_TEST-", r(HEX, 32), "-X")),
  tok("EasyPost key", j("EZ", "AK", r(LOWER + DIGITS, 54))),
  tok("Facebook page token", j("EA", "AM", r(ALNUM, 120))),
  // Infrastructure and SaaS.
  tok("Vault service token", j("hv", "s.", r(URLSAFE, 90))),
  tok("Terraform Cloud token", j(r(ALNUM, 14), ".atlas", "v1.", r(URLSAFE, 67))),
  tok("Doppler token", j("dp", ".pt.", r(ALNUM, 43))),
  tok("Databricks token", j("da", "pi", r(HEX, 32))),
  tok("Grafana service account token", j("gl", "sa_", r(ALNUM, 32), "_", r(HEX, 8))),
  tok("Sentry user token", j("sntr", "yu_", r(HEX, 64))),
  tok("Linear key", j("lin", "_api_", r(ALNUM, 40))),
  tok("Postman key", j("PM", "AK-", r(HEX, 24), "-", r(HEX, 34))),
  tok("Pulumi token", j("pu", "l-", r(HEX, 40))),
  tok("New Relic user key", j("NR", "AK-", r(UPPER + DIGITS, 27))),
  tok("Notion token", j("nt", "n_", r(ALNUM, 46))),
  tok("Figma token", j("fi", "gd_", r(URLSAFE, 40))),
  tok("PlanetScale token", j("psc", "ale_tkn_", r(URLSAFE, 43))),
  tok("Supabase token", j("sb", "p_", r(HEX, 40))),
  tok("Dynatrace token", j("dt0", "c01.", r(UPPER + DIGITS, 24), ".", r(UPPER + DIGITS, 64))),
  tok("Airtable PAT", j("pa", "t", r(ALNUM, 14), ".", r(HEX, 64))),
  tok("Contentful PAT", j("CF", "PAT-", r(URLSAFE, 43))),
  tok("Mapbox secret token", j("sk", ".eyJ", r(URLSAFE, 60), ".", r(URLSAFE, 22))),
  tok("HubSpot private app token", j("pat", "-na1-", uuid())),
  tok("Typeform token", j("tf", "p_", r(ALNUM, 59))),
  tok("Dropbox token", j("sl", ".", r(URLSAFE, 140))),
  tok(
    "1Password secret key",
    j("A3", "-", r(UPPER + DIGITS, 6), "-", r(UPPER + DIGITS, 11), "-", r(UPPER + DIGITS, 5), "-", r(UPPER + DIGITS, 5), "-", r(UPPER + DIGITS, 5)),
  ),
  tok("age secret key", j("AGE-SECRET", "-KEY-1", r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58))),
  tok("JWT", j("ey", "JhbGciOiJIUzI1NiJ9.", "ey", "J", r(URLSAFE, 40), ".", r(URLSAFE, 43)), "Authorization: "),
  // Private keys, whole and in pieces.
  keyText("RSA private key", j("-----BEGIN RSA PRIV", "ATE KEY-----\n", lines(pemBody, 64), "\n-----END RSA PRIV", "ATE KEY-----"), pemBody.slice(64, 128)),
  keyText(
    "OpenSSH private key",
    j("-----BEGIN OPENSSH PRIV", "ATE KEY-----\n", lines(sshBody, 70), "\n-----END OPENSSH PRIV", "ATE KEY-----"),
    sshBody.slice(70, 140),
  ),
  keyText(
    "PGP private key block",
    j("-----BEGIN PGP PRIV", "ATE KEY BLOCK-----\nVersion: GnuPG v2\n\n", lines(pgpBody, 64), "\n=", r(B64, 4), "\n-----END PGP PRIV", "ATE KEY BLOCK-----"),
    pgpBody.slice(64, 128),
  ),
  keyText(
    "encrypted PEM key",
    j(
      "-----BEGIN RSA PRIV",
      "ATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,",
      r(HEX, 32).toUpperCase(),
      "\n\n",
      lines(pemBody.slice(0, 192), 64),
      "\n-----END RSA PRIV",
      "ATE KEY-----",
    ),
    pemBody.slice(0, 64),
  ),
  keyText("truncated private key", j("-----BEGIN OPENSSH PRIV", "ATE KEY-----\n", lines(sshBody.slice(0, 140), 70), "\n\nmore notes"), sshBody.slice(70, 140)),
  keyText("OpenSSH key body without BEGIN", `tail -n +2 id_ed25519:\n${lines(sshBody, 70)}\ndone`, sshBody.slice(0, 70)),
  keyText("PKCS#8 key body without BEGIN", `PRIVATE_PEM_BODY\n${lines(derBody, 64)}\nok`, derBody.slice(64, 128)),
  keyText("bare wrapped key lines", `pasted:\n${lines(pemBody.slice(64, 320), 64)}\nend`, pemBody.slice(128, 192)),
  keyText(
    "PuTTY private key",
    `PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 3\n${lines(pemBody.slice(0, 192), 64)}\nPrivate-MAC: ${r(HEX, 64)}`,
    pemBody.slice(64, 128),
  ),
  ctx("minisign secret key", j("RWRTY0Iy", r(B64, 150)), (v) => `untrusted comment: minisign encrypted secret key\n${v}`, [
    "untrusted comment: minisign encrypted secret key",
  ]),
  // Credentials by context.
  ctx("PostgreSQL URL", r(ALNUM, 14), (v) => `DATABASE_URL=postgres://app:${v}@db.internal:5432/app`, ["postgres://app:", "@db.internal:5432/app"]),
  ctx("MongoDB SRV URL", r(ALNUM, 12), (v) => `mongodb+srv://admin:${v}@cluster0.abcde.mongodb.net/test`, ["mongodb+srv://admin:", "@cluster0"]),
  ctx("Redis URL, empty user", r(ALNUM, 12), (v) => `redis://:${v}@cache:6379/0`, ["redis://:", "@cache:6379/0"]),
  tok("Bearer header", r(URLSAFE, 40), 'curl -H "Authorization: Bearer ', '" https://api'),
  tok("Basic header", b64(`alice:${r(ALNUM, 12)}`), "Authorization: Basic "),
  tok("curl -u", r(ALNUM, 12), "curl -u alice:", " https://x"),
  tok("mysql -p", r(ALNUM, 12), "mysql -u root -p", " shop"),
  tok("redis-cli -a", r(ALNUM, 14), "redis-cli -h cache -a ", " ping"),
  tok("sshpass -p", r(ALNUM, 12), "sshpass -p ", " ssh deploy@host"),
  tok("docker login -p", r(ALNUM, 16), "docker login -u bot -p ", " registry.example.com"),
  tok("--password=", r(ALNUM, 12), "psql --password=", " -h db"),
  tok("--password", r(ALNUM, 12), "mysqladmin --password ", " status"),
  tok("zip -P", r(ALNUM, 12), "zip -P ", " backup.zip db.sql"),
  tok("ldapsearch -w", r(ALNUM, 12), "ldapsearch -x -D cn=admin,dc=x -w ", " -b dc=x"),
  tok("openssl pass:", r(ALNUM, 12), "openssl rsa -in k.pem -passin pass:", " -out k2.pem"),
  tok("keytool -storepass", r(ALNUM, 12), "keytool -list -keystore ks.jks -storepass ", " -v"),
  tok(".netrc", r(ALNUM, 14), "machine api.example.com\n  login alice\n  password ", "\n"),
  tok("Docker config auth", dockerAuth, '{"auths": {"ghcr.io": {"auth": "', '"}}}'),
  tok("bare Docker auth value", b64(`bot:${r(ALNUM, 16)}`), "$ jq -r '.auths[].auth' ~/.docker/config.json\n", "\n"),
  tok("NuGet ClearTextPassword", r(ALNUM, 14), '<add key="ClearTextPassword" value="', '" />'),
  tok("password= assignment", r(ALNUM, 12), "connecting with password=", " host=db"),
  tok("ADO.NET connection string", r(ALNUM, 12), "Server=db;Database=shop;User Id=sa;Password=", ";"),
  tok("generic *_key (key name + entropy)", r(ALNUM, 24), 'mapbox_key = "', '"'),
  tok("generic *_token (key name + entropy)", r(ALNUM, 32), "service_token: ", "\n"),
  tok("generic *_secret (key name + entropy)", r(ALNUM, 32), 'webhookSecret: "', '",'),
];
