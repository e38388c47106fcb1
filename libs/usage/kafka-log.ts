import { type Admin, type Kafka, kafkaCheck, LingeringProducer } from '../kafka/index.js';
import type { DependencyCheck } from '../observability/index.js';
import { encodeLogMessage, type UsageEventRecord } from './event.js';
import type { UsageEventLog } from './log.js';

/**
 * Kafka topic `usage.events`: message key = organization and item (one item's events stay in one
 * partition, in order), acks from every in-sync replica, concurrent requests gathered into one
 * produce call per linger window.
 */
export class KafkaUsageEventLog implements UsageEventLog {
  private readonly producer: LingeringProducer;
  private readonly admin: Admin;

  constructor(kafka: Kafka, options: { topic: string; lingerMs: number }) {
    this.producer = new LingeringProducer(kafka, options);
    this.admin = kafka.admin();
  }

  /** Connects early so the first request does not pay for it; a broker that is down is not fatal. */
  async connect(): Promise<void> {
    await Promise.all([this.producer.connect(), this.admin.connect()]);
  }

  async append(events: readonly UsageEventRecord[]): Promise<UsageEventRecord[]> {
    await this.producer.send(events.map(encodeLogMessage));
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
