/**
 * One span per attempt: `process <queue>` (kind CONSUMER) from the moment
 * the handler starts until the worker knows how the attempt ended, active
 * inside the handler so the spans the handler makes are its children.
 *
 * Parented to the job's trace context (the producer's `send` span), and
 * linked to it as well. The messaging conventions require the link (a span
 * that processes a batch cannot have every message's producer as parent) and
 * allow the parent for a single message. A handler runs exactly one job, so
 * the parent is well defined, and it puts the enqueue, every attempt and
 * every rerun in one trace, which is what people look for; the link keeps
 * the relation visible to tools that follow links only. Jobs claimed ahead
 * get no span while they wait: the span starts when the handler does, as the
 * conventions ask of prefetched messages.
 *
 * Attributes: the messaging ones (system `leasehold`, operation `process`,
 * destination the queue, message id the job id, client id the worker id),
 * `leasehold.job.attempt`, `leasehold.job.fencing_token` and, at the end,
 * `leasehold.job.outcome`: `completed`, `failed` (with
 * `leasehold.job.retryable`) or `abandoned` (the result was refused or never
 * delivered: the lease was lost, or shutdown released the job). A failed or
 * abandoned attempt has status ERROR and `error.type`. When the handler's
 * signal is aborted the span gets an event: `lease_lost` (attribute
 * `leasehold.abort.reason`: `lease_lost` when the server refused the lease,
 * `lease_expired_locally` when the worker fenced itself), `deadline_exceeded`
 * or `shutdown`.
 *
 * A handler that ignores its signal and never returns leaves its span open:
 * no outcome is known, and a span is exported only once it ends.
 */
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, createTraceState, type Context, type Span } from '@opentelemetry/api';
import { messagingAttributes, parseTraceparent, tracer } from '../core/trace-context.ts';
import { signalOf, type Held, type Running } from './held.ts';
import type { ClaimedJob } from './transport.ts';
import type { WorkerEvents } from './types.ts';

type On = <K extends keyof WorkerEvents>(event: K, fn: (e: WorkerEvents[K]) => void) => void;

export type AttemptSpans = ReturnType<typeof createAttemptSpans>;

/** The producer's context a job carries, as a parent for its attempt (ROOT when it carries none: never the worker's own surroundings). */
function producerContext(job: ClaimedJob): Context {
  const parent = parseTraceparent(job.traceparent);
  if (!parent) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { ...parent, ...(job.tracestate ? { traceState: createTraceState(job.tracestate) } : {}) });
}

export function createAttemptSpans(w: Pick<Held, 'workerId'>, on: On) {
  const open = new WeakMap<ClaimedJob, Span>();

  function end(job: ClaimedJob, describe: (span: Span) => void) {
    const span = open.get(job);
    if (!span) return;
    open.delete(job);
    if (span.isRecording()) describe(span);
    span.end();
  }
  on('completed', ({ job }) => end(job, (span) => span.setAttribute('leasehold.job.outcome', 'completed')));
  on('failed', ({ job, error, retryable }) =>
    end(job, (span) => {
      const err = error instanceof Error ? error : new Error(String(error));
      span.setAttributes({ 'leasehold.job.outcome': 'failed', 'leasehold.job.retryable': retryable, 'error.type': err.name });
      span.recordException(err);
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
    }),
  );
  on('abandoned', ({ job, reason }) =>
    end(job, (span) => {
      span.setAttributes({ 'leasehold.job.outcome': 'abandoned', 'error.type': 'abandoned' });
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
    }),
  );

  return {
    /** Runs the attempt's handler inside its span (started now); the span ends with the attempt's outcome. */
    run<T>(r: Running, handler: () => T): T {
      const { job } = r;
      const parent = producerContext(job);
      const producer = trace.getSpanContext(parent);
      // Added to messagingAttributes' object rather than spread from it into
      // a new literal: V8 took a slow path for that spread (about 5 us, on
      // every job, tracer or not; measured with bench/sdk-overhead.ts).
      const attributes = Object.assign(messagingAttributes('process', job.queue), {
        'messaging.message.id': job.id,
        'messaging.client.id': w.workerId,
        'leasehold.job.attempt': job.attempt,
        'leasehold.job.fencing_token': job.fencingToken,
      });
      const span = tracer().startSpan(`process ${job.queue}`, { kind: SpanKind.CONSUMER, attributes, ...(producer ? { links: [{ context: producer }] } : {}) }, parent);
      const active = trace.setSpan(parent, span);
      // Without a tracer provider the span records nothing: only its context is passed on.
      if (!span.isRecording()) return context.with(active, handler);
      open.set(job, span);
      signalOf(r).addEventListener(
        'abort',
        () => {
          const cause = r.abortedBy?.reason;
          const lease = cause === 'lease_lost' || cause === 'lease_expired_locally';
          span.addEvent(lease ? 'lease_lost' : (cause ?? 'aborted'), { 'leasehold.abort.reason': cause ?? 'unknown', 'leasehold.abort.message': r.abortedBy?.message ?? '' });
        },
        { once: true },
      );
      return context.with(active, handler);
    },
  };
}
