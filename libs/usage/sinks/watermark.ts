import type { Queryable } from '../../db/index.js';
import type { Admin } from '../../kafka/index.js';
import type { Logger } from '../../log/index.js';

const EPOCH = new Date(0);

/**
 * The sinks' committed watermark, `as_of` of the usage read-back (docs/architecture.md, "The usage read-back", docs/decisions.md).
 *
 * Every `intervalMs` a sink reads the time T, then the log's end per partition, then its consumer
 * group's committed offsets. A partition whose committed offset reached that end (or that is
 * empty) is covered until T: ingest answers 201 only once the log acknowledged the event, so an
 * event answered before T sits below the end read after T, and a sink commits only what it wrote.
 * The rows go to Postgres (usage_sink_watermarks), where any api process reads them in one query;
 * `as_of` is the oldest partition's T, and a partition that has never caught up counts as 1970. A sink that stops or falls behind stops moving its rows, so
 * `as_of` ages honestly instead of claiming events it has not written.
 */
export class SinkWatermarkRecorder {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly options: {
      admin: Admin;
      db: Queryable;
      topic: string;
      groupId: string;
      sink: string;
      intervalMs: number;
      log: Logger;
    },
  ) {}

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.recordOnce()
        .catch((error) =>
          this.options.log.debug(
            { err: error, sink: this.options.sink },
            'could not record the sink watermark',
          ),
        )
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One reading; exported for tests through the recorder. */
  async recordOnce(): Promise<void> {
    const { admin, db, topic, groupId, sink } = this.options;
    const at = new Date();
    const ends = await admin.fetchTopicOffsets(topic);
    const [ofTopic] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const committed = new Map(
      (ofTopic?.partitions ?? []).map((entry) => [entry.partition, Number(entry.offset)]),
    );
    const partitions = ends.map((entry) => {
      const end = Number(entry.high);
      const start = Number(entry.low);
      const offset = committed.get(entry.partition) ?? -1;
      const covered = end <= start || offset >= end;
      // A partition not covered keeps its row as it was; one never covered gets a row at the
      // epoch, so the oldest partition, and as_of, is never one that has not caught up yet.
      return { partition: entry.partition, offset: covered ? end : offset, until: covered ? at : EPOCH };
    });
    if (!partitions.length) return;
    await db.query(
      `INSERT INTO usage_sink_watermarks (sink, topic, log_partition, committed_offset, covered_until)
       SELECT $1, $2, p, o, u FROM unnest($3::int[], $4::bigint[], $5::timestamptz[]) AS c (p, o, u)
       ON CONFLICT (sink, topic, log_partition) DO UPDATE
         SET committed_offset = GREATEST(usage_sink_watermarks.committed_offset, excluded.committed_offset),
             covered_until = GREATEST(usage_sink_watermarks.covered_until, excluded.covered_until)`,
      [
        sink,
        topic,
        partitions.map((p) => p.partition),
        partitions.map((p) => p.offset),
        partitions.map((p) => p.until),
      ],
    );
  }
}

/**
 * The instant up to which sink `sink` holds every event accepted on `topic`: the oldest
 * partition's covered_until (never the newest: one partition behind holds events answered 201
 * that the sink has not written). null while the sink has recorded nothing; the epoch while a
 * partition has not caught up once.
 */
export async function sinkWatermark(db: Queryable, sink: string, topic: string): Promise<Date | null> {
  const { rows } = await db.query<{ as_of: Date | null }>(
    'SELECT min(covered_until) AS as_of FROM usage_sink_watermarks WHERE sink = $1 AND topic = $2',
    [sink, topic],
  );
  return rows[0]?.as_of ?? null;
}
