/** The syntax tree the bash parser (shell-parse.ts) produces, and its errors. */

export class ShellSyntaxError extends Error {
  constructor(
    message: string,
    readonly pos: number,
  ) {
    super(message);
    this.name = "ShellSyntaxError";
  }
}

/** Valid bash that the policy does not follow (function definitions, coproc, …). */
export class ShellUnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ShellUnsupportedError";
  }
}

/** One piece of a word: a character (quoted or not) or an expansion. */
export type Tok =
  | { k: "ch"; c: string; q: boolean }
  | { k: "param"; raw: string; name: string; op: string; q: boolean; nested: ListNode[] }
  | { k: "cmd"; raw: string; list: ListNode; q: boolean; backtick: boolean }
  | { k: "arith"; raw: string; nested: ListNode[]; q: boolean }
  | { k: "proc"; raw: string; list: ListNode; dir: "<" | ">" };

export interface WordNode {
  toks: Tok[];
  raw: string;
}

export interface AssignNode {
  name: string;
  /** Tokens of the value (after `=`); for `a=(x y)` the elements are in `array`. */
  value: WordNode;
  array: WordNode[] | null;
  /** Subscript tokens of `a[i]=v` (may hold command substitutions). */
  index: WordNode | null;
  raw: string;
}

export interface HeredocNode {
  body: string;
  /** The delimiter was quoted: the body is taken literally, no expansions. */
  quoted: boolean;
  /** Tokens of an unquoted body (where `$(…)` and `${…}` run). */
  toks: Tok[];
}

export interface RedirNode {
  op: string;
  fd: number | null;
  /** `{name}>file`: bash allocates the descriptor and stores it in `name`. */
  fdVar: string | null;
  target: WordNode;
  heredoc: HeredocNode | null;
  raw: string;
}

export type CommandNode =
  | { type: "simple"; assigns: AssignNode[]; words: WordNode[]; redirs: RedirNode[]; text: string }
  | { type: "subshell"; body: ListNode; redirs: RedirNode[]; text: string }
  | { type: "group"; body: ListNode; redirs: RedirNode[]; text: string }
  | {
      type: "if";
      clauses: Array<{ cond: ListNode; body: ListNode }>;
      elseBody: ListNode | null;
      redirs: RedirNode[];
      text: string;
    }
  | { type: "for"; name: string; items: WordNode[] | null; body: ListNode; redirs: RedirNode[]; text: string }
  | { type: "arithfor"; nested: ListNode[]; body: ListNode; redirs: RedirNode[]; text: string }
  | { type: "while"; until: boolean; cond: ListNode; body: ListNode; redirs: RedirNode[]; text: string }
  | {
      type: "case";
      word: WordNode;
      items: Array<{ patterns: WordNode[]; body: ListNode }>;
      redirs: RedirNode[];
      text: string;
    }
  | { type: "arith"; nested: ListNode[]; redirs: RedirNode[]; text: string }
  | { type: "cond"; words: WordNode[]; redirs: RedirNode[]; text: string };

export interface PipelineNode {
  cmds: CommandNode[];
  text: string;
}
export interface AndOrNode {
  first: PipelineNode;
  rest: Array<{ op: "&&" | "||"; pipe: PipelineNode }>;
}
export interface ListItem {
  andOr: AndOrNode;
  background: boolean;
}
export type ListNode = ListItem[];

/** Nesting of code strings (`bash -c`, `eval`, backticks) past which parsing gives up. */
export const MAX_NESTING = 8;
