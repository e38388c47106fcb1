import type { DependencyCheck } from '../../observability/index.js';
import type { UsageEventRecord, UsageIdentity, UsageVoidRecord } from '../domain/event.js';

/**
 * Where accepted usage events go before anything else: Kafka in the distributed mode, an
 * in-process log writing straight to Postgres in the embedded one. `append` resolves only once
 * every event is durable; ingest answers 201 only after that.
 */
export interface UsageEventLog {
  /**
   * Resolves, per event, with the event the log holds for its identity: the event itself, or (when
   * the log can tell) one recorded earlier under the same identity, which then wins.
   */
  append(events: readonly UsageEventRecord[]): Promise<UsageEventRecord[]>;
  /**
   * The event held for an identity, when this log can look one up (the in-process log reads
   * Postgres; Kafka cannot): what a repeat finds once the dedup store forgot the key.
   */
  stored?(identity: UsageIdentity): Promise<UsageEventRecord | null>;
  /**
   * Resolves once the voids are durable on the log, for every store it feeds except the Postgres
   * `usage_events` the caller voids in its own transaction (the pg-sink applies them again,
   * idempotently). A void is appended only for an event already in Postgres; the stores end
   * voided whatever order a sink meets the event and its void in (docs/decisions.md).
   */
  appendVoids(voids: readonly UsageVoidRecord[]): Promise<void>;
  checks(): DependencyCheck[];
  /** Waits for appends in flight, then lets go of connections. */
  close(): Promise<void>;
}
