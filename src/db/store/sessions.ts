/**
 * Logged-out dashboard sessions (drizzle/0008). The session itself is a
 * signed cookie; a logout records its id here until the cookie would have
 * expired, so a copied cookie replayed after logout is refused on every
 * server sharing the database.
 */
import { eq, lt } from 'drizzle-orm';
import type { Db } from '../db.ts';
import { batchList } from '../db.ts';
import { revokedSessions } from '../schema.ts';
import { alongsideFirst, auditInsert } from './audit.ts';
import type { Alongside } from './port-types.ts';

/** Ends a session for good, and forgets sessions that have expired by themselves (an index range). */
export async function sessionRevoke(db: Db, p: { sid: string; expiresAt: number; now: number; also?: Alongside }): Promise<void> {
  await batchList(db, [
    ...alongsideFirst(db, p.also),
    ...(p.also?.audit ? [auditInsert(db, p.also.audit)] : []),
    db.insert(revokedSessions).values({ sid: p.sid, expiresAt: p.expiresAt }).onConflictDoNothing({ target: revokedSessions.sid }),
    db.delete(revokedSessions).where(lt(revokedSessions.expiresAt, p.now)),
  ]);
}

/** One primary-key lookup per dashboard request. */
export async function sessionIsRevoked(db: Db, sid: string): Promise<boolean> {
  const rows = await db.select({ sid: revokedSessions.sid }).from(revokedSessions).where(eq(revokedSessions.sid, sid));
  return rows.length > 0;
}
