import fs from "node:fs";
import path from "node:path";
import { REPO } from "./workspace.js";

/**
 * Text a prompt carries, for checking that two ways of counting tokens agree: our own sources and
 * docs, plus what breaks naive tokenizers (CJK, emoji and combining marks, spelled special tokens,
 * a lone surrogate, NUL, long whitespace, other scripts).
 */
export function tokenizerCorpus(): string[] {
  const texts: string[] = [];
  for (const dir of ["src/context", "src/agent/nodes", "docs"]) {
    for (const f of fs.readdirSync(path.join(REPO, dir)).sort()) {
      const p = path.join(REPO, dir, f);
      if (fs.statSync(p).isFile()) texts.push(fs.readFileSync(p, "utf8"));
    }
  }
  texts.push(
    "数据库连接失败，请稍后重试。データベース接続エラー。",
    "emoji 🧪🔥👩‍💻 and combining e\u0301 marks",
    "<|endoftext|> spelled in a file about tokenizers <|im_start|>",
    "\ud800 a lone surrogate, \uffff and \u0000 a NUL",
    " ".repeat(300) + "\t\t\n\n\r\n",
    "Здравствуй, мир! Γειά σου κόσμε! مرحبا بالعالم",
  );
  return texts;
}
