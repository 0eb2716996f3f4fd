/**
 * One-time dashboard form tokens (drizzle/0009). A form's nonce is recorded
 * as used by the statement that leads the action's own batch: the primary key
 * refuses a second use, which fails the whole batch, so a re-sent form
 * changes nothing, even when two copies race. Rows go once the session the
 * form belonged to would have expired (the reaper's housekeeping, audit.ts).
 */
import { eq } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { usedFormNonces } from '../schema.ts';

import type { FormNonce } from './port-types.ts';

/** One primary-key lookup: a re-sent form is refused before any work, with a clear message. */
export async function formNonceUsed(db: Db, nonce: string): Promise<boolean> {
  const rows = await db.select({ nonce: usedFormNonces.nonce }).from(usedFormNonces).where(eq(usedFormNonces.nonce, nonce));
  return rows.length > 0;
}

/** The first statement of an action's batch: records the nonce, and fails the batch if it was used. */
export function formNonceClaim(db: Db, n: FormNonce) {
  return db.insert(usedFormNonces).values({ nonce: n.nonce, expiresAt: n.expiresAt });
}

/** Whether an error is a form token's second use (the claim's primary key), on libSQL and D1 alike. */
export function isFormNonceReplay(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = (e as Error & { cause?: unknown }).cause, depth++) {
    if (/UNIQUE constraint failed: used_form_nonces\.nonce/.test(e.message)) return true;
  }
  return false;
}
