/**
 * GET /jobs?where=...: filters on what a job carries (payload and result),
 * against a real database through the app: each operator, their AND, pages
 * under a filter, and bad or hostile input refused with a 400 naming where.
 */
import { afterEach, expect, test } from 'vitest';
import { setup, type TestBed } from '../support/helpers.ts';

let t: TestBed;
afterEach(() => t?.close());

const list = async (query: string) => {
  const res = await t.get(`/api/v1/jobs?${query}`);
  return res;
};
/** Ids (as the enqueue answered them) of the jobs a list finds, oldest first. */
const found = async (...where: string[]) => {
  const res = await list(`order=asc&limit=500&${where.map((w) => `where=${encodeURIComponent(w)}`).join('&')}`);
  expect(res.status, res.text).toBe(200);
  expect(res.json.next).toBeNull();
  return res.json.jobs.map((j: { id: string }) => j.id) as string[];
};

async function fill() {
  const payloads = [
    { customerId: 42, name: 'Acme Corp', amount: 10, vip: true, tags: ['a', 'b'] },
    { customerId: 42, name: 'Acme Ltd', amount: 250.5, vip: false },
    { customerId: '42', name: 'acme', amount: 99 },
    { customerId: 7, name: 'Bolt', amount: null, nested: { deep: { x: 1 } } },
    { customerId: 1, name: { first: 'Acme' }, vip: 1 },
  ];
  const ids: string[] = [];
  for (const payload of payloads) ids.push((await t.enqueue('orders', { payload })).id);
  return ids;
}

test('=, !=, ranges, ^= and exists on the payload: same type and value, never SQLite cross-type order', async () => {
  t = await setup();
  const [a, b, c, d, e] = await fill();
  expect(await found('payload.customerId = 42')).toEqual([a, b]);
  expect(await found('payload.customerId = "42"')).toEqual([c]);
  expect(await found('payload.customerId != 42')).toEqual([c, d, e]);
  expect(await found('payload.amount > 10')).toEqual([b, c]);
  expect(await found('payload.amount >= 10')).toEqual([a, b, c]);
  expect(await found('payload.amount < 100')).toEqual([a, c]);
  expect(await found('payload.amount <= 99.0')).toEqual([a, c]);
  // Text against text, by code point: "B" < "a".
  expect(await found('payload.name < "B"')).toEqual([a, b]);
  expect(await found('payload.name ^= "Acme"')).toEqual([a, b]);
  expect(await found('payload.name ^= "Acme L"')).toEqual([b]);
  expect(await found('payload.name ^= ""')).toEqual([a, b, c, d]);
  // true is not 1, null is a value, exists counts a null.
  expect(await found('payload.vip = true')).toEqual([a]);
  expect(await found('payload.vip = false')).toEqual([b]);
  expect(await found('payload.vip = 1')).toEqual([e]);
  expect(await found('payload.amount = null')).toEqual([d]);
  expect(await found('payload.amount exists')).toEqual([a, b, c, d]);
  expect(await found('payload.amount !exists')).toEqual([e]);
  expect(await found('payload.tags[1] = "b"')).toEqual([a]);
  expect(await found('payload.nested.deep.x = 1')).toEqual([d]);
  expect(await found('payload.name.first = "Acme"')).toEqual([e]);
  // Several clauses are ANDed.
  expect(await found('payload.customerId = 42', 'payload.amount > 100')).toEqual([b]);
  expect(await found('payload.customerId = 42', 'payload.amount > 100', 'payload.vip = true')).toEqual([]);
  // With the other filters too.
  expect((await list(`queue=orders&status=pending&where=${encodeURIComponent('payload.customerId = 7')}`)).json.jobs.map((j: { id: string }) => j.id)).toEqual([d]);
  expect((await list(`queue=other&where=${encodeURIComponent('payload.customerId = 7')}`)).json.jobs).toEqual([]);
});

test('filters on the result of completed jobs; a job without a result has no field', async () => {
  t = await setup();
  const ids: string[] = [];
  for (const total of [5, 50, 500]) {
    const { id } = await t.enqueue('billing', { payload: { total } });
    ids.push(id);
    const [claimed] = await t.claim('billing', 'w1');
    const done = await t.post(`/api/v1/jobs/${claimed!.id}/complete`, { workerId: 'w1', lockToken: claimed!.lockToken, result: { charged: total, receipt: `r-${total}` } });
    expect(done.status).toBe(200);
  }
  const pending = await t.enqueue('billing', { payload: { total: 1 } });
  expect(await found('result.charged >= 50')).toEqual([ids[1], ids[2]]);
  expect(await found('result.receipt ^= "r-5"')).toEqual([ids[0], ids[1], ids[2]]);
  expect(await found('result.receipt = "r-50"', 'payload.total = 50')).toEqual([ids[1]]);
  expect(await found('result exists')).toEqual(ids);
  expect(await found('result !exists')).toEqual([pending.id]);
});

