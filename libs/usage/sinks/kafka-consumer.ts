import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from '../../log/index.js';
import {
  type DependencyCheck,
  sinkEventsWritten,
  sinkLagMessages,
  sinkLagSeconds,
  sinkWriteDuration,
} from '../../observability/index.js';
import { decodeLogEntries, type UsageEventRecord, type UsageVoidRecord } from '../domain/event.js';
import type { UsageSink } from './sink.js';

export interface KafkaSinkOptions {
  kafka: Kafka;
  topic: string;
  groupId: string;
  sink: UsageSink;
  /** Flush when this many events are buffered... */
  batchSize: number;
  /** ...or when the oldest buffered event has waited this long. */
  flushMs: number;
  log: Logger;
  /**
   * The process's admin client, connected and disconnected by its owner, which reads the topic's
   * partitions after each assignment; without it the runner connects one of its own.
   */
  admin?: Admin;
}

/**
 * One sink as a Kafka consumer group (OpenMeter's sink worker): messages are buffered across
 * fetches and partitions, flushed on count or timer, written, and only then are their offsets
 * committed. A crash between write and commit replays the batch, which the idempotent sink absorbs;
 * a crash before the write loses nothing, since nothing was committed.
 */
export class KafkaSinkRunner {
  private readonly consumer: Consumer;
  private buffer: UsageEventRecord[] = [];
  /** Voids read since the last flush; written after the buffer's events (a void follows its event). */
  private voids: UsageVoidRecord[] = [];
  /**
   * Per partition, the next offset to commit once the buffer is written; then `writingOffsets`, the
   * offsets of the flush under way. Both hold only partitions of this member's current assignment:
   * the broker accepts a commit from any member of the group's generation, so committing a partition
   * taken away would move the group's commit of it back behind its new holder's, and billing's
   * catch-up (docs/architecture.md, "Waits for the sink it reads") would wait on a group behind.
   */
  private bufferedOffsets = new Map<number, string>();
  private writingOffsets = new Map<number, string>();
  /**
   * The lag gauge's inputs, per partition: where the group's commit stands as far as this member
   * knows (its own last commit, or the offset it started reading from) and the log's end at its
   * last fetch. `highWatermarks` holds only partitions of the current assignment read since they
   * were assigned, and only those count; a commit ending after its partition was revoked may leave
   * a `committed` entry behind, which the partition's first batch overwrites if it comes back.
   */
  private readonly committed = new Map<number, bigint>();
  private readonly highWatermarks = new Map<number, bigint>();
  private bufferedSince = 0;
  /** recordedAt of the oldest event read and not written yet: buffered, or in a write being retried. */
  private oldestBufferedMs = Number.POSITIVE_INFINITY;
  private oldestWritingMs = Number.POSITIVE_INFINITY;
  private flushing: Promise<void> = Promise.resolve();
  private stopping = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** False from a crash kafkajs does not restart itself until this runner has restarted it. */
  private consuming = false;
  private restarting: Promise<void> | undefined;
  /** Counts the group's assignments, so an answer about an older one is dropped. */
  private generation = 0;
  /** An admin client of this runner's own (none when the options share one). */
  private ownAdmin: Admin | undefined;

