/**
 * What the operator audit (drizzle/0009) records, by name: the vocabulary the
 * store writes and the API and dashboard filter by. Plain data, so a route
 * can check a filter without importing the store.
 */
export type AuditAction =
  | 'login'
  | 'login_failed'
  | 'logout'
  | 'queue.settings'
  | 'queue.pause'
  | 'queue.resume'
  | 'queue.alert_thresholds'
  | 'queue.indexed_fields'
  | 'queue.delete'
  | 'jobs.bulk'
  | 'jobs.canary'
  | 'job.retry'
  | 'job.cancel'
  | 'job.requeue'
  | 'job.force_requeue'
  | 'job.release_held'
  | 'job.complete_held'
  | 'job.fail_held';

export const AUDIT_ACTIONS: readonly AuditAction[] = [
  'login',
  'login_failed',
  'logout',
  'queue.settings',
  'queue.pause',
  'queue.resume',
  'queue.alert_thresholds',
  'queue.indexed_fields',
  'queue.delete',
  'jobs.bulk',
  'jobs.canary',
  'job.retry',
  'job.cancel',
  'job.requeue',
  'job.force_requeue',
  'job.release_held',
  'job.complete_held',
  'job.fail_held',
];
