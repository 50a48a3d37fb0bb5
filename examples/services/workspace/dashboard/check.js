// The dashboard's check: polls every service's /health and prints one line each; exit 1 if any is down.
const services = { api: process.env.API_URL || "http://127.0.0.1:4101", web: process.env.WEB_URL || "http://127.0.0.1:4102" };

async function main() {
  let down = 0;
  for (const [name, base] of Object.entries(services)) {
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(10_000) });
      const body = await res.json();
      console.log(`${name}: ${res.status === 200 && body.status === "ok" ? "healthy" : `unhealthy (${res.status})`}`);
      if (res.status !== 200 || body.status !== "ok") down++;
    } catch (err) {
      console.log(`${name}: down (${err.cause?.code ?? err.message})`);
      down++;
    }
  }
  console.log(down ? `dashboard: ${down} service(s) down` : "dashboard: all services healthy");
  process.exit(down ? 1 : 0);
}
main();
