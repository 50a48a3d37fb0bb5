import { getProduct } from "./catalog.js";

export function createCart() {
  return { items: new Map() };
}

export function addItem(cart, sku, qty = 1) {
  getProduct(sku);
  cart.items.set(sku, (cart.items.get(sku) ?? 0) + qty);
  return cart;
}

/** One line per product: sku, qty, unit price and line total (cents). */
export function lines(cart) {
  return [...cart.items].map(([sku, qty]) => {
    const p = getProduct(sku);
    return { sku, category: p.category, qty, unitCents: p.priceCents, lineCents: p.priceCents * qty };
  });
}
