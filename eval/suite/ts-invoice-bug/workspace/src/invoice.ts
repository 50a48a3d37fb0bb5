import { percentOf, type Cents } from "./money.js";

export type Rate = "standard" | "reduced" | "zero";

/** VAT rates in percent. */
export const RATES: Record<Rate, number> = { standard: 20, reduced: 5, zero: 0 };

export interface Line {
  description: string;
  /** Negative on a credit note. */
  qty: number;
  unitCents: Cents;
  rate: Rate;
}

export interface Totals {
  netCents: Cents;
  taxCents: Cents;
  grossCents: Cents;
  taxByRate: Record<Rate, Cents>;
}

export function totals(lines: Line[]): Totals {
  const taxByRate: Record<Rate, Cents> = { standard: 0, reduced: 0, zero: 0 };
  let net = 0;
  for (const l of lines) {
    const lineNet = l.qty * l.unitCents;
    net += lineNet;
    taxByRate[l.rate] = percentOf(lineNet, RATES[l.rate]);
  }
  const tax = taxByRate.standard + taxByRate.reduced + taxByRate.zero;
  return { netCents: net, taxCents: tax, grossCents: net + tax, taxByRate };
}
