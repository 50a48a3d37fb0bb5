import { lines } from "./cart.js";
import { subtotal, tax } from "./pricing.js";

export function checkout(cart) {
  const ls = lines(cart);
  const subtotalCents = subtotal(ls);
  const taxCents = tax(subtotalCents);
  return { subtotalCents, taxCents, totalCents: subtotalCents + taxCents };
}
