/**
 * leasehold/fencing end to end: one job, two attempts. The first worker
 * writes downstream, is cut off from its server (a loopback proxy resets
 * every connection), and its handler goes on as a zombie that ignores its
 * abort; the reaper of a real `leasehold serve` takes the job back and a
 * second worker claims it. Both attempts write to a real SQLite table through
 * the shipped SQL (guarded upsert, guarded update, trigger) and to a real HTTP
 * service on 127.0.0.1 through the `Leasehold-Fencing-Token` header and the
 * shipped checker: the new attempt's writes land, the stale one's are refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { afterEach, beforeEach, expect, test } from 'vitest';
import {
  FENCING_JOB_HEADER,
  FENCING_TOKEN_HEADER,
  STALE_WRITE_MESSAGE,
  checkFencingToken,
  fencingColumnSql,
  fencingHeaders,
  fencingTriggerSql,
  guardedUpdate,
  guardedUpsert,
} from '../../src/fencing/index.ts';
import { createWorker, httpTransport, type JobContext, type Worker } from '../../src/worker/index.ts';
import { startProxy, type Proxy } from '../../tools/chaos/proxy.ts';
import { FAST_LEASES, postJson, startServerProcess, type ServerProcess } from '../support/process-helpers.ts';
import { until } from '../support/until.ts';

const quiet = { info() {}, warn() {}, error() {} };

let dir: string;
let server: ServerProcess | undefined;
let proxy: Proxy | undefined;
let service: Server | undefined;
let db: InstanceType<typeof Database> | undefined;
const workers: Worker[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-fencing-'));
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ drainTimeoutMs: 0 })));
  await proxy?.close();
  await new Promise((r) => (service ? service.close(r) : r(undefined)));
  server?.child.kill('SIGKILL');
  await server?.exited;
  db?.close();
  server = proxy = service = db = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** The user's own table, fenced with the shipped SQL: a column added to it and the trigger. */
function downstreamTable() {
  const d = new Database(join(dir, 'downstream.db'));
  d.exec('CREATE TABLE invoices (job_id TEXT PRIMARY KEY, total INTEGER NOT NULL, written_by TEXT NOT NULL)');
  d.exec(fencingColumnSql('sqlite', 'invoices'));
  d.exec('CREATE TABLE ledger (job_id TEXT PRIMARY KEY, note TEXT NOT NULL)');
  d.exec(fencingColumnSql('sqlite', 'ledger'));
  d.exec(fencingTriggerSql('sqlite', 'ledger'));
  return d;
}

/** A downstream HTTP service: PUT /notes/:job keeps the last accepted token per job and refuses older ones with the shipped checker. */
async function downstreamService() {
  const notes = new Map<string, { token: number; body: string }>();
  const answers: { job: string; token: string | undefined; status: number }[] = [];
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const job = String(req.headers[FENCING_JOB_HEADER.toLowerCase()] ?? '');
      const header = req.headers[FENCING_TOKEN_HEADER.toLowerCase()] as string | undefined;
      // Checked and stored in one synchronous step: nothing else runs in between.
      const verdict = checkFencingToken(header, notes.get(job)?.token);
      if (verdict.ok) notes.set(job, { token: verdict.token, body });
      answers.push({ job, token: header, status: verdict.ok ? 200 : verdict.status });
      res.writeHead(verdict.ok ? 200 : verdict.status, { 'content-type': 'text/plain' }).end(verdict.ok ? 'ok' : verdict.reason);
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { server: s, url: `http://127.0.0.1:${(s.address() as { port: number }).port}`, notes, answers };
}

interface Wrote {
  token: number;
  invoiceChanged: number;
  ledger: 'ok' | string;
  http: number;
}

