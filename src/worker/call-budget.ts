/**
 * How long a call that carries leases may wait for its answer: no longer than
 * those leases can use it.
 *
 * A renewal answered after its job was fenced saves nothing, and a result
 * waited for past its lease only delays the verdict (the token decides it
 * anyway). So every call that carries leases (heartbeat, completion, failure,
 * release, checkpoint, once()) gets a signal that aborts when they run out by
 * the worker's clock, on top of the transport's own request timeout; a call
 * that carries none (a claim, an idle beat) keeps that timeout alone, and a
 * waiting claim its wait on top of it.
 *
 * The worker does not rely on the transport honouring the signal: the call
 * is given up (a TransportError, as for any call that did not get through)
 * at that moment whatever the transport does.
 */
import type { Held } from './held.ts';
import { TransportError, type CallOptions } from './transport.ts';

/**
 * What a write (a result, a checkpoint, a release) whose leases have (almost)
 * nothing left still gets: the server may still hold the token within its
 * grace, and a result it accepts then saves a second run. It delays no fence
 * (fencing has its own timer), and a renewal gets no such floor: once its
 * jobs are fenced it can save nothing.
 */
export const LAST_TRY_MS = 500;

/** Runs `call` with a signal that aborts at local time `until` (at least `floorMs` from now); rejects with a TransportError then. */
export function withinLeases<T>(w: Pick<Held, 'timers'>, until: number, what: string, call: (options: CallOptions) => Promise<T>, floorMs = 0): Promise<T> {
  const { timers } = w;
  // Rounded up: a timer fires on a whole millisecond, and the call must not be
  // given up while its leases are still there (a retry would then follow).
  const ms = Math.ceil(Math.max(floorMs, until - timers.now()));
  const controller = new AbortController();
  let timer: unknown;
  const givenUp = new Promise<never>((_, reject) => {
    timer = timers.setTimeout(() => {
      const reason = new TransportError(`${what}: no answer within ${Math.round(ms)} ms, when the leases it carries run out`);
      controller.abort(reason);
      reject(reason);
    }, ms);
  });
  const answered = call({ signal: controller.signal });
  // The loser of the race must not surface as an unhandled rejection.
  answered.catch(() => {});
  return Promise.race([answered, givenUp]).finally(() => timers.clearTimeout(timer));
}
