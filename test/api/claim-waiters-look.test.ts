/**
 * The waiters' look run at once (lookNow), for a transition that may have
 * made jobs claimable on queues it cannot name (a completion that released
 * jobs waiting for it): it must not be lost to a look already reading, nor
 * to a claim that ran its statement before the commit and parks after it.
 * No timer runs here, so the shared look every CLAIM_REPOLL_MS cannot stand
 * in for either.
 */
import { afterEach, expect, test, vi } from 'vitest';
import { ClaimWaiters } from '../../src/engine/claim-waiters.ts';

afterEach(() => vi.useRealTimers());

const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

test('lookNow while a look is reading looks again when it ends: the first may have read before the commit', async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const waiters = new ClaimWaiters();
  const reads: ((n: number) => void)[] = [];
  const ready = () => new Promise<number>((resolve) => reads.push(resolve));
  let woken = false;
  void waiters.wait({ queue: 'q', seen: waiters.generation('q'), ms: 60_000, ready }).then(() => (woken = true));
  waiters.lookNow();
  expect(reads).toHaveLength(1);
  // The commit lands while the first look reads; its wake-up asks for a look.
  waiters.lookNow();
  expect(reads).toHaveLength(1);
  reads[0]!(0);
  await turns();
  expect(woken).toBe(false);
  expect(reads).toHaveLength(2);
  reads[1]!(1);
  await turns();
  expect(woken).toBe(true);
  expect(waiters.waiting).toBe(0);
  waiters.close();
});

test('a claim that read the generation before a lookNow does not park: it claims again', async () => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  const waiters = new ClaimWaiters();
  const seen = waiters.generation('q');
  // Its claim statement ran here and found nothing; then the commit, with no claim parked yet.
  waiters.lookNow();
  let answered = false;
  void waiters.wait({ queue: 'q', seen, ms: 60_000, ready: async () => 0 }).then(() => (answered = true));
  await turns(1);
  expect(answered).toBe(true);
  expect(waiters.waiting).toBe(0);
  waiters.close();
});
