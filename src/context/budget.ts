import { LedgerloopError } from "../errors.js";
import type { ContextItem } from "../state.js";

/** The fixed part of the prompt alone does not fit the budget: a configuration problem, not a runtime one. */
export class ContextBudgetError extends LedgerloopError {
  constructor(message: string) {
    super("CONTEXT_BUDGET_TOO_SMALL", message);
  }
}

/** Per-message overhead of the chat format (role, separators), as OpenAI documents it for its models. */
export const MESSAGE_OVERHEAD = 4;

/**
 * Tracks what a prompt spends. Every piece of content goes through `take`, which either accepts it
 * (recording section, source, score and tokens) or records it as omitted with the reason: nothing
 * is ever dropped silently, and the total can never pass the budget.
 */
export class Budget {
  used = 0;
  readonly items: ContextItem[] = [];
  readonly omitted: ContextItem[] = [];
  private readonly spent = new Map<string, number>();

  constructor(readonly total: number) {}

  remaining(): number {
    return this.total - this.used;
  }

  /** Tokens a section may still use: its cap (a fraction of the total) or what is left, whichever is less. */
  room(section: string, fraction = 1): number {
    const cap = Math.floor(this.total * fraction) - (this.spent.get(section) ?? 0);
    return Math.max(0, Math.min(cap, this.remaining()));
  }

  /** Charges `tokens` unconditionally (the fixed part); the caller has checked it fits. */
  charge(item: ContextItem): void {
    this.used += item.tokens;
    this.spent.set(item.section, (this.spent.get(item.section) ?? 0) + item.tokens);
    this.items.push(item);
  }

  /** Accepts the item if it fits the section's room, else records it as omitted. */
  take(item: Omit<ContextItem, "tokens"> & { tokens: number }, fraction = 1): boolean {
    if (item.tokens <= this.room(item.section, fraction)) {
      this.charge(item);
      return true;
    }
    this.omitted.push({ ...item, note: item.note ? `${item.note}; over budget` : "over budget" });
    return false;
  }

  omit(item: ContextItem): void {
    this.omitted.push(item);
  }

  /** Moves an accepted item to the omitted list (a late drop, e.g. after the final recount). */
  retract(section: string, source: string, note: string): void {
    const i = this.items.findIndex((x) => x.section === section && x.source === source);
    if (i === -1) return;
    const [item] = this.items.splice(i, 1);
    this.used -= item!.tokens;
    this.spent.set(section, (this.spent.get(section) ?? 0) - item!.tokens);
    this.omitted.push({ ...item!, note });
  }
}
