import type { Node } from "web-tree-sitter";
import { languageOf, parserFor, type LanguageId } from "./languages.js";

/** What kind of declaration a symbol is. */
export type SymbolKind = "function" | "class" | "method" | "interface" | "type" | "enum" | "const" | "namespace";

/** A declaration found in a source file; lines are 1-based and inclusive. */
export interface CodeSymbol {
  name: string;
  kind: SymbolKind;
  startLine: number;
  endLine: number;
  /** Enclosing class or namespace, for methods and nested declarations. */
  container?: string;
  /** Exported from its module (TS/JS `export`; Python: a public name at module or class level). */
  exported: boolean;
}

/** Symbols of a file's source, or [] when the file's language has no grammar here. */
export async function extractSymbols(source: string, file: string): Promise<CodeSymbol[]> {
  const lang = languageOf(file);
  if (!lang) return [];
  return extractWith(lang, source);
}

/** Symbols of a source text in a given language. Parse errors leave the rest of the file usable. */
export async function extractWith(lang: LanguageId, source: string): Promise<CodeSymbol[]> {
  const parser = await parserFor(lang);
  const tree = parser.parse(source);
  if (!tree) return [];
  try {
    const out: CodeSymbol[] = [];
    if (lang === "python") visitPython(tree.rootNode, undefined, out);
    else visitTs(tree.rootNode, undefined, false, out);
    out.sort((a, b) => a.startLine - b.startLine || b.endLine - a.endLine);
    return out;
  } finally {
    // Trees live in the wasm heap, outside the garbage collector's reach.
    tree.delete();
  }
}

function push(out: CodeSymbol[], node: Node, name: string, kind: SymbolKind, container: string | undefined, exported: boolean, rangeNode = node): void {
  if (!name) return;
  out.push({
    name,
    kind,
    startLine: rangeNode.startPosition.row + 1,
    endLine: Math.max(rangeNode.startPosition.row, endRow(rangeNode)) + 1,
    ...(container ? { container } : {}),
    exported,
  });
}

/** Last line that holds text of the node (a node ending at column 0 ends on the line before). */
function endRow(node: Node): number {
  const end = node.endPosition;
  return end.column === 0 && end.row > node.startPosition.row ? end.row - 1 : end.row;
}

function nameOf(node: Node): string {
  return node.childForFieldName("name")?.text ?? "";
}

const FUNCTION_VALUES = new Set(["arrow_function", "function_expression", "function", "generator_function"]);

