/** An operator audit entry as the API answers it (GET /api/v1/audit, `leasehold audit`). */
import type { AuditRecord } from '../db/store/audit.ts';
import { iso } from '../core/job-record.ts';

export interface AuditEntryWire {
  id: string;
  at: string;
  actor: string;
  role: string;
  /** The name of the token the request or session authenticated with (null: open mode, or a failed login). */
  credential: string | null;
  source: 'dashboard' | 'api';
  action: string;
  queue: string | null;
  jobId: string | null;
  target: string;
  before: unknown;
  after: unknown;
  reason: string | null;
  client: string | null;
}

const parsed = (text: string | null): unknown => {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

export function toAuditEntry(r: AuditRecord): AuditEntryWire {
  return {
    id: String(r.id),
    at: iso(r.at)!,
    actor: r.actor,
    role: r.role,
    credential: r.credential,
    source: r.source,
    action: r.action,
    queue: r.queue_name,
    jobId: r.job_id === null ? null : String(r.job_id),
    target: r.target,
    before: parsed(r.before),
    after: parsed(r.after),
    reason: r.reason,
    client: r.client,
  };
}
