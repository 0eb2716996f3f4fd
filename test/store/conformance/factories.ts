/**
 * Row factories: put a job straight into any state (pending, scheduled,
 * running with a chosen owner, token, lease and deadline, completed, failed,
 * cancelled), as River's testfactory does. A test-only INSERT that satisfies
 * the schema's CHECKs, so a row made here is one the store could have made;
 * the audit trigger records its `enqueued` event as for any insert. Plus the
 * reads a test checks its outcome with.
 */
import { sql } from 'drizzle-orm';
import type { ManualClock } from '../../../src/core/clock.ts';
import type { Db } from '../../../src/db/db.ts';
import type { JobStatus } from '../../../src/db/schema.ts';
import type { JobRecord } from '../../../src/core/job-record.ts';
import { DEFAULTS } from './settings.ts';
import type { StoredEventRecord } from '../../../src/db/store/port.ts';

export interface JobShape {
  queue?: string;
  payload?: unknown;
  priority?: number;
  attempt?: number;
  maxAttempts?: number;
  erroredAttempts?: number;
  lostAttempts?: number;
  availableAt?: number;
  idempotencyKey?: string;
  timeoutMs?: number | null;
  createdAt?: number;
}

export interface RunningShape extends JobShape {
  workerId?: string;
  instanceId?: string | null;
  lockToken?: string;
  leaseMs?: number;
  startedAt?: number;
  lastHeartbeatAt?: number;
  leaseExpiresAt?: number;
  /** Null: no deadline (a row from before deadlines existed). */
  deadlineAt?: number | null;
  leaseEpoch?: number;
  progress?: unknown;
  checkpoint?: unknown;
}

export interface FinishedShape extends JobShape {
  finishedAt?: number;
  /** When its last attempt was claimed (runtime = finishedAt - startedAt); default: never claimed (null). */
  startedAt?: number;
  result?: unknown;
  lastError?: string;
}

let tokens = 0;

export function factories(db: Db, clock: ManualClock) {
  async function insert(status: JobStatus, shape: JobShape, columns: Record<string, unknown>): Promise<JobRecord> {
    const now = clock.now();
    const queue = shape.queue ?? 'q';
    await db.run(sql`INSERT INTO queues (name, created_at, updated_at) VALUES (${queue}, ${now}, ${now}) ON CONFLICT (name) DO NOTHING`);
    const all: Record<string, unknown> = {
      queue_name: queue,
      payload: JSON.stringify(shape.payload ?? {}),
      status,
      priority: shape.priority ?? 0,
      attempt_count: shape.attempt ?? 0,
      max_attempts: shape.maxAttempts ?? DEFAULTS.maxAttempts,
      errored_attempts: shape.erroredAttempts ?? 0,
      lost_attempts: shape.lostAttempts ?? 0,
      available_at: shape.availableAt ?? now,
      idempotency_key: shape.idempotencyKey ?? null,
      timeout_ms: shape.timeoutMs ?? null,
      created_at: shape.createdAt ?? now,
      updated_at: now,
      ...columns,
    };
    const names = sql.raw(Object.keys(all).join(', '));
    const values = sql.join(Object.values(all).map((v) => sql`${v}`), sql`, `);
    const [row] = await db.all<JobRecord>(sql`INSERT INTO jobs (${names}) VALUES (${values}) RETURNING *`);
    return row!;
  }

  const finished = (at: number, shape: FinishedShape) => ({ finished_at: at, attempt_count: shape.attempt ?? 1, started_at: shape.startedAt ?? null });

  return {
    /** Due now (or at `availableAt`). */
    pendingJob: (shape: JobShape = {}) => insert('pending', shape, {}),
    /** Pending, due `inMs` from now. */
    scheduledJob: (inMs: number, shape: JobShape = {}) => insert('pending', { ...shape, availableAt: clock.now() + inMs }, {}),
    /** Running: by default claimed now by w1 on attempt 1, lease DEFAULTS.leaseMs, deadline DEFAULTS.timeoutMs. */
    async runningJob(shape: RunningShape = {}): Promise<JobRecord & { lock_token: string }> {
      const startedAt = shape.startedAt ?? clock.now();
      const leaseMs = shape.leaseMs ?? DEFAULTS.leaseMs;
      const attempt = shape.attempt ?? 1;
      const row = await insert('running', { ...shape, attempt }, {
        lock_token: shape.lockToken ?? `token-${++tokens}-${startedAt}`,
        locked_by: shape.workerId ?? 'w1',
        locked_by_instance: shape.instanceId ?? null,
        lease_ms: leaseMs,
        started_at: startedAt,
        last_heartbeat_at: shape.lastHeartbeatAt ?? startedAt,
        lease_expires_at: shape.leaseExpiresAt ?? startedAt + leaseMs,
        deadline_at: shape.deadlineAt === undefined ? startedAt + (shape.timeoutMs ?? DEFAULTS.timeoutMs) : shape.deadlineAt,
        lease_epoch: shape.leaseEpoch ?? attempt,
        progress: shape.progress === undefined ? null : JSON.stringify(shape.progress),
        checkpoint: shape.checkpoint === undefined ? null : JSON.stringify(shape.checkpoint),
      });
      return row as JobRecord & { lock_token: string };
    },
    completedJob(shape: FinishedShape = {}) {
      const at = shape.finishedAt ?? clock.now();
      return insert('completed', shape, { ...finished(at, shape), completed_at: at, result: JSON.stringify(shape.result ?? null) });
    },
    /** Failed for good (what other queues call dead). */
    failedJob(shape: FinishedShape = {}) {
      const at = shape.finishedAt ?? clock.now();
      return insert('failed', shape, { ...finished(at, shape), failed_at: at, last_error: shape.lastError ?? 'boom', errored_attempts: shape.erroredAttempts ?? 1 });
    },
    cancelledJob(shape: FinishedShape = {}) {
      const at = shape.finishedAt ?? clock.now();
      return insert('cancelled', shape, { ...finished(at, shape), attempt_count: shape.attempt ?? 0, cancelled_at: at });
    },
    /** The whole row as stored now. */
    async row(id: number): Promise<JobRecord> {
      const [r] = await db.all<JobRecord>(sql`SELECT * FROM jobs WHERE id = ${id}`);
      if (!r) throw new Error(`no job ${id}`);
      return r;
    },
    /** Every stored event of a job, oldest first (not the derived entries of its timeline). */
    events: (id: number) => db.all<StoredEventRecord>(sql`SELECT * FROM events WHERE job_id = ${id} ORDER BY id`),
    /** How many rows a table has (for "changed nothing" checks). */
    async count(table: 'jobs' | 'events' | 'effects' | 'workers' | 'queue_minutes'): Promise<number> {
      const [r] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM ${sql.raw(table)}`);
      return Number(r!.n);
    },
  };
}

export type Factories = ReturnType<typeof factories>;
