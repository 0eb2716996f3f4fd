/**
 * Errors a client can cause, each with a stable wire code. The API maps them to
 * `{"error": {"code", "message", "field"}}` with the status below; anything else
 * becomes an opaque 500 without details.
 */
import { textProblem } from './text.ts';
export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'lease_lost'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'misdirected_request'
  | 'too_many_requests';

const STATUS: Record<ErrorCode, 400 | 401 | 403 | 404 | 409 | 413 | 415 | 421 | 429> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  lease_lost: 409,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  misdirected_request: 421,
  too_many_requests: 429,
};

/** The HTTP status an error code is answered with. */
export const errorStatus = (code: ErrorCode) => STATUS[code];

export class LeaseholdError extends Error {
  override readonly name = 'LeaseholdError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  get status() {
    return STATUS[this.code];
  }
}

export const invalid = (field: string, message: string) => new LeaseholdError('invalid_request', message, field);

/**
 * Refuses text the database cannot keep (src/core/text.ts): for the paths
 * that do not pass the HTTP validators (the in-process transport, the CLI,
 * embedding), so a bad string is an error there too, never a crash.
 */
export function requireStorableText(value: string, field: string): string {
  const problem = textProblem(value);
  if (problem) throw invalid(field, `${field} ${problem}`);
  return value;
}
