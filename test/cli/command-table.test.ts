import { Command, type Argument } from "commander";
import { describe, expect, it } from "vitest";
import { COMMANDS, usageOf } from "../../src/cli/command-specs.js";
import { listCommands, registerAll, registerCommand } from "../../src/cli/command-table.js";

// `ledgerloop --help` lists the commands from a table without loading their modules. Modules declare
// their command from that table (declareCommand), but nothing forces them to: a module may still
// register a command by hand, put it under the wrong module, add an argument, or have no options where
// the table's usage says `[options]`. Any of these would make the root help lie.

const program = () => new Command().name("ledgerloop").description("d").version("0.1.0").exitOverride();

describe("the CLI's command table", () => {
  it("has each module register exactly its table commands, with the table's description and arguments", async () => {
    const argName = (a: Argument) => (a.required ? `<${a.name()}${a.variadic ? "..." : ""}>` : `[${a.name()}${a.variadic ? "..." : ""}]`);
    for (const module of new Set(COMMANDS.map((c) => c.module))) {
      const p = program();
      await registerCommand(p, COMMANDS.find((c) => c.module === module)!.name);
      const expected = COMMANDS.filter((c) => c.module === module);
      expect(
        p.commands.map((c) => ({
          name: c.name(),
          description: c.description(),
          args: c.registeredArguments.map((a) => ({ name: argName(a), description: a.description || undefined })),
          usage: [...(c.options.length ? ["[options]"] : []), ...c.registeredArguments.map(argName)].join(" "),
        })),
        `module ${module}`,
      ).toEqual(
        expected.map((c) => ({
          name: c.name,
          description: c.description,
          args: ("args" in c ? c.args : []).map((a) => ({ name: a.name, description: "description" in a ? a.description : undefined })),
          usage: usageOf(c),
        })),
      );
    }
  });

  it("gives a root help identical to the one of the fully registered program", async () => {
    const full = program();
    await registerAll(full);
    const light = program();
    listCommands(light);
    expect(light.helpInformation()).toBe(full.helpInformation());
    expect(light.commands).toHaveLength(COMMANDS.length);
  });

  it("registers one command's module on demand, and nothing for an unknown name", async () => {
    const p = program();
    expect(await registerCommand(p, "history")).toBe(true);
    expect(p.commands.map((c) => c.name())).toEqual(["history"]);
    // One module may register several commands: cancel and requeue share theirs.
    const q = program();
    expect(await registerCommand(q, "requeue")).toBe(true);
    expect(q.commands.map((c) => c.name())).toEqual(["cancel", "requeue"]);
    expect(await registerCommand(program(), "histroy")).toBe(false);
  });
});
