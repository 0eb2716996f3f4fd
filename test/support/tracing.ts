/**
 * The OpenTelemetry SDK as an application registers it, with an in-memory
 * exporter: a BasicTracerProvider with a SimpleSpanProcessor (each span is
 * exported when it ends), the AsyncLocalStorage context manager (so the
 * active span follows awaits) and the W3C propagator for HTTP headers.
 * leasehold itself only ever sees `@opentelemetry/api`.
 */
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { context, propagation, trace } from '@opentelemetry/api';

export interface Tracing {
  exporter: InMemorySpanExporter;
  /** The spans ended so far (exported in the order they ended). */
  spans(): ReadableSpan[];
  /** Spans by name, in the order they ended. */
  named(name: string): ReadableSpan[];
  /** Unregisters everything: the API is a no-op again. */
  disable(): Promise<void>;
}

export function enableTracing(): Tracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  if (!trace.setGlobalTracerProvider(provider)) throw new Error('a tracer provider is already registered');
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((s) => s.name === name),
    async disable() {
      await provider.shutdown();
      contextManager.disable();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** A span's parent span id, or undefined for a root span. */
export const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
