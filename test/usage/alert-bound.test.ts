import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alertPolicy,
  createAlert,
  evaluateAlerts,
  QuantityAlerts,
  type TouchedSubscription,
  UsageGuardrails,
} from '../../libs/guardrails/index.js';
import { alertReads } from '../../libs/observability/index.js';
import {
  PostgresUsageSink,
  type UsageEventRecord,
  type UsageReadStores,
  type UsageSink,
} from '../../libs/usage/index.js';
import { basicCatalog, customerIn, outbox, subscribe } from '../billing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { readStoresOver, setSinkWatermark } from '../helpers/read-stores.js';
import { runLogger } from '../helpers/run-log.js';
import { uniqueName } from '../helpers/services.js';
import { eventually, meteredSubscriptionThisMonth, usageEventRecord } from './support.js';

/*
 * The alert policy reads a usage_quantity alert only when its bound (last reading plus what the
 * process read on the log since that reading's as_of, less the settle time) reaches the threshold
 * (libs/guardrails/alert-policy.ts). Driven here as the sinks process drives it: each batch goes
 * to Postgres first (the pg-sink), then to the guardrails' sink; the read-back is the embedded one.
 */

let database: TestDatabase;
let stores: UsageReadStores;
let org: TestOrg;
const SETTLE_MS = 2500;

beforeAll(async () => {
  database = await createTestDatabase('alert_bound');
  stores = readStoresOver(database.db);
  org = await createTestOrg(database.db);
});
afterAll(async () => {
  await stores?.close();
  await database?.drop();
});

/** The distributed read-back: as_of is the pg-sink's watermark of `topic` (a topic of the test's own). */
const distributedStores = (topic: string) => readStoresOver(database.db, topic);
const setWatermark = (topic: string, coveredUntil: Date) =>
  setSinkWatermark(database.db, topic, coveredUntil);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** billing_alert_reads_total of `reason` in this process. */
