import { DependencyGuard } from '../../dependency-guard/index.js';
import {
  type Admin,
  isKafkaOutage,
  type Kafka,
  kafkaCheck,
  LingeringProducer,
  partitionOfKey,
} from '../../kafka/index.js';
import type { Logger } from '../../log/index.js';
import type { DependencyCheck } from '../../observability/index.js';
import {
  encodeLogMessages,
  encodeVoidMessages,
  type UsageEventRecord,
  type UsageVoidRecord,
} from '../domain/event.js';
import type { UsageEventLog } from './log.js';

/**
 * Kafka topic `usage.events`: acks from every in-sync replica, concurrent requests gathered into one
 * produce call per linger window, and that window's events in one unkeyed message, dealt round
 * robin over the partitions (see encodeLogMessages; the stores keep the
 * earliest recorded event of an identity whatever the order). Voids are keyed by organization and
 * item.
 * A request waits at most `ackTimeoutMs` for the acknowledgement: past it (or on a lost
 * connection) the broker is down, and appends fail at once until it answers a metadata request.
 * A produce call given up on may still be written later; its events' keys were released, so a
 * retry records them under a new id and the sinks keep one row per identity.
 */
export class KafkaUsageEventLog implements UsageEventLog {
  private readonly producer: LingeringProducer<UsageEventRecord>;
  /** Voids are rare and waited for by one request each: no linger, their own producer. */
  private readonly voidProducer: LingeringProducer<UsageVoidRecord>;
  private readonly admin: Admin;
  private readonly guard: DependencyGuard;

  constructor(kafka: Kafka, options: { topic: string; lingerMs: number; ackTimeoutMs: number; log: Logger }) {
    this.admin = kafka.admin();
    this.guard = new DependencyGuard({
      name: 'kafka',
      label: 'The usage log',
      waitMs: options.ackTimeoutMs,
      whenSlow: 'fail',
      probe: () => this.admin.describeCluster(),
      isOutage: isKafkaOutage,
      log: options.log,
    });
    this.producer = new LingeringProducer(kafka, this.admin, {
      ...options,
      toMessages: (events) => encodeLogMessages(events),
    });
    this.voidProducer = new LingeringProducer(kafka, this.admin, {
      topic: options.topic,
      lingerMs: 0,
      toMessages: (voids, partitions) =>
        encodeVoidMessages(
          voids,
          partitions ? (key) => partitionOfKey(options.topic, key, partitions) : undefined,
        ),
    });
  }

  /** Connects early so the first request does not pay for it; a broker that is down is not fatal. */
  async connect(): Promise<void> {
    await this.admin.connect();
    await this.producer.connect();
  }

  async append(events: readonly UsageEventRecord[]): Promise<UsageEventRecord[]> {
    await this.guard.run(() => this.producer.send(events));
    // Kafka cannot tell an earlier event of the same identity: the stored ones are these
    return events as UsageEventRecord[];
  }

  async appendVoids(voids: readonly UsageVoidRecord[]): Promise<void> {
    if (voids.length) await this.guard.run(() => this.voidProducer.send(voids));
  }

  checks(): DependencyCheck[] {
    return [kafkaCheck(this.admin)];
  }

  async close(): Promise<void> {
    this.guard.close();
    await this.producer.disconnect();
    await this.voidProducer.disconnect();
    await this.admin.disconnect();
  }
}
