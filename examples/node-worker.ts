/**
 * A worker in TypeScript, as in the README: run `npm start` in one terminal,
 * then `npx tsx examples/node-worker.ts` in another, and enqueue jobs:
 *   curl -s localhost:8787/api/v1/queues/email/jobs -H 'content-type: application/json' \
 *     -d '{"payload": {"to": "ada@example.com"}}'
 */
import { createWorker, httpTransport, NonRetryableError } from 'leasehold/worker';

/** Stands in for a real email API: it takes an idempotency key and an AbortSignal. */
async function sendEmail(to: string, options: { idempotencyKey: string; signal: AbortSignal }) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  options.signal.throwIfAborted();
  return { messageId: `msg-${options.idempotencyKey}`, to };
}

const worker = createWorker({
  transport: httpTransport({ url: process.env.LEASEHOLD_URL ?? 'http://127.0.0.1:8787', token: process.env.LEASEHOLD_WORKER_TOKEN }),
  queue: 'email',
  concurrency: 8,
  async handler(ctx) {
    const { to } = ctx.job.payload as { to?: string };
    if (!to) throw new NonRetryableError('no recipient');
    const sent = await ctx.once('send', () => sendEmail(to, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal }));
    await ctx.checkpoint({ sent: true });
    return sent;
  },
});
worker.on('completed', (e) => console.log(`job ${e.job.id} completed:`, e.result));
worker.on('failed', (e) => console.log(`job ${e.job.id} failed:`, String(e.error)));
worker.on('lease_lost', (e) => console.warn(`job ${e.job.id} lost its lease (${e.reason})`));
worker.start();
console.log(`worker ${worker.id} is waiting for jobs on "email" (Ctrl-C stops it, releasing held jobs)`);
