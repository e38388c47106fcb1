import { type Admin, type Kafka, kafkaCheck, LingeringProducer, partitionOfKey } from '../kafka/index.js';
import type { DependencyCheck } from '../observability/index.js';
import { encodeLogMessages, type UsageEventRecord } from './event.js';
import type { UsageEventLog } from './log.js';

/**
 * Kafka topic `usage.events`: message key = organization and item (one item's events stay in one
 * partition, in order), acks from every in-sync replica, concurrent requests gathered into one
 * produce call per linger window, and one message per partition within it (see encodeLogMessages).
 */
export class KafkaUsageEventLog implements UsageEventLog {
  private readonly producer: LingeringProducer<UsageEventRecord>;
  private readonly admin: Admin;

  constructor(kafka: Kafka, options: { topic: string; lingerMs: number }) {
    this.admin = kafka.admin();
    this.producer = new LingeringProducer(kafka, this.admin, {
      ...options,
      toMessages: (events, partitions) =>
        encodeLogMessages(
          events,
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
    await this.producer.send(events);
    return [...events];
  }

  checks(): DependencyCheck[] {
    return [kafkaCheck(this.admin)];
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
    await this.admin.disconnect();
  }
}
