import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Embedder } from "../../../src/retrieval/embedders/port.js";

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(cosine(a, a));

/** The behaviour every Embedder adapter must have (see the contract in src/retrieval/embedders/port.ts). */
export function embedderConformance(name: string, create: () => Promise<Embedder>): void {
  describe(`Embedder conformance: ${name}`, () => {
    let e: Embedder;
    beforeAll(async () => {
      e = await create();
    });
    afterAll(async () => {
      await e?.close?.();
    });

    it("has an id and a positive dimension", () => {
      expect(e.id).toMatch(/\S/);
      expect(Number.isInteger(e.dimensions) && e.dimensions > 0).toBe(true);
    });

    it("returns one finite unit vector of the right length per text, in order", async () => {
      const texts = ["export function parseConfig(path: string)", "def load_user_role(user):", "SELECT * FROM users"];
      const vs = await e.embedDocuments(texts);
      expect(vs).toHaveLength(3);
      for (const v of vs) {
        expect(v).toHaveLength(e.dimensions);
        expect(v.every(Number.isFinite)).toBe(true);
        expect(norm(v)).toBeCloseTo(1, 2);
      }
      // Order: each text's vector equals its vector alone.
      for (let i = 0; i < texts.length; i++) {
        const [alone] = await e.embedDocuments([texts[i]!]);
        expect(cosine(alone!, vs[i]!)).toBeCloseTo(1, 4);
      }
    });

    it("is deterministic, and a query embeds like a document", async () => {
      const [a] = await e.embedDocuments(["class UserRole extends Base {}"]);
      const [b] = await e.embedDocuments(["class UserRole extends Base {}"]);
      expect(a).toEqual(b);
      const q = await e.embedQuery("class UserRole extends Base {}");
      expect(q).toHaveLength(e.dimensions);
      expect(cosine(q, a!)).toBeGreaterThan(0.5);
    });

    it("accepts an empty list and any string: empty, huge, control characters, any Unicode", async () => {
      expect(await e.embedDocuments([])).toEqual([]);
      const odd = ["", " ", "\u0000\u0001\u0002", "ünïcödé 日本語 🚀 \uD800", "x".repeat(200_000), "a\r\n\tb"];
      const vs = await e.embedDocuments(odd);
      expect(vs).toHaveLength(odd.length);
      for (const v of vs) {
        expect(v).toHaveLength(e.dimensions);
        expect(v.every(Number.isFinite)).toBe(true);
        const n = norm(v);
        expect(n === 0 || Math.abs(n - 1) < 0.01).toBe(true);
      }
    });

    it("puts related texts closer than unrelated ones", async () => {
      const [q] = await e.embedDocuments(["parse the user role from the session token"]);
      const [near, far] = await e.embedDocuments(["function parseUserRole(token) { return session.role }", "render the dashboard chart colors"]);
      expect(cosine(q!, near!)).toBeGreaterThan(cosine(q!, far!));
    });
  });
}
