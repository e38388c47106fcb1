import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setCreditTopUp } from '../../libs/billing/index.js';
import {
  alertPolicy,
  createAlert,
  draftPolicy,
  type TouchedSubscription,
  topUpPolicy,
  UsageGuardrails,
} from '../../libs/guardrails/index.js';
import { PostgresUsageSink, type UsageEventRecord, type UsageReadStores } from '../../libs/usage/index.js';
import { basicCatalog, customerIn, outbox, subscribe } from '../billing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { readStoresOver, setSinkWatermark } from '../helpers/read-stores.js';
import { runLogger } from '../helpers/run-log.js';
import { uniqueName } from '../helpers/services.js';
import { eventually, meteredSubscriptionThisMonth, usageEventRecord } from './support.js';

/*
 * The sinks' guardrails skip the usage of items no policy watches (libs/guardrails/
 * interest.ts): no wait for the read-back, no read. The watched items are loaded again every
 * reloadMs, and an item that became watched is evaluated at that load, usage or not. Driven as
 * the sinks process drives it: each batch to Postgres first (the pg-sink), then to the group.
 */

let database: TestDatabase;
let org: TestOrg;
const RELOAD_MS = 300;

beforeAll(async () => {
  database = await createTestDatabase('guardrails_interest');
  org = await createTestOrg(database.db);
});
afterAll(async () => {
  await database?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The read-back: embedded (as_of now), or distributed (as_of the pg-sink's watermark of `topic`). */
const readStores = (topic?: string) => readStoresOver(database.db, topic);
const setWatermark = (topic: string, coveredUntil: Date) =>
  setSinkWatermark(database.db, topic, coveredUntil);

/** The sinks' policies: all but usage_quantity alerts, skipping what none of them watches. */
function evaluator(stores: UsageReadStores, sweepMs?: number) {
  const db = database.db;
  const guardrails = new UsageGuardrails({
    db,
    log: runLogger('guardrails-interest'),
    policies: [topUpPolicy(db), alertPolicy(db, { metrics: 'others' }), draftPolicy(db)],
    reloadMs: RELOAD_MS,
    ...(sweepMs ? { sweepMs } : {}),
  });
  guardrails.attach(stores);
  const sink = guardrails.sink('evaluated');
  return {
    guardrails,
    /** Counted (Postgres), then handed to the group, which resolves once it ran over them. */
    async hand(events: UsageEventRecord[]) {
      await new PostgresUsageSink(db).write(events);
      await sink.write(events);
    },
  };
}

/**
 * Guardrails whose one policy records what each evaluation is handed, every subscription watched;
 * each evaluation waits for `gate` once it recorded.
 */
function recordingGuardrails(timing: { reloadMs: number; sweepMs?: number }, gate?: Promise<void>) {
  const evaluations: TouchedSubscription[][] = [];
  const guardrails = new UsageGuardrails({
    db: database.db,
    log: runLogger('guardrails-interest'),
    policies: [
      {
        name: 'recorder',
        watches: 'SELECT org_id, id FROM subscriptions',
        async evaluate(touched) {
          evaluations.push(touched.map((t) => ({ ...t })));
          await gate;
        },
      },
    ],
    ...timing,
  });
  return { guardrails, evaluations };
}

/** A customer with one metered item at 1.00 a call, in a running month. */
async function meteredItem() {
  const db = database.db;
  const { customerId, subscription } = await meteredSubscriptionThisMonth(db, org.orgId);
  const item = subscription.items[0]!.id;
  const event = (quantity: string) => usageEventRecord(org.orgId, item, quantity);
  return { customerId, subscriptionId: subscription.id, item, event };
}

async function topUpGrants(customerId: number): Promise<number> {
  const { rows } = await database.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM credit_grants WHERE org_id = $1 AND customer_id = $2 AND source = 'top_up'`,
    [org.orgId, customerId],
  );
  return rows[0]!.n;
}

describe('the guardrails skip what no policy watches', () => {
  it('an unwatched item neither waits for the read-back nor is read; a watched one waits', async () => {
    const topic = uniqueName('usage');
    const stores = readStores(topic);
    // the watermark ahead while the load that finds the alert evaluates it: it does not wait
    // (not too far: a reading older than the one the alert holds is not written)
    await setWatermark(topic, new Date(Date.now() + 2000));
    const { guardrails, hand } = evaluator(stores);
    try {
      const unwatched = await meteredItem();
      const watched = await meteredItem();
      await createAlert(database.db, stores, org.orgId, {
        subscription_id: watched.subscriptionId,
        metric: 'usage_amount',
        threshold: '1000',
      });
      await sleep(2 * RELOAD_MS);
      // then the pg-sink's watermark far behind: a batch that waits for it waits
      await setWatermark(topic, new Date(Date.now() - 3_600_000));
      const started = Date.now();
      await hand([unwatched.event('5')]);
      // the wait for the watermark is 5 s at most
      expect(Date.now() - started).toBeLessThan(1000);

      let done = false;
      const waiting = hand([watched.event('5')]).then(() => {
        done = true;
      });
      await sleep(1000);
      expect(done).toBe(false);
      await setWatermark(topic, new Date(Date.now() + 60_000));
      await waiting;
      const { rows } = await database.db.query<{ value: string }>(
        'SELECT value::text FROM alerts WHERE org_id = $1 AND subscription_id = $2',
        [org.orgId, watched.subscriptionId],
      );
      expect(rows[0]!.value).toBe('5.00000000');
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });

  it('reads a subscription the load finds watched once the read-back counts what was recorded before', async () => {
    const topic = uniqueName('usage');
    const stores = readStores(topic);
    await setWatermark(topic, new Date(Date.now() - 3_600_000));
    const { guardrails } = evaluator(stores);
    try {
      const { subscriptionId, event } = await meteredItem();
      // recorded (answered 201) before the alert, not yet written by the pg-sink: read 0 at creation
      const crossing = event('5');
      const alert = await createAlert(database.db, stores, org.orgId, {
        subscription_id: subscriptionId,
        metric: 'usage_amount',
        threshold: '3',
      });
      expect(alert.status).toBe('OK');
      // the next load finds the subscription watched; its reading waits for the watermark
      await sleep(3 * RELOAD_MS);
      await new PostgresUsageSink(database.db).write([crossing]);
      await setWatermark(topic, new Date(Date.now() + 1000));
      const fired = async () =>
        (await outbox(database.db, org.orgId, 'alert.triggered')).filter((e) => e.data.id === alert.id)
          .length;
      await eventually(async () => expect(await fired()).toBe(1), 4000);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });

  it('a customer whose top-up is configured after its usage was skipped is topped up at the next load', async () => {
    const stores = readStores();
    const { guardrails, hand } = evaluator(stores);
    try {
      // a customer without a subscription first: the customer's id is not its subscription's
      await customerIn(database.db, org.orgId);
      const { customerId, subscriptionId, event } = await meteredItem();
      expect(customerId).not.toBe(subscriptionId);
      await sleep(2 * RELOAD_MS);
      // nothing watches it yet: 5 calls, projected -5.25, skipped
      await hand([event('5')]);
      await sleep(2 * RELOAD_MS);
      expect(await topUpGrants(customerId)).toBe(0);
      // configured without a check (the library call): only the evaluator can make the top-up,
      // and no usage comes after: the load that finds the customer watched evaluates it
      await setCreditTopUp(database.db, org.orgId, customerId, {
        enabled: true,
        threshold: '10',
        target: '100',
      });
      await eventually(async () => expect(await topUpGrants(customerId)).toBe(1), 4 * RELOAD_MS + 2000);
      // watched now: more usage is evaluated as it comes, and one top-up waiting is enough
      await hand([event('3')]);
      await sleep(2 * RELOAD_MS);
      expect(await topUpGrants(customerId)).toBe(1);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });

  it('an amount alert armed on an unwatched subscription fires once on a crossing handed before the load', async () => {
    const stores = readStores();
    const { guardrails, hand } = evaluator(stores);
    try {
      const { subscriptionId, event } = await meteredItem();
      await sleep(2 * RELOAD_MS);
      const alert = await createAlert(database.db, stores, org.orgId, {
        subscription_id: subscriptionId,
        metric: 'usage_amount',
        threshold: '3',
      });
      expect(alert.status).toBe('OK');
      // handed at once, most likely before a load watches the subscription: then skipped, and
      // read by the load that finds it
      await hand([event('5')]);
      const fired = async () =>
        (await outbox(database.db, org.orgId, 'alert.triggered')).filter((e) => e.data.id === alert.id)
          .length;
      await eventually(async () => expect(await fired()).toBe(1), 4 * RELOAD_MS + 2000);
      await hand([event('1')]);
      await sleep(2 * RELOAD_MS);
      expect(await fired()).toBe(1);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });

  it('a credit alert watches every subscription of its customer: usage on another one fires it', async () => {
    const stores = readStores();
    const { guardrails, hand } = evaluator(stores);
    try {
      const { customerId, subscriptionId } = await meteredItem();
      // the customer's second subscription, with no alert of its own
      const { apiCalls } = await basicCatalog(database.db, org.orgId);
      const now = new Date();
      const other = await subscribe(
        database.db,
        org.orgId,
        {
          customer_id: customerId,
          items: [{ product_id: apiCalls }],
          start_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
        },
        now,
      );
      const otherItem = other.items[0]!.id;
      // nothing upcoming, no credit: projected 0, not below a threshold of 0
      const alert = await createAlert(database.db, stores, org.orgId, {
        subscription_id: subscriptionId,
        metric: 'credit_balance',
        threshold: '0',
      });
      expect(alert).toMatchObject({ status: 'OK', value: '0.00000000' });
      await sleep(2 * RELOAD_MS);
      // 5 calls on the other subscription: 5.00 + GST 0.25 upcoming, projected -5.25
      await hand([usageEventRecord(org.orgId, otherItem, '5')]);
      const fired = async () =>
        (await outbox(database.db, org.orgId, 'alert.triggered')).filter((e) => e.data.id === alert.id);
      const [event] = await eventually(
        async () => {
          const events = await fired();
          expect(events).toHaveLength(1);
          return events;
        },
        4 * RELOAD_MS + 2000,
      );
      expect(event!.data).toMatchObject({ status: 'TRIGGERED', value: '-5.25000000' });
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });

  it('sweeps every watched item: usage another process was handed and never ran is evaluated', async () => {
    const stores = readStores();
    const { guardrails } = evaluator(stores, 4 * RELOAD_MS);
    try {
      const { subscriptionId, event } = await meteredItem();
      const alert = await createAlert(database.db, stores, org.orgId, {
        subscription_id: subscriptionId,
        metric: 'usage_amount',
        threshold: '3',
      });
      // watched, and evaluated once by the load that found it, with nothing counted
      await sleep(3 * RELOAD_MS);
      // counted, and handed to a process that died before its policies ran: never to this one
      await new PostgresUsageSink(database.db).write([event('5')]);
      const fired = async () =>
        (await outbox(database.db, org.orgId, 'alert.triggered')).filter((e) => e.data.id === alert.id)
          .length;
      await eventually(async () => expect(await fired()).toBe(1), 8 * RELOAD_MS + 2000);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });
});

describe('a watched subscription whose item a batch voids', () => {
  it('is handed voided whether the void comes before or after an event of the item', async () => {
    const stores = readStores();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // the first load's evaluation holds: everything handed meanwhile is the next batch
    const { guardrails, evaluations } = recordingGuardrails({ reloadMs: 600_000 }, held);
    const pgSink = new PostgresUsageSink(database.db);
    const voidFirst = await meteredItem();
    const eventFirst = await meteredItem();
    /** An event of the item, counted, and voided (its row too): the void as the log carries it. */
    const voidOf = async (item: Awaited<ReturnType<typeof meteredItem>>) => {
      const counted = item.event('5');
      await pgSink.write([counted]);
      const voids = [{ event: counted, voidedAtMs: Date.now() }];
      await pgSink.writeVoids(voids);
      return voids;
    };
    const [firstVoids, laterVoids] = [await voidOf(voidFirst), await voidOf(eventFirst)];
    guardrails.attach(stores);
    const sink = guardrails.sink('queued');
    try {
      await eventually(async () => expect(evaluations).toHaveLength(1), 5000);
      await sink.writeVoids(firstVoids);
      const events = [voidFirst.event('1'), eventFirst.event('1')];
      await pgSink.write(events);
      await sink.write(events);
      await sink.writeVoids(laterVoids);
      release();
      await eventually(async () => expect(evaluations).toHaveLength(2), 5000);
      const mine = [voidFirst, eventFirst].map((item) =>
        evaluations[1]!.find((t) => t.subscriptionId === item.subscriptionId),
      );
      expect(mine).toEqual([
        {
          orgId: org.orgId,
          customerId: voidFirst.customerId,
          subscriptionId: voidFirst.subscriptionId,
          voided: true,
        },
        {
          orgId: org.orgId,
          customerId: eventFirst.customerId,
          subscriptionId: eventFirst.subscriptionId,
          voided: true,
        },
      ]);
    } finally {
      release();
      await guardrails.stop();
      await stores.close();
    }
  });
});

describe('the loads of the watched items', () => {
  it('evaluate an item once, at the load that finds it watched, not again at each load or before the sweep', async () => {
    const stores = readStores();
    const { guardrails, evaluations } = recordingGuardrails({ reloadMs: 100, sweepMs: 600_000 });
    try {
      await meteredItem();
      guardrails.attach(stores);
      // the first load finds every item watched, and evaluates each
      await eventually(async () => expect(evaluations).toHaveLength(1), 5000);
      const { subscriptionId } = await meteredItem();
      // the next load finds the new one, and evaluates it alone
      await eventually(async () => expect(evaluations).toHaveLength(2), 5000);
      expect(evaluations[1]!.map((t) => t.subscriptionId)).toEqual([subscriptionId]);
      // ten loads more, no usage, the sweep far off: nothing to evaluate
      await sleep(1000);
      expect(evaluations).toHaveLength(2);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });
});
