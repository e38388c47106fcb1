import { describe, expect, it } from 'vitest';
import type { IngestServer } from '../../services/ingest/server.js';
import { freeTcpPort } from '../helpers/redis-server.js';
import { freshKey, startIngestFor, useUsageStack, uwsFrontEnd } from './support.js';

describe('ingest service port', () => {
  const usage = useUsageStack('in-process');

  it.each(['uws', 'node-http'] as const)(
    'on %s, refuses to start on a port an ingest service listens on, instead of sharing its connections',
    async (transport) => {
      const { stack, org, items } = usage;
      // A port asked for by number, as in production: the kernel never shares an ephemeral one.
      const port = await freeTcpPort();
      const first: IngestServer = await startIngestFor(stack.api, stack.api.usage, {
        transport,
        logName: 'ingest-first',
        port,
      });
      try {
        await expect(
          startIngestFor(stack.api, stack.api.usage, { transport, logName: 'ingest-second', port }),
        ).rejects.toThrow(`cannot listen on 127.0.0.1:${port}`);
        const answer = await uwsFrontEnd(port).post('/usage/events', {
          key: org.apiKey,
          idempotencyKey: freshKey('port'),
          body: { subscription_item_id: items.metered, quantity: 1 },
        });
        expect(answer.status).toBe(201);
      } finally {
        await first.close();
      }
    },
  );
});
