import type { Runtime } from "../runtime.js";

// The nodes of a run still working. LangGraph stops waiting for a node the moment the run's signal
// aborts, but the node itself goes on: the act node kills its command and then records why. The
// driver waits for that record before it returns, so whoever stopped the run (a worker handing it
// back, which makes the ledger refuse later appends) never races the node's last write.

const inFlight = new WeakMap<Runtime, Set<Promise<unknown>>>();

/** Runs `work` as one of `rt`'s nodes in flight until it settles. */
export function trackNode<T>(rt: Runtime, work: Promise<T>): Promise<T> {
  let set = inFlight.get(rt);
  if (!set) inFlight.set(rt, (set = new Set()));
  const settled = work.then(
    () => undefined,
    () => undefined,
  );
  set.add(settled);
  void settled.then(() => set.delete(settled));
  return work;
}

/** Waits until `rt`'s nodes in flight have settled, at most `ms`; false when some were still working. */
export async function settleNodes(rt: Runtime, ms: number): Promise<boolean> {
  const set = inFlight.get(rt);
  if (!set?.size) return true;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([Promise.all([...set]).then(() => true as const), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
