import type { UsageEventRecord, UsageVoidRecord } from '../domain/event.js';

/**
 * A store the usage log is copied into. `write` is idempotent: an event written again (Kafka
 * redelivers after a crash or a rebalance) changes nothing, so offsets can be committed after the
 * write, never before, and nothing is lost or counted twice.
 */
export interface UsageSink {
  readonly name: string;
  write(events: readonly UsageEventRecord[]): Promise<void>;
  /**
   * Marks events voided, idempotently and whatever the order: a void applied again, or before a
   * redelivery of its event, leaves the event voided.
   */
  writeVoids(voids: readonly UsageVoidRecord[]): Promise<void>;
  /**
   * Told, when the sink's consumer group assigns partitions, whether this member now reads every
   * partition of the log (`false` first, at each rebalance, and while that cannot be told). A
   * listener that bounds an item's usage by what it read (the quantity alerts) draws no bound
   * while it reads only part of the log: the log is unkeyed, so another member reads the rest.
   */
  assigned?(wholeLog: boolean): void;
}
