import net from "node:net";
import path from "node:path";
import { Database } from "../../../src/sqlite/driver.js";

/** A TCP proxy in front of a server, holding connections unanswered until it is opened. */
export interface Gate {
  url: string;
  open(): void;
  opened(): boolean;
  /** Connections made to the gate so far. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * A TCP proxy to `target` that holds every connection unanswered until open() is called; `onConnect`
 * sees each connection as it arrives (before it is held or passed on). With `passes`, a connection
 * whose first bytes it accepts goes through while the gate is closed (say, Chroma's heartbeat, so a
 * client that gives up on a silent server after a few seconds does not, however slow the machine).
 */
export async function gate(target: string, onConnect: () => void = () => {}, passes?: (firstBytes: Buffer) => boolean): Promise<Gate> {
  const { hostname, port } = new URL(target);
  const held: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  let isOpen = false;
  let count = 0;
  const pipe = (client: net.Socket) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  };
  const server = net.createServer((client) => {
    count++;
    onConnect();
    sockets.add(client);
    if (isOpen) pipe(client);
    else if (!passes) {
      client.pause();
      held.push(client);
    } else {
      client.once("data", (first: Buffer) => {
        client.pause();
        client.unshift(first);
        if (isOpen || passes(first)) {
          pipe(client);
          client.resume();
        } else held.push(client);
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    open() {
      if (isOpen) return;
      isOpen = true;
      for (const c of held.splice(0)) {
        pipe(c);
        c.resume();
      }
    },
    opened: () => isOpen,
    connections: () => count,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** How many files a retriever's index.db in `stateDir` holds (0 before it exists). */
export function filesStored(stateDir: string): number {
  let db: Database;
  try {
    db = new Database(path.join(stateDir, "index.db"), { readonly: true, fileMustExist: true });
  } catch {
    return 0;
  }
  try {
    return (db.prepare("SELECT count(*) AS n FROM files").get() as { n: number }).n;
  } catch {
    return 0; // created, not yet given its tables
  } finally {
    db.close();
  }
}
