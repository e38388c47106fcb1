import { beforeAll, describe, expect, it } from 'vitest';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runTs } from '../helpers/processes.js';
import {
  createUsageItems,
  eventually,
  INGEST_LISTENING,
  serviceProcesses,
  type UsageItems,
} from './support.js';

/**
 * Which HTTP server the ingest service process runs on, and that it says so: uWebSockets.js'
 * native code behind a checking proxy (INGEST_TRUSTED_PROXY), Node's HTTP server otherwise. Where
 * the uWS package has no native binary for this Node (simulated with its UWS_USE_FALLBACK switch)
 * the service refuses to start rather than run the package's JS shim, unless
 * INGEST_ALLOW_FALLBACK_SERVER accepts Node's HTTP server.
 */
describe('ingest service process', () => {
  const processes = serviceProcesses('ingest_process');
  let org: TestOrg;
  let items: UsageItems;

  beforeAll(async () => {
    org = await createTestOrg(processes.database.db);
    items = await createUsageItems(processes.database.db, org.orgId);
  });

  /** What /readyz and /metrics of a running ingest service say about its HTTP server. */
  const serving = async (base: string) => {
    const ready = (await (await fetch(`${base}/readyz`)).json()) as { details: { http_server: string } };
    const metrics = await (await fetch(`${base}/metrics`)).text();
    return {
      httpServer: ready.details.http_server,
      gauge: Number(/^billing_ingest_native_server (\d)$/m.exec(metrics)?.[1]),
    };
  };

  it('serves on native uWebSockets.js behind a checking proxy, and on Node otherwise, saying which', async () => {
    for (const [trustedProxy, httpServer, gauge] of [
      ['true', 'uws', 1],
      ['false', 'node-http', 0],
    ] as const) {
      const ingest = await processes.start(
        'services/ingest/main.ts',
        processes.env({ INGEST_PORT: '0', INGEST_TRUSTED_PROXY: trustedProxy }),
        INGEST_LISTENING,
      );
      try {
        expect(ingest.output()).toContain(`(${httpServer})`);
        expect(await serving(`http://127.0.0.1:${ingest.match[1]}`)).toEqual({ httpServer, gauge });
      } finally {
        expect(await ingest.stop()).toBe(0);
      }
    }
  });

  it('refuses to start where uWebSockets.js has no native binary, naming the way out', async () => {
    const result = await runTs(
      'services/ingest/main.ts',
      [],
      processes.env({ INGEST_PORT: '0', INGEST_TRUSTED_PROXY: 'true', UWS_USE_FALLBACK: '1' }),
      30_000,
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr + result.stdout).toMatch(
      /no native binary for Node v\d+.*INGEST_ALLOW_FALLBACK_SERVER=true/,
    );
  });

  it('serves on Node when told to, after an error line, and works', async () => {
    const ingest = await processes.start(
      'services/ingest/main.ts',
      processes.env({
        INGEST_PORT: '0',
        INGEST_TRUSTED_PROXY: 'true',
        INGEST_ALLOW_FALLBACK_SERVER: 'true',
        UWS_USE_FALLBACK: '1',
        LOG_LEVEL: 'info',
      }),
      INGEST_LISTENING,
    );
    try {
      // the logger's line travels apart from the plain "listening" line: it may come just after
      await eventually(
        async () =>
          expect(ingest.output()).toMatch(/"level":"error".*no native binary.*serving on Node's HTTP server/),
        5000,
      );
      const base = `http://127.0.0.1:${ingest.match[1]}`;
      expect(await serving(base)).toEqual({ httpServer: 'node-http', gauge: 0 });
      const post = (body: unknown, key?: string) =>
        fetch(`${base}/api/public/v1/usage/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${org.apiKey}`,
            'content-type': 'application/json',
            ...(key ? { 'idempotency-key': key } : {}),
          },
          body: JSON.stringify(body),
        });
      const created = await post({ subscription_item_id: items.metered, quantity: 3 }, 'fallback-1');
      expect(created.status).toBe(201);
      const event = ((await created.json()) as { data: unknown }).data;
      const again = await post({ subscription_item_id: items.metered, quantity: 4 }, 'fallback-1');
      expect(((await again.json()) as { data: unknown }).data).toEqual(event);
      expect((await fetch(`${base}/nowhere`)).status).toBe(404);
      const { rows } = await processes.database.db.query(
        'SELECT id FROM usage_events WHERE idempotency_key = $1',
        ['fallback-1'],
      );
      expect(rows).toEqual([{ id: (event as { id: string }).id }]);
    } finally {
      expect(await ingest.stop()).toBe(0);
    }
  });
});
