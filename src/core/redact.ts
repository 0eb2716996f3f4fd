/**
 * URLs for printing (start lines, failure lines, reports, logs): the
 * credentials a URL can carry are masked, so a database URL given as
 * `libsql://user:password@host?authToken=...` shows where, never how.
 * Masked: the user-info before `@`, and the value of every query parameter
 * whose name says token, secret, password, key, auth or signature
 * (`authToken`, `access_token`, `api_key`, `sig`...). The rest of the URL is
 * kept as written (not re-serialised), so the operator recognises it.
 *
 * @example
 *   redactUrl('libsql://db.example?authToken=eyJhbGci')  // 'libsql://db.example?authToken=***'
 *   redactUrl('http://ada:s3cret@host:8080/x')           // 'http://***@host:8080/x'
 */

/** `//user:password@` (user-info ends at the first `/`, `?`, `#` or space). */
const USER_INFO = /\/\/[^@/?#\s"'<>]*@/g;
/** `?authToken=value` / `&api_key=value`: a parameter whose name names a credential, up to the next `&`, `#`, space or quote. */
const CREDENTIAL_PARAM = /([?&;][^=&#\s"'<>]*(?:token|secret|passw(?:or)?d|pwd|key|auth|sig|credential)[^=&#\s"'<>]*=)[^&#\s"'<>]*/gi;

/** A URL with its credentials masked. */
export function redactUrl(url: string): string {
  return redactUrls(url);
}

/** Free text (an error message that quotes a URL) with the credentials of every URL in it masked. */
export function redactUrls(text: string): string {
  return text.replace(USER_INFO, '//***@').replace(CREDENTIAL_PARAM, '$1***');
}
