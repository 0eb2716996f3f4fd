/**
 * The client's enqueues in producer spans: `send <queue>` around each
 * `enqueue` call (one span per call, even when calls made together share one
 * bulk request) and around each `enqueueMany`, with that span's W3C trace
 * context on every job it sends (src/core/trace-context.ts). Without a
 * tracer provider the spans are no-ops and jobs carry the caller's current
 * trace context, if there is one.
 */
import { describeEnqueued, traceSend } from '../core/trace-context.ts';
import type { Enqueued } from '../core/wire.ts';

/** The two calls of a client that send jobs (their options and items are sent field by field). */
interface Enqueuing {
  enqueue(queue: string, payload: unknown, options?: object): Promise<Enqueued>;
  enqueueMany(queue: string, items: readonly object[]): Promise<Enqueued[]>;
}

export function withProducerSpans<C extends Enqueuing>(client: C): C {
  return {
    ...client,
    // The trace fields ride with the options: the enqueue body carries every field it is given.
    enqueue: (queue: string, payload: unknown, opts: object = {}) =>
      traceSend(queue, undefined, (trace) => client.enqueue(queue, payload, { ...opts, ...trace }), (span, e) => describeEnqueued(span, [e])),
    enqueueMany: (queue: string, items: readonly object[]) =>
      traceSend(queue, items.length, (trace) => client.enqueueMany(queue, trace.traceparent ? items.map((item) => ({ ...item, ...trace })) : items), describeEnqueued),
  };
}
