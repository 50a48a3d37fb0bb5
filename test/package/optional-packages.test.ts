import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { importOptional, MissingPackageError, OPTIONAL_PACKAGES, type OptionalPackage } from "../../src/optional-packages.js";
import { REPO } from "../helpers/workspace.js";

const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

describe("optional packages", () => {
  it("are package.json's optional peers at the same exact pins, and dev dependencies so the tests run them", () => {
    expect(pkg.peerDependencies).toEqual(OPTIONAL_PACKAGES);
    for (const [name, version] of Object.entries(OPTIONAL_PACKAGES)) {
      expect(version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
      expect(pkg.devDependencies[name]).toBe(version);
      expect(pkg.dependencies[name]).toBeUndefined();
    }
  });

  it("a missing package becomes one line naming the npm command", async () => {
    // A real failed import of a package that is not installed, under an optional package's name.
    const missing = "ledgerloop-no-such-package" as OptionalPackage;
    const err = await importOptional([missing], "the test feature", () => import(missing)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingPackageError);
    expect((err as Error).message).toMatch(
      /^the test feature needs ledgerloop-no-such-package, which ledgerloop does not install: run `npm install ledgerloop-no-such-package@/,
    );
    expect((err as Error).message).not.toContain("\n");
  });

  it("names the pinned version, and leaves other failures alone", async () => {
    const err = await importOptional(["chromadb"], "vectors", () => import("ledgerloop-no-such-package" as string)).catch((e: unknown) => e);
    // The import failed for another package than the one named: not reported as chromadb missing.
    expect(err).not.toBeInstanceOf(MissingPackageError);
    expect(new MissingPackageError(["chromadb"], "vectors").message).toContain("`npm install chromadb@3.5.0`");
    const boom = new Error("broken inside");
    await expect(importOptional(["chromadb"], "vectors", () => Promise.reject(boom))).rejects.toBe(boom);
  });
});
