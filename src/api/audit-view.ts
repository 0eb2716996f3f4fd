/** An operator audit entry as the API answers it (GET /api/v1/audit, `leasehold audit`). */
import { iso } from '../core/job-record.ts';
import type { AuditEntryWire } from '../core/wire.ts';
import type { AuditRecord } from '../db/store/port.ts';

export type { AuditEntryWire };


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
