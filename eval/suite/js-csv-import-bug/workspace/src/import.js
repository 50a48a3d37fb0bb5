import { parse } from "./csv.js";

/** A bank statement export (date, description, amount) as rows with integer cents, and their total. */
export function importStatement(text) {
  const [header, ...records] = parse(text);
  if (header.join(",") !== "date,description,amount") throw new Error(`unexpected header: ${header}`);
  const rows = records.map(([date, description, amount]) => ({ date, description, amountCents: Math.round(parseFloat(amount) * 100) }));
  return { rows, totalCents: rows.reduce((n, r) => n + r.amountCents, 0) };
}
