import { describe, expect, it } from 'vitest';
import type { Admin } from '../../kafka/index.js';
import { SinkBehindError, waitForSinkCatchUp } from './catch-up.js';

/**
 * The billing run waits until the sink's consumer group has committed every partition up to where
 * the log ended when the wait began (docs/architecture.md, "A billing run's way", step 2): every
 * event answered 201 before the run is then in the totals. The admin is a fake: the log's
 * partitions (low and high offsets) and the group's commits, which move on each poll as scripted.
 */
interface FakeLog {
  topics?: string[];
  partitions: { partition: number; low: number; high: number }[];
  /** The group's committed offsets at each poll (the last one stays); absent: never committed. */
  commits: Record<number, number>[];
}

const TOPIC = 'usage.events';
const GROUP = 'pg-sink';

function fakeAdmin(log: FakeLog): { admin: Admin; polls: () => number } {
  let polls = 0;
  const admin = {
    listTopics: async () => log.topics ?? [TOPIC],
    fetchTopicOffsets: async (topic: string) => {
      expect(topic).toBe(TOPIC);
      return log.partitions.map(({ partition, low, high }) => ({
        partition,
        offset: String(high),
        high: String(high),
        low: String(low),
      }));
    },
    fetchOffsets: async ({ groupId, topics }: { groupId: string; topics: string[] }) => {
      expect(groupId).toBe(GROUP);
      expect(topics).toEqual([TOPIC]);
      const commits = log.commits[Math.min(polls, log.commits.length - 1)] ?? {};
      polls++;
      return [
        {
          topic: TOPIC,
          partitions: Object.entries(commits).map(([partition, offset]) => ({
            partition: Number(partition),
            offset: String(offset),
            metadata: null,
          })),
        },
      ];
    },
  };
  return { admin: admin as unknown as Admin, polls: () => polls };
}

const wait = (admin: Admin, timeoutMs = 2000) =>
  waitForSinkCatchUp(admin, { topic: TOPIC, groupId: GROUP, timeoutMs, pollMs: 1 });

async function behind(run: Promise<void>): Promise<SinkBehindError> {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SinkBehindError);
  return error as SinkBehindError;
}

describe('waiting for a sink to catch up', () => {
  it('returns at once when the topic does not exist: nothing was accepted through it', async () => {
    const { admin, polls } = fakeAdmin({ topics: ['other'], partitions: [], commits: [] });
    await wait(admin, 0);
    expect(polls()).toBe(0);
  });

  it('returns once every partition is committed up to its end, not one message short', async () => {
    const { admin, polls } = fakeAdmin({
      partitions: [
        { partition: 0, low: 0, high: 5 },
        { partition: 1, low: 0, high: 3 },
      ],
      commits: [
        { 0: 5, 1: 2 },
        { 0: 5, 1: 2 },
        { 0: 5, 1: 3 },
      ],
    });
    await wait(admin);
    expect(polls()).toBe(3);
  });

  it('needs no commit on an empty partition, nor on one whose messages were all deleted', async () => {
    const { admin, polls } = fakeAdmin({
      partitions: [
        { partition: 0, low: 0, high: 4 },
        { partition: 1, low: 0, high: 0 },
        { partition: 2, low: 7, high: 7 },
      ],
      commits: [{ 0: 4 }],
    });
    await wait(admin);
    expect(polls()).toBe(1);
  });

  it('counts a partition the group never committed as behind, from its first message', async () => {
    const { admin } = fakeAdmin({
      partitions: [
        { partition: 0, low: 0, high: 2 },
        { partition: 1, low: 0, high: 3 },
      ],
      commits: [{ 0: 2 }],
    });
    const error = await behind(wait(admin, 20));
    expect(error.lag).toEqual([{ partition: 1, committed: -1, end: 3 }]);
    expect(error.message).toContain('3 message(s)');
    expect(error.message).toContain('partition 1 at nothing committed of 3');
  });

  it('gives up past its timeout, naming what is left per partition', async () => {
    const { admin } = fakeAdmin({
      partitions: [
        { partition: 0, low: 0, high: 10 },
        { partition: 1, low: 0, high: 4 },
        { partition: 2, low: 0, high: 6 },
      ],
      commits: [{ 0: 7, 1: 4, 2: 5 }],
    });
    const started = Date.now();
    const error = await behind(wait(admin, 30));
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(30);
    expect(waited).toBeLessThan(1000);
    expect(error.lag).toEqual([
      { partition: 0, committed: 7, end: 10 },
      { partition: 2, committed: 5, end: 6 },
    ]);
    expect(error.message).toContain(`consumer group ${GROUP} has 4 message(s) of ${TOPIC}`);
  });
});
