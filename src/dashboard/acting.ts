/**
 * What every dashboard action records and commits with: who (the operator's
 * name from the session, its role and the token it logged in with), from
 * where, and the form's one-time token, claimed in the action's own batch.
 */
import type { Context } from 'hono';
import type { Alongside, AuditActor, AuditEntry, JobStore } from '../db/store/port.ts';
import { clientAddress, type ProxyTrust } from '../api/throttle.ts';
import type { DashboardEnv } from './page.tsx';
import type { Session } from './session.ts';

/** The actor of job events and audit entries for a session: the operator's own name. */
export function sessionActor(c: Context, session: Session, proxy: ProxyTrust): AuditActor {
  return {
    actor: session.name,
    role: session.role,
    credential: session.tok === 'open' ? null : session.tok,
    source: 'dashboard',
    client: clientAddress(c, proxy) || null,
  };
}

/** The form token (the store claims it first in the action's batch) and the audit entry, for a store call. */
export function alongside(c: Context<DashboardEnv>, audit: Omit<AuditEntry, 'by'> & { by?: AuditActor }, proxy: ProxyTrust): Alongside {
  return {
    formNonce: c.get('formNonce'),
    audit: { ...audit, by: audit.by ?? sessionActor(c, c.get('session'), proxy) },
  };
}

/** Runs an action; undefined when its form was sent a second time (its token claimed meanwhile): nothing changed. */
export async function once<T>(store: Pick<JobStore, 'isFormNonceReplay'>, run: () => Promise<T>): Promise<{ value: T } | undefined> {
  try {
    return { value: await run() };
  } catch (err) {
    if (store.isFormNonceReplay({ error: err })) return undefined;
    throw err;
  }
}

