import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GuardrailPolicy,
  type TouchedSubscription,
  UsageGuardrails,
} from '../../libs/guardrails/index.js';
import { PostgresUsageSink, type UsageEventRecord } from '../../libs/usage/index.js';
import { customerIn } from '../billing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { readStoresOver, setSinkWatermark } from '../helpers/read-stores.js';
import { runLogger } from '../helpers/run-log.js';
import { uniqueName } from '../helpers/services.js';
import { meteredSubscriptionThisMonth, usageEventRecord } from './support.js';

/*
 * The evaluator itself (libs/guardrails/evaluator.ts), every item watched: what a batch hands the
 * policies (each touched subscription once, with its customer, `voided` when a void of the batch
 * touched it), and when (once the read-back's as_of passes the newest event and the voids
 * committed, or after 5 s). A policy here only records what it is given.
 */

let database: TestDatabase;
let org: TestOrg;

beforeAll(async () => {
  database = await createTestDatabase('guardrails_evaluator');
  org = await createTestOrg(database.db);
  // another customer first: a customer's id is not its subscription's
  await customerIn(database.db, org.orgId);
});
afterAll(async () => {
  await database?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A policy that records each evaluation's touched subscriptions and the events it observed. */
function recorder() {
  const evaluations: TouchedSubscription[][] = [];
  const observed: string[] = [];
  const policy: GuardrailPolicy = {
    name: 'recorder',
    observe(events) {
      for (const event of events) observed.push(event.id);
    },
    async evaluate(touched) {
      evaluations.push(touched.map((subscription) => ({ ...subscription })));
    },
  };
  return { evaluations, observed, policy };
}

function evaluatorOver(policy: GuardrailPolicy) {
  return new UsageGuardrails({ db: database.db, log: runLogger('guardrails-evaluator'), policies: [policy] });
}

async function meteredItem() {
  const { customerId, subscription, item } = await meteredSubscriptionThisMonth(database.db, org.orgId);
  const event = (quantity = '1', recordedAtMs?: number): UsageEventRecord =>
    usageEventRecord(org.orgId, item, quantity, recordedAtMs);
  return { customerId, subscriptionId: subscription.id, item, event };
}

/** A void of `event` as the log carries it. */
const voidOf = (event: UsageEventRecord) => ({ event, voidedAtMs: Date.now() });

/** Marks the event's row voided, as the void's transaction does when it commits. */
async function commitVoid(event: UsageEventRecord) {
  await database.db.query('UPDATE usage_events SET voided_at = now() WHERE org_id = $1 AND id = $2', [
    event.orgId,
    event.id,
  ]);
}

/**
 * `body` with a recording evaluator attached to read-back stores (over `topic`'s watermark, if
 * given); both closed after it, whatever it did.
 */
async function withRecordingEvaluator(
  body: (run: { evaluations: TouchedSubscription[][]; guardrails: UsageGuardrails }) => Promise<void>,
  topic?: string,
) {
  const stores = readStoresOver(database.db, topic);
  const { evaluations, policy } = recorder();
  const guardrails = evaluatorOver(policy);
  guardrails.attach(stores);
  try {
    await body({ evaluations, guardrails });
  } finally {
    await guardrails.stop();
    await stores.close();
  }
}

describe('the guardrails evaluator', () => {
  it('hands each touched subscription of a batch once, with its customer, voided if any void touched it', async () => {
    const stores = readStoresOver(database.db);
    const { evaluations, observed, policy } = recorder();
    const guardrails = evaluatorOver(policy);
    try {
      const a = await meteredItem();
      const b = await meteredItem();
      expect(a.customerId).not.toBe(a.subscriptionId);
      const sink = guardrails.sink('evaluated');
      const [voided, later, other] = [a.event(), a.event(), b.event()];
      await new PostgresUsageSink(database.db).write([voided, later, other]);
      await commitVoid(voided);
      // handed before the stores are attached: one batch; the void first, then usage of the same item
      const handed = [
        sink.writeVoids([voidOf(voided)]),
        sink.write([later]),
        sink.write([other, b.event('2')]),
        // an item no subscription holds: nothing to hand for it
        sink.write([usageEventRecord(org.orgId, 2_000_000_000, '1')]),
      ];
      guardrails.attach(stores);
      await Promise.all(handed);
      expect(evaluations).toHaveLength(1);
      const byId = (x: TouchedSubscription, y: TouchedSubscription) => x.subscriptionId - y.subscriptionId;
      expect([...evaluations[0]!].sort(byId)).toEqual(
        [
          { orgId: org.orgId, customerId: a.customerId, subscriptionId: a.subscriptionId, voided: true },
          { orgId: org.orgId, customerId: b.customerId, subscriptionId: b.subscriptionId },
        ].sort(byId),
      );
      // the policies observe usage as it is handed, never its voids
      expect(observed).not.toContain(voided.id);
      expect(observed).toContain(later.id);
      expect(observed).toHaveLength(4);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });

  it('calls no policy when no touched item belongs to a subscription', async () => {
    await withRecordingEvaluator(async ({ evaluations, guardrails }) => {
      await guardrails.sink('evaluated').write([usageEventRecord(org.orgId, 2_000_000_001, '1')]);
      expect(evaluations).toEqual([]);
    });
  });

  it('waits for the read-back to count the newest event handed, and not for one it counts already', async () => {
    const topic = uniqueName('usage');
    await withRecordingEvaluator(async ({ evaluations, guardrails }) => {
      const item = await meteredItem();
      const recordedAtMs = Date.now();
      await setSinkWatermark(database.db, topic, new Date(recordedAtMs - 60_000));
      const sink = guardrails.sink('evaluated');
      // the newest event of the batch is the first handed: the wait is for it
      let done = false;
      const newest = sink
        .write([item.event('1', recordedAtMs), item.event('1', recordedAtMs - 120_000)])
        .then(() => {
          done = true;
        });
      await sleep(600);
      expect(done).toBe(false);
      expect(evaluations).toEqual([]);
      await setSinkWatermark(database.db, topic, new Date(recordedAtMs));
      await newest;
      expect(evaluations).toHaveLength(1);
      // counted already: evaluated without waiting, void or none
      const started = Date.now();
      await sink.write([item.event('1', recordedAtMs - 1000)]);
      const counted = item.event('1', recordedAtMs - 1000);
      await new PostgresUsageSink(database.db).write([counted]);
      await commitVoid(counted);
      await sink.writeVoids([voidOf(counted)]);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(evaluations).toHaveLength(3);
    }, topic);
  });

  it('waits for a void until the transaction that voids its row committed', async () => {
    await withRecordingEvaluator(async ({ evaluations, guardrails }) => {
      const item = await meteredItem();
      const event = item.event();
      await new PostgresUsageSink(database.db).write([event]);
      let done = false;
      const voiding = guardrails
        .sink('evaluated')
        .writeVoids([voidOf(event)])
        .then(() => {
          done = true;
        });
      await sleep(600);
      expect(done).toBe(false);
      await commitVoid(event);
      await voiding;
      expect(evaluations).toEqual([
        [
          {
            orgId: org.orgId,
            customerId: item.customerId,
            subscriptionId: item.subscriptionId,
            voided: true,
          },
        ],
      ]);
    });
  });

  it('goes on after 5 s when the read-back never counts what it was handed', async () => {
    const topic = uniqueName('usage');
    await withRecordingEvaluator(async ({ evaluations, guardrails }) => {
      const item = await meteredItem();
      await setSinkWatermark(database.db, topic, new Date(Date.now() - 3_600_000));
      const started = Date.now();
      await guardrails.sink('evaluated').write([item.event()]);
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(4900);
      expect(waited).toBeLessThan(7000);
      expect(evaluations).toHaveLength(1);
    }, topic);
  }, 15_000);

  it('once stopped, takes no more usage: a write resolves at once and evaluates nothing', async () => {
    const topic = uniqueName('usage');
    const stores = readStoresOver(database.db, topic);
    const { evaluations, observed, policy } = recorder();
    const guardrails = evaluatorOver(policy);
    guardrails.attach(stores);
    try {
      const item = await meteredItem();
      await setSinkWatermark(database.db, topic, new Date(Date.now() - 3_600_000));
      await guardrails.stop();
      const started = Date.now();
      await guardrails.sink('evaluated').write([item.event()]);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(evaluations).toEqual([]);
      expect(observed).toEqual([]);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });
  it('skips no item while one policy does not say what it watches, even when the others watch nothing', async () => {
    const stores = readStoresOver(database.db);
    const { evaluations, policy } = recorder();
    const guardrails = new UsageGuardrails({
      db: database.db,
      log: runLogger('guardrails-evaluator'),
      policies: [
        {
          name: 'watches nothing',
          watches: 'SELECT org_id, id AS subscription_id FROM subscriptions WHERE false',
          async evaluate() {},
        },
        policy,
      ],
      reloadMs: 100,
    });
    guardrails.attach(stores);
    try {
      const item = await meteredItem();
      // a load had its time: were the items watched, this one would be skipped
      await sleep(400);
      await guardrails.sink('evaluated').write([item.event()]);
      expect(evaluations).toEqual([
        [{ orgId: org.orgId, customerId: item.customerId, subscriptionId: item.subscriptionId }],
      ]);
    } finally {
      await guardrails.stop();
      await stores.close();
    }
  });
});
