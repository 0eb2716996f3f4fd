/**
 * Retries a write that failed in transit (network, 5xx) until `giveUp()` says
 * it no longer matters: past the lease, the reaper takes the job back anyway.
 * Any other error (a refused request) is thrown at once.
 */
import type { Held } from './held.ts';
import { jitter, sleep } from './timers.ts';
import { TransportError } from './transport.ts';

export async function persist<T>(w: Held, giveUp: () => boolean, during: string, write: () => Promise<T>): Promise<T | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!(err instanceof TransportError)) throw err;
      w.emit('error', { error: err, during });
      if (giveUp()) return undefined;
      await sleep(w.timers, jitter(Math.min(2_000, 100 * 2 ** attempt)));
    }
  }
}
