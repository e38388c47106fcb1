import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitDomainEvent, emitDomainEvents, outboxInsert } from '../../libs/events/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

describe('the outbox', () => {
  let database: TestDatabase;
  let org: TestOrg;
  beforeAll(async () => {
    database = await createTestDatabase('outbox');
    org = await createTestOrg(database.db);
  });
  afterAll(() => database?.drop());

  const outbox = async () =>
    (
      await database.db.query<{ id: number; event_type: string; data: { n: number } }>(
        'SELECT id, event_type, data FROM outbox ORDER BY id',
      )
    ).rows;

  /** A connection of its own LISTENing on the outbox channel, and the channels it was notified on. */
  const listenToOutbox = async () => {
    const listener = await database.db.pool.connect();
    const notifications: string[] = [];
    listener.on('notification', (message) => notifications.push(message.channel));
    await listener.query('LISTEN outbox');
    return { listener, notifications };
  };

  it('records many events of one transaction in the order given, and wakes the dispatcher once', async () => {
    const { listener, notifications } = await listenToOutbox();
    try {
      const types = ['invoice.posted', 'invoice.paid', 'subscription.canceled'] as const;
      const ids = await database.db.transaction((tx) =>
        emitDomainEvents(
          tx,
          types.map((type, n) => ({ orgId: org.orgId, type, data: { n } })),
        ),
      );
      const rows = await outbox();
      expect(rows.map((r) => r.id)).toEqual(ids);
      expect(rows.map((r) => [r.event_type, r.data.n])).toEqual(types.map((type, n) => [type, n]));
      await expect.poll(() => notifications.length).toBe(1);
    } finally {
      listener.release();
    }
  });

  it('wakes the dispatcher once the transaction commits, never from inside it or for a rollback', async () => {
    const listener = await database.db.pool.connect();
    const notifications: number[] = [];
    listener.on('notification', () => notifications.push(Date.now()));
    await listener.query('LISTEN outbox');
    try {
      let committedAt = 0;
      await database.db.transaction(async (tx) => {
        await emitDomainEvent(tx, { orgId: org.orgId, type: 'payment.succeeded', data: {} });
        await new Promise((resolve) => setTimeout(resolve, 100));
        committedAt = Date.now();
      });
      await expect.poll(() => notifications.length).toBe(1);
      expect(notifications[0]).toBeGreaterThanOrEqual(committedAt);
      await database.db
        .transaction(async (tx) => {
          await emitDomainEvent(tx, { orgId: org.orgId, type: 'payment.succeeded', data: {} });
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(notifications).toHaveLength(1);
    } finally {
      listener.release();
    }
  });

  it('wakes the dispatcher once for a transaction that emits in several calls', async () => {
    const { listener, notifications } = await listenToOutbox();
    try {
      await database.db.transaction(async (tx) => {
        await emitDomainEvent(tx, { orgId: org.orgId, type: 'invoice.posted', data: {} });
        await emitDomainEvents(tx, [{ orgId: org.orgId, type: 'invoice.paid', data: {} }]);
        await emitDomainEvent(tx, { orgId: org.orgId, type: 'payment.succeeded', data: {} });
      });
      await expect.poll(() => notifications.length).toBe(1);
      // a second NOTIFY would arrive right behind the first
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(notifications).toEqual(['outbox']);
    } finally {
      listener.release();
    }
  });

  it('wakes the dispatcher at once outside a transaction, and at COMMIT on a client of its own', async () => {
    const { listener, notifications } = await listenToOutbox();
    const client = await database.db.pool.connect();
    try {
      await emitDomainEvent(database.db, { orgId: org.orgId, type: 'invoice.posted', data: {} });
      await expect.poll(() => notifications.length).toBe(1);

      await client.query('BEGIN');
      await emitDomainEvent(client, { orgId: org.orgId, type: 'invoice.paid', data: {} });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(notifications).toHaveLength(1);
      await client.query('COMMIT');
      await expect.poll(() => notifications.length).toBe(2);
    } finally {
      client.release();
      listener.release();
    }
  });

  it('has sent the wake-up by the time it returns, on a client closed right after', async () => {
    const { listener, notifications } = await listenToOutbox();
    const client = await database.db.pool.connect();
    try {
      await emitDomainEvent(client, { orgId: org.orgId, type: 'invoice.posted', data: {} });
      // its connection ends here: a NOTIFY still queued on it would be lost
      client.release(true);
      await expect.poll(() => notifications.length).toBe(1);
    } finally {
      listener.release();
    }
  });

  it('wakes nobody for a transaction that emits no events', async () => {
    const { listener, notifications } = await listenToOutbox();
    try {
      // a billing run that posts nothing must not send the dispatcher looking for work
      expect(await database.db.transaction((tx) => emitDomainEvents(tx, []))).toEqual([]);
      expect(await emitDomainEvents(database.db, [])).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(notifications).toEqual([]);
    } finally {
      listener.release();
    }
  });

  it('inserts, in a statement of its own, only the events whose gate holds, in the order given', async () => {
    const values: unknown[] = [];
    const insert = outboxInsert(
      [10, 20, 30, 40].map((n) => ({ orgId: org.orgId, type: 'invoice.posted' as const, data: { n } })),
      (value) => `$${values.push(value)}`,
      { keys: [1, 2, 3, 4], onlyIf: 'e.gate IN (SELECT unnest($5::bigint[]))' },
    );
    values.push([4, 1, 3]);
    const { rows } = await database.db.query<{ data: { n: number } }>(
      `WITH emitted AS (${insert} RETURNING id, data) SELECT data FROM emitted ORDER BY id`,
      values,
    );
    expect(rows.map((row) => row.data.n)).toEqual([10, 30, 40]);
  });

  it('keeps nothing of a transaction that rolls back', async () => {
    const before = (await outbox()).length;
    await expect(
      database.db.transaction(async (tx) => {
        await emitDomainEvent(tx, { orgId: org.orgId, type: 'payment.succeeded', data: {} });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await outbox()).toHaveLength(before);
    expect(await database.db.transaction((tx) => emitDomainEvents(tx, []))).toEqual([]);
  });
});
