import { type Kafka, type Message, Partitioners, type Producer } from 'kafkajs';
import { Batcher } from '../batching/index.js';
import { kafkaProduceBatchSize, kafkaProduceDuration } from '../observability/index.js';

/**
 * Gathers the messages of many concurrent callers into one produce call: the first `send` opens a
 * window of `lingerMs`, every `send` during it joins, and the window goes out as one request with
 * `acks: -1` (every in-sync replica). Each caller's promise settles with its window, so a caller
 * knows exactly whether its messages are durable.
 */
export class LingeringProducer {
  private readonly producer: Producer;
  private readonly windows: Batcher<Message[], void>;
  private connecting: Promise<void> | undefined;

  constructor(
    kafka: Kafka,
    private readonly options: { topic: string; lingerMs: number; maxBatchMessages?: number },
  ) {
    this.producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: true,
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 2 },
    });
    this.windows = new Batcher((windows) => this.produce(windows), {
      lingerMs: options.lingerMs,
      maxWeight: options.maxBatchMessages ?? 10_000,
      weight: (messages) => messages.length,
    });
  }

  /** Connects now (a failure is reported, and the next send connects again). */
  async connect(): Promise<void> {
    this.connecting ??= this.producer.connect().catch((error) => {
      this.connecting = undefined;
      throw error;
    });
    await this.connecting;
  }

  /** Resolves once the log acknowledged every message; rejects if any may not have been written. */
  send(messages: Message[]): Promise<void> {
    return this.windows.submit(messages);
  }

  /** Sends the open window now and waits for every produce call in flight. */
  flush(): Promise<void> {
    return this.windows.flush();
  }

  async disconnect(): Promise<void> {
    await this.flush();
    await this.producer.disconnect();
  }

  private async produce(windows: Message[][]): Promise<undefined[]> {
    const messages = windows.length === 1 ? windows[0]! : windows.flat();
    const started = process.hrtime.bigint();
    await this.connect();
    await this.producer.send({ topic: this.options.topic, acks: -1, messages });
    kafkaProduceDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    kafkaProduceBatchSize.observe(messages.length);
    return windows.map(() => undefined);
  }
}
