/**
 * Trace context on a job: the W3C Trace Context fields a job carries from
 * the code that enqueued it to the attempts that run it, and the producer's
 * span ("send <queue>") around an enqueue.
 *
 * Only `@opentelemetry/api`: with no tracer provider registered its tracer
 * is a no-op, so an enqueue costs a few small objects and no I/O; the SDK is
 * the application's choice. Runs wherever the client and the worker run
 * (Node, Deno, Bun, Workers, browsers): the API keeps its state on globalThis.
 *
 * The job's fields are W3C text (https://www.w3.org/TR/trace-context/),
 * written and read here, never through the globally configured propagator:
 * the wire contract says `traceparent` / `tracestate`, whatever propagator
 * (B3, Jaeger...) an application uses on its HTTP calls.
 *
 * Span names and attributes follow the OpenTelemetry messaging semantic
 * conventions as published in semantic-conventions 1.45 (status:
 * development): `{messaging.operation.name} {destination}`, operation type
 * `send` for the producer, `process` for the consumer.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type SpanContext } from '@opentelemetry/api';
import { VERSION } from '../version.ts';

/** The instrumentation scope of every span leasehold starts. */
export const TRACER_NAME = 'leasehold';

export const tracer = () => trace.getTracer(TRACER_NAME, VERSION);

/** A job's trace context as the wire carries it (the enqueue body, the claim answer). */
export interface JobTrace {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

/**
 * A W3C traceparent in the layout of version 00: version, trace id, parent
 * (span) id, flags, lowercase hex. Version ff, an all-zero trace id and an
 * all-zero parent id are invalid (W3C 3.2.2). Versions after 00 may add
 * fields after a dash; they are refused here rather than stored cut, so what
 * is stored is what the producer sent.
 */
export const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
export const TRACEPARENT_HELP = 'must be a W3C traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero';

/**
 * A W3C tracestate: at most 32 list members `key=value` separated by commas
 * (optional spaces around them), W3C 3.3.1. The whole value is at most 512
 * characters, the length every vendor must propagate (W3C 3.3.1.5).
 */
const TRACESTATE_KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
const TRACESTATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
export const TRACESTATE_MAX = 512;
export const TRACESTATE_HELP = 'must be a W3C tracestate: up to 32 comma-separated key=value members';

/** What is wrong with `value` as a W3C tracestate, or undefined when it is one. */
export function tracestateProblem(value: string): string | undefined {
  const members = value.split(',').map((m) => m.replace(/^[ \t]+|[ \t]+$/g, ''));
  if (members.length > 32) return `has ${members.length} list members; W3C allows 32`;
  const keys = new Set<string>();
  for (const member of members) {
    if (member === '') continue; // empty members are allowed and ignored
    const eq = member.indexOf('=');
    const key = eq < 0 ? member : member.slice(0, eq);
    if (eq < 0 || !TRACESTATE_KEY.test(key) || !TRACESTATE_VALUE.test(member.slice(eq + 1))) return TRACESTATE_HELP;
    if (keys.has(key)) return `names the key ${JSON.stringify(key)} twice`;
    keys.add(key);
  }
  return undefined;
}

/** The fields a job carries for a span context; none for an invalid one (no span, or a no-op tracer without a parent). */
export function jobTraceOf(sc: SpanContext): JobTrace {
  if (!trace.isSpanContextValid(sc)) return {};
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
  const state = sc.traceState?.serialize();
  return { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}`, ...(state ? { tracestate: state } : {}) };
}

/** The span context a stored traceparent names (remote: it was made in another process), or undefined. */
export function parseTraceparent(text: string | null | undefined): Omit<SpanContext, 'traceState'> | undefined {
  if (typeof text !== 'string' || !TRACEPARENT.test(text)) return undefined;
  const [, traceId, spanId, flags] = text.split('-') as [string, string, string, string];
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
}

/** The trace fields of whatever span is current (the request's span in a route handler), or none. */
export function activeJobTrace(): JobTrace {
  const sc = trace.getSpanContext(context.active());
  return sc ? jobTraceOf(sc) : {};
}

/** Attributes every leasehold messaging span carries. */
export const messagingAttributes = (operation: 'send' | 'process', queue: string): Attributes => ({
  'messaging.system': 'leasehold',
  'messaging.operation.type': operation,
  'messaging.operation.name': operation,
  'messaging.destination.name': queue,
});

/**
 * What an enqueue answered, on its producer span: for one job its id
 * (`messaging.message.id`) and whether an existing job was returned instead
 * (a duplicate keeps the trace context of the enqueue that created it).
 */
export function describeEnqueued(span: Span, jobs: readonly { id: string; deduplicated: boolean }[]): void {
  if (jobs.length !== 1) return;
  span.setAttribute('messaging.message.id', jobs[0]!.id);
  span.setAttribute('leasehold.job.deduplicated', jobs[0]!.deduplicated);
}

/** A thrown value as a span's error: recorded as an exception, the span's status ERROR, `error.type` its code or class name. */
export function recordError(span: Span, err: unknown): void {
  const error = err instanceof Error ? err : new Error(String(err));
  // A leasehold error's code (`invalid`, `network`...) says more than its class.
  const code = (error as { code?: unknown }).code;
  span.recordException(error);
  span.setAttribute('error.type', typeof code === 'string' ? code : error.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

/**
 * Runs an enqueue inside its producer span, `send <queue>` (kind PRODUCER),
 * a child of the caller's current span. `send` gets the trace fields to put
 * on the job: the producer span's own context, which is what the consumer's
 * spans are parented to. With no tracer provider the span does not record,
 * and the fields are the caller's current context, if any, so a job still
 * joins a trace whose spans another part of the application records.
 * `describe` adds what the answer says (the job id, deduplicated) before the
 * span ends; a rejection ends it as an error.
 */
export async function traceSend<T>(queue: string, batch: number | undefined, send: (trace: JobTrace) => Promise<T>, describe: (span: Span, answer: T) => void): Promise<T> {
  const parent = context.active();
  const attributes = messagingAttributes('send', queue);
  if (batch !== undefined) attributes['messaging.batch.message_count'] = batch;
  const span = tracer().startSpan(`send ${queue}`, { kind: SpanKind.PRODUCER, attributes }, parent);
  try {
    const answer = await context.with(trace.setSpan(parent, span), () => send(jobTraceOf(span.spanContext())));
    if (span.isRecording()) describe(span, answer);
    return answer;
  } catch (err) {
    recordError(span, err);
    throw err;
  } finally {
    span.end();
  }
}
