import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import type PgBoss from "pg-boss";
import { LedgerloopError, errorMessage } from "../errors.js";
import { runEnded } from "../ledger/run-ended.js";
import { isStateUnavailable } from "../ledger/state-unavailable.js";
import type { PgState } from "../ledger/pg-db.js";
import type { Runtime } from "../runtime.js";
import type { DriveResult } from "./drive.js";
import { StateHealth } from "./state-health.js";
import { WorkerPresence } from "./worker-presence.js";
import { sleep, withTimeout } from "./timers.js";
import { DEFAULT_RETRY_DELAY_SECONDS, DEFAULT_STOP_GRACE_MS, defaultPoolSize } from "./worker-defaults.js";
import { startQueueMetrics, type QueueMetrics } from "../telemetry/queue-metrics.js";

// The queue worker (`ledgerloop worker`): takes runs from the queue (src/queue/) and drives them,
// any number of workers on any number of machines against one PostgreSQL state. Per run it holds a
// lease it renews every ttl/3; its reaper hands over runs whose holder stopped renewing (a dead
// worker), so another worker continues them from their last checkpoint. stop() (the CLI's
// SIGTERM/SIGINT) is graceful: no new jobs; each run finishes the step it is in (a command
// included) and goes back to the queue for another worker. A step still running after the grace
// period is cut off: its command is killed and reported to the model as interrupted.
//
// The worker fetches, completes and fails its jobs itself instead of pg-boss's work(): pg-boss
// 10.4 completes a job without awaiting it, so a database gone as a job ended was an unhandled
// rejection that killed the worker. A database fault (a restart, a lost connection, a full server)
// pauses the slots (state-health.ts); what must be written is retried until it is.

type Job = PgBoss.Job<unknown>;

/** The outcome of one job, as pg-boss stores it (and --json prints it). */
export interface JobOutcome {
  thread: string;
  outcome: "ran" | "skipped" | "handed_over" | "lost" | "failed" | "cancelled";
  status?: DriveResult["status"];
  steps?: number;
  detail?: string;
  /** The run had checkpoints already: this worker continued it (after another stopped or died). */
  resumed?: boolean;
}

/** Lease states for the statuses a run can stop in. */
function leaseStateFor(status: DriveResult["status"]): "done" | "paused" {
  return runEnded(status) ? "done" : "paused";
}

