import { Command, Help } from "commander";
import { describe, expect, it } from "vitest";
import { COMMANDS, listCommands, registerAll, registerCommand } from "../../src/cli/command-table.js";

// `ledgerloop --help` lists the commands from a table without loading their modules; the table must
// say what the modules themselves register, or the root help would lie.

const program = () => new Command().name("ledgerloop").description("d").version("0.1.0").exitOverride();

describe("the CLI's command table", () => {
  it("names every command the modules register, in order, with their usage and description", async () => {
    const full = program();
    await registerAll(full);
    const help = new Help();
    expect(full.commands.map((c) => ({ name: c.name(), usage: help.subcommandTerm(c).slice(c.name().length).trim(), description: c.description() }))).toEqual(
      COMMANDS.map(({ name, usage, description }) => ({ name, usage, description })),
    );
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
