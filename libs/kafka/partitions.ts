import { type Admin, Partitioners, type PartitionMetadata } from 'kafkajs';

const defaultPartitioner = Partitioners.DefaultPartitioner();
const metadata = new Map<number, PartitionMetadata[]>();
/** Answers by partition count, then key (the topic does not enter the hash): a producer asks for every event. */
const answers = new Map<number, Map<string, number>>();
/** Keys remembered per partition count; beyond it the memory starts over (keys are org:item pairs). */
const MAX_REMEMBERED_KEYS = 100_000;

/**
 * The partition Kafka's default partitioner (murmur2 of the key, as the Java client) gives `key`
 * among `partitions`: where a message with that key would go. Lets a producer put the events of
 * many keys of one partition into one message and still route every key where its key would.
 */
export function partitionOfKey(topic: string, key: string, partitions: number): number {
  let known = answers.get(partitions);
  if (!known) {
    known = new Map();
    answers.set(partitions, known);
  }
  let partition = known.get(key);
  if (partition === undefined) {
    if (known.size >= MAX_REMEMBERED_KEYS) known.clear();
    partition = computePartition(topic, key, partitions);
    known.set(key, partition);
  }
  return partition;
}

function computePartition(topic: string, key: string, partitions: number): number {
  let partitionMetadata = metadata.get(partitions);
  if (!partitionMetadata) {
    partitionMetadata = Array.from(
      { length: partitions },
      (_, partitionId) =>
        ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }) as PartitionMetadata,
    );
    metadata.set(partitions, partitionMetadata);
  }
  return defaultPartitioner({ topic, partitionMetadata, message: { key, value: null } });
}

const REFRESH_MS = 30_000;

/**
 * A topic's partition count, read through the admin client and read again every 30 s (partitions
 * can be added). Undefined until known, e.g. before the topic is auto-created by its first write.
 */
export class TopicPartitionCount {
  private count: number | undefined;
  private checkedAt = 0;

  constructor(
    private readonly admin: Admin,
    private readonly topic: string,
  ) {}

  async current(): Promise<number | undefined> {
    if (Date.now() - this.checkedAt >= REFRESH_MS) {
      this.checkedAt = Date.now();
      try {
        const { topics } = await this.admin.fetchTopicMetadata({ topics: [this.topic] });
        this.count = topics[0]?.partitions.length || this.count;
      } catch {
        // Not known yet (or the cluster does not answer, in which case the produce call will say
        // so): callers fall back to keyed messages, which land on the same partitions.
      }
    }
    return this.count;
  }
}
