/**
 * Credential stores of a home directory, relative to it: the ONE list that both hides them from
 * commands under bwrap (isolation.ts) and makes the command policy ask before a command reads them
 * (policy-paths.ts). Two lists drifted apart before: agent credential files were on neither.
 *
 * An entry names a file or a directory; everything below a directory is covered. Files that mix
 * credentials with build settings a sandboxed build needs (~/.m2/settings.xml,
 * ~/.gradle/gradle.properties) are left off: hiding them would break builds.
 */
export const CREDENTIAL_PATHS_IN_HOME: readonly string[] = [
  // Keys and cloud CLIs.
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".config/gcloud",
  ".oci",
  ".kube",
  ".docker",
  ".config/doctl",
  ".terraform.d/credentials.tfrc.json",
  ".vault-token",
  ".config/op",
  ".password-store",
  ".local/share/keyrings",
  // Source hosting and package registries.
  ".config/gh",
  ".config/hub",
  ".config/glab-cli",
  ".git-credentials",
  ".config/git/credentials",
  ".netrc",
  ".npmrc",
  ".yarnrc.yml",
  ".pypirc",
  ".gem/credentials",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".composer/auth.json",
  ".config/composer/auth.json",
  // Databases and object stores.
  ".pgpass",
  ".my.cnf",
  ".mylogin.cnf",
  ".boto",
  ".s3cfg",
  ".config/rclone",
  // Coding agents and AI tools.
  ".claude/.credentials.json",
  ".claude.json",
  ".codex/auth.json",
  ".config/github-copilot",
  ".gemini",
  ".config/openai",
  ".huggingface/token",
  ".cache/huggingface/token",
  ".config/anthropic",
  // Hosting CLIs.
  ".config/heroku",
  ".netlify/config.json",
  ".config/netlify",
  ".vercel",
  ".fly/config.yml",
  ".config/fly",
];
