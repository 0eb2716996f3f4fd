/**
 * Which bulk action takes jobs of which status: the rule the store's bulk
 * statements enforce and the API and dashboard check first, to refuse a
 * mismatch by name before anything is read.
 */
import type { JobStatus } from './wire.ts';

export const BULK_KINDS = ['retry', 'cancel', 'requeue'] as const;
export type BulkKind = (typeof BULK_KINDS)[number];

/** The bulk kind that acts on a status, or undefined if none does. */
export function bulkKindFor(status: JobStatus): BulkKind | undefined {
  if (status === 'failed' || status === 'cancelled') return 'retry';
  if (status === 'pending') return 'cancel';
  if (status === 'running') return 'requeue';
  return undefined;
}
