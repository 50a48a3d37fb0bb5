import { totals, type Line } from "./invoice.js";
import { formatCents } from "./money.js";

/** The invoice as text: one row per line, then net, VAT and total. */
export function renderInvoice(lines: Line[]): string {
  const t = totals(lines);
  const rows = lines.map((l) => `${l.description}  ${l.qty} x ${formatCents(l.unitCents)} = ${formatCents(l.qty * l.unitCents)}`);
  return [...rows, `net ${formatCents(t.netCents)}`, `VAT ${formatCents(t.taxCents)}`, `total ${formatCents(t.grossCents)}`].join("\n") + "\n";
}
