/**
 * The producer client (leasehold/client) and the worker SDK (leasehold/worker)
 * inside workerd, against the real entry (SELF), with `@opentelemetry/api` on
 * their path: without a tracer provider it is a no-op; with the SDK's
 * BasicTracerProvider registered (and no context manager: Workers have no
 * AsyncLocalStorage-based one by default), the enqueue's producer span and
 * the attempt's consumer span still form one trace, as the job carries it.
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SELF } from 'cloudflare:test';
import { afterEach, expect, test } from 'vitest';
import { createClient } from '../../../src/client/index.ts';
import { createWorker, httpTransport } from '../../../src/worker/index.ts';
import { sleep, WORKER_TOKEN } from './helpers.ts';

const URL = 'https://leasehold.test';
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;
const quiet = { info() {}, warn() {}, error() {} };

afterEach(() => {
  trace.disable();
});

async function runOne(queue: string) {
  const client = createClient({ url: URL, token: WORKER_TOKEN, fetch: fetchSelf });
  const { id } = await client.enqueue(queue, { n: 1 });
  const worker = createWorker({ transport: httpTransport({ url: URL, token: WORKER_TOKEN, fetch: fetchSelf }), queue, handleSignals: false, logger: quiet, claimWaitMs: 0, handler: (ctx) => ({ echoed: ctx.job.payload }) }).start();
  try {
    for (let i = 0; i < 100 && (await client.getJob(id)).status !== 'completed'; i++) await sleep(50);
  } finally {
    await worker.close({ drainTimeoutMs: 0 });
  }
  return client.getJob(id);
}

test('no tracer provider: the client enqueues and the worker completes, no trace context on the job', async () => {
  const job = await runOne('sdk-plain');
  expect(job).toMatchObject({ status: 'completed', result: { echoed: { n: 1 } }, traceparent: null });
});

test('with a tracer provider: send and process spans in one trace, the job carrying the producer span', async () => {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const job = await runOne('sdk-traced');
  expect(job.status).toBe('completed');
  for (let i = 0; i < 50 && !exporter.getFinishedSpans().some((s) => s.name === 'process sdk-traced'); i++) await sleep(20);
  const send = exporter.getFinishedSpans().find((s) => s.name === 'send sdk-traced')!;
  const process = exporter.getFinishedSpans().find((s) => s.name === 'process sdk-traced')!;
  expect(job.traceparent).toBe(`00-${send.spanContext().traceId}-${send.spanContext().spanId}-01`);
  expect(process.spanContext().traceId).toBe(send.spanContext().traceId);
  expect(process.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
  expect(process.attributes).toMatchObject({ 'leasehold.job.outcome': 'completed', 'messaging.message.id': job.id });
});