// TypeScript, TSX and JavaScript share node types.
function visitTs(node: Node, container: string | undefined, exported: boolean, out: CodeSymbol[], rangeNode?: Node): void {
  switch (node.type) {
    case "program":
    case "statement_block":
      for (const child of node.namedChildren) visitTs(child, container, false, out);
      return;
    case "export_statement": {
      const decl = node.childForFieldName("declaration");
      if (decl) {
        visitTs(decl, container, true, out, node);
        return;
      }
      // `export default () => ...` / `export default class { }`
      const value = node.childForFieldName("value");
      if (value && (FUNCTION_VALUES.has(value.type) || value.type === "class")) {
        push(out, node, value.childForFieldName("name")?.text || "default", value.type === "class" ? "class" : "function", container, true);
      }
      return;
    }
    case "ambient_declaration":
      // `declare function f(): void;`, `declare module "x" { ... }`
      for (const child of node.namedChildren) visitTs(child, container, exported, out, rangeNode ?? node);
      return;
    case "expression_statement": {
      const inner = node.firstNamedChild;
      if (inner && (inner.type === "internal_module" || inner.type === "module")) visitTs(inner, container, exported, out, node);
      return;
    }
    case "function_declaration":
    case "generator_function_declaration":
    case "function_signature":
      push(out, node, nameOf(node), "function", container, exported, rangeNode);
      return;
    case "class_declaration":
    case "abstract_class_declaration":
    case "class": {
      const name = nameOf(node);
      push(out, node, name, "class", container, exported, rangeNode);
      const body = node.childForFieldName("body");
      if (body) for (const member of body.namedChildren) visitClassMember(member, name, out);
      return;
    }
    case "interface_declaration":
      push(out, node, nameOf(node), "interface", container, exported, rangeNode);
      return;
    case "type_alias_declaration":
      push(out, node, nameOf(node), "type", container, exported, rangeNode);
      return;
    case "enum_declaration":
      push(out, node, nameOf(node), "enum", container, exported, rangeNode);
      return;
    case "internal_module":
    case "module": {
      const name = nameOf(node).replace(/^["']|["']$/g, "");
      push(out, node, name, "namespace", container, exported, rangeNode);
      const body = node.childForFieldName("body");
      if (body) for (const child of body.namedChildren) visitTs(child, name, false, out);
      return;
    }
    case "lexical_declaration":
    case "variable_declaration": {
      const declarators = node.namedChildren.filter((c) => c.type === "variable_declarator");
      for (const d of declarators) {
        const nameNode = d.childForFieldName("name");
        if (nameNode?.type !== "identifier") continue; // destructuring patterns name nothing in particular
        const value = d.childForFieldName("value");
        const isFn = value !== null && FUNCTION_VALUES.has(value.type);
        if (!isFn && !exported) continue;
        // One declarator: the whole statement (with `export const`) is the symbol's range.
        const range = declarators.length === 1 ? (rangeNode ?? node) : d;
        push(out, d, nameNode.text, isFn ? "function" : "const", container, exported, range);
      }
      return;
    }
    default:
      return;
  }
}

function visitClassMember(member: Node, className: string, out: CodeSymbol[]): void {
  switch (member.type) {
    case "method_definition":
    case "abstract_method_signature":
    case "method_signature":
      push(out, member, nameOf(member), "method", className || undefined, !isPrivate(member));
      return;
    case "public_field_definition":
    case "field_definition": {
      const value = member.childForFieldName("value");
      if (value && FUNCTION_VALUES.has(value.type)) {
        const name = (member.childForFieldName("name") ?? member.childForFieldName("property"))?.text ?? "";
        push(out, member, name, "method", className || undefined, !isPrivate(member));
      }
      return;
    }
    default:
      return;
  }
}

function isPrivate(member: Node): boolean {
  const name = member.childForFieldName("name");
  if (name?.type === "private_property_identifier") return true;
  return member.children.some((c) => c.type === "accessibility_modifier" && c.text !== "public");
}

function visitPython(node: Node, container: string | undefined, out: CodeSymbol[], rangeNode?: Node): void {
  switch (node.type) {
    case "module":
    case "block":
      for (const child of node.namedChildren) visitPython(child, container, out);
      return;
    case "decorated_definition": {
      const def = node.childForFieldName("definition");
      if (def) visitPython(def, container, out, node);
      return;
    }
    case "function_definition": {
      const name = nameOf(node);
      push(out, node, name, container ? "method" : "function", container, !name.startsWith("_") || /^__\w+__$/.test(name), rangeNode);
      return;
    }
    case "class_definition": {
      const name = nameOf(node);
      push(out, node, name, "class", container, !name.startsWith("_"), rangeNode);
      const body = node.childForFieldName("body");
      if (body) visitPython(body, name, out);
      return;
    }
    case "type_alias_statement": {
      const left = node.childForFieldName("left");
      push(out, node, left?.text ?? "", "type", container, true);
      return;
    }
    case "expression_statement": {
      // Module-level (and class-level) public assignments are what a module exposes: constants, aliases.
      const assign = node.firstNamedChild;
      if (assign?.type !== "assignment") return;
      const left = assign.childForFieldName("left");
      if (left?.type !== "identifier" || left.text.startsWith("_")) return;
      const type = assign.childForFieldName("type")?.text;
      push(out, node, left.text, type === "TypeAlias" ? "type" : "const", container, true);
      return;
    }
    default:
      return;
  }
}
