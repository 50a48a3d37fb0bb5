export const TAX_RATE = 0.08;

export function subtotal(lines) {
  return lines.reduce((n, l) => n + l.lineCents, 0);
}

export function tax(cents) {
  return Math.round(cents * TAX_RATE);
}
