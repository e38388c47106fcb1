import { type Admin, type Kafka, type Message, Partitioners, type Producer } from 'kafkajs';
import { Batcher } from '../batching/index.js';
import { kafkaProduceBatchSize, kafkaProduceCalls, kafkaProduceDuration } from '../observability/index.js';
import { FAIL_FAST_REQUEST_TIMEOUT_MS } from './client.js';
import { DirectProducer } from './direct-producer.js';
import { TopicPartitionCount } from './partitions.js';

/** One metric child per path, resolved once (a call per produce call would look the labels up). */
const PRODUCE_CALLS = {
  leader: kafkaProduceCalls.labels('leader'),
  kafkajs: kafkaProduceCalls.labels('kafkajs'),
};

/**
 * Gathers the items of many concurrent callers into one produce call with `acks: -1` (every
 * in-sync replica). A window goes out at the end of the event-loop turn while fewer than
 * `maxInFlight` produce calls are running; otherwise it gathers until one returns, `lingerMs` at
 * most. So a lone request is not held for the linger, and under load each call carries more.
 * `toMessages` turns a whole window into messages, given the topic's partition count when known,
 * so items can share a message: kafkajs spends far more per message than per item. Each caller's
 * promise resolves or rejects with its window: a caller knows exactly whether its items are durable.
 * The produce calls go straight to the partitions' leaders (DirectProducer), through kafkajs'
 * producer whenever that cannot.
 */
export class LingeringProducer<T> {
  private readonly producer: Producer;
  private readonly direct: DirectProducer;
  private readonly windows: Batcher<readonly T[], undefined>;
  private readonly partitions: TopicPartitionCount;
  private connecting: Promise<void> | undefined;

  constructor(
    kafka: Kafka,
    admin: Admin,
    private readonly options: {
      topic: string;
      lingerMs: number;
      toMessages: (items: readonly T[], partitions: number | undefined) => Message[];
      maxItems?: number;
      /** Produce calls in flight before a window waits out its linger (see BatcherOptions). */
      maxInFlight?: number;
      /** Named in requests written by DirectProducer (kafkajs names its own). */
      clientId?: string;
    },
  ) {
    this.producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: true,
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 2 },
    });
    this.partitions = new TopicPartitionCount(admin, options.topic);
    this.direct = new DirectProducer(admin, {
      topic: options.topic,
      clientId: options.clientId ?? 'billing',
      requestTimeoutMs: FAIL_FAST_REQUEST_TIMEOUT_MS,
    });
    this.windows = new Batcher((windows) => this.produce(windows), {
      lingerMs: options.lingerMs,
      maxInFlight: options.maxInFlight ?? 2,
      maxWeight: options.maxItems ?? 10_000,
      weight: (items) => items.length,
    });
  }

  /** Connects now (a failure is reported, and the next send connects again). */
  async connect(): Promise<void> {
    await this.connected();
    if (!this.direct.routed) await this.direct.readRoute();
  }

  private async connected(): Promise<void> {
    this.connecting ??= this.producer.connect().catch((error) => {
      this.connecting = undefined;
      throw error;
    });
    await this.connecting;
    await this.partitions.current();
  }

  /** Resolves once the log acknowledged every item; rejects if any may not have been written. */
  send(items: readonly T[]): Promise<undefined> {
    return this.windows.submit(items);
  }

  /** Sends the open window now and waits for every produce call in flight. */
  flush(): Promise<void> {
    return this.windows.flush();
  }

  async disconnect(): Promise<void> {
    await this.flush();
    this.direct.close();
    await this.producer.disconnect();
  }

  private async produce(windows: (readonly T[])[]): Promise<undefined[]> {
    const items = windows.length === 1 ? windows[0]! : windows.flat();
    const started = process.hrtime.bigint();
    await this.connected();
    const messages = this.options.toMessages(items, await this.partitions.current());
    const path = await this.direct.send(messages, () =>
      this.producer.send({ topic: this.options.topic, acks: -1, messages }),
    );
    PRODUCE_CALLS[path].inc();
    kafkaProduceDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    kafkaProduceBatchSize.observe(items.length);
    return windows.map(() => undefined);
  }
}