test('pages under a filter: keyset, newest first, next until null', async () => {
  t = await setup();
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push((await t.enqueue('q', { payload: { even: i % 2 === 0, i } })).id);
  const where = `where=${encodeURIComponent('payload.even = true')}`;
  const seen: string[] = [];
  let after = '';
  for (let page = 0; page < 5; page++) {
    const res = await list(`limit=2&${where}${after}`);
    expect(res.status).toBe(200);
    seen.push(...res.json.jobs.map((j: { id: string }) => j.id));
    if (res.json.next === null) break;
    after = `&after=${res.json.next}`;
  }
  expect(seen).toEqual([ids[6], ids[4], ids[2], ids[0]]);
});

test('bad where: each a 400 naming where, and nothing changes', async () => {
  t = await setup();
  await fill();
  const before = (await t.client.execute('SELECT count(*) AS n, (SELECT count(*) FROM sqlite_master) AS objects, total(length(payload)) AS bytes FROM jobs')).rows[0];
  const bad = [
    '',
    'customerId = 42',
    'payloads.x = 1',
    'payload.1x = 1',
    'payload.x',
    'payload.x = ',
    'payload.x == 1',
    'payload.x = 42abc',
    "payload.x = 'single quoted'",
    'payload.x = {"a":1}',
    'payload.x = [1]',
    'payload.x ^= 4',
    'payload.x > true',
    'payload.x exists 1',
    'payload.x = 1e999',
    'payload.x[abc] = 1',
    'payload..x = 1',
    'payload.x = "unterminated',
    `payload.${'a.'.repeat(20)}b = 1`,
    `payload.x = "${'y'.repeat(600)}"`,
  ];
  for (const w of bad) {
    const res = await list(`where=${encodeURIComponent(w)}`);
    expect(res.status, w).toBe(400);
    expect(res.json.error, w).toMatchObject({ code: 'invalid_request', field: 'where' });
  }
  const six = Array.from({ length: 6 }, (_, i) => `where=${encodeURIComponent(`payload.x${i} exists`)}`).join('&');
  const tooMany = await list(six);
  expect(tooMany.status).toBe(400);
  expect(tooMany.json.error).toMatchObject({ field: 'where' });
  expect(tooMany.json.error.message).toMatch(/at most 5/);
  // The second clause is named when it is the bad one.
  const second = await list(`where=${encodeURIComponent('payload.x = 1')}&where=${encodeURIComponent('payload.y ~ 2')}`);
  expect(second.json.error.message).toMatch(/clause 2/);
  const after = (await t.client.execute('SELECT count(*) AS n, (SELECT count(*) FROM sqlite_master) AS objects, total(length(payload)) AS bytes FROM jobs')).rows[0];
  expect(after).toEqual(before);
});

test('injection attempts are refused, or are values that match nothing', async () => {
  t = await setup();
  const ids = await fill();
  const refused = [
    "payload.x' = 1",
    'payload.x) OR (1=1 = 1',
    'payload.x -- = 1',
    'payload.x = 1 OR 1=1',
    'payload.x = 1; DROP TABLE jobs',
    "payload.name = 'x' OR '1'='1'",
    'payload["x"] = 1',
    "payload.x = 1 --",
    'result.x = 1)/*',
  ];
  for (const w of refused) {
    const res = await list(`where=${encodeURIComponent(w)}`);
    expect(res.status, w).toBe(400);
    expect(res.json.error.field).toBe('where');
  }
  // Quotes and comment marks inside a JSON string are a value, bound as one.
  for (const w of [`payload.name = "x' OR '1'='1"`, 'payload.name = "Acme Corp\\") OR 1=1 --"', 'payload.name ^= "\'"', 'payload.name = "%"', 'payload.name ^= "_"']) {
    expect(await found(w), w).toEqual([]);
  }
  expect((await t.client.execute('SELECT count(*) AS n FROM jobs')).rows[0]!.n).toBe(ids.length);
});

