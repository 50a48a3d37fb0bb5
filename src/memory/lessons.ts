import { createHash } from "node:crypto";
import type { BaseStore } from "@langchain/langgraph-checkpoint";

/** Namespace of lessons: shared by every run whose state lives in the same store (one workspace). */
export const LESSONS_NS = ["ledgerloop", "lessons"];

export interface LessonSource {
  threadId: string;
  trigger: string;
  eventIds: string[];
  at: string;
}

export interface Lesson {
  key: string;
  text: string;
  sources: LessonSource[];
  /** How many reflections arrived at this lesson. */
  seen: number;
  createdAt: string;
  updatedAt: string;
  score?: number;
}

/** The form under which two lessons count as the same: case, spacing, quotes and numbers ignored. */
export function normalizeLesson(text: string): string {
  return text
    .toLowerCase()
    .replace(/[`'"“”‘’]/g, "")
    .replace(/\d+(\.\d+)?/g, "#")
    .replace(/\s+/g, " ")
    .replace(/[.;:,!\s]+$/, "")
    .trim();
}

export function lessonKey(text: string): string {
  return createHash("sha256").update(normalizeLesson(text)).digest("hex").slice(0, 20);
}

/** Stores lessons, merging duplicates into the existing entry with the new source appended. */
export async function rememberLessons(store: BaseStore, texts: string[], source: LessonSource): Promise<{ added: number; merged: number }> {
  let added = 0;
  let merged = 0;
  for (const text of [...new Set(texts.map((t) => t.trim()).filter((t) => t.length >= 8))]) {
    const key = lessonKey(text);
    const existing = await store.get(LESSONS_NS, key);
    const now = new Date().toISOString();
    if (existing) {
      const v = existing.value as Omit<Lesson, "key">;
      // A run re-reflecting the same events (a resumed reflect) is not a new confirmation.
      const dup = v.sources.some((s) => s.threadId === source.threadId && s.eventIds.join() === source.eventIds.join());
      if (!dup) {
        await store.put(LESSONS_NS, key, { ...v, sources: [...v.sources, source].slice(-20), seen: v.seen + 1, updatedAt: now });
      }
      merged++;
    } else {
      await store.put(LESSONS_NS, key, { text, sources: [source], seen: 1, createdAt: now, updatedAt: now });
      added++;
    }
  }
  return { added, merged };
}

const toLesson = (item: { key: string; value: Record<string, unknown>; score?: number }): Lesson => ({
  key: item.key,
  ...(item.value as Omit<Lesson, "key">),
  ...(item.score !== undefined ? { score: item.score } : {}),
});

/** Lessons relevant to a query (full-text ranked), most relevant first. */
export async function recallLessons(store: BaseStore, query: string, k = 8): Promise<Lesson[]> {
  if (!query.trim()) return [];
  return (await store.search(LESSONS_NS, { query, limit: k })).map(toLesson);
}

/** Every stored lesson, newest first. */
export async function listLessons(store: BaseStore, limit = 1000): Promise<Lesson[]> {
  return (await store.search(LESSONS_NS, { limit })).map(toLesson);
}

/** Deletes lessons by key (or key prefix); returns how many were removed. */
export async function forgetLessons(store: BaseStore, keys: string[]): Promise<number> {
  const all = await listLessons(store);
  let n = 0;
  for (const k of keys) {
    for (const l of all.filter((x) => x.key === k || (k.length >= 6 && x.key.startsWith(k)))) {
      await store.delete(LESSONS_NS, l.key);
      n++;
    }
  }
  return n;
}
