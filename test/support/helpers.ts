/** Test setup: a fresh libSQL file per test, the real app, and a clock the test moves. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../../src/app.ts';
import type { AuthThrottle } from '../../src/api/throttle.ts';
import { manualClock, type Clock } from '../../src/core/clock.ts';
import { defaultConfig, type Config } from '../../src/core/config.ts';
import type { Db } from '../../src/db/db.ts';
import { createStore } from '../../src/db/store/create-store.ts';
import { createEngine, type EngineDeps } from '../../src/engine/engine.ts';
import { migrateLibsql, openLibsql } from '../../src/runtime/libsql.ts';
import { createLogger, type LogRecord, type Logger } from '../../src/core/log.ts';

/** An engine over a database handle, as a runtime builds one. */
export function engineOn(db: Db, deps: Omit<EngineDeps, 'store'>) {
  return createEngine({ store: createStore(db), ...deps });
}

/** An app with its own engine over `db` (a second server on the same database, a restart with other settings). */
export function appOn(p: Omit<EngineDeps, 'store'> & { db: Db; authThrottle?: AuthThrottle; assets?: (path: string) => Promise<Response | undefined> }) {
  const { db, authThrottle, assets, ...deps } = p;
  return createApp({ engine: engineOn(db, deps), ...(authThrottle ? { authThrottle } : {}), ...(assets ? { assets } : {}) });
}

/** A debug-level logger into `logs`; the `error` field of each unexpected error also goes into `errors`. */
export function recordingLogger(logs: LogRecord[], errors: unknown[] = []): Logger {
  return createLogger({
    level: 'debug',
    sink(record) {
      logs.push(record);
      if (record.msg === 'unexpected error') errors.push(record.error);
    },
  });
}

export const MIGRATIONS = join(import.meta.dirname, '..', '..', 'drizzle');

/** `options.realClock`: the app reads the database's clock instead of the manual one (for tests with real timers). */
export async function setup(overrides: Partial<Config> = {}, options: { realClock?: Clock } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-test-'));
  const url = `file:${join(dir, 'test.db')}`;
  const opened = await openLibsql(url);
  await migrateLibsql(opened, MIGRATIONS);
  const config = defaultConfig({ databaseUrl: url, ...overrides });
  const clock = manualClock();
  const errors: unknown[] = [];
  const logs: LogRecord[] = [];
  const log = recordingLogger(logs, errors);
  const engine = engineOn(opened.db, { config, clock: options.realClock ?? clock, log });
  const app = createApp({ engine });
  const t = {
    db: opened.db,
    /** The app's engine: an in-process transport on it (dbTransport(t.engine)) shares the app's wake-ups. */
    engine,
    client: opened.client,
    app,
    clock,
    config,
    url,
    dir,
    /** Unexpected errors the app logged (a test should see none). */
    errors,
    /** Every record the app logged, at every level, in order. */
    logs,
    log,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const res = await app.request(path, {
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, json, text };
    },
    post: (path: string, body?: unknown, headers?: Record<string, string>) => t.call('POST', path, body ?? {}, headers),
    get: (path: string, headers?: Record<string, string>) => t.call('GET', path, undefined, headers),
    async enqueue(queue: string, job: Record<string, unknown> = { payload: {} }) {
      const res = await t.post(`/api/v1/queues/${queue}/jobs`, job);
      if (res.status >= 300) throw new Error(`enqueue failed: ${res.text}`);
      return res.json.job as { id: string } & Record<string, any>;
    },
    async claim(queue: string, workerId: string, extra: Record<string, unknown> = {}) {
      const res = await t.post(`/api/v1/queues/${queue}/claim`, { workerId, ...extra });
      if (res.status !== 200) throw new Error(`claim failed: ${res.text}`);
      return res.json.jobs as ({ id: string; lockToken: string } & Record<string, any>)[];
    },
    async events(id: string) {
      const res = await t.get(`/api/v1/jobs/${id}`);
      return res.json.events as { type: string; reason: string | null; workerId: string | null; from: string; to: string }[];
    },
    close() {
      engine.close();
      opened.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return t;
}

export type TestBed = Awaited<ReturnType<typeof setup>>;
