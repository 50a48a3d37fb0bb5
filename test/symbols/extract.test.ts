import { describe, expect, it } from "vitest";
import { extractSymbols, type CodeSymbol } from "../../src/symbols/extract.js";
import { languageOf, parserFor } from "../../src/symbols/languages.js";

const pick = (syms: CodeSymbol[]) => syms.map((s) => [s.name, s.kind, s.startLine, s.endLine, s.container ?? null, s.exported]);

describe("extractSymbols: TypeScript", () => {
  const src = [
    "import { x } from './x';", // 1
    "export class UserRole extends Base {", // 2
    "  check(user: User): boolean {", // 3
    "    return true;", // 4
    "  }", // 5
    "  private hidden() {}", // 6
    "  handler = () => 1;", // 7
    "}", // 8
    "export interface RoleOptions { strict: boolean }", // 9
    "export type RoleName = 'admin' | 'viewer';", // 10
    "export const DEFAULT_ROLE = 'viewer';", // 11
    "const internal = 3;", // 12
    "export const roleOf = (u: User) => u.role;", // 13
    "function helper() {", // 14
    "  function nested() {}", // 15
    "}", // 16
    "export enum Level { Low, High }", // 17
    "export namespace Roles { export function all() {} }", // 18
    "export default function () {}", // 19
    "declare function ambient(): void;", // 20
  ].join("\n");

  it("finds classes, methods, interfaces, types, exported consts, functions with 1-based inclusive lines", async () => {
    expect(pick(await extractSymbols(src, "src/roles.ts"))).toEqual([
      ["UserRole", "class", 2, 8, null, true],
      ["check", "method", 3, 5, "UserRole", true],
      ["hidden", "method", 6, 6, "UserRole", false],
      ["handler", "method", 7, 7, "UserRole", true],
      ["RoleOptions", "interface", 9, 9, null, true],
      ["RoleName", "type", 10, 10, null, true],
      ["DEFAULT_ROLE", "const", 11, 11, null, true],
      ["roleOf", "function", 13, 13, null, true],
      ["helper", "function", 14, 16, null, false],
      ["Level", "enum", 17, 17, null, true],
      ["Roles", "namespace", 18, 18, null, true],
      ["all", "function", 18, 18, "Roles", true],
      ["default", "function", 19, 19, null, true],
      ["ambient", "function", 20, 20, null, false],
    ]);
  });

  it("parses TSX and plain JavaScript (JSX included) with the TSX grammar", async () => {
    const tsx = "export function App(): JSX.Element {\n  return <div className='x'>{1}</div>;\n}\n";
    expect(pick(await extractSymbols(tsx, "src/App.tsx"))).toEqual([["App", "function", 1, 3, null, true]]);
    const js = "class Store {\n  get(k) { return this.m[k]; }\n}\nexport const make = function () {};\nmodule.exports = { Store };\n";
    expect(pick(await extractSymbols(js, "lib/store.js"))).toEqual([
      ["Store", "class", 1, 3, null, false],
      ["get", "method", 2, 2, "Store", true],
      ["make", "function", 4, 4, null, true],
    ]);
    expect(pick(await extractSymbols("export const Comp = () => <b/>;\n", "a.jsx"))).toEqual([["Comp", "function", 1, 1, null, true]]);
  });

  it("keeps the symbols of the rest of a file with syntax errors", async () => {
    const broken = "export function ok() {}\nfunction bad( {\n\nexport class Fine {}\n";
    const names = (await extractSymbols(broken, "b.ts")).map((s) => s.name);
    expect(names).toContain("ok");
  });
});

describe("extractSymbols: Python", () => {
  const src = [
    "import os", // 1
    "MAX_ROLES = 10", // 2
    "_private = 1", // 3
    "class UserRole(Base):", // 4
    "    kind = 'role'", // 5
    "    @property", // 6
    "    def name(self):", // 7
    "        return self._name", // 8
    "    def _secret(self): pass", // 9
    "", // 10
    "@cache", // 11
    "async def load_user_role(user_id: int) -> UserRole:", // 12
    "    def inner(): pass", // 13
    "    return UserRole()", // 14
    "type RoleMap = dict[str, UserRole]", // 15
  ].join("\n");

  it("finds classes, methods (decorators included in the range), functions and module constants", async () => {
    expect(pick(await extractSymbols(src, "app/roles.py"))).toEqual([
      ["MAX_ROLES", "const", 2, 2, null, true],
      ["UserRole", "class", 4, 9, null, true],
      ["kind", "const", 5, 5, "UserRole", true],
      ["name", "method", 6, 8, "UserRole", true],
      ["_secret", "method", 9, 9, "UserRole", false],
      ["load_user_role", "function", 11, 14, null, true],
      ["RoleMap", "type", 15, 15, null, true],
    ]);
  });
});

describe("languages", () => {
  it("maps extensions to grammars, and others to none", () => {
    expect(languageOf("a/b.ts")).toBe("typescript");
    expect(languageOf("a/b.d.ts")).toBe("typescript");
    expect(languageOf("a/b.mts")).toBe("typescript");
    expect(languageOf("a/B.TSX")).toBe("tsx");
    expect(languageOf("a/b.cjs")).toBe("tsx");
    expect(languageOf("a/b.pyi")).toBe("python");
    expect(languageOf("Makefile")).toBeNull();
    expect(languageOf("a/b.go")).toBeNull();
  });

  it("loads each grammar once per process", async () => {
    const a = await parserFor("python");
    const b = await parserFor("python");
    expect(a).toBe(b);
    const [c, d] = await Promise.all([parserFor("typescript"), parserFor("typescript")]);
    expect(c).toBe(d);
  });

  it("returns no symbols for files without a grammar", async () => {
    expect(await extractSymbols("func main() {}", "main.go")).toEqual([]);
  });
});
