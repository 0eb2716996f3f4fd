/**
 * The job row and its wire form live in core (src/core/job-record.ts), so
 * callers of the store port encode its answers without importing the store;
 * re-exported here for the store's own files.
 */
export * from '../../core/job-record.ts';
