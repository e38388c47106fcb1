import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../libs/webhooks/index.js';
import { buildDispatcher } from '../../services/dispatcher/dispatcher.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import {
  attemptsOf,
  emit,
  eventually,
  type Receiver,
  type Responder,
  sleep,
  startReceiver,
  storedEvents,
} from './support.js';

/**
 * The dispatcher service builds its dispatcher from its settings (services/dispatcher/dispatcher.ts,
 * used by `npm start` and the dispatcher process alike): a setting it dropped or hard-coded would
 * pass every test of the library, which is given its settings directly. Here the attempt limit and
 * the retry delay differ from their defaults (5 attempts; 1, 2, 4, 8 s), so a shell that ignored
 * them would deliver five times, seconds apart.
 */
describe('the dispatcher service takes its settings', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase('dispatcher_settings');
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** The dispatcher service on this file's database: a fast poll, localhost allowed, then `settings`. */
  const dispatcherWith = (settings: Partial<Parameters<typeof buildDispatcher>[0]['config']>) =>
    buildDispatcher({
      db: database.db,
      log: runLogger('dispatcher'),
      config: {
        DISPATCHER_POLL_MS: 50,
        DISPATCHER_CONCURRENCY: 4,
        DISPATCHER_ENDPOINT_CONCURRENCY: 4,
        WEBHOOK_TIMEOUT_MS: 1000,
        WEBHOOK_MAX_ATTEMPTS: 1,
        WEBHOOK_RETRY_DELAYS_MS: [100],
        WEBHOOK_ALLOW_LOCALHOST: true,
        ...settings,
      },
    });

  /** `work` while the dispatcher service runs with `settings`; stopped after, whatever happened. */
  async function whileDispatching(
    settings: Parameters<typeof dispatcherWith>[0],
    work: () => Promise<unknown>,
  ): Promise<void> {
    const dispatcher = dispatcherWith(settings);
    dispatcher.start();
    try {
      await work();
    } finally {
      await dispatcher.stop();
    }
  }

  /**
   * A receiver answering as `respond` says and an endpoint to it, stored while localhost was
   * allowed, in an organization of its own (no other test's events reach it); closed after `use`.
   */
  async function withOwnEndpoint(
    respond: Responder | undefined,
    use: (own: { orgId: number; endpointId: string; receiver: Receiver }) => Promise<void>,
  ): Promise<void> {
    const { orgId } = await createTestOrg(database.db);
    const receiver = await startReceiver(respond);
    try {
      const endpoint = await createEndpoint(
        database.db,
        orgId,
        { url: receiver.url, events: ['invoice.*'], description: '', status: 'ACTIVE' },
        { allowLocalhost: true },
      );
      await use({ orgId, endpointId: endpoint.id, receiver });
    } finally {
      await receiver.close();
    }
  }

  it('gives up after WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_DELAYS_MS apart', async () => {
    await withOwnEndpoint(
      () => ({ status: 503, body: 'down' }),
      ({ orgId, endpointId, receiver }) =>
        whileDispatching({ WEBHOOK_MAX_ATTEMPTS: 2, WEBHOOK_RETRY_DELAYS_MS: [100] }, async () => {
          await emit(database.db, orgId, 'invoice.posted');
          const [failed] = await eventually(
            () => storedEvents(database.db, endpointId),
            (rows) => rows[0]?.status === 'FAILED',
            10_000,
          );
          expect(failed).toMatchObject({ attempts: 2, last_response_code: 503 });
          expect((await attemptsOf(database.db, failed!.id)).map((attempt) => attempt.attempt)).toEqual([
            1, 2,
          ]);
          await sleep(300);
          expect(receiver.deliveries).toHaveLength(2);
          // the retry came after the configured delay, not the default schedule's first (a second)
          const [first, second] = receiver.deliveries.map((delivery) => delivery.receivedAt);
          expect(second! - first!).toBeGreaterThanOrEqual(90);
          expect(second! - first!).toBeLessThan(1000);
        }),
    );
  });

  it('sends one endpoint at most DISPATCHER_ENDPOINT_CONCURRENCY attempts at once', async () => {
    // each answer takes 300 ms: attempts one at a time arrive at least that far apart
    await withOwnEndpoint(
      () => ({ status: 200, delayMs: 300 }),
      async ({ orgId, endpointId, receiver }) => {
        // all three due before the dispatcher starts, so it could send them together
        for (let i = 0; i < 3; i++) await emit(database.db, orgId, 'invoice.posted');
        await whileDispatching({ DISPATCHER_CONCURRENCY: 4, DISPATCHER_ENDPOINT_CONCURRENCY: 1 }, () =>
          eventually(
            () => storedEvents(database.db, endpointId),
            (rows) => rows.length === 3 && rows.every((row) => row.status === 'SUCCESS'),
            10_000,
          ),
        );
        const arrivals = receiver.deliveries.map((delivery) => delivery.receivedAt);
        expect(arrivals).toHaveLength(3);
        expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(250);
        expect(arrivals[2]! - arrivals[1]!).toBeGreaterThanOrEqual(250);
      },
    );
  });

  it('gives up on a receiver that answers later than WEBHOOK_TIMEOUT_MS: 408', async () => {
    await withOwnEndpoint(
      () => ({ status: 200, delayMs: 1500 }),
      ({ orgId, endpointId }) =>
        whileDispatching({ WEBHOOK_MAX_ATTEMPTS: 1, WEBHOOK_TIMEOUT_MS: 300 }, async () => {
          await emit(database.db, orgId, 'invoice.posted');
          const [ended] = await eventually(
            () => storedEvents(database.db, endpointId),
            (rows) => rows[0]?.status === 'FAILED' || rows[0]?.status === 'SUCCESS',
            10_000,
          );
          expect(ended).toMatchObject({ status: 'FAILED', attempts: 1, last_response_code: 408 });
          expect(ended!.last_response_body).toBe('Timed out: no complete response within 300 ms.');
        }),
    );
  });

  it('refuses loopback receivers when WEBHOOK_ALLOW_LOCALHOST is false', async () => {
    // stored while localhost was allowed; the dispatcher's own setting decides at delivery time
    await withOwnEndpoint(undefined, ({ orgId, endpointId, receiver }) =>
      whileDispatching({ WEBHOOK_MAX_ATTEMPTS: 1, WEBHOOK_ALLOW_LOCALHOST: false }, async () => {
        await emit(database.db, orgId, 'invoice.posted');
        const [failed] = await eventually(
          () => storedEvents(database.db, endpointId),
          (rows) => rows[0]?.status === 'FAILED',
          10_000,
        );
        expect(failed).toMatchObject({ attempts: 1, last_response_code: 0 });
        expect(failed!.last_response_body).toMatch(/^Refused: /);
        expect(receiver.deliveries).toHaveLength(0);
      }),
    );
  });
});
