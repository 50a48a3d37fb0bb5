/** Prices are integer cents. */
const PRODUCTS = [
  { sku: "TEA-01", name: "Green tea", category: "drinks", priceCents: 450 },
  { sku: "TEA-02", name: "Black tea", category: "drinks", priceCents: 399 },
  { sku: "COF-01", name: "Coffee beans", category: "drinks", priceCents: 1299 },
  { sku: "MUG-01", name: "Mug", category: "kitchen", priceCents: 850 },
  { sku: "KET-01", name: "Kettle", category: "kitchen", priceCents: 3999 },
  { sku: "BIS-01", name: "Biscuits", category: "food", priceCents: 275 },
];

export class UnknownProduct extends Error {
  constructor(sku) {
    super(`unknown product ${sku}`);
    this.name = "UnknownProduct";
  }
}

const BY_SKU = new Map(PRODUCTS.map((p) => [p.sku, p]));

export function getProduct(sku) {
  const p = BY_SKU.get(sku);
  if (!p) throw new UnknownProduct(sku);
  return p;
}

export function allProducts() {
  return [...PRODUCTS];
}
