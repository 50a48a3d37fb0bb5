import { isPlaceholderValue } from "./key-value.js";
import { b, GUTTER, rx, type FormatRule } from "./format-rule.js";

/**
 * Credentials recognised by where they stand rather than by their own shape: a JWT's structure,
 * an Authorization header, a URL's password, a password given on a command line to a program
 * whose flag means "password", a `.netrc` entry, a NuGet config. The context stays, the secret goes.
 */

/** A command-line argument: unquoted, or in single or double quotes. */
const ARG = b`(?:'[^'\n]{1,200}'|"[^"\n]{1,200}"|[^\s'"]{1,200})`;
/** The rest of a command line before a flag (bounded: a flag far from its program is not its flag). */
const BEFORE = b`(?:[ \t]+[^\s;|&]{1,200}){0,12}?[ \t]+`;
/** Where a program name starts: the line's start, a shell operator, a prompt, a quote, a path. */
const AT_COMMAND = b`(?<![^\s;|&(\x60'"$/])`;

/** Between .netrc tokens: spaces, or a line break (with the line-number gutter of a listing). */
const NETRC_GAP = b`(?:[ \t]*\r?\n${GUTTER}[ \t]*|[ \t]+)`;
/** Other fields of a .netrc entry; `default` must have one, or "the default password is" would match. */
const NETRC_FIELDS = b`(?:${NETRC_GAP}(?:login|account|port)${NETRC_GAP}\S{1,200})`;

const cmd = (programs: string, flag: string): RegExp => rx(b`(${AT_COMMAND}(?:${programs})${BEFORE}${flag})(${ARG})`);

/** A password on a command line: not a reference, a prompt request, or the next flag. */
const givenPassword = (s: string): boolean => !/^['"]?-/.test(s) && !isPlaceholderValue(s.replace(/^(['"])(.*)\1$/, "$2"));

/** Rules of credentials known by their context. */
export const CONTEXT_RULES: FormatRule[] = [
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
  // curl -u user:password / --user=user:password; smbclient -U user%password.
  { id: "curl-user", re: /(\s(?:-u|--user)(?:=|[ \t]+)["']?[^\s:"']{1,100}:)([^\s"']{1,200})/g, keywords: ["-u", "--user"], group: 2 },
  { id: "cli-password", re: /(\s(?:-U|--user)(?:=|[ \t]+)["']?[^\s%"']{1,100}%)([^\s"']{1,200})/g, keywords: ["-U", "--user"], group: 2 },

  // Programs whose short flag means "password" (elsewhere -p is a port, -a an address).
  // mysql and its family take the password glued to -p (`-p secret` would prompt, then name a database).
  { id: "cli-password", re: cmd(b`mysql[\w-]{0,10}|mariadb[\w-]{0,10}|mysqlsh`, "-p"), keywords: ["mysql", "mariadb"], group: 2, accept: givenPassword },
  { id: "cli-password", re: cmd(b`redis-cli|valkey-cli|keydb-cli`, b`(?:-a[ \t]*|--pass[ \t]+)`), keywords: ["-cli"], group: 2, accept: givenPassword },
  { id: "cli-password", re: cmd(b`sshpass`, b`-p[ \t]*`), keywords: ["sshpass"], group: 2, accept: givenPassword },
  {
    id: "cli-password",
    re: cmd(b`mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongostat|mongotop`, b`-p[ \t]+`),
    keywords: ["mongo"],
    group: 2,
    accept: givenPassword,
  },
  {
    id: "cli-password",
    re: cmd(b`(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane)[ \t]+(?:registry[ \t]+)?login`, b`-p[ \t]+`),
    keywords: ["login"],
    group: 2,
    accept: givenPassword,
  },
  { id: "cli-password", re: cmd(b`sqlcmd|bcp|isql|osql`, b`-P[ \t]*`), keywords: ["sqlcmd", "bcp", "isql", "osql"], group: 2, accept: givenPassword },
  { id: "cli-password", re: cmd(b`zip|unzip|zipcloak`, b`(?:-P[ \t]+|--password[ \t]+)`), keywords: ["zip"], group: 2, accept: givenPassword },
  { id: "cli-password", re: cmd(b`7z|7za|7zz|7zr|rar|unrar`, b`-p`), keywords: ["7z", "rar"], group: 2, accept: givenPassword },
  { id: "cli-password", re: cmd(b`ldap\w{2,12}`, b`-w[ \t]*`), keywords: ["ldap"], group: 2, accept: givenPassword },
  {
    id: "cli-password",
    re: cmd(b`keytool|jarsigner`, b`-(?:src|dest|new)?(?:store|key)pass[ \t]+`),
    keywords: ["keytool", "jarsigner"],
    group: 2,
    accept: givenPassword,
  },
  // openssl -pass/-passin/-passout pass:<password> (env:, file:, fd: name where it is, not what).
  { id: "cli-password", re: /(-pass(?:in|out)?[ \t]+["']?pass:)([^\s'"]{1,200})/g, keywords: ["pass:"], group: 2 },

  // .netrc / _netrc: `machine host login user password secret`, on one line or several.
  {
    id: "netrc",
    re: rx(b`(\b(?:machine[ \t]+\S{1,200}${NETRC_FIELDS}{0,3}|default${NETRC_FIELDS}{1,3})${NETRC_GAP}password${NETRC_GAP})(\S{1,200})`),
    keywords: ["machine", "default"],
    group: 2,
    accept: (s) => !isPlaceholderValue(s),
  },
  // NuGet.config: <add key="ClearTextPassword" value="…" />.
  { id: "nuget", re: /(ClearTextPassword"\s+value=")([^"\n]{1,200})"/g, keywords: ["ClearTextPassword"], group: 2 },
];