/** Takes runs from the PostgreSQL queue and drives them, each under a lease it keeps renewing. */
export class RunWorker {
  readonly id = `${os.hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly ttlMs: number;
  private state?: PgState;
  private boss?: PgBoss;
  private reaper?: NodeJS.Timeout;
  private stopping = false;
  private stopped?: Promise<void>;
  /** Why this worker takes no new jobs though it was not told to stop (a newer schema), or null. */
  private retiring: string | null = null;
  private presence?: WorkerPresence;
  private metrics: QueueMetrics | null = null;
  /** Resolves with the reason once a retiring worker's runs have all ended (the CLI then exits). */
  readonly retired: Promise<string>;
  private resolveRetired!: (reason: string) => void;
  private readonly health: StateHealth;
  /** The slots' loops, and what wakes a sleeping slot on stop. */
  private slots: Promise<void>[] = [];
  private readonly wake = new AbortController();
  /** Runs being driven: `drain` stops one between steps, `ac` cuts it off (its command killed). */
  private readonly active = new Map<string, { ac: AbortController; drain: AbortController; done: Promise<unknown> }>();
  private lastBusy = Date.now();
  readonly outcomes: JobOutcome[] = [];

  constructor(
    private readonly url: string,
    private readonly opts: {
      concurrency: number;
      dir: string;
      leaseMs: number;
      pollSeconds: number;
      stopGraceMs?: number;
      /** How long a run handed back for a passing cause waits in the queue (default {@link DEFAULT_RETRY_DELAY_SECONDS}). */
      retryDelaySeconds?: number;
      verbose?: boolean;
      /** Connections of the worker's one pool (default {@link defaultPoolSize}). */
      poolSize?: number;
      /** Keep each run's clone under `dir` once the run ended here (default: removed). */
      keepDirs?: boolean;
      onOutcome?: (o: JobOutcome) => void;
      /** Where the worker's lines go (the CLI: stderr, redacted). */
      log: (line: string) => void;
    },
  ) {
    this.ttlMs = opts.leaseMs;
    this.health = new StateHealth(
      () => this.state!.pool.query("SELECT 1"),
      (line) => this.say(line),
    );
    this.retired = new Promise((r) => (this.resolveRetired = r));
  }

  /** The size of the one pool this worker holds. */
  get poolSize(): number {
    return this.opts.poolSize ?? defaultPoolSize(this.opts.concurrency);
  }

  /** Seconds a run handed back for a passing cause (the database away, its files out of reach) waits before it is taken again. */
  private get retryDelay(): number {
    return this.opts.retryDelaySeconds ?? DEFAULT_RETRY_DELAY_SECONDS;
  }

  private say(line: string): void {
    this.opts.log(`[worker ${this.id}] ${line}`);
  }

  async start(): Promise<void> {
    const [{ openRunState }, { startQueue, RUN_QUEUE }] = await Promise.all([import("../ledger/pg-state-port.js"), import("../queue/run-queue.js")]);
    // Our tables first (migrations under their lock), then pg-boss's schema. One pool for the whole
    // process: the queue, the leases and every run's state (createRuntime's sharedPg).
    this.state = await openRunState(this.url, { max: this.poolSize });
    try {
      this.boss = await startQueue(this.url, {
        pool: this.state.pool,
        supervise: true,
        onError: (err) => this.health.noteFailure(err, "queue") || this.say(`queue: ${errorMessage(err)}`),
      });
    } catch (err) {
      await this.state.close();
      throw err;
    }
    this.presence = new WorkerPresence(() => this.state!.pool, {
      id: this.id,
      slots: this.opts.concurrency,
      ttlMs: this.ttlMs,
      health: this.health,
      say: (line) => this.say(line),
      onNewerSchema: (reason) => this.retire(reason),
    });
    try {
      await this.presence.start();
    } catch (err) {
      await this.boss.stop({ graceful: false, wait: false }).catch(() => {});
      await this.state.close();
      throw err;
    }
    this.metrics = await startQueueMetrics({ pool: () => this.state?.pool, activeRuns: () => this.active.size, worker: this.id });
    for (let i = 0; i < this.opts.concurrency; i++) this.slots.push(this.slot(RUN_QUEUE));
    const tick = Math.max(500, Math.floor(this.ttlMs / 3));
    this.reaper = setInterval(() => void this.reap().catch((err) => this.health.noteFailure(err, "reaper") || this.say(`reaper: ${errorMessage(err)}`)), tick);
    this.say(
      `started: ${this.opts.concurrency} slot(s), ${this.poolSize} connection(s), lease ${Math.round(this.ttlMs / 1000)} s, state ${this.state.location}`,
    );
  }

  /**
   * True when nothing has been held here for `ms` and the database has no run left to do: none
   * queued, none held by any worker (a dead worker's run still needs someone to take it over).
   */
  async idleFor(ms: number): Promise<boolean> {
    if (this.active.size > 0 || Date.now() - this.lastBusy < ms || !this.state) return false;
    const r = await this.state.pool.query<{ n: string }>("SELECT COUNT(*) AS n FROM ll_run_leases WHERE state IN ('queued', 'held')");
    return Number(r.rows[0]!.n) === 0;
  }

  /**
   * One slot: fetch a job, handle it, then complete or fail it (retried until written), until the
   * worker stops. No job fetched while the database is down; pg-boss's fetch says "none" on errors.
   */
  private async slot(queue: string): Promise<void> {
    while (!this.stopping && !this.retiring) {
      await this.health.ready(this.wake.signal);
      if (this.stopping || this.retiring) break;
      const [job] = await this.boss!.fetch<unknown>(queue, { batchSize: 1 });
      if (!job) {
        await sleep(this.opts.pollSeconds * 1000, this.wake.signal);
        continue;
      }
      let outcome: JobOutcome | undefined;
      let failure: unknown;
      try {
        outcome = await this.handle(job);
      } catch (err) {
        failure = err;
      }
      try {
        await this.health.retry(`recording job ${job.id}`, () =>
          failure === undefined
            ? this.boss!.complete(queue, job.id, outcome as object)
            : this.boss!.fail(queue, job.id, { name: (failure as Error)?.name ?? "Error", message: errorMessage(failure) }),
        );
      } catch (err) {
        // The job's row only records what happened (the run's own row says where it stands).
        this.say(`job ${job.id}: could not be recorded: ${errorMessage(err)}`);
      }
    }
  }

  /** Hands over runs whose holder stopped renewing its lease (a dead worker, or one cut off from the database). */
  private async reap(): Promise<void> {
    if (this.stopping || this.retiring || this.health.down || !this.state || !this.boss) return;
    const { reapExpiredRuns } = await import("./worker-reaper.js");
    // Reaped first, counted after: `this.metrics?.takeovers(await reap…)` would skip the reaping itself
    // whenever metrics are off (optional chaining does not evaluate the arguments).
    const reaped = await reapExpiredRuns(this.state.pool, this.boss, this.id, (line) => this.say(line));
    this.metrics?.takeovers(reaped);
  }

  /** One job: take the run's lease, materialise its files, drive it, and say where it stands. */
  async handle(job: Job): Promise<JobOutcome> {
    const [{ RunJob, getSubmission, pinCommit }, leases, { materialise }] = await Promise.all([
      import("../queue/run-queue.js"),
      import("../ledger/pg-run-leases.js"),
      import("../queue/materialise.js"),
    ]);
    const pool = this.state!.pool;
    const parsed = RunJob.safeParse(job.data);
    if (!parsed.success) {
      const i = parsed.error.issues[0]!;
      // Thrown: the job is failed with this reason; the queue never retries it (retryLimit 0).
      throw new Error(`invalid run job ${job.id}: ${i.path.join(".") || "(payload)"}: ${i.message}`);
    }
    const thread = parsed.data.thread;
    // The job is this worker's now: its run is only reached through it, so the database is waited for.
    const sub = await this.health.retry(`${thread}: reading its submission`, () => getSubmission(pool, thread));
    if (!sub) throw new Error(`run job ${job.id} names thread "${thread}", which was never submitted`);
    // One token for every attempt: an acquire whose commit was lost with its connection is ours on the retry.
    const token = leases.newLeaseToken();
    const got = await this.health.retry(`${thread}: taking its lease`, () =>
      leases.acquireRunLease(pool, { thread, worker: this.id, jobId: job.id, ttlMs: this.ttlMs, token }),
    );
    if (!got.ok) {
      const l = got.lease;
      const detail = l?.state === "held" ? `held by ${l.worker}` : `already ${l?.state ?? "unknown"}`;
      return this.record({ thread, outcome: "skipped", detail });
    }
    this.lastBusy = Date.now();
    if (got.takeover) this.metrics?.takeovers(1);
    const unavailable = async (err: unknown, extra: Partial<JobOutcome> = {}): Promise<JobOutcome> => {
      // Not the run's fault: it goes back to the queue as it stands, whatever step it was at.
      const why = errorMessage(err).split("\n")[0]!;
      if (!(await this.handBack(thread, token, `${this.id}: the state database was unavailable (${why}); queued again`, this.retryDelay))) {
        this.say(`${thread}: the state database was unavailable, and meanwhile another worker took the run over`);
        return this.record({ thread, outcome: "lost", ...extra, detail: "another worker took the run over" });
      }
      this.say(`${thread}: paused, the state database was unavailable; queued again`);
      return this.record({ thread, outcome: "handed_over", ...extra, detail: `state database unavailable: ${why}` });
    };
    if (this.stopping) {
      // Fetched just as this worker began to stop: straight back to the queue for another.
      await this.handBack(thread, token, `${this.id} was stopping when it got the run; queued for another worker`);
      return this.record({ thread, outcome: "handed_over", detail: "worker stopping" });
    }
    const ac = new AbortController();
    const drain = new AbortController();
    let lost = false;
    let cancelled: string | null = null;
    const beat = setInterval(
      () => {
        void leases
          .heartbeatRunLease(pool, thread, token, this.ttlMs)
          .then(({ held, cancel }) => {
            if (!held && !lost) {
              lost = true;
              this.say(`${thread}: lost its lease (taken over); stopping without writing`);
              ac.abort();
            } else if (held && cancel && !cancelled) {
              // `ledgerloop cancel`: the step in progress ends as it would, then the run stops.
              cancelled = cancel;
              this.say(`${thread}: ${cancel}; stopping at the next step boundary`);
              drain.abort();
            }
          })
          // The database unreachable for a moment: keep trying; the run itself pauses if it lasts.
          .catch((err) => this.health.noteFailure(err, `${thread}: renewing its lease`));
      },
      Math.max(200, Math.floor(this.ttlMs / 3)),
    );
    let rt: Runtime | undefined;
    /** The run's clone, removed once the run ended here (a clone is ~34 MB, most of it the vector index). */
    let clone: string | undefined;
    let resolveDone!: () => void;
    this.active.set(thread, { ac, drain, done: new Promise<void>((r) => (resolveDone = r)) });
    try {
      this.say(`${thread}: ${got.takeover ? "taking over" : "starting"} (job ${job.id})`);
      const [{ createRuntime }, { driveRun }] = await Promise.all([import("../runtime.js"), import("./drive.js")]);
      // The revision to continue from: the newest one the run's ledger names (none before the first plan).
      const { lastRevision } = await import("../queue/resume-point.js");
      const rev = await lastRevision(pool, thread);
      let files;
      try {
        files = await materialise(sub.source, { root: this.opts.dir, thread, commit: sub.commit, empty: Boolean(rev && sub.source.kind === "repo") });
        if (files.commit && !sub.commit) await pinCommit(pool, thread, files.commit);
        await leases.materialisedRun(pool, thread, token);
      } catch (err) {
        if (isStateUnavailable(err)) return await unavailable(err);
        // Another machine may reach what this one cannot (a volume, a network): released back to
        // the queue with the reason, until MATERIALISE_ATTEMPTS workers in a row failed.
        const attempt = ((await this.health.retry(`${thread}: reading its lease`, () => leases.getRunLease(pool, thread)))?.releases ?? 0) + 1;
        const why = `${this.id} could not materialise the run (attempt ${attempt} of ${leases.MATERIALISE_ATTEMPTS}): ${errorMessage(err)}`;
        if (attempt < leases.MATERIALISE_ATTEMPTS) {
          await this.handBack(thread, token, `${why}; queued for another worker`, this.retryDelay * attempt, true);
          this.say(`${thread}: ${why}; released to the queue`);
          return this.record({ thread, outcome: "handed_over", detail: why });
        }
        await this.endLease(thread, token, "failed", why);
        throw err;
      }
      try {
        rt = await createRuntime(
          { ...sub.settings, workspace: files.dir, stateUrl: this.url },
          {
            lease: { command: "worker", thread },
            fence: { thread, token },
            sharedPg: this.state,
            stopBetweenSteps: drain.signal,
            warn: (m) => this.say(`${thread}: warning: ${m}`),
            ...(this.opts.verbose ? { progress: (e) => this.opts.log(`[${thread} step ${String(e.step).padStart(3)}] ${e.node.padEnd(9)} ${e.text}`) } : {}),
          },
        );
      } catch (err) {
        if (isStateUnavailable(err)) return await unavailable(err);
        if ((err as LedgerloopError).code === "LEASE_HELD") {
          // Another process still writes these files (a shared workspace whose last holder is not gone yet): try again shortly.
          await this.handBack(thread, token, `${this.id}: ${errorMessage(err)}; retrying in ${this.retryDelay} s`, this.retryDelay);
          return this.record({ thread, outcome: "handed_over", detail: errorMessage(err) });
        }
        await this.endLease(thread, token, "failed", `worker ${this.id} could not start the run: ${errorMessage(err)}`);
        throw err;
      }
      if (rev && sub.source.kind === "repo") {
        // A fresh clone: the run's files are that revision, pulled from PostgreSQL's replica.
        const { restoreRevision } = await import("../queue/resume-point.js");
        await restoreRevision(rt, rev);
      }
      const resumed = await rt.runs.hasCheckpoints(thread);
      if (sub.source.kind === "repo") {
        // A fresh clone has nothing git ignores: the declared setup re-creates it; the model is told.
        const { prepareFreshClone } = await import("./worker-setup.js");
        await prepareFreshClone(rt, { setup: sub.source.setup, moved: resumed, signal: ac.signal, say: (l) => this.say(`${thread}: ${l}`) });
      }
      const result = await driveRun(rt, thread, resumed ? null : sub.task, { signal: ac.signal, origin: "worker" });
      // Waits for the database if it is away: whether the run is still ours decides what is written.
      if (lost || !(await this.health.retry(`${thread}: renewing its lease`, () => leases.renewRunLease(pool, thread, token, this.ttlMs)))) {
        return this.record({ thread, outcome: "lost", status: result.status, steps: result.steps, detail: "another worker took the run over" });
      }
      if (result.status === "state_unavailable") {
        // The database went away mid-run: back to the queue, from its last checkpoint.
        return await unavailable(new Error(result.error ?? "the state database was unavailable"), { status: result.status, steps: result.steps });
      }
      if (cancelled && result.status === "interrupted") {
        await this.endLease(thread, token, "cancelled", `${cancelled}; stopped after step ${result.steps} on ${this.id}`);
        this.say(`${thread}: cancelled after ${result.steps} step(s)`);
        if (sub.source.kind === "repo") clone = files.dir;
        return this.record({ thread, outcome: "cancelled", status: result.status, steps: result.steps, detail: cancelled });
      }
      if (this.stopping && result.status === "interrupted") {
        await this.handBack(thread, token, `${this.id} stopped at step ${result.steps}; queued for another worker`);
        this.say(`${thread}: stopped at step ${result.steps}; handed back to the queue`);
        return this.record({ thread, outcome: "handed_over", status: result.status, steps: result.steps });
      }
      await this.endLease(
        thread,
        token,
        leaseStateFor(result.status),
        `${result.status} after ${result.steps} step(s) on ${this.id}${result.error ? `: ${result.error}` : ""}`,
      );
      this.say(`${thread}: ${result.status} after ${result.steps} step(s)${result.error ? ` (${result.error})` : ""}`);
      // Only a run that ended here: one handed back may be cloned again into the same path by a worker sharing --dir.
      if (sub.source.kind === "repo") clone = files.dir;
      return this.record({ thread, outcome: "ran", status: result.status, steps: result.steps, resumed });
    } catch (err) {
      if (isStateUnavailable(err)) {
        this.health.noteFailure(err, thread);
        return await unavailable(err);
      }
      this.say(`${thread}: ${errorMessage(err)}`);
      // Still ours: a stopping worker hands it back, otherwise it ends failed with the reason (a
      // person resubmits); a materialise failure already ended it.
      const mine = await this.health.retry(`${thread}: reading its lease`, () => leases.getRunLease(pool, thread)).catch(() => null);
      if (mine?.state === "held" && mine.worker === this.id) {
        if (this.stopping) await this.handBack(thread, token, `${this.id} stopped (${errorMessage(err)}); queued for another worker`).catch(() => {});
        else await this.endLease(thread, token, "failed", `worker ${this.id}: ${errorMessage(err)}`).catch(() => {});
      }
      this.record({ thread, outcome: "failed", detail: errorMessage(err) });
      throw err;
    } finally {
      clearInterval(beat);
      // Bounded: a stuck close (a sandbox session, a process that ignores its signals) must not
      // keep a stopping worker from exiting; whatever it left is cleaned by the next holder.
      if (rt) await withTimeout(rt.close(), 15_000).catch((e) => this.say(`${thread}: closing its runtime: ${errorMessage(e)}`));
      if (clone && !this.opts.keepDirs)
        await fs.promises.rm(clone, { recursive: true, force: true }).catch((e) => this.say(`${thread}: removing its clone: ${errorMessage(e)}`));
      this.active.delete(thread);
      this.lastBusy = Date.now();
      resolveDone();
    }
  }

  /**
   * Puts a run this worker holds back in the queue, with its next job, in one transaction; retried
   * until written (a repeat after a lost commit finds the run queued already and does nothing).
   */
  private async handBack(thread: string, token: string, note: string, startAfterSeconds?: number, released = false): Promise<boolean> {
    const [{ requeueRun, getRunLease }, { enqueueOn }] = await Promise.all([import("../ledger/pg-run-leases.js"), import("../queue/run-queue.js")]);
    return this.health.retry(`${thread}: handing it back`, async () => {
      const client = await this.state!.pool.connect();
      try {
        if (
          await requeueRun(client, {
            thread,
            guard: { token },
            note,
            released,
            enqueue: (c, o) => enqueueOn(this.boss!, c, { thread }, { ...o, startAfterSeconds }),
          })
        )
          return true;
        // Not ours any more: back in the queue all the same (an earlier attempt whose answer was
        // lost, or a reaper), or taken over by another worker.
        return (await getRunLease(client, thread))?.state === "queued";
      } finally {
        client.release();
      }
    });
  }

  /** Ends this worker's holding of a run (done, paused or failed), retried until written. */
  private async endLease(thread: string, token: string, state: "paused" | "done" | "failed" | "cancelled", note: string): Promise<void> {
    const { endRunLease } = await import("../ledger/pg-run-leases.js");
    await this.health.retry(`${thread}: recording its end`, () => endRunLease(this.state!.pool, thread, token, state, note));
  }

  private record(o: JobOutcome): JobOutcome {
    this.outcomes.push(o);
    this.metrics?.outcome(o);
    this.opts.onOutcome?.(o);
    return o;
  }

  /** No new jobs from now on; the runs being driven go on to their end, then `retired` resolves. */
  private retire(reason: string): void {
    if (this.retiring || this.stopping) return;
    this.retiring = reason;
    this.say(reason);
    clearInterval(this.reaper);
    this.wake.abort();
    void Promise.all(this.slots).then(() => this.resolveRetired(reason));
  }

  /**
   * Graceful stop: no new jobs; each run finishes its current step and goes back to the queue. After
   * the grace period the steps still running are cut off (their commands killed, reported interrupted).
   */
  stop(): Promise<void> {
    // Every caller waits for the one stop: the CLI's idle check can ask twice (two checks in flight
    // under load), and a repeat that returned at once let the process exit before the worker had
    // marked itself stopped or closed its pool.
    this.stopped ??= this.stopOnce();
    return this.stopped;
  }

  private async stopOnce(): Promise<void> {
    this.stopping = true;
    clearInterval(this.reaper);
    const t0 = Date.now();
    const phase = (what: string) => this.opts.verbose && this.say(`stop: ${what} (${Date.now() - t0} ms)`);
    this.wake.abort();
    // A job fetched while stopping is handed back by handle() itself; wait for those too.
    const graceEnds = Date.now() + (this.opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
    while (this.active.size) {
      const left = graceEnds - Date.now();
      for (const { ac, drain } of this.active.values()) (left > 0 ? drain : ac).abort();
      const all = Promise.all([...this.active.values()].map((a) => a.done));
      if (left <= 0) await all;
      else {
        let t: NodeJS.Timeout | undefined;
        await Promise.race([all, new Promise((r) => (t = setTimeout(r, left)))]);
        clearTimeout(t);
        if (this.active.size) phase(`grace period over; cutting off ${this.active.size} run(s)`);
      }
    }
    await Promise.all(this.slots);
    phase("runs handed back");
    await this.presence?.stop("stopped");
    await this.metrics?.stop().catch((e) => this.say(`stop: exporting metrics: ${errorMessage(e)}`));
    await this.boss?.stop({ graceful: true, wait: true, timeout: 5_000 }).catch(() => {});
    phase("queue stopped");
    await withTimeout(this.state?.close() ?? Promise.resolve(), 5_000).catch((e) => this.say(`stop: closing the state pool: ${errorMessage(e)}`));
    phase("state closed");
  }
}