  constructor(private readonly options: KafkaSinkOptions) {
    this.consumer = options.kafka.consumer({
      groupId: options.groupId,
      // The broker holds a fetch until it has data or this long: the buffer's timer does the rest.
      // (A larger minBytes halved the sinks' catch-up speed on the Kafka test broker, which answers
      // with one message set per partition per fetch.)
      maxWaitTimeInMs: Math.min(options.flushMs, 500),
      maxBytesPerPartition: 4 * 1024 * 1024,
      // A member that died is replaced after this long (its partitions wait until then).
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
    });
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || this.stopping) return;
      // kafkajs gives up on errors it deems not retriable (an authorization error, an unknown
      // topic): a sink that stopped reading would leave accepted usage unwritten forever.
      this.consuming = false;
      this.options.log.error(
        { err: payload.error, sink: this.name },
        'usage sink consumer stopped on an error kafkajs does not retry; restarting it',
      );
      this.restarting ??= this.restart().finally(() => {
        this.restarting = undefined;
      });
    });
    if (options.sink.assigned) {
      this.consumer.on(this.consumer.events.REBALANCING, () => this.assign(false));
    }
    this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) => {
      const partitions = payload.memberAssignment[options.topic] ?? [];
      this.forgetRevoked(partitions);
      if (!options.sink.assigned) return;
      const generation = this.assign(false);
      void this.holdsWholeLog(partitions).then((whole) => {
        if (whole && generation === this.generation) this.assign(true);
      });
    });
  }

  /**
   * Drops the lag of partitions no longer this member's: whoever holds them now reports it, and
   * what this member last saw of them (a read it could not commit, an old end of the log) would
   * otherwise count in its gauge for good. Drops their offsets to commit too, buffered or in the
   * flush under way: their events are still written, and their new holder reads them again from
   * the group's commit (the idempotent sink absorbs the repeat).
   */
  private forgetRevoked(assigned: readonly number[]): void {
    const byPartition: Map<number, unknown>[] = [
      this.bufferedOffsets,
      this.writingOffsets,
      this.highWatermarks,
      this.committed,
    ];
    for (const map of byPartition) {
      for (const partition of map.keys()) if (!assigned.includes(partition)) map.delete(partition);
    }
    this.reportLag();
  }

  /** Tells the sink whether this member reads every partition; a new generation either way. */
  private assign(wholeLog: boolean): number {
    this.generation++;
    this.options.sink.assigned?.(wholeLog);
    return this.generation;
  }

  /** Whether `partitions` are all of the topic's (false when that cannot be told now). */
  private async holdsWholeLog(partitions: readonly number[]): Promise<boolean> {
    try {
      const admin = this.options.admin ?? (await this.connectedOwnAdmin());
      const { topics } = await admin.fetchTopicMetadata({ topics: [this.options.topic] });
      const all = topics[0]?.partitions.map((p) => p.partitionId) ?? [];
      return all.length > 0 && all.every((partition) => partitions.includes(partition));
    } catch (error) {
      this.options.log.warn({ err: error, sink: this.name }, "could not read the topic's partitions");
      return false;
    }
  }

  private async connectedOwnAdmin(): Promise<Admin> {
    if (!this.ownAdmin) {
      this.ownAdmin = this.options.kafka.admin();
      await this.ownAdmin.connect();
    }
    return this.ownAdmin;
  }

  get name(): string {
    return this.options.sink.name;
  }

  async start(): Promise<void> {
    this.assign(false);
    await this.consume();
    this.loop = this.flushLoop();
  }

  /** Readiness: down while the consumer is not reading (between a crash and its restart). */
  check(): DependencyCheck {
    return {
      name: this.name,
      probe: async () => {
        if (!this.consuming && !this.stopping) throw new Error('the consumer is not running; restarting it');
      },
    };
  }

  private async consume(): Promise<void> {
    await this.consumer.connect();
    // A new group reads the topic from its beginning: nothing produced before it existed is skipped.
    await this.consumer.subscribe({ topic: this.options.topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 8,
      eachBatch: (payload) => this.onBatch(payload),
    });
    this.consuming = true;
  }

  /**
   * After a crash: consumes again from the group's committed offsets, with a growing pause between
   * attempts. What was buffered and not committed is read again; the idempotent sink absorbs it.
   */
  private async restart(): Promise<void> {
    for (let attempt = 1; !this.stopping; attempt++) {
      const resumeAt = Date.now() + Math.min(500 * 2 ** attempt, 30_000);
      // in short steps, so a stop does not wait out the pause
      while (!this.stopping && Date.now() < resumeAt)
        await new Promise((resolve) => setTimeout(resolve, 100));
      if (this.stopping) return;
      try {
        await this.consume();
        this.options.log.info({ sink: this.name, attempt }, 'usage sink consumer restarted');
        return;
      } catch (error) {
        this.options.log.error(
          { err: error, sink: this.name, attempt },
          'usage sink consumer restart failed',
        );
        await this.consumer.disconnect().catch(() => {});
      }
    }
  }

  /** Stops fetching, writes and commits what is buffered, then leaves the group. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    try {
      this.consumer.pause([{ topic: this.options.topic }]);
    } catch {
      // Between a crash and kafkajs' restart of the consumer nothing is fetching: nothing to pause.
    }
    this.wake?.();
    await this.loop;
    await this.restarting;
    await this.flush();
    await this.consumer.disconnect();
    await this.ownAdmin?.disconnect().catch(() => {});
  }

  private async onBatch({ batch, resolveOffset, heartbeat, isStale }: EachBatchPayload): Promise<void> {
    // Left unresolved: whoever owns the partition next fetches these again.
    if (this.stopping || isStale() || !batch.messages.length) return;
    for (const message of batch.messages) {
      try {
        const { events, voids } = decodeLogEntries(message.value);
        for (const event of events) {
          this.buffer.push(event);
          if (event.recordedAtMs < this.oldestBufferedMs) this.oldestBufferedMs = event.recordedAtMs;
        }
        for (const entry of voids) this.voids.push(entry);
      } catch (error) {
        // It can never be written; holding the partition for it would stop every later event.
        this.options.log.error(
          { err: error, partition: batch.partition, offset: message.offset, sink: this.name },
          'skipping a malformed usage message',
        );
      }
    }
    if (!this.bufferedSince) this.bufferedSince = Date.now();
    // A partition's first batch since it was assigned starts where the group had committed (or at
    // the log's start): its lag counts from there, not from offset 0, until this member commits.
    if (!this.highWatermarks.has(batch.partition))
      this.committed.set(batch.partition, BigInt(batch.messages[0]!.offset));
    const last = batch.messages[batch.messages.length - 1]!;
    this.bufferedOffsets.set(batch.partition, (BigInt(last.offset) + 1n).toString());
    this.highWatermarks.set(batch.partition, BigInt(batch.highWatermark));
    resolveOffset(last.offset);
    if (this.buffer.length >= this.options.batchSize) {
      // Back-pressure: fetching waits for the write; heartbeats keep the group membership meanwhile.
      const flushed = this.flush();
      while (!(await endsWithin(flushed, 1000))) await heartbeat().catch(() => {});
    }
  }

  private async flushLoop(): Promise<void> {
    while (!this.stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(10, Math.min(this.options.flushMs, 100)));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.reportLag();
      // Offsets alone count too: a batch of messages that held nothing to write (malformed ones)
      // must still be committed, or the group never reaches the log's end and billing waits on it.
      if (
        (this.buffer.length || this.voids.length || this.bufferedOffsets.size) &&
        Date.now() - this.bufferedSince >= this.options.flushMs
      )
        await this.flush();
    }
  }

  /**
   * The lag gauges, on every tick rather than after a write: a sink whose writes keep failing shows
   * its lag growing, and one that caught up shows none (not the age of its last batch forever).
   */
  private reportLag(): void {
    const sink = this.name;
    const oldest = Math.min(this.oldestBufferedMs, this.oldestWritingMs);
    sinkLagSeconds.set({ sink }, Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0);
    let lag = 0n;
    for (const [partition, highWatermark] of this.highWatermarks) {
      const committed = this.committed.get(partition) ?? 0n;
      if (highWatermark > committed) lag += highWatermark - committed;
    }
    sinkLagMessages.set({ sink }, Number(lag));
  }

  /** One flush at a time; each takes what is buffered when it starts. Never rejects. */
  private flush(): Promise<void> {
    this.flushing = this.flushing
      .then(() => this.flushOnce())
      .catch((error) => this.options.log.error({ err: error, sink: this.name }, 'usage sink flush failed'));
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    if (!this.buffer.length && !this.voids.length && !this.bufferedOffsets.size) return;
    const events = this.buffer;
    const voids = this.voids;
    const offsets = this.bufferedOffsets;
    this.writingOffsets = offsets;
    this.buffer = [];
    this.voids = [];
    this.bufferedOffsets = new Map();
    this.bufferedSince = 0;
    this.oldestWritingMs = this.oldestBufferedMs;
    this.oldestBufferedMs = Number.POSITIVE_INFINITY;
    const sink = this.name;

    // An outage of the store fails every attempt: logged when it starts (one line, no stack), then
    // once a minute, and when a write goes through again.
    let failingSince = 0;
    let loggedAt = 0;
    for (let attempt = 1; ; attempt++) {
      const started = process.hrtime.bigint();
      try {
        await this.options.sink.write(events);
        await this.options.sink.writeVoids(voids);
        sinkWriteDuration.observe({ sink }, Number(process.hrtime.bigint() - started) / 1e9);
        if (failingSince) {
          this.options.log.info(
            { sink, attempts: attempt, seconds: Math.round((Date.now() - failingSince) / 1000) },
            'usage sink writes again',
          );
        }
        break;
      } catch (error) {
        const now = Date.now();
        if (!failingSince) failingSince = now;
        if (attempt === 1 || now - loggedAt >= 60_000) {
          loggedAt = now;
          this.options.log.error(
            { sink, events: events.length, attempt, error: (error as Error).message },
            attempt === 1 ? 'usage sink write failed; retrying' : 'usage sink write still failing',
          );
        }
        // The flush loop waits on this flush, so its ticks report no lag meanwhile: report it here,
        // or the gauges stay frozen at their values from before the outage.
        this.reportLag();
        // Nothing is committed until the write succeeds; retry the same batch.
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 5000)));
      }
    }
    sinkEventsWritten.inc({ sink }, events.length);
    this.oldestWritingMs = Number.POSITIVE_INFINITY;
    this.writingOffsets = new Map();

    if (offsets.size) {
      try {
        await this.consumer.commitOffsets(
          [...offsets].map(([partition, offset]) => ({ topic: this.options.topic, partition, offset })),
        );
        for (const [partition, offset] of offsets) this.committed.set(partition, BigInt(offset));
      } catch (error) {
        // After a rebalance the partition is someone else's: it re-reads from the last commit and
        // the sink absorbs the repeat.
        this.options.log.warn({ err: error, sink }, 'could not commit sink offsets');
      }
    }
    this.reportLag();
  }
}

function endsWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
