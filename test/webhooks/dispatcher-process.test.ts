import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitDomainEvent } from '../../libs/events/index.js';
import { createEndpoint } from '../../libs/webhooks/index.js';
import { createTestDatabase, setConnectionsAllowed, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type ServiceProcess, startTs } from '../helpers/processes.js';
import { eventually, type Receiver, startReceiver, storedEvents } from './support.js';

/**
 * The dispatcher as the separate process production runs (services/dispatcher/main.ts): killed,
 * restarted, doubled, cut off from its database and stopped, for real. The tests run in order and
 * share their processes (starting one costs seconds on a busy machine).
 */
type DispatcherProcess = ServiceProcess;

const READY = /"port":(\d+).*"msg":"dispatcher started"/;

describe('the dispatcher process', { timeout: 90_000 }, () => {
  let database: TestDatabase;
  let org: TestOrg;
  const receivers: Receiver[] = [];
  const processes: DispatcherProcess[] = [];
  let restarted: DispatcherProcess;
  let joined: DispatcherProcess;
  let deliveredBeforeKill = 0;

  beforeAll(async () => {
    database = await createTestDatabase('dispatcher');
    org = await createTestOrg(database.db);
  });
  afterAll(async () => {
    await Promise.all(processes.map((started) => started.kill()));
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await database?.drop();
  });

  async function startDispatcherProcess(env: Record<string, string> = {}): Promise<DispatcherProcess> {
    const started = await startTs(
      'services/dispatcher/main.ts',
      {
        APP_ENV: 'test',
        LOG_LEVEL: 'debug',
        DATABASE_URL: database.url,
        DATABASE_POOL_SIZE: '4',
        REDIS_URL: undefined,
        DISPATCHER_PORT: '0',
        DISPATCHER_POLL_MS: '100',
        DISPATCHER_CONCURRENCY: '5',
        WEBHOOK_TIMEOUT_MS: '3000',
        WEBHOOK_RETRY_DELAYS_MS: '50,50,50,50',
        WEBHOOK_ALLOW_LOCALHOST: 'true',
        SHUTDOWN_TIMEOUT_MS: '8000',
        ...env,
      },
      READY,
      80_000,
    );
    processes.push(started);
    return started;
  }

  /** A receiver with an endpoint of its own; every earlier endpoint is disabled first. */
  async function receiverWithEndpoint(
    ...args: Parameters<typeof startReceiver>
  ): Promise<{ receiver: Receiver; endpointId: string }> {
    await database.db.query(`UPDATE webhook_endpoints SET status = 'DISABLED'`);
    const receiver = await startReceiver(...args);
    receivers.push(receiver);
    const endpoint = await createEndpoint(
      database.db,
      org.orgId,
      { url: receiver.url, events: ['invoice.*'], description: '', status: 'ACTIVE' },
      { allowLocalhost: true },
    );
    return { receiver, endpointId: endpoint.id };
  }

  /** `count` invoice events committed in one transaction, numbered from `from`. */
  async function emitMany(count: number, from: number): Promise<void> {
    await database.db.transaction(async (tx) => {
      for (let seq = from; seq < from + count; seq++) {
        await emitDomainEvent(tx, {
          orgId: org.orgId,
          type: 'invoice.posted',
          data: { id: `inv-${seq}`, object: 'invoice', seq },
        });
      }
    });
  }

  function allDelivered(endpointId: string, count: number) {
    return eventually(
      () => storedEvents(database.db, endpointId),
      (rows) => rows.length === count && rows.every((row) => row.status === 'SUCCESS'),
      30_000,
    );
  }

  it('delivers every event at least once when killed mid-run and restarted', async () => {
    const { receiver, endpointId } = await receiverWithEndpoint(() => ({ status: 200, delayMs: 20 }));
    await emitMany(150, 0);

    // a short timeout, hence a short lease (2 x timeout): what it claimed is free again 2 s after the kill
    const first = await startDispatcherProcess({ WEBHOOK_TIMEOUT_MS: '1000' });
    await receiver.waitFor(30, 30_000);
    await first.kill();
    const seqs = () => new Set(receiver.deliveries.map((d) => JSON.parse(d.body).data.seq as number));
    deliveredBeforeKill = seqs().size;
    expect(deliveredBeforeKill).toBeLessThan(150);

    // two come back (the second also serves the tests below): started together, they cost one wait
    [restarted, joined] = await Promise.all([
      startDispatcherProcess(),
      startDispatcherProcess({ DISPATCHER_CONCURRENCY: '10' }),
    ]);
    const events = await allDelivered(endpointId, 150);
    expect(seqs()).toEqual(new Set(Array.from({ length: 150 }, (_, seq) => seq)));
    expect(new Set(events.map((event) => event.id)).size).toBe(150);
    const { rows } = await database.db.query<{ pending: number }>(
      'SELECT count(*) AS pending FROM outbox WHERE processed_at IS NULL',
    );
    expect(rows[0]!.pending).toBe(0);
  });

  it('serves /healthz, /metrics, and /readyz that follows its database', async () => {
    const base = `http://127.0.0.1:${restarted.match[1]}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: { database: { status: 'ok' } } });
    // the two that came back shared the rest of the run: together they count every delivery they made
    let successes = 0;
    for (const service of [restarted, joined]) {
      const metrics = await (await fetch(`http://127.0.0.1:${service.match[1]}/metrics`)).text();
      expect(metrics).toContain('# TYPE billing_webhook_attempts_total counter');
      expect(metrics).toContain('# TYPE billing_webhook_delivery_duration_seconds histogram');
      const count = Number(
        /billing_webhook_attempts_total\{result="success"\} (\d+)/.exec(metrics)?.[1] ?? 0,
      );
      const observed = Number(
        /billing_webhook_delivery_duration_seconds_count (\d+)/.exec(metrics)?.[1] ?? 0,
      );
      expect(observed).toBeGreaterThanOrEqual(count);
      successes += count;
    }
    expect(successes).toBeGreaterThanOrEqual(150 - deliveredBeforeKill);

    await setConnectionsAllowed(database, false);
    try {
      const down = await fetch(`${base}/readyz`);
      expect(down.status).toBe(503);
      expect(await down.json()).toMatchObject({
        status: 'not_ready',
        checks: { database: { status: 'down' } },
      });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await setConnectionsAllowed(database, true);
    }
    await eventually(
      async () => (await fetch(`${base}/readyz`)).status,
      (status) => status === 200,
    );
    // both rode out the cut (their LISTEN connection included) and still run
    for (const service of [restarted, joined]) {
      expect(service.child.exitCode).toBeNull();
      expect(service.output()).not.toMatch(/uncaught|Release called on client/i);
    }
  });

  it('shares the work between two dispatchers, each attempt made once', async () => {
    // 200 x 30 ms over 15 slots: enough work that neither can take it all before the other looks
    const { receiver, endpointId } = await receiverWithEndpoint(() => ({ status: 200, delayMs: 30 }));
    await emitMany(200, 1000);
    await allDelivered(endpointId, 200);

    const deliveryIds = receiver.deliveries.map((delivery) => delivery.headers['x-service-delivery']);
    expect(deliveryIds).toHaveLength(200);
    expect(new Set(deliveryIds).size).toBe(200);
    const { rows } = await database.db.query<{ attempts: number; firsts: number }>(
      `SELECT count(*) AS attempts, count(*) FILTER (WHERE a.attempt = 1) AS firsts
       FROM webhook_attempts a JOIN webhook_events e ON e.id = a.webhook_event_id WHERE e.endpoint_id = $1`,
      [endpointId],
    );
    expect(rows[0]).toEqual({ attempts: 200, firsts: 200 });

    // the log of each: which deliveries it made (complete once it exited)
    expect(await restarted.stop()).toBe(0);
    const deliveredBy = (process: DispatcherProcess) =>
      process
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"webhook delivered"') && line.includes(endpointId)).length;
    const byRestarted = deliveredBy(restarted);
    await eventually(
      async () => deliveredBy(joined),
      (count) => count + byRestarted >= 200,
    );
    expect(byRestarted).toBeGreaterThan(0);
    expect(deliveredBy(joined)).toBeGreaterThan(0);
    expect(byRestarted + deliveredBy(joined)).toBe(200);
  });

  it('on SIGTERM stops claiming, finishes the attempt in flight, records it and exits 0', async () => {
    const { receiver, endpointId } = await receiverWithEndpoint(() => ({ status: 200, delayMs: 1200 }));
    await emitMany(1, 3000);
    await receiver.waitFor(1);

    const signalled = Date.now();
    const exited = joined.stop();
    // The signal reaches the process asynchronously: the event below is emitted once it has
    // stopped claiming, else a loaded machine may let it claim first.
    await eventually(
      async () => joined.output(),
      (output) => output.includes('stopping: no new claims'),
    );
    await emitMany(1, 3001);
    expect(await exited).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(700);

    const events = await storedEvents(database.db, endpointId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ status: 'SUCCESS', attempts: 1, last_response_code: 200 });
    expect(receiver.deliveries).toHaveLength(1);
    expect(joined.output()).toMatch(/"msg":"dispatcher stopped"/);
    const { rows } = await database.db.query<{ pending: number }>(
      'SELECT count(*) AS pending FROM outbox WHERE processed_at IS NULL',
    );
    expect(rows[0]!.pending).toBe(1);
  });
});
