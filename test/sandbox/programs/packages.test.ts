import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, problems, programsWorkspace, reached, writes } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("JavaScript package managers (packages-js.ts)", () => {
  it("run scripts, use the network to install, refuse publishing, ask for configuration", () => {
    expect(decide(ws, "npm test")).toEqual(["allow", "pkg.run"]);
    expect(decide(ws, "npm --prefix sub run build")).toEqual(["allow", "pkg.run"]);
    expect(decide(ws, "npm i lodash")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "npm ci", { network: true })).toEqual(["allow", "pkg.install"]);
    expect(decide(ws, "npm publish")).toEqual(["deny", "pkg.publish"]);
    expect(decide(ws, "npm config set x y")).toEqual(["ask", "pkg.manage"]);
    expect(decide(ws, "pnpm lint")).toEqual(["allow", "pkg.run"]);
    expect(decide(ws, "yarn")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "pnpm dlx cowsay")).toEqual(["ask", "pkg.download-run"]);
  });

  it("npx runs installed tools and asks before downloading one", () => {
    expect(decide(ws, "npx vitest run")).toEqual(["allow", "pkg.run"]);
    expect(decide(ws, "npx cowsay hi")).toEqual(["ask", "pkg.download-run"]);
    expect(decide(ws, "npx --package foo bar")).toEqual(["ask", "pkg.download-run"]);
  });

  it("walk what the runners run", () => {
    expect(reached("npx -y vitest run")).toEqual(["vitest (npx)"]);
    expect(reached("npm exec -- tsc -p .")).toEqual(["tsc (npm)"]);
    expect(reached("pnpm exec eslint .")).toEqual(["eslint (pnpm)"]);
    expect(reached("npx -c 'ls && id'")).toEqual(["ls (npx -c)", "id (npx -c)"]);
    expect(problems("npx $TOOL")).toEqual(["parse.dynamic-program"]);
    expect(decide(ws, "npx -c 'sudo id'")).toEqual(["deny", "priv.escalation"]);
  });
});

describe("Python, Rust and Go package managers (packages.ts)", () => {
  it("decide by subcommand", () => {
    expect(decide(ws, "pip list")).toEqual(["allow", "pkg.run"]);
    expect(decide(ws, "pip install x")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "python3 -m pip install x")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "pip3.11 config set x y")).toEqual(["ask", "pkg.manage"]);
    expect(decide(ws, "uv run pytest")).toEqual(["allow", "pkg.run"]);
    expect(decide(ws, "uv add x")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "poetry publish")).toEqual(["deny", "pkg.publish"]);
    expect(decide(ws, "twine upload dist/*")).toEqual(["deny", "pkg.publish"]);
    expect(decide(ws, "cargo test")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "cargo add serde")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "cargo frob")).toEqual(["ask", "program.unknown"]);
    expect(decide(ws, "go get x")).toEqual(["ask", "pkg.install"]);
    expect(decide(ws, "go run x@v1")).toEqual(["ask", "pkg.download-run"]);
    expect(decide(ws, "rustup show")).toEqual(["allow", "program.allowed"]);
    expect(decide(ws, "playwright install")).toEqual(["ask", "pkg.install"]);
  });

  it("walk what uv, poetry and uvx run, and write their output directories", () => {
    expect(reached("uv run --with x pytest -q")).toEqual(["pytest (uv)"]);
    expect(reached("uv tool run ruff check")).toEqual(["ruff (uv)"]);
    expect(reached("poetry run sudo id")).toEqual(["sudo (poetry)", "id (poetry → sudo)"]);
    expect(reached("uvx ruff check")).toEqual(["ruff (uvx)"]);
    expect(writes("cargo build --target-dir /tmp/t")).toEqual(["/tmp/t"]);
    expect(writes("go build -o bin/app .")).toEqual(["bin/app"]);
    expect(decide(ws, "go test -o /etc/x ./...")).toEqual(["deny", "write.outside"]);
  });
});
