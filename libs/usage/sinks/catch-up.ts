import type { Admin } from '../../kafka/index.js';

/** A partition whose sink has not committed up to where the log ended. */
export interface PartitionLag {
  partition: number;
  /** The next offset the group will read (-1: it never committed on this partition). */
  committed: number;
  /** Where the log ended when the wait began. */
  end: number;
}

export class SinkBehindError extends Error {
  constructor(
    readonly groupId: string,
    readonly topic: string,
    readonly lag: readonly PartitionLag[],
  ) {
    super(
      `usage totals are behind: consumer group ${groupId} has ${eventsBehind(lag)} message(s) of ${topic} ` +
        `still to write (${lag.map(describe).join(', ')}); billing now would leave accepted usage out, ` +
        'so nothing was billed: run it again once the sinks have caught up',
    );
    this.name = 'SinkBehindError';
  }
}

/**
 * Resolves once consumer group `groupId` has committed every partition of `topic` up to where the
 * log ended when this was called. A sink commits only after its write (docs/architecture.md, "The shape"), and ingest
 * answers 201 only after the log acknowledged the event, so from then on the sink's store holds
 * every event accepted before the call. Throws SinkBehindError past `timeoutMs`.
 */
export async function waitForSinkCatchUp(
  admin: Admin,
  options: {
    topic: string;
    groupId: string;
    timeoutMs: number;
    pollMs?: number;
    /** Called about every 5 s while waiting, with what is left. */
    onWaiting?: (message: string) => void;
  },
): Promise<void> {
  const { topic, groupId } = options;
  // No topic: nothing was ever accepted through this log.
  if (!(await admin.listTopics()).includes(topic)) return;
  const ends = (await admin.fetchTopicOffsets(topic)).map((entry) => ({
    partition: entry.partition,
    end: Number(entry.high),
    start: Number(entry.low),
  }));
  const started = Date.now();
  let lastReport = started;
  for (;;) {
    const [committedOfTopic] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const committed = new Map(
      (committedOfTopic?.partitions ?? []).map((entry) => [entry.partition, Number(entry.offset)]),
    );
    const lag = ends
      .map(({ partition, end, start }) => ({
        partition,
        end,
        start,
        committed: committed.get(partition) ?? -1,
      }))
      // An empty partition needs no commit; otherwise the group must have read up to the end.
      .filter(({ end, start, committed }) => end > start && committed < end)
      .map(({ partition, end, committed }) => ({ partition, end, committed }));
    if (lag.length === 0) return;
    const now = Date.now();
    if (now - started >= options.timeoutMs) throw new SinkBehindError(groupId, topic, lag);
    if (now - lastReport >= 5000) {
      lastReport = now;
      options.onWaiting?.(`waiting for ${groupId}: ${eventsBehind(lag)} message(s) of ${topic} to write`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
}

function eventsBehind(lag: readonly PartitionLag[]): number {
  return lag.reduce((sum, { committed, end }) => sum + end - Math.max(committed, 0), 0);
}

function describe({ partition, committed, end }: PartitionLag): string {
  return `partition ${partition} at ${committed < 0 ? 'nothing committed' : committed} of ${end}`;
}
