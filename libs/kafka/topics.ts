import type { Admin, Kafka } from 'kafkajs';
import { withTimeout } from '../config/index.js';
import type { Logger } from '../log/index.js';
import type { DependencyCheck } from '../observability/index.js';

/**
 * Creates the topic with `partitions` when it does not exist yet. Best effort: deployments create
 * it beforehand (deploy/compose.yaml's kafka-topics job), and a broker without CreateTopics (the
 * librdkafka test broker) auto-creates on first produce instead.
 */
export async function ensureTopic(
  kafka: Kafka,
  topic: string,
  partitions: number,
  log: Logger,
): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const existing = await admin.listTopics();
    if (existing.includes(topic)) return;
    await withTimeout(admin.createTopics({ topics: [{ topic, numPartitions: partitions }] }), 5000);
    log.info({ topic, partitions }, 'kafka topic created');
  } catch (error) {
    log.warn({ topic, err: error }, 'could not check or create the kafka topic; relying on the broker');
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/** Readiness: a broker of the cluster answers (the admin client reconnects by itself). */
export function kafkaCheck(admin: Admin): DependencyCheck {
  return { name: 'kafka', probe: () => admin.describeCluster() };
}
