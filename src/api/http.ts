/** Shared pieces of every route: reading a JSON body, ids, names, error responses. */
import type { Context } from 'hono';
import { LeaseholdError, invalid, type ErrorCode } from '../core/errors.ts';
import { str, type Validator } from '../core/validate.ts';

/**
 * Reads the body as JSON and validates it. Requiring `application/json` keeps
 * a web page from posting a simple cross-site form to a token-less server on
 * loopback: a browser cannot send that content type without a preflight.
 */
/** What reading a body can refuse: a type that is not JSON, and a body that is not JSON or not what the route takes. */
export const BODY_REFUSALS = ['unsupported_media_type', 'invalid_request'] as const satisfies readonly ErrorCode[];

/** `emptyIs`: what an empty body stands for (a route without fields takes none as `{}`); unset, an empty body is refused. */
export async function readBody<T>(c: Context, v: Validator<T>, o: { emptyIs?: unknown } = {}): Promise<T> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new LeaseholdError('unsupported_media_type', 'send the body as JSON with Content-Type: application/json', 'content-type');
  }
  let text: string;
  try {
    text = await c.req.text();
  } catch {
    // The client went away mid-body (ECONNRESET): nothing to answer, nothing changed.
    throw invalid('body', 'the request body could not be read to its end');
  }
  if (text.trim() === '') {
    if (o.emptyIs !== undefined) return v.parse(o.emptyIs, '');
    throw invalid('body', 'the request body is empty: send a JSON object');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('body', 'the request body is not valid JSON');
  }
  return v.parse(value, '');
}

/** Job ids are opaque strings to clients; here they are positive integers in decimal. */
export const JOB_ID_PATTERN = /^[1-9][0-9]{0,14}$/;

export function parseJobId(raw: string): number {
  if (!JOB_ID_PATTERN.test(raw)) throw new LeaseholdError('not_found', `no job has id ${JSON.stringify(raw.slice(0, 40))}`, 'id');
  return Number(raw);
}

export const jobIdField = str({ min: 1, max: 15, pattern: JOB_ID_PATTERN, patternHelp: 'must be a job id as returned by the API', description: 'job id' });

// A queue's name is the engine's rule (an embedded enqueue checks it too); the routes name it from here.
export { QUEUE_PATTERN, queueName, parseQueue } from '../engine/enqueue-input.ts';

export const workerIdField = str({ min: 1, max: 200, description: 'the worker id the claim was made with' });
export const instanceIdField = str({
  min: 1,
  max: 200,
  description: "this process of the worker (random per start): a restarted worker reusing its id is a new instance, and its predecessor's claims no longer count as alive",
});
export const lockTokenField = str({ min: 1, max: 200, description: 'the lockToken returned by the claim' });

/** A claim request's own id, chosen by the worker: opaque to the server, compared as it is. */
export const CLAIM_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/;
export const claimIdField = str({
  min: 1,
  max: 100,
  pattern: CLAIM_ID_PATTERN,
  patternHelp: 'must be 1-100 characters of letters, digits, _ . : -',
  description:
    'an id the worker chose for this claim request, new for each claim: sent again (because the answer was lost), the claim answers the jobs still running under it, with the same tokens and their leases renewed, and claims nothing more',
});

export function errorBody(err: LeaseholdError) {
  return { error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}), ...(err.details ?? {}) } };
}
