/**
 * The worker's lease rules: what its timings must satisfy for a renewal to
 * arrive in time, checked by createWorker against its options (a broken rule
 * is a TypeError) and by the lease keeper against each lease the server
 * grants (logged once per lease and interval, since the server chose them).
 *
 * With a lease L renewed every H, and fencing at L - L/10 after the last
 * renewal the server confirmed (held.ts, FENCE_SHARE):
 * - `heartbeatMs <= leaseMs / 2`, as the server requires of its own
 *   settings: one late or failed beat must not lose the lease;
 * - `requestTimeoutMs <= L - L/10 - H`: the renewal sent one interval after
 *   the last confirmed one has that long to be answered before the worker
 *   fences itself. A longer timeout can never be what ends a renewal in
 *   time: calls that carry leases give up when those leases run out instead
 *   (call-budget.ts), so this is a warning, not a refusal.
 *
 * The server's grace (at least one heartbeat, src/core/config.ts) is not
 * spent here: it is what lies between the fence and the reaper, with the
 * tenth of the lease.
 */
import { FENCE_SHARE } from './held.ts';

export interface LeaseTimings {
  leaseMs: number;
  heartbeatMs: number;
  /** The transport's per-request timeout, when it has one. */
  requestTimeoutMs?: number | undefined;
}

/** What the timings break: `errors` cannot keep a lease, `warnings` say what the worker will do instead of what was asked. */
export function checkLeaseTimings(t: LeaseTimings): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (t.heartbeatMs * 2 > t.leaseMs) {
    errors.push(`heartbeatMs (${t.heartbeatMs} ms) must be at most half the lease (${t.leaseMs} ms), so one late heartbeat does not lose the lease`);
  }
  const fenceMs = Math.round(t.leaseMs * (1 - FENCE_SHARE));
  const windowMs = fenceMs - t.heartbeatMs;
  if (t.requestTimeoutMs !== undefined && t.requestTimeoutMs > windowMs) {
    warnings.push(
      `requestTimeoutMs (${t.requestTimeoutMs} ms) is longer than a renewal can take and still be in time: the worker fences itself ${fenceMs} ms after its last confirmed renewal (a lease of ${t.leaseMs} ms less a tenth), which leaves the next one, ${t.heartbeatMs} ms later, ${Math.max(0, windowMs)} ms; calls that carry leases give up when those run out instead of at the request timeout`,
    );
  }
  return { errors, warnings };
}
