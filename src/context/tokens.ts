/**
 * Token estimate used for budgeting. A character-based estimate (4 chars ≈ 1 token, rounded up)
 * is deliberately conservative for code; the tokenizer-backed counter replaces it per model.
 */
export interface TokenCounter {
  count(text: string): number;
}

export const approxTokenCounter: TokenCounter = {
  count(text: string): number {
    return Math.ceil(text.length / 4);
  },
};
