import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookAttempts } from '../../libs/observability/index.js';
import { createEndpoint, type HostResolver, type WebhookDispatcher } from '../../libs/webhooks/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createTestPlatform, type TestPlatform } from '../helpers/platform.js';
import {
  attemptsOf,
  emit,
  eventually,
  type Receiver,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

/**
 * The delivery-time SSRF guard checks the address actually connected to. Host names are mapped
 * by a resolver of the test's own (as a hostile DNS server would answer); literal addresses are
 * written straight into the endpoint row, as if accepted under an older policy, since the API
 * refuses them.
 */
const DNS: Record<string, { address: string; family: number }[]> = {
  'private.example.test': [{ address: '10.0.0.1', family: 4 }],
  'metadata.example.test': [{ address: '169.254.169.254', family: 4 }],
  'mapped.example.test': [{ address: '::ffff:10.0.0.1', family: 6 }],
  'cgnat.example.test': [{ address: '100.64.1.2', family: 4 }],
  'ula.example.test': [{ address: 'fd00::1', family: 6 }],
  'mixed.example.test': [
    { address: '93.184.216.34', family: 4 },
    { address: '10.0.0.1', family: 4 },
  ],
  'rebind.example.test': [{ address: '127.0.0.1', family: 4 }],
  localhost: [{ address: '127.0.0.1', family: 4 }],
};
const resolveHost: HostResolver = async (hostname) => {
  const answer = DNS[hostname];
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return answer;
};

describe('the SSRF guard at delivery time', () => {
  let base: TestPlatform;
  let org: TestOrg;
  let receiver: Receiver;
  let dispatcher: WebhookDispatcher | undefined;

  beforeAll(async () => {
    base = await createTestPlatform({ redis: false });
    org = await createTestOrg(base.platform.db);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
    await base?.close();
  });

  async function endpointAt(url: string, options: { literal?: boolean } = {}): Promise<string> {
    const { db } = base.platform;
    const endpoint = await createEndpoint(
      db,
      org.orgId,
      {
        url: options.literal ? 'https://placeholder.example.test/' : url,
        events: ['payment.*'],
        description: '',
        status: 'ACTIVE',
      },
      { allowLocalhost: true },
    );
    if (options.literal)
      await db.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [endpoint.id, url]);
    return endpoint.id;
  }

  async function deliverOnce(
    urls: { url: string; literal?: boolean }[],
    allowLocalhost: boolean,
  ): Promise<Map<string, { status: string; code: number | null; body: string | null }>> {
    const { db } = base.platform;
    await db.query(`UPDATE webhook_endpoints SET status = 'DISABLED'`);
    const ids = new Map<string, string>();
    for (const { url, literal } of urls) ids.set(url, await endpointAt(url, literal ? { literal } : {}));
    dispatcher = startDispatcher(db, { maxAttempts: 1, allowLocalhost, resolveHost });
    try {
      await emit(db, org.orgId, 'payment.succeeded');
      const results = new Map<string, { status: string; code: number | null; body: string | null }>();
      for (const [url, id] of ids) {
        const [event] = await eventually(
          () => storedEvents(db, id),
          (rows) => rows[0]?.status === 'SUCCESS' || rows[0]?.status === 'FAILED',
        );
        results.set(url, {
          status: event!.status,
          code: event!.last_response_code,
          body: event!.last_response_body,
        });
        expect(await attemptsOf(db, event!.id)).toHaveLength(1);
      }
      return results;
    } finally {
      await dispatcher.stop();
      dispatcher = undefined;
    }
  }

  it('refuses host names that resolve to private, link-local, CGNAT or mapped addresses', async () => {
    const refusedBefore = await refusedCount();
    const results = await deliverOnce(
      [
        { url: 'https://private.example.test/hooks' },
        { url: 'https://metadata.example.test/latest/meta-data/' },
        { url: 'https://mapped.example.test/hooks' },
        { url: 'https://cgnat.example.test/hooks' },
        { url: 'https://ula.example.test/hooks' },
        { url: 'https://mixed.example.test/hooks' },
      ],
      true,
    );
    const expected: Record<string, string> = {
      'https://private.example.test/hooks': 'private.example.test resolves to a private address',
      'https://metadata.example.test/latest/meta-data/':
        'metadata.example.test resolves to a link-local address',
      'https://mapped.example.test/hooks': 'mapped.example.test resolves to a private address',
      'https://cgnat.example.test/hooks': 'cgnat.example.test resolves to a shared (CGNAT) address',
      'https://ula.example.test/hooks': 'ula.example.test resolves to a private address',
      'https://mixed.example.test/hooks': 'mixed.example.test resolves to a private address',
    };
    for (const [url, fragment] of Object.entries(expected)) {
      const result = results.get(url)!;
      expect(result, url).toMatchObject({ status: 'FAILED', code: 0 });
      expect(result.body, url).toContain(`Refused: ${fragment}`);
      // the tenant reads this body: how an internal name resolves stays with the operator
      expect(result.body, url).not.toMatch(/10\.0\.0\.1|169\.254|100\.64|fd00/);
    }
    expect((await refusedCount()) - refusedBefore).toBe(6);
  });

  it('refuses literal private, link-local and loopback addresses, which bypass any lookup', async () => {
    const results = await deliverOnce(
      [
        { url: 'https://10.0.0.1/hooks', literal: true },
        { url: 'https://169.254.169.254/latest/meta-data/', literal: true },
        { url: `http://[::ffff:7f00:1]:${receiver.port}/hooks`, literal: true },
        { url: `http://127.0.0.2:${receiver.port}/hooks`, literal: true },
        { url: 'https://[fe80::1]/hooks', literal: true },
      ],
      false,
    );
    expect(results.get('https://10.0.0.1/hooks')!.body).toBe(
      'Refused: 10.0.0.1 is a private address; webhooks are delivered to public addresses only.',
    );
    expect(results.get('https://169.254.169.254/latest/meta-data/')!.body).toContain(
      '169.254.169.254 is a link-local',
    );
    expect(results.get(`http://[::ffff:7f00:1]:${receiver.port}/hooks`)!.body).toContain(
      'a loopback address',
    );
    expect(results.get(`http://127.0.0.2:${receiver.port}/hooks`)!.body).toContain('a loopback address');
    expect(results.get('https://[fe80::1]/hooks')!.body).toContain('a link-local address');
    for (const result of results.values()) expect(result).toMatchObject({ status: 'FAILED', code: 0 });
    expect(receiver.deliveries).toHaveLength(0);
  });

  it('lets only allowed localhost URLs reach loopback, and only while WEBHOOK_ALLOW_LOCALHOST is true', async () => {
    const viaName = `http://localhost:${receiver.port}/hooks?via=name`;
    const viaAddress = `http://127.0.0.1:${receiver.port}/hooks?via=address`;
    const viaMapped = `http://[::ffff:7f00:1]:${receiver.port}/hooks?via=mapped`;
    const viaNumber = `http://2130706433:${receiver.port}/hooks?via=number`;
    const rebind = `https://rebind.example.test:${receiver.port}/hooks`;
    const nat64 = `http://[64:ff9b::7f00:1]:${receiver.port}/hooks`;
    const allowed = await deliverOnce(
      [
        { url: viaName },
        { url: viaAddress },
        { url: viaMapped, literal: true },
        { url: viaNumber, literal: true },
        { url: rebind },
        { url: nat64, literal: true },
      ],
      true,
    );
    for (const url of [viaName, viaAddress, viaMapped, viaNumber]) {
      expect(allowed.get(url), url).toMatchObject({ status: 'SUCCESS', code: 200 });
    }
    expect(allowed.get(rebind)).toMatchObject({ status: 'FAILED', code: 0 });
    expect(allowed.get(rebind)!.body).toContain('rebind.example.test resolves to a loopback address');
    // NAT64 of 127.0.0.1 is routed to a gateway: not this machine, so no exception
    expect(allowed.get(nat64)).toMatchObject({ status: 'FAILED', code: 0 });
    expect(allowed.get(nat64)!.body).toContain('is a loopback address');
    expect(receiver.deliveries.map((d) => d.url).sort()).toEqual([
      '/hooks?via=address',
      '/hooks?via=mapped',
      '/hooks?via=name',
      '/hooks?via=number',
    ]);

    const refused = await deliverOnce(
      [{ url: viaName }, { url: viaAddress }, { url: viaNumber, literal: true }],
      false,
    );
    expect(refused.get(viaName)).toMatchObject({ status: 'FAILED', code: 0 });
    expect(refused.get(viaName)!.body).toContain('localhost resolves to a loopback address');
    expect(refused.get(viaAddress)!.body).toContain('127.0.0.1 is a loopback address');
    expect(refused.get(viaNumber)!.body).toContain('127.0.0.1 is a loopback address');
    expect(receiver.deliveries).toHaveLength(4);
  });

  it('records a name that does not resolve as a connection error (0)', async () => {
    const results = await deliverOnce([{ url: 'https://nowhere.example.test/hooks' }], true);
    expect(results.get('https://nowhere.example.test/hooks')).toMatchObject({ status: 'FAILED', code: 0 });
    expect(results.get('https://nowhere.example.test/hooks')!.body).toContain('ENOTFOUND');
  });
});

async function refusedCount(): Promise<number> {
  const metric = await webhookAttempts.get();
  return metric.values.find((value) => value.labels.result === 'refused')?.value ?? 0;
}
