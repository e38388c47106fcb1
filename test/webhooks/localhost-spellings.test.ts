import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../libs/schemas/index.js';
import type { WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import {
  buildApiWithoutLocalhost,
  emit,
  eventually,
  type Receiver,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

/**
 * Issue 28, defect 8: with WEBHOOK_ALLOW_LOCALHOST, numeric and case spellings of this machine
 * were stored as given and delivered to, while `[::1]` was refused. Every spelling is now judged
 * by one rule on its WHATWG form (the name localhost, or a loopback literal), and stored in that
 * form; everything else that reaches this machine is refused, allowed or not.
 */
describe('localhost spellings of an endpoint URL', () => {
  let api: TestApi;
  let v4: Receiver;
  let v4Second: Receiver;
  let v6: Receiver;
  let dispatcher: WebhookDispatcher;

  beforeAll(async () => {
    api = await startTestApi();
    v4 = await startReceiver();
    v4Second = await startReceiver(undefined, { host: '127.0.0.2' });
    v6 = await startReceiver(undefined, { host: '::1' });
    dispatcher = startDispatcher(api.platform.db);
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all([v4, v4Second, v6].map((receiver) => receiver?.close()));
    await api?.close();
  });

  /** [given, stored, receiver]: each spelling of the issue, then the neighbours of its class. */
  function spellings(): [string, string, Receiver][] {
    const p = v4.port;
    return [
      [`http://2130706433:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://0x7f000001:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://127.1:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://LOCALHOST:${p}/hooks`, `http://localhost:${p}/hooks`, v4],
      [`http://[::1]:${v6.port}/hooks`, `http://[::1]:${v6.port}/hooks`, v6],
      // neighbours: octal and padded octets, a trailing dot, percent-encoded and fullwidth hosts,
      // mixed case, IPv6 spellings, the IPv4-mapped form, another loopback address
      [`http://0177.0.0.1:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://127.000.000.001:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://127.0.0.1.:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://%31%32%37.0.0.1:${p}/hooks`, `http://127.0.0.1:${p}/hooks`, v4],
      [`http://LocalHost.:${p}/hooks`, `http://localhost:${p}/hooks`, v4],
      [`http://lo%63alhost:${p}/hooks`, `http://localhost:${p}/hooks`, v4],
      [
        `http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54:${p}/hooks`,
        `http://localhost:${p}/hooks`,
        v4,
      ],
      [`HTTP://LOCALHOST:${p}/hooks`, `http://localhost:${p}/hooks`, v4],
      [`http://[0:0:0:0:0:0:0:1]:${v6.port}/hooks`, `http://[::1]:${v6.port}/hooks`, v6],
      [`http://[::FFFF:127.0.0.1]:${p}/hooks`, `http://[::ffff:7f00:1]:${p}/hooks`, v4],
      [`http://127.0.0.2:${v4Second.port}/hooks`, `http://127.0.0.2:${v4Second.port}/hooks`, v4Second],
    ];
  }

  async function create(org: TestOrg, url: string) {
    return api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: org.apiKey,
      payload: { url, events: ['invoice.*'] },
    });
  }

  it('stores every spelling of this machine in its WHATWG form, and delivers to it', async () => {
    const org = await createTestOrg(api.platform.db);
    const cases = spellings();
    const endpoints: { id: string; given: string; receiver: Receiver }[] = [];
    for (const [index, [given, stored, receiver]] of cases.entries()) {
      const url = `${given}?spelling=${index}`;
      const response = await create(org, url);
      expect(response.statusCode, `${given}: ${response.body}`).toBe(201);
      expect(response.json().data.url, given).toBe(`${stored}?spelling=${index}`);
      const read = await api.request({
        path: `/webhook-endpoints/${response.json().data.id}`,
        key: org.apiKey,
      });
      expect(read.json().data.url, given).toBe(`${stored}?spelling=${index}`);
      endpoints.push({ id: response.json().data.id, given, receiver });
    }
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    for (const [index, endpoint] of endpoints.entries()) {
      const [event] = await eventually(
        () => storedEvents(api.platform.db, endpoint.id),
        (rows) => rows[0]?.status === 'SUCCESS' || rows[0]?.status === 'FAILED',
      );
      expect(event, endpoint.given).toMatchObject({ status: 'SUCCESS', last_response_code: 200 });
      expect(
        endpoint.receiver.deliveries.filter((d) => d.url === `/hooks?spelling=${index}`),
        endpoint.given,
      ).toHaveLength(1);
    }
  });

  it('normalizes https spellings and PATCHed URLs the same way', async () => {
    const org = await createTestOrg(api.platform.db);
    for (const [given, stored] of [
      ['https://2130706433:8443/', 'https://127.0.0.1:8443/'],
      ['https://0x7f000001:8443/', 'https://127.0.0.1:8443/'],
      ['https://127.1:8443/', 'https://127.0.0.1:8443/'],
      ['https://LOCALHOST:8443/', 'https://localhost:8443/'],
      ['https://[::1]/', 'https://[::1]/'],
      ['HTTPS://Hooks.Example.COM', 'https://hooks.example.com/'],
    ]) {
      const response = await create(org, given!);
      expect(response.statusCode, given).toBe(201);
      expect(response.json().data.url, given).toBe(stored);
      const patched = await api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${response.json().data.id}`,
        key: org.apiKey,
        payload: { url: given },
      });
      expect(patched.statusCode, given).toBe(200);
      expect(patched.json().data.url, given).toBe(stored);
    }
  });

  it('refuses what reaches this machine without being a loopback name or literal, allowed or not', async () => {
    const org = await createTestOrg(api.platform.db);
    for (const url of [
      `http://0:${v4.port}/hooks`,
      `http://0.0.0.0:${v4.port}/hooks`,
      'https://[::]/hooks',
      'https://[::7f00:1]/hooks',
      'https://[::127.0.0.1]/hooks',
      'https://[64:ff9b::7f00:1]/hooks',
      'https://[2002:7f00:1::]/hooks',
      'https://api.localhost/hooks',
      `http://api.localhost:${v4.port}/hooks`,
    ]) {
      const response = await create(org, url);
      expect(response.statusCode, url).toBe(422);
      expect(response.json().details, url).toEqual([
        { field: 'url', message: expect.any(String), code: 'invalid_value' },
      ]);
    }
  });

  it('refuses every spelling where WEBHOOK_ALLOW_LOCALHOST is false', async () => {
    const org = await createTestOrg(api.platform.db);
    const production = await buildApiWithoutLocalhost(api);
    try {
      const given = [
        ...spellings().map(([url]) => url),
        'https://2130706433:8443/',
        'https://0x7f000001:8443/',
        'https://127.1:8443/',
        'https://LOCALHOST:8443/',
        'https://[::1]/',
      ];
      for (const url of given) {
        const response = await production.inject({
          method: 'POST',
          url: `${BASE_PATH}/webhook-endpoints`,
          headers: { authorization: `Bearer ${org.apiKey}` },
          payload: { url, events: ['invoice.paid'] },
        });
        expect(response.statusCode, url).toBe(422);
        expect(response.json().details[0], url).toMatchObject({ field: 'url', code: 'invalid_value' });
      }
    } finally {
      await production.close();
    }
  });

  it('delivers a URL stored before normalization under the same rule', async () => {
    const org = await createTestOrg(api.platform.db);
    const response = await create(org, `${v4.url}?stored=raw`);
    const id = response.json().data.id;
    await api.platform.db.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [
      id,
      `http://2130706433:${v4.port}/hooks?stored=raw`,
    ]);
    await emit(api.platform.db, org.orgId, 'invoice.posted');
    const [event] = await eventually(
      () => storedEvents(api.platform.db, id),
      (rows) => rows[0]?.status === 'SUCCESS' || rows[0]?.status === 'FAILED',
    );
    expect(event).toMatchObject({ status: 'SUCCESS', last_response_code: 200 });
    expect(v4.deliveries.filter((d) => d.url === '/hooks?stored=raw')).toHaveLength(1);
  });
});
