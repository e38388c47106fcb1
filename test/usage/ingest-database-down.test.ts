import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiKeyAuthenticator } from '../../libs/auth/index.js';
import { startIngestServer } from '../../services/ingest/server.js';
import { ingestTransport } from '../../services/ingest/start.js';
import { runLogger } from '../helpers/run-log.js';
import { freshKey, useUsageStack, uwsFrontEnd } from './support.js';

describe('ingest service while the database is unreachable', () => {
  const usage = useUsageStack('in-process');
  // A real pool to a port nothing listens on: every key lookup fails to connect.
  const unreachable = new pg.Pool({
    host: '127.0.0.1',
    port: 1,
    user: 'postgres',
    connectionTimeoutMillis: 2000,
  });
  afterAll(() => unreachable.end());

  it.each(['uws', 'node-http'] as const)(
    'on %s, answers a key it has not cached 503 with Retry-After, never 500',
    async (transport) => {
      const { stack, org, items } = usage;
      const server = await startIngestServer({
        transport: ingestTransport({ trustedProxy: transport === 'uws' }),
        host: '127.0.0.1',
        port: 0,
        bodyLimit: stack.api.config.INGEST_BODY_LIMIT_BYTES,
        authenticator: new ApiKeyAuthenticator(unreachable, { ttlSeconds: 30, maxEntries: 100 }),
        usage: stack.api.usage.ingest,
        checks: () => [],
        log: runLogger(`ingest-db-down-${transport}`),
      });
      try {
        const answer = await uwsFrontEnd(server.port).post('/usage/events', {
          key: org.apiKey,
          idempotencyKey: freshKey('db-down'),
          body: { subscription_item_id: items.metered, quantity: 1 },
        });
        expect(answer.status).toBe(503);
        expect(answer.headers['retry-after']).toBe('1');
        expect(answer.body).toMatchObject({
          error_code: 'SERVICE_UNAVAILABLE',
          detail: 'The database is unavailable.',
        });
      } finally {
        await server.close();
      }
    },
  );
});