test('a stale attempt is refused by the shipped SQL and the header check downstream; the new attempt lands', async () => {
  db = downstreamTable();
  const svc = await downstreamService();
  service = svc.server;
  server = await startServerProcess(['--database-url', `file:${join(dir, 'leasehold.db')}`], FAST_LEASES);
  const upsert = guardedUpsert('sqlite', { table: 'invoices', key: ['job_id'], set: ['total', 'written_by'] });
  const update = guardedUpdate('sqlite', { table: 'ledger', key: ['job_id'], set: ['note'] });
  const insertLedger = db.prepare(`INSERT OR IGNORE INTO ledger (job_id, note, fencing_token) VALUES (?, '', 0)`);

  /** One downstream write of an attempt: the invoice (guarded upsert), the ledger row (plain update under the trigger, and guarded), the service (header). */
  const writeDownstream = async (ctx: JobContext, who: string): Promise<Wrote> => {
    const invoice = db!.prepare(upsert.sql).run(...upsert.params({ key: { job_id: ctx.job.id }, set: { total: ctx.fencingToken * 100, written_by: who }, token: ctx.fencingToken }));
    insertLedger.run(ctx.job.id);
    let ledger = 'ok';
    try {
      // A plain update that writes the token: the trigger alone refuses an older one.
      db!.prepare('UPDATE ledger SET note = ?, fencing_token = ? WHERE job_id = ?').run(`${who} (trigger)`, ctx.fencingToken, ctx.job.id);
      db!.prepare(update.sql).run(...update.params({ key: { job_id: ctx.job.id }, set: { note: who }, token: ctx.fencingToken }));
    } catch (err) {
      ledger = (err as Error).message;
    }
    const res = await fetch(`${svc.url}/notes/${ctx.job.id}`, { method: 'PUT', headers: fencingHeaders(ctx), body: who });
    await res.text();
    return { token: ctx.fencingToken, invoiceChanged: invoice.changes, ledger, http: res.status };
  };

  const res = await postJson(`${server.url}/api/v1/queues/fenced/jobs`, { payload: { n: 1 } });
  expect(res.status).toBe(201);
  const jobId: string = res.json.job.id;

  // Worker A: through the proxy. Its handler writes once, then, cut off and
  // aborted, keeps going as a zombie until the test lets it write again.
  const serverPort = Number(new URL(server.url).port);
  proxy = await startProxy(() => serverPort);
  const a: { first?: Wrote; stale?: Wrote; aborted?: boolean } = {};
  let letZombieWrite!: () => void;
  const zombieMayWrite = new Promise<void>((r) => (letZombieWrite = r));
  workers.push(
    createWorker({
      transport: httpTransport({ url: `http://127.0.0.1:${proxy.port}` }),
      queue: 'fenced',
      workerId: 'worker-a',
      handleSignals: false,
      logger: quiet,
      async handler(ctx) {
        a.first = await writeDownstream(ctx, 'a');
        ctx.signal.addEventListener('abort', () => (a.aborted = true));
        await zombieMayWrite;
        a.stale = await writeDownstream(ctx, 'a-stale');
      },
    }).start(),
  );
  await until('attempt 1 wrote downstream', () => a.first !== undefined, 15_000);
  expect(a.first).toEqual({ token: 1, invoiceChanged: 1, ledger: 'ok', http: 200 });

  // Cut worker A off; the reaper takes the job back once its lease and grace are over.
  void proxy.partition('drop', 60_000);
  const b: { wrote?: Wrote } = {};
  workers.push(
    createWorker({
      transport: httpTransport({ url: server.url }),
      queue: 'fenced',
      workerId: 'worker-b',
      handleSignals: false,
      logger: quiet,
      async handler(ctx) {
        b.wrote = await writeDownstream(ctx, 'b');
      },
    }).start(),
  );
  await until('attempt 2 wrote downstream', () => b.wrote !== undefined, 30_000);
  expect(b.wrote).toEqual({ token: 2, invoiceChanged: 1, ledger: 'ok', http: 200 });
  expect(a.aborted).toBe(true);

  // The zombie writes with its old token: every downstream store refuses it.
  letZombieWrite();
  await until('the stale attempt tried to write', () => a.stale !== undefined, 15_000);
  expect(a.stale!.token).toBe(1);
  expect(a.stale!.invoiceChanged).toBe(0);
  expect(a.stale!.ledger).toContain(STALE_WRITE_MESSAGE);
  expect(a.stale!.http).toBe(409);

  // What stays is the new attempt's.
  expect(db.prepare('SELECT total, written_by, fencing_token FROM invoices WHERE job_id = ?').get(jobId)).toMatchObject({ total: 200, written_by: 'b', fencing_token: 2 });
  expect(db.prepare('SELECT note, fencing_token FROM ledger WHERE job_id = ?').get(jobId)).toMatchObject({ note: 'b', fencing_token: 2 });
  expect(svc.notes.get(jobId)).toEqual({ token: 2, body: 'b' });
  expect(svc.answers.map((x) => [x.token, x.status])).toEqual([
    ['1', 200],
    ['2', 200],
    ['1', 409],
  ]);
  const job = (await (await fetch(`${server.url}/api/v1/jobs/${jobId}`)).json()) as { job: { status: string; attempts: number } };
  expect(job.job.status).toBe('completed');
}, 90_000);
