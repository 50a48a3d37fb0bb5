/** Amounts are integer cents. */
export type Cents = number;

/** "12.34", with a leading "-" for credits. */
export function formatCents(c: Cents): string {
  const whole = Math.floor(c / 100);
  const frac = c % 100;
  return `${whole}.${String(frac).padStart(2, "0")}`;
}

/** pct percent of an amount, rounded to a whole cent. */
export function percentOf(c: Cents, pct: number): Cents {
  return Math.round((c * pct) / 100);
}
