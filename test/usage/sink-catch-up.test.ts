import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Admin, type Consumer, createKafka, type Kafka } from '../../libs/kafka/index.js';
import { SinkBehindError } from '../../libs/usage/index.js';
import { waitForSinkCatchUp } from '../../libs/usage/sinks/catch-up.js';
import { testServices, uniqueName } from '../helpers/services.js';

/**
 * The billing run waits until the sink's consumer group has committed every partition up to where
 * the log ended when the wait began (docs/architecture.md, "A billing run's way", step 2): every
 * event answered 201 before the run is then in the totals. On the run's Kafka test broker: topics
 * of this file's own (auto-created on first produce, 4 partitions), written to some partitions and
 * not others, and one consumer group whose only member never commits by itself: the test commits
 * for it, as a sink does after its write.
 */
let kafka: Kafka;
let admin: Admin;
/** The sink's consumer group's member: subscribed to every topic below, committing only when told. */
let member: Consumer;
const groupId = uniqueName('catch_up_sink');

/** Each topic, and how many messages each of its partitions got (absent: never written). */
const written = {
  empty: { 0: 4 },
  exact: { 0: 5, 1: 3 },
  never: { 0: 2, 1: 3 },
  timeout: { 0: 10, 1: 4, 2: 6 },
  waiting: { 0: 3, 1: 2 },
  moving: { 0: 2 },
} satisfies Record<string, Record<number, number>>;
type Log = keyof typeof written;
const topics = Object.fromEntries(
  Object.keys(written).map((log) => [log, uniqueName(`catch_up_${log}`)]),
) as Record<Log, string>;

beforeAll(async () => {
  kafka = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'catch-up-test' });
  admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer();
  await producer.connect();
  try {
    for (const [log, partitions] of Object.entries(written)) {
      await producer.send({
        topic: topics[log as Log],
        messages: Object.entries(partitions).flatMap(([partition, count]) =>
          Array.from({ length: count }, (_, i) => ({ partition: Number(partition), value: `m${i}` })),
        ),
      });
    }
  } finally {
    await producer.disconnect();
  }
  member = kafka.consumer({ groupId });
  await member.connect();
  await member.subscribe({ topics: Object.values(topics), fromBeginning: true });
  const joined = new Promise<void>((resolve) => member.on(member.events.GROUP_JOIN, () => resolve()));
  await member.run({ autoCommit: false, eachMessage: async () => {} });
  await joined;
});
afterAll(async () => {
  await member?.disconnect();
  await admin?.disconnect();
});

/** The group commits `offsets` (partition -> the next offset it will read) on `log`'s topic. */
const commit = (log: Log, offsets: Record<number, number>) =>
  member.commitOffsets(
    Object.entries(offsets).map(([partition, offset]) => ({
      topic: topics[log],
      partition: Number(partition),
      offset: String(offset),
    })),
  );

/** The real admin, counting the polls of the group's offsets (each a real request to the broker). */
function counted(): { admin: Admin; polls: () => number } {
  let polls = 0;
  const fetchOffsets = ((...args: Parameters<Admin['fetchOffsets']>) => {
    polls++;
    return admin.fetchOffsets(...args);
  }) as Admin['fetchOffsets'];
  return { admin: { ...admin, fetchOffsets }, polls: () => polls };
}

const wait = (topic: string, timeoutMs: number, through: Admin = admin) =>
  waitForSinkCatchUp(through, { topic, groupId, timeoutMs, pollMs: 20 });

/** How the wait ended: 'caught up', or what it threw. */
const outcome = (run: Promise<void>): Promise<unknown> =>
  run.then(
    () => 'caught up',
    (error: unknown) => error,
  );

