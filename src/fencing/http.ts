/**
 * The HTTP convention for fencing a service leasehold's workers call: the
 * worker sends its attempt's token (and its job) in headers, and the service
 * refuses a write whose token is older than the last one it accepted for
 * that job's resource. Framework-neutral: the checker takes the header's
 * text and the last token the service stored, and answers accept or refuse;
 * storing the accepted token (atomically with the write) is the service's.
 *
 * @example
 *   // worker
 *   await fetch(url, { method: 'PUT', headers: fencingHeaders(ctx), body });
 *   // service
 *   const verdict = checkFencingToken(req.headers.get(FENCING_TOKEN_HEADER), lastTokenFor(resource));
 *   if (!verdict.ok) return new Response(verdict.reason, { status: verdict.status });
 */

/** The attempt's fencing token, a positive integer in decimal. */
export const FENCING_TOKEN_HEADER = 'Leasehold-Fencing-Token';
/** The job the token belongs to: tokens order the attempts of one job, so a service keys what it stores by it. */
export const FENCING_JOB_HEADER = 'Leasehold-Job-Id';

/** What fencingHeaders needs: a job context (ctx) fits. */
export interface FencedAttempt {
  fencingToken: number;
  job: { id: string };
}

/** The headers a worker sends with a downstream write: its job and its attempt's token. */
export function fencingHeaders(ctx: FencedAttempt): Record<string, string> {
  return { [FENCING_TOKEN_HEADER]: String(ctx.fencingToken), [FENCING_JOB_HEADER]: String(ctx.job.id) };
}

export type FencingVerdict =
  | { ok: true; token: number }
  /** 400: the header is missing or not a token; 409: an attempt with a newer token already wrote. */
  | { ok: false; status: 400 | 409; reason: string };

/** The header's token, or undefined when it is missing or not a positive decimal integer. */
export function parseFencingToken(header: string | null | undefined): number | undefined {
  if (typeof header !== 'string' || !/^[1-9][0-9]{0,15}$/.test(header.trim())) return undefined;
  const n = Number(header.trim());
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * Accepts a write whose token is at least the last one accepted for the
 * resource (`last`: undefined or null when none was yet); refuses an older
 * one (409) and a missing or malformed header (400). Equal is accepted: one
 * attempt may write more than once. The service must store the token it
 * accepted with the write itself, in one atomic step (a guarded UPDATE, see
 * guardedUpdate), or two concurrent writes can both pass the check.
 */
export function checkFencingToken(header: string | null | undefined, last: number | null | undefined): FencingVerdict {
  const token = parseFencingToken(header);
  if (token === undefined) {
    const said = header == null ? 'is missing' : `is ${JSON.stringify(header)}, not a positive integer`;
    return { ok: false, status: 400, reason: `the ${FENCING_TOKEN_HEADER} header ${said}` };
  }
  if (last != null && token < last) {
    return { ok: false, status: 409, reason: `${FENCING_TOKEN_HEADER} ${token} is older than ${last}, the token of the last accepted write: a newer attempt of this job holds it, so this write is refused` };
  }
  return { ok: true, token };
}