test('indexed fields: set, audited, each an index of the queue; removed or the queue deleted, the index goes; bad fields a 400 changing nothing', async () => {
  t = await setup();
  const ids = await fill();
  const indexes = async () => (await t.client.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'jobs_field_%' ORDER BY name")).rows.map((r) => String(r.sql));
  const set = (fields: unknown) => t.call('PUT', '/api/v1/queues/orders/indexed-fields', { fields });

  const res = await set(['payload.customerId', 'result.total', 'payload.customerId']);
  expect(res.status, res.text).toBe(200);
  expect(res.json.queue.indexedFields).toEqual(['payload.customerId', 'result.total']);
  expect(await indexes()).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/json_extract\(payload, '\$\.customerId'\), id\) WHERE queue_name = 'orders'$/),
      expect.stringMatching(/json_extract\(result, '\$\.total'\), id\) WHERE queue_name = 'orders'$/),
    ]),
  );
  expect(await indexes()).toHaveLength(2);
  expect((await t.get('/api/v1/queues/orders')).json.queue.indexedFields).toEqual(['payload.customerId', 'result.total']);
  // The same answers with the index as without.
  expect(await found('payload.customerId = 42')).toEqual([ids[0], ids[1]]);
  const pages = await list(`queue=orders&limit=1&where=${encodeURIComponent('payload.customerId = 42')}`);
  expect(pages.json.jobs.map((j: { id: string }) => j.id)).toEqual([ids[1]]);
  expect((await list(`queue=orders&limit=1&after=${pages.json.next}&where=${encodeURIComponent('payload.customerId = 42')}`)).json.jobs.map((j: { id: string }) => j.id)).toEqual([ids[0]]);
  expect((await list(`queue=orders&where=${encodeURIComponent('payload.customerId = 42')}&where=${encodeURIComponent('payload.vip = false')}`)).json.jobs.map((j: { id: string }) => j.id)).toEqual([ids[1]]);

  // Bad fields: 400 naming the field, nothing changed.
  for (const [fields, field] of [
    [["payload.x'"], 'fields[0]'],
    [['payload.a', 'meta.x'], 'fields[1]'],
    [['payload.a', 'payload.b', 'payload.c', 'payload.d', 'payload.e', 'payload.f'], 'fields'],
    ['payload.a', 'fields'],
  ] as const) {
    const bad = await set(fields);
    expect(bad.status, JSON.stringify(fields)).toBe(400);
    expect(bad.json.error.field).toBe(field);
  }
  expect(await indexes()).toHaveLength(2);

  // One removed: its index dropped, the other kept.
  expect((await set(['result.total'])).json.queue.indexedFields).toEqual(['result.total']);
  expect(await indexes()).toEqual([expect.stringMatching(/json_extract\(result, '\$\.total'\)/)]);
  const audit = (await t.get('/api/v1/audit?action=queue.indexed_fields')).json.entries as { before: unknown; after: unknown; queue: string }[];
  expect(audit.map((e) => [e.before, e.after])).toEqual([
    [['payload.customerId', 'result.total'], ['result.total']],
    [[], ['payload.customerId', 'result.total']],
  ]);

  // The queue deleted (its jobs purged): its indexes go with it.
  await t.post('/api/v1/queues/orders/bulk', { action: 'cancel', reason: 'test', status: 'pending' });
  const deleted = await t.call('DELETE', '/api/v1/queues/orders?purge=true');
  expect(deleted.status, deleted.text).toBe(200);
  expect(await indexes()).toEqual([]);
});

test('a prefix is a range over code points: the edges of Unicode (U+D7FF before the surrogates, U+10FFFF last) keep exact answers', async () => {
  t = await setup();
  const names = ['a\u{10FFFF}z', 'a\u{10FFFF}', 'a\uD7FFx', 'a\uE000', 'b', 'a', '\u{10FFFF}\u{10FFFF}'];
  const ids: string[] = [];
  for (const name of names) ids.push((await t.enqueue('u', { payload: { name } })).id);
  expect(await found(`payload.name ^= ${JSON.stringify('a\u{10FFFF}')}`)).toEqual([ids[0], ids[1]]);
  expect(await found(`payload.name ^= ${JSON.stringify('a\uD7FF')}`)).toEqual([ids[2]]);
  expect(await found('payload.name ^= "a"')).toEqual([ids[0], ids[1], ids[2], ids[3], ids[5]]);
  // A prefix of only the last code point has no end: every string from it on.
  expect(await found(`payload.name ^= ${JSON.stringify('\u{10FFFF}')}`)).toEqual([ids[6]]);
});