async function behind(run: Promise<void>): Promise<SinkBehindError> {
  const error = await outcome(run);
  expect(error).toBeInstanceOf(SinkBehindError);
  return error as SinkBehindError;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('waiting for a sink to catch up, on the Kafka test broker', () => {
  it('returns at once when the topic does not exist: nothing was accepted through it', async () => {
    const missing = uniqueName('catch_up_missing');
    const { admin: through, polls } = counted();
    const started = Date.now();
    await wait(missing, 5000, through);
    expect(Date.now() - started).toBeLessThan(1000);
    // nor did the wait bring it into being (asking the broker for a topic's offsets creates it)
    expect(await admin.listTopics()).not.toContain(missing);
    expect(polls()).toBe(0);
  });

  it('needs no commit on a partition never written to', async () => {
    // partitions 1 and up were never written: low == high == 0
    const unwritten = (await admin.fetchTopicOffsets(topics.empty)).filter((end) => end.partition !== 0);
    expect(unwritten.length).toBeGreaterThan(0);
    for (const end of unwritten) expect(end).toMatchObject({ low: '0', high: '0' });
    await commit('empty', { 0: 4 });
    const { admin: through, polls } = counted();
    await wait(topics.empty, 3000, through);
    expect(polls()).toBe(1);
  });

  it('returns once every partition is committed up to its end, not while one is a message short', async () => {
    await commit('exact', { 0: 5, 1: 2 });
    const waiting = outcome(wait(topics.exact, 10_000));
    let settled = false;
    void waiting.then(() => {
      settled = true;
    });
    await sleep(500);
    expect(settled).toBe(false);
    await commit('exact', { 1: 3 });
    const committed = Date.now();
    expect(await waiting).toBe('caught up');
    // Seen at the next poll (every 20 ms), not once the timeout ran out.
    expect(Date.now() - committed).toBeLessThan(3000);
  });

  it('counts a partition the group never committed as behind, from its first message', async () => {
    await commit('never', { 0: 2 });
    const error = await behind(wait(topics.never, 300));
    expect(error.lag).toEqual([{ partition: 1, committed: -1, end: 3 }]);
    expect(error.message).toContain(`consumer group ${groupId} has 3 message(s) of ${topics.never}`);
    expect(error.message).toContain('partition 1 at nothing committed of 3');
  });

  it('gives up past its timeout, naming what is left per partition', async () => {
    await commit('timeout', { 0: 7, 1: 4, 2: 5 });
    const started = Date.now();
    const error = await behind(wait(topics.timeout, 1000));
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1000);
    // Within a poll or so of the timeout: not at twice it.
    expect(waited).toBeLessThan(1900);
    expect(error.lag).toEqual([
      { partition: 0, committed: 7, end: 10 },
      { partition: 2, committed: 5, end: 6 },
    ]);
    expect(error.message).toContain(`consumer group ${groupId} has 4 message(s) of ${topics.timeout}`);
    expect(error.message).toContain('partition 0 at 7 of 10, partition 2 at 5 of 6');
  });

  it('reports what is left every 5 s of waiting, and gives up at exactly its timeout', async () => {
    // partition 1 committed at its start: read nothing yet, though the group did commit
    await commit('waiting', { 0: 1, 1: 0 });
    // a clock that moves 1 s at each poll of the group's offsets (the broker answers for real)
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      let polls = 0;
      const fetchOffsets = ((...args: Parameters<Admin['fetchOffsets']>) => {
        polls++;
        vi.setSystemTime(Date.now() + 1000);
        return admin.fetchOffsets(...args);
      }) as Admin['fetchOffsets'];
      const reports: { poll: number; message: string }[] = [];
      const error = await behind(
        waitForSinkCatchUp(
          { ...admin, fetchOffsets },
          {
            topic: topics.waiting,
            groupId,
            timeoutMs: 10_000,
            pollMs: 1,
            onWaiting: (message) => reports.push({ poll: polls, message }),
          },
        ),
      );
      // the poll 10 s after the start is the last: not one more
      expect(polls).toBe(10);
      // 5 s after the start, and not again before the wait gave up (the report at 10 s is the error)
      expect(reports).toEqual([
        { poll: 5, message: `waiting for ${groupId}: 4 message(s) of ${topics.waiting} to write` },
      ]);
      expect(error.lag).toEqual([
        { partition: 0, committed: 1, end: 3 },
        { partition: 1, committed: 0, end: 2 },
      ]);
      expect(error.message).toContain('partition 0 at 1 of 3, partition 1 at 0 of 2');
    } finally {
      vi.useRealTimers();
    }
  });

  it('polls the group every 200 ms when told no interval, not in a tight loop on the broker', async () => {
    // 'timeout' stays behind (partition 0 at 7 of 10): the wait polls until it gives up
    const { admin: through, polls } = counted();
    await behind(waitForSinkCatchUp(through, { topic: topics.timeout, groupId, timeoutMs: 1000 }));
    // at 0, 200, 400, 600, 800 and 1000 ms at most (each poll's request takes some time too)
    expect(polls()).toBeGreaterThanOrEqual(2);
    expect(polls()).toBeLessThanOrEqual(6);
  });

  it('waits for where the log ended when it began, not for what was produced since', async () => {
    await commit('moving', { 0: 1 });
    const { admin: through, polls } = counted();
    const waiting = outcome(wait(topics.moving, 3000, through));
    // the log's ends are read before the first poll of the group's offsets
    await vi.waitFor(() => expect(polls()).toBeGreaterThan(0));
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({ topic: topics.moving, messages: [{ partition: 0, value: 'later' }] });
    } finally {
      await producer.disconnect();
    }
    await commit('moving', { 0: 2 });
    expect(await waiting).toBe('caught up');
  });
});
