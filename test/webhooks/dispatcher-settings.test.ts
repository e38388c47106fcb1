import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint } from '../../libs/webhooks/index.js';
import { buildDispatcher } from '../../services/dispatcher/dispatcher.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import {
  attemptsOf,
  emit,
  eventually,
  type Receiver,
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
  let org: TestOrg;
  let receiver: Receiver;

  beforeAll(async () => {
    database = await createTestDatabase('dispatcher_settings');
    org = await createTestOrg(database.db);
  });
  afterAll(async () => {
    await receiver?.close();
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

  it('gives up after WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_DELAYS_MS apart', async () => {
    receiver = await startReceiver(() => ({ status: 503, body: 'down' }));
    const endpoint = await createEndpoint(
      database.db,
      org.orgId,
      { url: receiver.url, events: ['invoice.*'], description: '', status: 'ACTIVE' },
      { allowLocalhost: true },
    );
    const dispatcher = dispatcherWith({ WEBHOOK_MAX_ATTEMPTS: 2, WEBHOOK_RETRY_DELAYS_MS: [100] });
    dispatcher.start();
    try {
      await emit(database.db, org.orgId, 'invoice.posted');
      const [failed] = await eventually(
        () => storedEvents(database.db, endpoint.id),
        (rows) => rows[0]?.status === 'FAILED',
        10_000,
      );
      expect(failed).toMatchObject({ attempts: 2, last_response_code: 503 });
      expect((await attemptsOf(database.db, failed!.id)).map((attempt) => attempt.attempt)).toEqual([1, 2]);
      await sleep(300);
      expect(receiver.deliveries).toHaveLength(2);
      // the retry came after the configured delay, not the default schedule's first (a second)
      const [first, second] = receiver.deliveries.map((delivery) => delivery.receivedAt);
      expect(second! - first!).toBeGreaterThanOrEqual(90);
      expect(second! - first!).toBeLessThan(1000);
    } finally {
      await dispatcher.stop();
    }
  });

  it('sends one endpoint at most DISPATCHER_ENDPOINT_CONCURRENCY attempts at once', async () => {
    const own = await createTestOrg(database.db);
    // each answer takes 300 ms: attempts one at a time arrive at least that far apart
    const slow = await startReceiver(() => ({ status: 200, delayMs: 300 }));
    try {
      const endpoint = await createEndpoint(
        database.db,
        own.orgId,
        { url: slow.url, events: ['invoice.*'], description: '', status: 'ACTIVE' },
        { allowLocalhost: true },
      );
      for (let i = 0; i < 3; i++) await emit(database.db, own.orgId, 'invoice.posted');
      const dispatcher = dispatcherWith({ DISPATCHER_CONCURRENCY: 4, DISPATCHER_ENDPOINT_CONCURRENCY: 1 });
      dispatcher.start();
      try {
        await eventually(
          () => storedEvents(database.db, endpoint.id),
          (rows) => rows.length === 3 && rows.every((row) => row.status === 'SUCCESS'),
          10_000,
        );
      } finally {
        await dispatcher.stop();
      }
      const arrivals = slow.deliveries.map((delivery) => delivery.receivedAt);
      expect(arrivals).toHaveLength(3);
      expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(250);
      expect(arrivals[2]! - arrivals[1]!).toBeGreaterThanOrEqual(250);
    } finally {
      await slow.close();
    }
  });

  it('gives up on a receiver that answers later than WEBHOOK_TIMEOUT_MS: 408', async () => {
    const own = await createTestOrg(database.db);
    const hanging = await startReceiver(() => ({ status: 200, delayMs: 1500 }));
    try {
      const endpoint = await createEndpoint(
        database.db,
        own.orgId,
        { url: hanging.url, events: ['invoice.*'], description: '', status: 'ACTIVE' },
        { allowLocalhost: true },
      );
      const dispatcher = dispatcherWith({ WEBHOOK_MAX_ATTEMPTS: 1, WEBHOOK_TIMEOUT_MS: 300 });
      dispatcher.start();
      try {
        await emit(database.db, own.orgId, 'invoice.posted');
        const [ended] = await eventually(
          () => storedEvents(database.db, endpoint.id),
          (rows) => rows[0]?.status === 'FAILED' || rows[0]?.status === 'SUCCESS',
          10_000,
        );
        expect(ended).toMatchObject({ status: 'FAILED', attempts: 1, last_response_code: 408 });
        expect(ended!.last_response_body).toBe('Timed out: no complete response within 300 ms.');
      } finally {
        await dispatcher.stop();
      }
    } finally {
      await hanging.close();
    }
  });

  it('refuses loopback receivers when WEBHOOK_ALLOW_LOCALHOST is false', async () => {
    const own = await createTestOrg(database.db);
    const local = await startReceiver();
    try {
      // stored while localhost was allowed; the dispatcher's own setting decides at delivery time
      const endpoint = await createEndpoint(
        database.db,
        own.orgId,
        { url: local.url, events: ['invoice.*'], description: '', status: 'ACTIVE' },
        { allowLocalhost: true },
      );
      const dispatcher = dispatcherWith({ WEBHOOK_MAX_ATTEMPTS: 1, WEBHOOK_ALLOW_LOCALHOST: false });
      dispatcher.start();
      try {
        await emit(database.db, own.orgId, 'invoice.posted');
        const [failed] = await eventually(
          () => storedEvents(database.db, endpoint.id),
          (rows) => rows[0]?.status === 'FAILED',
          10_000,
        );
        expect(failed).toMatchObject({ attempts: 1, last_response_code: 0 });
        expect(failed!.last_response_body).toMatch(/^Refused: /);
        expect(local.deliveries).toHaveLength(0);
      } finally {
        await dispatcher.stop();
      }
    } finally {
      await local.close();
    }
  });
});
