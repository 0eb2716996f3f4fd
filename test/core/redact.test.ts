/** Printed URLs keep where, never how: user-info and credential query parameters are masked, in a URL and in free text. */
import { expect, test } from 'vitest';
import { redactText } from '../../src/core/log.ts';
import { redactUrl, redactUrls } from '../../src/core/redact.ts';

test('a URL loses its user-info and every credential parameter, and keeps the rest as written', () => {
  expect(redactUrl('libsql://db-ada.turso.io?authToken=eyJhbGciOi.x-y_z')).toBe('libsql://db-ada.turso.io?authToken=***');
  expect(redactUrl('http://ada:s3cret@127.0.0.1:8080/x?y=1')).toBe('http://***@127.0.0.1:8080/x?y=1');
  expect(redactUrl('https://h/p?tls=1&access_token=a1&api_key=k2&sig=s3#frag')).toBe('https://h/p?tls=1&access_token=***&api_key=***&sig=***#frag');
  expect(redactUrl('file:./leasehold.db')).toBe('file:./leasehold.db');
  expect(redactUrl('file:/tmp/x.db?authToken=t&mode=rwc')).toBe('file:/tmp/x.db?authToken=***&mode=rwc');
});

test('free text and log messages mask every URL in them', () => {
  const text = 'cannot reach libsql://u:p@a?authToken=one then https://b/?token=two (refused)';
  expect(redactUrls(text)).toBe('cannot reach libsql://***@a?authToken=*** then https://b/?token=*** (refused)');
  expect(redactText(text)).not.toMatch(/one|two|u:p/);
});
