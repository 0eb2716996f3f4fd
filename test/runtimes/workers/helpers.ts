/** Calls into the Worker under test (src/runtime/cloudflare.ts) from inside workerd. */
import { createExecutionContext, createScheduledController, env, SELF, waitOnExecutionContext } from 'cloudflare:test';
import { expect } from 'vitest';
import worker from '../../../src/runtime/cloudflare.ts';

export const WORKER_TOKEN = env.LEASEHOLD_WORKER_TOKEN as string;
export const ADMIN_TOKEN = env.LEASEHOLD_ADMIN_TOKEN as string;

export interface Answer {
  status: number;
  json: any;
}

export async function call(method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await SELF.fetch(`https://leasehold.test${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

export const post = (path: string, body: unknown = {}, token: string | null = WORKER_TOKEN) => call('POST', path, body, token);
export const get = (path: string, token: string | null = ADMIN_TOKEN) => call('GET', path, undefined, token);

export async function enqueue(queue: string, job: Record<string, unknown> = { payload: {} }) {
  const res = await post(`/api/v1/queues/${queue}/jobs`, job);
  expect(res.status, JSON.stringify(res.json)).toBeLessThan(300);
  return res.json.job as { id: string } & Record<string, any>;
}

export async function claim(queue: string, workerId: string, extra: Record<string, unknown> = {}) {
  const res = await post(`/api/v1/queues/${queue}/claim`, { workerId, ...extra });
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json.jobs as ({ id: string; lockToken: string } & Record<string, any>)[];
}

export async function jobView(id: string) {
  const res = await get(`/api/v1/jobs/${id}`);
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json as { job: Record<string, any>; events: Record<string, any>[] };
}

/** One cron tick: the Worker's own `scheduled` handler, as the Workers runtime calls it. */
export async function cronTick(): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: '* * * * *' }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** Calls the Worker's `fetch` with a modified env (secrets removed, flags set). */
export async function fetchWithEnv(path: string, overrides: Record<string, string | undefined>, origin = 'https://leasehold.test'): Promise<Answer> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`${origin}${path}`), { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, json: await res.json() };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Past lease (1000) + grace (200), and past the owner's liveness window (400)
 * and the longest deferral (200), on the database's real clock.
 */
export const PAST_LEASE_OWNER_DEAD_MS = 1000 + 200 + 400 + 400;
