/**
 * Collects the health of every service.
 * @param {Record<string, string>} services name → base URL
 * @returns {Promise<{ overall: "ok" | "degraded", services: Record<string, "ok" | "down"> }>}
 */
export async function collectHealth(services) {
  throw new Error("not implemented");
}
