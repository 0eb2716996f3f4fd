-- The W3C trace context (traceparent, tracestate) of the code that enqueued
-- a job, checked on input and handed to every claim of the job, so each
-- attempt's span joins the producer's trace (src/core/trace-context.ts).
-- NULL for a job enqueued without one, and for every job from before: their
-- attempts start traces of their own. No index: nothing looks jobs up by trace.
ALTER TABLE `jobs` ADD `trace_parent` text;--> statement-breakpoint
ALTER TABLE `jobs` ADD `trace_state` text;
