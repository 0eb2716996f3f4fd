/**
 * createClient and httpTransport refuse bad options at once, naming the
 * option (createClient({}) used to throw "Cannot read properties of
 * undefined (reading 'replace')").
 */
import { expect, test } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { httpTransport } from '../../src/worker/index.ts';

const makers = { createClient: (o: unknown) => createClient(o as never), httpTransport: (o: unknown) => httpTransport(o as never) };

for (const [name, make] of Object.entries(makers)) {
  test(`${name}: a missing or wrong option is a TypeError that names it`, () => {
    const cases: [unknown, RegExp][] = [
      [undefined, new RegExp(`^${name} takes an options object, e\\.g\\. ${name}\\(\\{ url: 'http://127\\.0\\.0\\.1:8787'`)],
      [{}, new RegExp(`^${name}: url is required: the leasehold server's base URL`)],
      [{ url: '' }, /url is required/],
      [{ token: 'abc' }, /url is required/],
      [{ url: 8787 }, /url must be a string such as 'http:\/\/127\.0\.0\.1:8787', got 8787/],
      [{ url: '127.0.0.1:8787' }, /url must start with http:\/\/ or https:\/\/|is not a URL/],
      [{ url: 'localhost' }, /url "localhost" is not a URL/],
      [{ url: 'ftp://example.com' }, /url must start with http:\/\/ or https:\/\//],
      [{ url: 'http://127.0.0.1:8787/?token=x' }, /without \?query or #fragment/],
      [{ url: 'http://127.0.0.1:8787', token: 42 }, /token must be a string/],
      [{ url: 'http://127.0.0.1:8787', requestTimeoutMs: 0 }, /requestTimeoutMs must be a positive number of ms, got 0/],
      [{ url: 'http://127.0.0.1:8787', requestTimeoutMs: '5000' }, /requestTimeoutMs must be a positive number of ms, got "5000"/],
      [{ url: 'http://127.0.0.1:8787', fetch: 'fetch' }, /fetch must be a function/],
    ];
    for (const [options, message] of cases) {
      expect(() => make(options), JSON.stringify(options)).toThrow(TypeError);
      expect(() => make(options), JSON.stringify(options)).toThrow(message);
    }
  });

  test(`${name}: good options are taken, trailing slashes and an empty token (an unset variable) included`, () => {
    expect(() => make({ url: 'http://127.0.0.1:8787/' })).not.toThrow();
    expect(() => make({ url: 'https://queue.example.com/leasehold', token: '' })).not.toThrow();
  });
}

test('createClient: maxBatchSize must be a whole number of at least 1', () => {
  expect(() => createClient({ url: 'http://127.0.0.1:8787', maxBatchSize: 0 })).toThrow(/maxBatchSize must be a whole number of jobs, at least 1, got 0/);
  expect(() => createClient({ url: 'http://127.0.0.1:8787', maxBatchSize: 2.5 })).toThrow(TypeError);
});