const reads = async (reason: 'suspect' | 'refresh' | 'settle') =>
  (await alertReads.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;

/** Counted in Postgres (as the pg-sink would), then handed to a sink of the alerts group. */
async function countedThenHanded(sink: UsageSink, events: UsageEventRecord[]): Promise<void> {
  await new PostgresUsageSink(database.db).write(events);
  await sink.write(events);
}

/** A guardrails evaluator with only the alert policy, as the embedded mode runs it. */
function evaluator(readStores = stores) {
  const guardrails = new UsageGuardrails({
    db: database.db,
    log: runLogger('alert-bound'),
    policies: [alertPolicy(database.db, { settleMs: SETTLE_MS })],
  });
  guardrails.attach(readStores);
  const sink = guardrails.sink('evaluated');
  return {
    guardrails,
    /** Handed to the evaluator only (the pg-sink, another consumer group, may not have it yet). */
    sink,
    /** Counted (Postgres), then handed to the evaluator, which resolves once it ran over them. */
    async hand(events: UsageEventRecord[]) {
      await new PostgresUsageSink(database.db).write(events);
      await sink.write(events);
    },
  };
}

/**
 * The sinks' `alerts` group (quantity-alerts.ts), its runner replaced by direct writes. It loads
 * every armed alert of the database and reads the OK ones at its first load: the earlier tests'
 * alerts are removed first, so that only the alert under test is read.
 */
async function quantityAlerts(
  readStores: UsageReadStores,
  options: { keep?: string; reloadMs?: number; refreshMs?: number; finalWaitMs?: number } = {},
): Promise<QuantityAlerts> {
  await database.db.query('DELETE FROM alerts WHERE id IS DISTINCT FROM $1', [options.keep ?? null]);
  const alerts = new QuantityAlerts({
    db: database.db,
    log: runLogger('alert-bound'),
    settleMs: SETTLE_MS,
    reloadMs: options.reloadMs,
    refreshMs: options.refreshMs,
    finalWaitMs: options.finalWaitMs,
  });
  alerts.attach(readStores);
  return alerts;
}

async function alertedItem(threshold: string, readStores = stores) {
  const db = database.db;
  const { subscription } = await meteredSubscriptionThisMonth(db, org.orgId);
  const item = subscription.items[0]!.id;
  const alert = await createAlert(db, readStores, org.orgId, {
    subscription_id: subscription.id,
    metric: 'usage_quantity',
    subscription_item_id: item,
    threshold,
  });
  const event = (quantity: string, recordedAtMs = Date.now()) =>
    usageEventRecord(org.orgId, item, quantity, recordedAtMs);
  const state = async () => {
    const { rows } = await db.query<{ status: string; value: string }>(
      'SELECT status, value::text FROM alerts WHERE id = $1',
      [alert.id],
    );
    return rows[0]!;
  };
  const triggered = async () =>
    (await outbox(db, org.orgId, 'alert.triggered')).filter((e) => e.data.id === alert.id).length;
  return { alert, event, state, triggered };
}

/**
 * An alert at 100 read by a read-back whose pg-sink watermark lags a minute (until the test moves
 * it): armed before a group starts, its reading (as_of a minute ago) is older than the process, and
 * no reading counts what came since.
 */
async function alertOnLaggingReadBack() {
  const topic = uniqueName('alerts_topic');
  const readStores = distributedStores(topic);
  await setWatermark(topic, new Date(Date.now() - 60_000));
  return { topic, readStores, ...(await alertedItem('100', readStores)) };
}

describe('usage_quantity alerts read only near their threshold', () => {
  it('skips the read while the bound is below the threshold, and reads and fires at the threshold itself', async () => {
    const { guardrails, hand } = evaluator();
    try {
      // the reading the bound rests on must postdate this process's start by the settle time
      await sleep(SETTLE_MS + 50);
      const { event, state, triggered } = await alertedItem('100');
      await hand([event('59.99999999')]);
      // skipped: the row still holds the reading made at creation
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      await hand([event('40.00000001')]); // exactly 100: the threshold reached
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
      await hand([event('1')]); // TRIGGERED in its period: nothing more to read or emit
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await guardrails.stop();
    }
  });

  it('a bound one 1e-8 short of the threshold is read all the same: a reading is rounded to 1e-8', async () => {
    const { guardrails, hand } = evaluator();
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state, triggered } = await alertedItem('100');
      // bound 0 + 99.99999999: within the reading's rounding of 100, so it is read (below: OK)
      await hand([event('99.99999999')]);
      expect(await state()).toMatchObject({ status: 'OK', value: '99.99999999' });
      expect(await triggered()).toBe(0);
    } finally {
      await guardrails.stop();
    }
  });

  it('counts an event recorded before the reading but not counted by it (the settle window)', async () => {
    const { guardrails, hand } = evaluator();
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state, triggered } = await alertedItem('100');
      const readAt = Date.now();
      // recorded before the reading's as_of, answered (and counted) after it: the bound must hold it
      await hand([event('60', readAt - 2000)]);
      expect((await state()).status).toBe('OK');
      await hand([event('40')]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await guardrails.stop();
    }
  });

  it('a new evaluator process reads what a reading from before its start cannot bound', async () => {
    const first = evaluator();
    await sleep(SETTLE_MS + 50);
    const { event, state, triggered } = await alertedItem('100');
    try {
      await first.hand([event('60')]); // read and committed by the first process, skipped
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
    } finally {
      await first.guardrails.stop();
    }
    // the next process never sees the 60: its own bound would be 40, but the reading predates it
    const second = evaluator();
    try {
      await second.hand([event('40')]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await second.guardrails.stop();
    }
  });

  it('a void reads the alert at once, and resolves it once', async () => {
    const { guardrails, hand } = evaluator();
    try {
      await sleep(SETTLE_MS + 50);
      const { alert, event, state } = await alertedItem('100');
      const crossing = event('100');
      await hand([crossing]);
      expect((await state()).status).toBe('TRIGGERED');
      // as the pg-sink voids it (the daily totals lose it), then the guardrails read the void
      const voids = [{ event: crossing, voidedAtMs: Date.now() }];
      await new PostgresUsageSink(database.db).writeVoids(voids);
      await guardrails.sink('evaluated').writeVoids(voids);
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      const resolved = await outbox(database.db, org.orgId, 'alert.resolved');
      expect(resolved.filter((e) => e.data.id === alert.id)).toHaveLength(1);
    } finally {
      await guardrails.stop();
    }
  });

  it('a reading older than refreshMs is read again by the next batch of its item, below its threshold', async () => {
    const refreshMs = 1000;
    const guardrails = new UsageGuardrails({
      db: database.db,
      log: runLogger('alert-bound'),
      policies: [alertPolicy(database.db, { settleMs: SETTLE_MS, refreshMs })],
    });
    guardrails.attach(stores);
    const sink = guardrails.sink('evaluated');
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state } = await alertedItem('100');
      // the reading made at creation grows stale: the next usage of the item refreshes it at once
      // (bound 10, far below 100: without the staleness it would wait for the sweep)
      await sleep(refreshMs + 100);
      const moved = event('10');
      await countedThenHanded(sink, [moved]);
      expect(await state()).toMatchObject({ status: 'OK', value: '10.00000000' });
      // so is a TRIGGERED one's: its period's usage still moves its value
      await countedThenHanded(sink, [event('90')]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      await sleep(refreshMs + 100);
      await countedThenHanded(sink, [event('5')]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '105.00000000' });
    } finally {
      await guardrails.stop();
    }
  });

  it('a suspect read at its value unchanged lets its batch go at once: the fresher as_of is written', async () => {
    const { guardrails, hand } = evaluator();
    try {
      await sleep(SETTLE_MS + 50);
      const { alert, event, state, triggered } = await alertedItem('100');
      const counted = event('60');
      await hand([counted]); // bound 60: skipped
      await evaluateAlerts(database.db, stores, { alertIds: [alert.id] }); // read: 60
      expect(await state()).toMatchObject({ status: 'OK', value: '60.00000000' });
      // the log redelivers it: the bound over-counts (60 + 60 + 60), the read finds 60 again; its
      // as_of, past the moment the batch was handed, settles it (else the batch waits 10 s)
      const started = Date.now();
      await guardrails.sink('evaluated').write([counted]);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await state()).toMatchObject({ status: 'OK', value: '60.00000000' });
      expect(await triggered()).toBe(0);
    } finally {
      await guardrails.stop();
    }
  });

  it('a skipped alert no batch read again is swept after refreshMs, its value brought up to date', async () => {
    const guardrails = new UsageGuardrails({
      db: database.db,
      log: runLogger('alert-bound'),
      // long enough that a loaded machine still sees the skip before the sweep
      policies: [alertPolicy(database.db, { settleMs: SETTLE_MS, refreshMs: 1000 })],
    });
    guardrails.attach(stores);
    const sink = guardrails.sink('evaluated');
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state } = await alertedItem('100');
      const skipped = event('60');
      await countedThenHanded(sink, [skipped]); // bound 60, a fresh reading: skipped
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      // no further usage: the sweep reads it, at the latest 1.5 refreshMs after it was skipped
      await eventually(async () => expect(await state()).toMatchObject({ value: '60.00000000' }), 3000);
      expect((await state()).status).toBe('OK');
    } finally {
      await guardrails.stop();
    }
  });

  it('alerts group: a crossing handed before the pg-sink wrote it is read again until it fires, in its batch', async () => {
    // the watermark lags a minute: the alerts group must not wait for it
    const { readStores, alert, event, state, triggered } = await alertOnLaggingReadBack();
    const alerts = await quantityAlerts(readStores, { keep: alert.id });
    const sink = alerts.sink();
    try {
      const crossing = event('100');
      const started = Date.now();
      const batch = sink.write([crossing]);
      await sleep(400);
      // not done: its crossing is not found yet (committing its offsets now would lose it)
      expect(await Promise.race([batch.then(() => 'done'), sleep(0).then(() => 'pending')])).toBe('pending');
      await new PostgresUsageSink(database.db).write([crossing]); // the pg-sink writes it, late
      await batch;
      expect(Date.now() - started).toBeLessThan(5000); // well before the watermark would have passed
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
      await readStores.close();
    }
  });

  it('alerts group: an alert a load reads while no batch comes is read again until a reading counts up to the load', async () => {
    // the watermark lags a minute: no reading counts up to the load
    const { readStores, alert, event, state, triggered } = await alertOnLaggingReadBack();
    // no batch at all: the idle reload loads the alert and reads it (0)
    const alerts = await quantityAlerts(readStores, { keep: alert.id, reloadMs: 200 });
    try {
      await sleep(600);
      // a crossing recorded before that load, handed to another member of the group, is written
      // by the pg-sink only after the load's first reading
      await new PostgresUsageSink(database.db).write([event('100')]);
      await eventually(async () => expect((await state()).status).toBe('TRIGGERED'), 3000);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
      await readStores.close();
    }
  });

  it('alerts group: a suspect that does not cross holds its batch until a reading counts it', async () => {
    const { topic, readStores, alert, event, state, triggered } = await alertOnLaggingReadBack();
    // a final wait far longer than the test's: only a reading that counts the event lets the batch go
    const alerts = await quantityAlerts(readStores, { keep: alert.id, finalWaitMs: 60_000 });
    const sink = alerts.sink();
    try {
      const near = event('99.99999999');
      await new PostgresUsageSink(database.db).write([near]);
      const settlesBefore = await reads('settle');
      const batch = sink.write([near]);
      await sleep(500);
      // read (99.99999999, below), but by a reading whose as_of is before the event was handed
      expect(await Promise.race([batch.then(() => 'done'), sleep(0).then(() => 'pending')])).toBe('pending');
      // read again while it waits (billing_alert_reads_total), however slow the readings are
      await eventually(async () => expect((await reads('settle')) - settlesBefore).toBeGreaterThan(0), 5000);
      expect(await Promise.race([batch.then(() => 'done'), sleep(0).then(() => 'pending')])).toBe('pending');
      await setWatermark(topic, new Date());
      // that reading settles it at once, not the final wait
      expect(await Promise.race([batch.then(() => 'done'), sleep(20_000).then(() => 'still waiting')])).toBe(
        'done',
      );
      expect(await state()).toMatchObject({ status: 'OK', value: '99.99999999' });
      expect(await triggered()).toBe(0);
    } finally {
      await alerts.stop();
      await readStores.close();
    }
  });

  it('alerts group: a crossing the pg-sink writes after its batch stopped waiting is read at each reload until it fires', async () => {
    // the watermark lags a minute, and stays there
    const { readStores, alert, event, state, triggered } = await alertOnLaggingReadBack();
    // refreshMs far off: only the reads of the unsettled alert can find the crossing
    const alerts = await quantityAlerts(readStores, {
      keep: alert.id,
      reloadMs: 100,
      refreshMs: 600_000,
      finalWaitMs: 300,
    });
    const sink = alerts.sink();
    try {
      const crossing = event('100');
      await sink.write([crossing]); // gives up on a reading after 300 ms: its offsets may go
      expect(await state()).toMatchObject({ status: 'OK' });
      await sleep(1000); // ten reloads: the alert is read at each, and stays OK
      expect(await state()).toMatchObject({ status: 'OK' });
      await new PostgresUsageSink(database.db).write([crossing]); // the pg-sink writes it, late
      await eventually(async () => expect(await state()).toMatchObject({ status: 'TRIGGERED' }), 5000);
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
      await readStores.close();
    }
  });

  it('alerts group: a suspect whose new reading bounds it below its threshold lets its batch go before the watermark', async () => {
    const { topic, readStores, alert, event, state, triggered } = await alertOnLaggingReadBack();
    const alerts = await quantityAlerts(readStores, { keep: alert.id, reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      // the process has read the whole log for longer than the settle time; the watermark lags a
      // little, so no reading's as_of reaches the moment the batch is handed
      await sleep(SETTLE_MS + 100);
      await setWatermark(topic, new Date(Date.now() - 50));
      const small = event('10');
      await new PostgresUsageSink(database.db).write([small]);
      const [suspectsBefore, settlesBefore] = [await reads('suspect'), await reads('settle')];
      const batch = sink.write([small]);
      // read once (10 at a fresh as_of): 10 + the 10 read since is below 100, so nothing handed
      // can have crossed; waiting for the watermark would hold it FINAL_WAIT_MS (10 s)
      expect(await Promise.race([batch.then(() => 'done'), sleep(5000).then(() => 'pending')])).toBe('done');
      expect(await state()).toMatchObject({ status: 'OK', value: '10.00000000' });
      // one read, none again (billing_alert_reads_total)
      expect([(await reads('suspect')) - suspectsBefore, (await reads('settle')) - settlesBefore]).toEqual([
        1, 0,
      ]);
      expect(await triggered()).toBe(0);
    } finally {
      await alerts.stop();
      await readStores.close();
    }
  });

  it('alerts group: a member told it no longer reads the whole log draws no bound, and fires on its next batch', async () => {
    // no reload but the first (a reload reads alerts changed since the last one, whatever the bound)
    const alerts = await quantityAlerts(stores, { reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state, triggered } = await alertedItem('100');
      await sink.write([]); // the first load: its reading at creation bounds it, so it is not read
      const pgSink = new PostgresUsageSink(database.db);
      const mine = event('60');
      await countedThenHanded(sink, [mine]); // bound 60: skipped, the row keeps the reading made at creation
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      // a second member joined: it takes some partitions, and reads this item's usage there
      sink.assigned?.(false);
      await pgSink.write([event('30')]);
      const next = event('10');
      await countedThenHanded(sink, [next]); // this member's bound would be 70: without the whole log, no bound
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a member given the whole log again bounds on readings made settleMs after it was told', async () => {
    // no reload but the first (a reload reads alerts changed since the last one, whatever the bound)
    const alerts = await quantityAlerts(stores, { reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      sink.assigned?.(false);
      sink.assigned?.(true); // the other member left: this one reads every partition from now on
      await sleep(SETTLE_MS + 50);
      const { event, state } = await alertedItem('100');
      await sink.write([]); // the first load: its reading at creation bounds it, so it is not read
      await countedThenHanded(sink, [event('60')]); // bound 60: skipped
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a member reading only some partitions draws no bound, even on a reading made after it was told', async () => {
    const alerts = await quantityAlerts(stores, { reloadMs: 200 });
    const sink = alerts.sink();
    try {
      const { alert, event, state, triggered } = await alertedItem('100');
      await sink.write([]); // the first load
      sink.assigned?.(false);
      // another process reads the alert well after the assignment; a reload brings that reading here
      await sleep(SETTLE_MS + 50);
      await evaluateAlerts(database.db, stores, { alertIds: [alert.id] });
      await sleep(600);
      // another member reads 60 of this item's usage on its partitions; this one is handed 40
      await new PostgresUsageSink(database.db).write([event('60')]);
      await countedThenHanded(sink, [event('40')]); // its own bound would be 40: no bound, read, and fired
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a reload reads the alerts written since the last one, and all of them each refreshMs', async () => {
    await database.db.query('DELETE FROM alerts');
    const armed = [await alertedItem('100'), await alertedItem('100'), await alertedItem('100')];
    // written long enough ago to be outside any reload's margin
    await database.db.query(`UPDATE alerts SET updated_at = now() - interval '1 minute'`);
    const reloads: number[] = [];
    const db = database.db;
    const countingDb = new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return async (...args: Parameters<typeof db.query>) => {
          const result = await (target.query as (...a: typeof args) => ReturnType<typeof db.query>)(...args);
          if (typeof args[0] === 'string' && args[0].includes("a.metric = 'usage_quantity' AND"))
            reloads.push(result.rowCount ?? 0);
          return result;
        };
      },
    });
    const alerts = new QuantityAlerts({
      db: countingDb,
      log: runLogger('alert-bound'),
      settleMs: SETTLE_MS,
      reloadMs: 100,
      refreshMs: 1500,
      changeMarginMs: 20,
    });
    alerts.attach(stores);
    const sink = alerts.sink();
    try {
      // the first load: every alert, each read (a reading older than the process); the next ones
      // have the three readings it wrote until they are older than the margin, then nothing
      await sink.write([]);
      await eventually(
        async () => expect(reloads.filter((rows) => rows === 0).length).toBeGreaterThan(2),
        5000,
      );
      expect(reloads[0]).toBe(3);
      // from then on only nothing, or the whole load of every refreshMs (a slow machine may reach it)
      const partial = (from: number) => reloads.slice(from).filter((rows) => rows !== 3);
      expect(partial(reloads.indexOf(0)).every((rows) => rows === 0)).toBe(true);
      // another process reads one: the next reload has it, and only it
      const [one] = armed;
      await new PostgresUsageSink(database.db).write([one!.event('100')]);
      const seen = reloads.length;
      await evaluateAlerts(database.db, stores, { alertIds: [one!.alert.id] });
      await eventually(async () => expect(reloads.slice(seen)).toContain(1), 5000);
      expect(partial(seen).every((rows) => rows <= 1)).toBe(true);
      // after refreshMs, a whole load again
      await eventually(async () => expect(reloads.slice(seen)).toContain(3), 5000);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: an alert armed after its crossing was read is found by the next reload, and fires', async () => {
    const alerts = await quantityAlerts(stores);
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      await sink.write([]); // the armed alerts are loaded: none of the item below yet
      const { event, state, triggered } = await alertedItem('100');
      const crossing = event('100');
      await new PostgresUsageSink(database.db).write([crossing]);
      // read before the reload: the item has no alert in memory, the batch is done at once
      await sink.write([crossing]);
      await eventually(async () => expect((await state()).status).toBe('TRIGGERED'), 10_000);
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a void of its item reads the alert once its row is voided, and resolves it once', async () => {
    // no reload but the first: only the void can make the group read the alert again
    const alerts = await quantityAlerts(stores, { reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      const { alert, event, state, triggered } = await alertedItem('100');
      await sink.write([]); // the first load
      const pgSink = new PostgresUsageSink(database.db);
      const crossing = event('100');
      await countedThenHanded(sink, [crossing]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
      // the log carries a void before the transaction that voids its row commits: the group
      // reads the alert once it has
      const voids = [{ event: crossing, voidedAtMs: Date.now() }];
      const batch = sink.writeVoids(voids);
      await sleep(300);
      await pgSink.writeVoids(voids);
      await batch;
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      const resolved = await outbox(database.db, org.orgId, 'alert.resolved');
      expect(resolved.filter((e) => e.data.id === alert.id)).toHaveLength(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a void holds its batch until a reading counts it, then resolves the alert once', async () => {
    // the watermark lags a minute: every reading's as_of is before the void is handed
    const { topic, readStores, alert, event, state } = await alertOnLaggingReadBack();
    const pgSink = new PostgresUsageSink(database.db);
    const crossing = event('100');
    await pgSink.write([crossing]);
    await evaluateAlerts(database.db, readStores, { alertIds: [alert.id] });
    expect((await state()).status).toBe('TRIGGERED');
    const alerts = await quantityAlerts(readStores, { keep: alert.id, reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      const voids = [{ event: crossing, voidedAtMs: Date.now() }];
      await pgSink.writeVoids(voids);
      const batch = sink.writeVoids(voids);
      await sleep(500);
      // read, but by a reading from before the void was handed: its offsets wait
      expect(await Promise.race([batch.then(() => 'done'), sleep(0).then(() => 'pending')])).toBe('pending');
      await setWatermark(topic, new Date());
      await batch;
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      const resolved = await outbox(database.db, org.orgId, 'alert.resolved');
      expect(resolved.filter((e) => e.data.id === alert.id)).toHaveLength(1);
    } finally {
      await alerts.stop();
      await readStores.close();
    }
  });
  it('alerts group: counts an event recorded before the reading but not counted by it (the settle window)', async () => {
    // no reload but the first (a reload reads alerts changed since the last one, whatever the bound)
    const alerts = await quantityAlerts(stores, { reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state, triggered } = await alertedItem('100');
      await sink.write([]); // the first load: its reading at creation bounds it, so it is not read
      const readAt = Date.now();
      // recorded before the reading's as_of, answered (and counted) after it: the bound must hold it
      const early = event('60', readAt - 2000);
      await countedThenHanded(sink, [early]); // bound 60: skipped
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      const next = event('40');
      await countedThenHanded(sink, [next]); // bound 100: read, and fired
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a bound 1e-8 short of the threshold is read; a TRIGGERED alert is not read again in its period', async () => {
    // no reload but the first (a reload reads alerts changed since the last one, whatever the bound)
    const alerts = await quantityAlerts(stores, { reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state, triggered } = await alertedItem('100');
      await sink.write([]); // the first load: its reading at creation bounds it, so it is not read
      // bound 0 + 99.99999999: within the reading's rounding of 100, so it is read (below: OK)
      await countedThenHanded(sink, [event('99.99999999')]);
      expect(await state()).toMatchObject({ status: 'OK', value: '99.99999999' });
      await countedThenHanded(sink, [event('1')]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.99999999' });
      // TRIGGERED in its period: only a void or a new period moves it back, so usage is not read
      await countedThenHanded(sink, [event('1')]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.99999999' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a reload finds an alert whose transaction began before the last load and committed after it', async () => {
    const alerts = await quantityAlerts(stores, { reloadMs: 1500, refreshMs: 600_000 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      await sink.write([]); // the first load, of every alert: this one is not written yet
      const { alert, event, state, triggered } = await alertedItem('100');
      // its updated_at (the transaction's start) is before that load: only the margin finds it
      await database.db.query(`UPDATE alerts SET updated_at = now() - interval '5 seconds' WHERE id = $1`, [
        alert.id,
      ]);
      await sleep(1600); // the next reload is due: it reads what was written since the last, less the margin
      const crossing = event('100');
      await countedThenHanded(sink, [crossing]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: a new member reads what a reading from before its start cannot bound', async () => {
    const { alert, event, state, triggered } = await alertedItem('100');
    const pgSink = new PostgresUsageSink(database.db);
    // read and committed by a member that is gone: the row keeps the reading made at creation
    await pgSink.write([event('60')]);
    expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
    const alerts = await quantityAlerts(stores, { keep: alert.id, reloadMs: 600_000 });
    const sink = alerts.sink();
    try {
      // its own bound would be 40, but the reading predates it: read, and fired
      const next = event('40');
      await countedThenHanded(sink, [next]);
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await alerts.stop();
    }
  });

  it('alerts group: an alert skipped longer than refreshMs is read, its value brought up to date, while batches keep skipping it', async () => {
    const alerts = await quantityAlerts(stores, { refreshMs: 1500, reloadMs: 200 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      const { event, state } = await alertedItem('100');
      // loaded by a reload since (every 200 ms): its reading at creation bounds it
      await sleep(600);
      const skipped = event('60');
      await countedThenHanded(sink, [skipped]); // bound 60: skipped
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      // usage keeps coming, each batch skipped too (the bound stays below 100): the alert is read
      // refreshMs after its first skip all the same, not refreshMs after the last
      const deadline = Date.now() + 6000;
      while ((await state()).value === '0.00000000' && Date.now() < deadline) {
        await countedThenHanded(sink, [event('0.5')]);
        await sleep(150);
      }
      expect(Number((await state()).value)).toBeGreaterThanOrEqual(60);
      expect((await state()).status).toBe('OK');
    } finally {
      await alerts.stop();
    }
  });
  it('alerts group: a skipped alert is read once refreshMs after the skip, not before, and not again', async () => {
    const refreshMs = 3000;
    const alerts = await quantityAlerts(stores, { refreshMs, reloadMs: 100 });
    const sink = alerts.sink();
    try {
      await sleep(SETTLE_MS + 50);
      const armedAt = Date.now();
      const { event, state } = await alertedItem('100');
      await sleep(300); // loaded by a reload since (skipped there: its reading at creation bounds it)
      await countedThenHanded(sink, [event('60')]); // bound 60: skipped
      const before = await reads('refresh');
      // no reload reads it before refreshMs passed since it was first skipped (after it was armed)
      await sleep(Math.max(0, armedAt + refreshMs / 2 - Date.now()));
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      // read refreshMs after the skip, by a reload
      await eventually(async () => expect(await state()).toMatchObject({ value: '60.00000000' }), 6000);
      await eventually(async () => expect(await reads('refresh')).toBeGreaterThan(before), 1000);
      const refreshed = await reads('refresh');
      // a reload every 100 ms, no usage: none reads it again before refreshMs passed since that read
      await sleep(refreshMs / 2);
      expect((await reads('refresh')) - refreshed).toBe(0);
    } finally {
      await alerts.stop();
    }
  });
  it('alerts group: an alert whose usage came before its first load is read after refreshMs all the same', async () => {
    const alerts = await quantityAlerts(stores, { refreshMs: 500, reloadMs: 1000 });
    const sink = alerts.sink();
    try {
      // the timer reloads every second: the last was under a second ago, the next is not yet due
      await sleep(SETTLE_MS + 50);
      const { event, state } = await alertedItem('100');
      const early = event('60');
      await countedThenHanded(sink, [early]); // no alert of the item in memory yet: nothing to decide
      // the next reload finds the alert new and skips it (bound 60); no event of the item follows
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      await eventually(async () => expect(await state()).toMatchObject({ value: '60.00000000' }), 6000);
      expect((await state()).status).toBe('OK');
    } finally {
      await alerts.stop();
    }
  });
});

describe('the evaluator reads usage only once the read-back counts it', () => {
  it('an amount alert handed its crossing before the pg-sink wrote it waits for the watermark, then fires', async () => {
    const topic = uniqueName('alerts_topic');
    const readStores = distributedStores(topic);
    // the watermark lags a minute: no reading counts the event below until it moves
    await setWatermark(topic, new Date(Date.now() - 60_000));
    const { subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
    const alert = await createAlert(database.db, readStores, org.orgId, {
      subscription_id: subscription.id,
      metric: 'usage_amount',
      threshold: '3',
    });
    const { guardrails, sink } = evaluator(readStores);
    try {
      const crossing = usageEventRecord(org.orgId, item, '5');
      // handed to the guardrails before the pg-sink counted it (another consumer group)
      const batch = sink.write([crossing]);
      await sleep(300);
      expect(await Promise.race([batch.then(() => 'done'), sleep(0).then(() => 'pending')])).toBe('pending');
      await new PostgresUsageSink(database.db).write([crossing]);
      await setWatermark(topic, new Date());
      await batch;
      const { rows } = await database.db.query<{ status: string; value: string }>(
        'SELECT status, value::text FROM alerts WHERE id = $1',
        [alert.id],
      );
      expect(rows[0]).toMatchObject({ status: 'TRIGGERED', value: '5.00000000' });
      const fired = (await outbox(database.db, org.orgId, 'alert.triggered')).filter(
        (e) => e.data.id === alert.id,
      );
      expect(fired).toHaveLength(1);
    } finally {
      await guardrails.stop();
      await readStores.close();
    }
  });
});

describe("a quantity crossing the read-back does not count within the evaluator's wait", () => {
  it('is read again until a reading counts it, and its batch holds until then', async () => {
    const topic = uniqueName('alerts_topic');
    const readStores = distributedStores(topic);
    // the watermark lags a minute: no reading counts the crossing until it moves
    await setWatermark(topic, new Date(Date.now() - 60_000));
    const { event, state, triggered } = await alertedItem('10', readStores);
    const { guardrails, sink } = evaluator(readStores);
    try {
      const crossing = event('12');
      const batch = sink.write([crossing]);
      // past the evaluator's own wait for the read-back (5 s): the policy read it once, uncounted
      await sleep(6000);
      expect(await Promise.race([batch.then(() => 'done'), sleep(0).then(() => 'pending')])).toBe('pending');
      expect(await state()).toMatchObject({ status: 'OK' });
      await new PostgresUsageSink(database.db).write([crossing]);
      await setWatermark(topic, new Date());
      await batch;
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '12.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await guardrails.stop();
      await readStores.close();
    }
  }, 30_000);
});

/**
 * What a recording policy is handed for one batch: a void of an event of `voidedItem`, then an
 * event of `laterItem`, both handed before the read-back is attached, so they go in one batch.
 */
async function touchedByVoidThenEvent(voidedItem: number, laterItem: number): Promise<TouchedSubscription[]> {
  const seen: TouchedSubscription[][] = [];
  const guardrails = new UsageGuardrails({
    db: database.db,
    log: runLogger('alert-bound'),
    policies: [
      {
        name: 'recorder',
        async evaluate(touched) {
          seen.push(touched.map((t) => ({ ...t })));
        },
      },
    ],
  });
  const record = (item: number, quantity: string) => usageEventRecord(org.orgId, item, quantity);
  const pgSink = new PostgresUsageSink(database.db);
  const voided = record(voidedItem, '5');
  await pgSink.write([voided]);
  const voids = [{ event: voided, voidedAtMs: Date.now() }];
  await pgSink.writeVoids(voids);
  const sink = guardrails.sink('queued');
  try {
    // the void first
    await sink.writeVoids(voids);
    const after = record(laterItem, '1');
    await countedThenHanded(sink, [after]);
    guardrails.attach(stores);
    await eventually(async () => expect(seen).toHaveLength(1), 10_000);
    return seen[0]!;
  } finally {
    await guardrails.stop();
  }
}

describe('a batch with a void and a later event of one item', () => {
  it('still marks its subscription voided: its usage may have gone down', async () => {
    const { customerId, subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
    expect(await touchedByVoidThenEvent(item, item)).toEqual([
      { orgId: org.orgId, customerId, subscriptionId: subscription.id, voided: true },
    ]);
  });
});

describe('a batch with a void of one item and an event of another item of the subscription', () => {
  it('marks the subscription voided: one voided item is enough for its usage to have gone down', async () => {
    const db = database.db;
    const { apiCalls: first } = await basicCatalog(db, org.orgId);
    const { apiCalls: second } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId, { state_province: 'AB' });
    const now = new Date();
    const subscription = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: first }, { product_id: second }],
        start_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      },
      now,
    );
    const [voidedItem, otherItem] = subscription.items.map((item) => item.id);
    expect(await touchedByVoidThenEvent(voidedItem!, otherItem!)).toEqual([
      { orgId: org.orgId, customerId, subscriptionId: subscription.id, voided: true },
    ]);
  });
});

describe('a reading older than the one an alert holds', () => {
  it('neither writes its value nor moves the alert; a fresher one does', async () => {
    // docs/decisions.md, "Alerts fire once per crossing": a stale reading never undoes a fresher one
    const topic = uniqueName('alerts_topic');
    const stale = distributedStores(topic);
    await setWatermark(topic, new Date(Date.now() - 60_000));
    try {
      // read at creation by the embedded read-back: as_of now
      const { alert, event, state, triggered } = await alertedItem('40');
      const pgSink = new PostgresUsageSink(database.db);
      await pgSink.write([event('30')]);
      // the stale read-back sees the 30, but its as_of is a minute before the reading held
      await evaluateAlerts(database.db, stale, { alertIds: [alert.id] });
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      await pgSink.write([event('20')]); // 50: crossed, as the stale read-back sees it
      expect(await evaluateAlerts(database.db, stale, { alertIds: [alert.id] })).toEqual([]);
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      expect(await triggered()).toBe(0);
      // a fresh reading applies
      await evaluateAlerts(database.db, stores, { alertIds: [alert.id] });
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '50.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      await stale.close();
    }
  });
});

describe('two evaluators reading at one as_of', () => {
  it('a later reading at the same as_of that counted more writes its value', async () => {
    // the watermark stays put: every reading below has the as_of the alert's first one has
    const topic = uniqueName('alerts_topic');
    const readStores = distributedStores(topic);
    await setWatermark(topic, new Date(Date.now() - 1000));
    try {
      const { alert, event, state, triggered } = await alertedItem('100', readStores);
      expect(await state()).toMatchObject({ status: 'OK', value: '0.00000000' });
      const pgSink = new PostgresUsageSink(database.db);
      await pgSink.write([event('30')]);
      await evaluateAlerts(database.db, readStores, { alertIds: [alert.id] });
      expect(await state()).toMatchObject({ status: 'OK', value: '30.00000000' });
      await pgSink.write([event('25')]);
      await evaluateAlerts(database.db, readStores, { alertIds: [alert.id] });
      expect(await state()).toMatchObject({ status: 'OK', value: '55.00000000' });
      expect(await triggered()).toBe(0);
    } finally {
      await readStores.close();
    }
  });

  it("the one that read less, writing last, leaves the other's crossing and value be", async () => {
    // readings at the same as_of may count different usage (the totals hold more than as_of
    // vouches for): the one that saw the crossing moves the alert; the other's reading, written
    // after, must not put its smaller value on a TRIGGERED alert
    const topic = uniqueName('alerts_topic');
    const readStores = distributedStores(topic);
    await setWatermark(topic, new Date(Date.now() - 1000));
    const { alert, event, state, triggered } = await alertedItem('100', readStores);
    const pgSink = new PostgresUsageSink(database.db);
    await pgSink.write([event('60')]);
    // the first evaluator's reading is held just before it is written
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let readingHeld: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      readingHeld = resolve;
    });
    const db = database.db;
    const holdingDb = new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return async (...args: Parameters<typeof db.query>) => {
          const sql = typeof args[0] === 'string' ? args[0] : '';
          if (sql.trimStart().startsWith('UPDATE alerts a SET value')) {
            readingHeld();
            await released;
          }
          return (target.query as (...a: typeof args) => ReturnType<typeof db.query>)(...args);
        };
      },
    });
    try {
      const first = evaluateAlerts(holdingDb, readStores, { alertIds: [alert.id] });
      await held; // it read 60
      await pgSink.write([event('40')]);
      await evaluateAlerts(db, readStores, { alertIds: [alert.id] }); // reads 100: crossed
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      release();
      await first;
      expect(await state()).toMatchObject({ status: 'TRIGGERED', value: '100.00000000' });
      expect(await triggered()).toBe(1);
    } finally {
      release();
      await readStores.close();
    }
  });
});
