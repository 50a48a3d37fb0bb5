/**
 * Network tools: HTTP clients (allowed with the network, asked without; what they save is judged by
 * path), remote shells and raw sockets (always asked). Their output counts as a download, so
 * `curl … | sh` is refused.
 */
import { getopt, hasLong, val } from "./options.js";
import { literalWord } from "../command-parts.js";
import { finding, network, type ProgramSpec, q, type WriteTarget } from "./types.js";
import type { ShellWord } from "../command-parts.js";

const netTool: ProgramSpec["decide"] = (p, env) => network(env, "net.tool", `${q(p.text)} uses the network`);
const remote: ProgramSpec["decide"] = (p) =>
  finding("ask", "net.remote", `${q(p.text)} opens a remote shell or raw connection, which needs the user's approval`);

function joinWord(dir: ShellWord, name: string): ShellWord {
  return { ...dir, text: `${dir.text}/${name}`, candidates: dir.candidates?.map((c) => ({ text: `${c.text}/${name}`, glob: c.glob })) ?? null };
}

const each = (ws: ShellWord[]): WriteTarget[] => ws.map((word) => ({ word, kind: {}, rm: false }));

const CURL = {
  short: "oDcKdHXuAeEwTxbrzYyCm",
  long: ["output", "dump-header", "cookie-jar", "trace", "trace-ascii", "stderr", "output-dir", "libcurl", "etag-save", "hsts", "alt-svc"],
};
const WGET = { short: "OoaPiBeTtwUY", long: ["output-document", "output-file", "append-output", "directory-prefix", "input-file", "base", "execute"] };

export const NETWORK_SPECS: ProgramSpec[] = [
  {
    names: ["curl"],
    options: CURL,
    downloads: true,
    decide: netTool,
    writes(p) {
      const o = getopt(p.words, 1, CURL);
      const out = each(val(o, "o", "output", "D", "dump-header", "c", "cookie-jar", "trace", "trace-ascii", "stderr", "libcurl", "etag-save"));
      const dir = val(o, "output-dir")[0];
      if (o.short.has("O") || hasLong(o, "remote-name", "remote-name-all") || o.short.has("J"))
        out.push({ word: dir ? joinWord(dir, "file") : literalWord("./download"), kind: {} });
      return out;
    },
  },
  {
    names: ["wget"],
    options: WGET,
    downloads: true,
    decide: netTool,
    writes(p) {
      const o = getopt(p.words, 1, WGET);
      const out = each(val(o, "O", "output-document", "o", "output-file", "a", "append-output"));
      const dir = val(o, "P", "directory-prefix")[0];
      if (!val(o, "O", "output-document").length) out.push({ word: dir ? joinWord(dir, "file") : literalWord("./download"), kind: {} });
      return out;
    },
  },
  { names: ["http", "https", "xh", "aria2c", "lftp", "ftp", "httpie"], downloads: true, decide: netTool },
  { names: ["nc", "ncat", "netcat", "socat", "ssh"], downloads: true, decide: remote },
  { names: ["scp", "sftp", "rsync", "telnet", "mosh"], decide: remote },
  // BSD fetch: a downloader the policy does not otherwise know (its default decides).
  { names: ["fetch"], downloads: true },
];
