import net from 'node:net';
import type { Admin, Message } from 'kafkajs';
import { produceRequestBytes } from './produce-encoder.js';

/*
 * Produce requests written by us straight to each partition's leader, over sockets of our own.
 *
 * Why: a kafkajs `producer.send` of one message costs about 230 µs of CPU (its request queue,
 * retrier, partitioner, promise chains and response decoder), against about 25 µs for a round trip
 * over a plain socket (bench/RESULTS.md). Ingest makes one produce call per flush, so at the rates
 * most callers send (a flush per request or two) that call was most of an event's cost.
 *
 * What it does, and leaves to kafkajs: only `acks: -1` Produce v3 requests (Kafka 0.11 and later)
 * of what produce-encoder.ts encodes, on a plain TCP connection (no TLS or SASL is configured).
 * The route (each partition's leader, each broker's address) comes from kafkajs' admin client,
 * through its public API. While the route is not known, or when a broker refuses a request with a
 * retriable error code, or a connection fails, the call goes through kafkajs' own producer, which
 * fetches metadata, creates topics on first use and retries; the route is read again after. A
 * request that gets no answer within `requestTimeoutMs` fails with an outage error (as kafkajs'
 * request timeout does) and its connection is dropped, so a late answer cannot be taken for
 * another request's. As with kafkajs' retries, a request that failed may still have been written:
 * the sinks keep one row per event identity.
 */

const PRODUCE_API_KEY = 0;
const PRODUCE_API_VERSION = 3;
/** How long the broker may wait for the in-sync replicas (kafkajs' default for `send`). */
const BROKER_ACK_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 1000;
/** The route is read again this often (leaders move, partitions are added) and after any failure. */
const ROUTE_REFRESH_MS = 30_000;
/** While the route is unknown, it is read again after a send at most this often. */
const UNROUTED_RETRY_MS = 1000;

/** A produce request the broker did not answer in time: the log counts as unreachable. */
export class KafkaProduceTimeout extends Error {
  override readonly name = 'KafkaProduceTimeout';
}

/**
 * The produce errors Kafka calls retriable (a later attempt may succeed): corrupt message, unknown
 * topic or partition, leader not available, not the leader, request timed out, network exception,
 * not enough replicas (before and after append), storage error.
 */
const RETRIABLE_PRODUCE_ERRORS: ReadonlySet<number> = new Set([2, 3, 5, 6, 7, 13, 19, 20, 56]);

/** A broker's refusal of a produce request, by Kafka error code. */
export class KafkaProduceRefused extends Error {
  override readonly name = 'KafkaProduceRefused';
  readonly retriable: boolean;
  constructor(
    readonly errorCode: number,
    readonly topic: string,
    readonly partition: number,
  ) {
    super(`Kafka refused a produce request for ${topic}[${partition}] with error code ${errorCode}`);
    this.retriable = RETRIABLE_PRODUCE_ERRORS.has(errorCode);
  }
}

export interface Route {
  /** Partition ids of the topic whose leader is known, in order. */
  partitions: number[];
  /** Leader node id by partition id. */
  leaders: Map<number, number>;
  brokers: Map<number, { host: string; port: number }>;
}

/**
 * The route from the topic's metadata: each partition with a leader (node ids start at 0; -1 means
 * none), in partition order. Undefined when no partition has a leader.
 */
export function routeOf(
  partitions: readonly { partitionId: number; leader: number }[],
  brokers: readonly { nodeId: number; host: string; port: number }[],
): Route | undefined {
  const leaders = new Map<number, number>();
  // a leader is enough (a partition may report a replica down); a moved one refuses, see send
  for (const { partitionId, leader } of partitions) {
    if (leader >= 0) leaders.set(partitionId, leader);
  }
  if (!leaders.size) return undefined;
  return {
    partitions: [...leaders.keys()].sort((a, b) => a - b),
    leaders,
    brokers: new Map(brokers.map(({ nodeId, host, port }) => [nodeId, { host, port }])),
  };
}

/** Which way a produce call went: straight to the leaders, or through kafkajs' producer. */
export type ProducePath = 'leader' | 'kafkajs';

export interface DirectProducerOptions {
  topic: string;
  clientId: string;
  requestTimeoutMs: number;
}

export class DirectProducer {
  private route: Route | undefined;
  private routeReadAt = Number.NEGATIVE_INFINITY;
  private readingRoute: Promise<void> | undefined;
  private readonly connections = new Map<number, BrokerConnection>();
  private readonly clientId: Buffer;
  /** Where unkeyed messages go next: round robin from a random start, as kafkajs' partitioner. */
  private nextPartition = Math.floor(Math.random() * 2 ** 30);
  private closed = false;

  constructor(
    private readonly admin: Admin,
    private readonly options: DirectProducerOptions,
  ) {
    this.clientId = Buffer.from(options.clientId);
  }

  /** Reads the route now; a failure leaves it unknown (sends go through kafkajs meanwhile). */
  async readRoute(): Promise<void> {
    this.readingRoute ??= this.fetchRoute().finally(() => {
      this.readingRoute = undefined;
    });
    await this.readingRoute;
  }

  /** Whether sends currently go straight to the leaders (for tests and metrics). */
  get routed(): boolean {
    return this.route !== undefined;
  }

  /**
   * Writes `messages` with acks from every in-sync replica; resolves once every one is
   * acknowledged. `viaKafkajs` sends them with kafkajs' producer: used when the route is unknown,
   * and for the whole call again when a broker refuses or a connection fails. Answers the path
   * that wrote them.
   */
  async send(messages: Message[], viaKafkajs: () => Promise<unknown>): Promise<ProducePath> {
    if (Date.now() - this.routeReadAt >= ROUTE_REFRESH_MS) void this.readRoute();
    // once closed, no connection is opened again: what is still sent goes through kafkajs
    const route = this.closed ? undefined : this.route;
    const requests = route && this.requestsOrNone(route, messages);
    if (!requests) {
      await viaKafkajs();
      if (!this.route && Date.now() - this.routeReadAt >= UNROUTED_RETRY_MS) void this.readRoute();
      return 'kafkajs';
    }
    try {
      await Promise.all(requests.map(({ leader, body }) => this.connectionTo(route, leader).request(body)));
      return 'leader';
    } catch (error) {
      if (error instanceof KafkaProduceTimeout || this.closed) throw error;
      if (error instanceof KafkaProduceRefused && !error.retriable) throw error;
      // Refused for now (a leader moved, replicas are behind) or a connection failed: kafkajs finds its way
      this.forgetRoute();
      try {
        await viaKafkajs();
      } finally {
        void this.readRoute();
      }
      return 'kafkajs';
    }
  }

  close(): void {
    this.closed = true;
    for (const connection of this.connections.values()) connection.destroy(new Error('producer closed'));
    this.connections.clear();
  }

  /** requestsOf, or undefined when a message cannot be encoded here: kafkajs writes it, or says why not. */
  private requestsOrNone(route: Route, messages: Message[]): { leader: number; body: Buffer }[] | undefined {
    try {
      return this.requestsOf(route, messages);
    } catch {
      return undefined;
    }
  }

  /** One request body per leader, or undefined when a message's partition has no known leader. */
  private requestsOf(route: Route, messages: Message[]): { leader: number; body: Buffer }[] | undefined {
    const byLeader = new Map<number, Map<number, Message[]>>();
    for (const message of messages) {
      const partition = message.partition ?? this.partitionFor(route, message);
      const leader = partition === undefined ? undefined : route.leaders.get(partition);
      if (partition === undefined || leader === undefined) return undefined;
      let partitions = byLeader.get(leader);
      if (!partitions) {
        partitions = new Map();
        byLeader.set(leader, partitions);
      }
      const list = partitions.get(partition);
      if (list) list.push(message);
      else partitions.set(partition, [message]);
    }
    const requests: { leader: number; body: Buffer }[] = [];
    for (const [leader, partitions] of byLeader) {
      const body = produceRequestBytes({
        acks: -1,
        timeout: BROKER_ACK_TIMEOUT_MS,
        topicData: [
          {
            topic: this.options.topic,
            partitions: [...partitions].map(([partition, list]) => ({ partition, messages: list })),
          },
        ],
      });
      if (!body) return undefined;
      requests.push({ leader, body });
    }
    return requests;
  }

  /** Keyed messages go where kafkajs would put them; a producer that keys sets `partition` itself. */
  private partitionFor(route: Route, message: Message): number | undefined {
    if (message.key != null) return undefined;
    const partitions = route.partitions;
    if (!partitions.length) return undefined;
    this.nextPartition = (this.nextPartition + 1) % 2 ** 30;
    return partitions[this.nextPartition % partitions.length];
  }

  private connectionTo(route: Route, leader: number): BrokerConnection {
    let connection = this.connections.get(leader);
    if (!connection) {
      const address = route.brokers.get(leader);
      if (!address) throw new Error(`no address for Kafka broker ${leader}`);
      connection = new BrokerConnection(address, this.clientId, this.options.requestTimeoutMs, () => {
        if (this.connections.get(leader) === connection) this.connections.delete(leader);
      });
      this.connections.set(leader, connection);
    }
    return connection;
  }

  private forgetRoute(): void {
    this.route = undefined;
    this.routeReadAt = Number.NEGATIVE_INFINITY;
  }

  private async fetchRoute(): Promise<void> {
    this.routeReadAt = Date.now();
    try {
      const [{ topics }, { brokers }] = await Promise.all([
        this.admin.fetchTopicMetadata({ topics: [this.options.topic] }),
        this.admin.describeCluster(),
      ]);
      this.route = routeOf(topics[0]?.partitions ?? [], brokers);
    } catch {
      // The topic is not there yet or the cluster does not answer: kafkajs' producer takes the
      // sends (and creates the topic, or reports the outage) until a later read succeeds.
      this.route = undefined;
    }
  }
}

interface Pending {
  correlationId: number;
  resolve: () => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One socket to one broker: requests pipelined, each answer matched to the oldest request by its
 * correlation id. Exported for its tests; not part of libs/kafka's surface.
 */
export class BrokerConnection {
  private readonly socket: net.Socket;
  /** Requests awaiting their answer, in the order sent: a broker answers a connection in that order. */
  private pending = new InOrderQueue<Pending>();
  private nextCorrelationId = 1;
  private readonly frames = new AnswerFrames();
  private failed: Error | undefined;

  constructor(
    address: { host: string; port: number },
    private readonly clientId: Buffer,
    private readonly requestTimeoutMs: number,
    private readonly onClosed: () => void,
  ) {
    this.socket = net.connect({ host: address.host, port: address.port, noDelay: true });
    this.socket.setTimeout(CONNECT_TIMEOUT_MS, () => {
      this.destroy(Object.assign(new Error('Kafka broker connection timed out'), { code: 'ETIMEDOUT' }));
    });
    this.socket.once('connect', () => this.socket.setTimeout(0));
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
    this.socket.on('error', (error) => this.destroy(error));
    this.socket.on('close', () => this.destroy(new Error('Kafka broker connection closed')));
  }

  request(body: Buffer): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const correlationId = this.nextCorrelationId;
    this.nextCorrelationId = (this.nextCorrelationId % 0x7fffffff) + 1;
    const header = Buffer.allocUnsafe(4 + 2 + 2 + 4 + 2 + this.clientId.length);
    let at = header.writeInt32BE(header.length - 4 + body.length, 0);
    at = header.writeInt16BE(PRODUCE_API_KEY, at);
    at = header.writeInt16BE(PRODUCE_API_VERSION, at);
    at = header.writeInt32BE(correlationId, at);
    at = header.writeInt16BE(this.clientId.length, at);
    this.clientId.copy(header, at);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.destroy(
          new KafkaProduceTimeout(
            `Kafka did not acknowledge a produce request within ${this.requestTimeoutMs} ms`,
          ),
        );
      }, this.requestTimeoutMs);
      this.pending.push({ correlationId, resolve, reject, timer });
      this.socket.cork();
      this.socket.write(header);
      this.socket.write(body);
      this.socket.uncork();
    });
  }

  /** Fails every request in flight with `error`; the connection is not used again. */
  destroy(error: Error): void {
    if (this.failed) return;
    this.failed = error;
    this.socket.destroy();
    const waiting = this.pending.takeAll();
    for (const { reject, timer } of waiting) {
      clearTimeout(timer);
      reject(error);
    }
    this.onClosed();
  }

  private receive(chunk: Buffer): void {
    let answers: Buffer[];
    try {
      answers = this.frames.push(chunk);
      for (const answer of answers) this.answer(answer);
    } catch {
      // not a Produce v3 answer: nothing more on this connection can be trusted
      this.destroy(new Error('Kafka broker sent an answer that could not be read'));
    }
  }

  private answer(response: Buffer): void {
    const correlationId = response.readInt32BE(0);
    const pending = this.pending.first;
    // a request given up on took its connection with it: an answer out of order means the stream is lost
    if (pending?.correlationId !== correlationId) {
      throw new Error(`Kafka answered correlation id ${correlationId}, which is not the oldest request's`);
    }
    const refusal = produceRefusal(response);
    this.pending.shift();
    clearTimeout(pending.timer);
    if (refusal) pending.reject(refusal);
    else pending.resolve();
  }
}

/**
 * A first-in first-out queue on an array and a head index. Not a Map or Set: a long-lived one
 * churned per request keeps everything that passes through it alive until a full collection
 * (docs/decisions.md, "No long-lived Map or Set churned per request"). A taken slot is cleared, and
 * the array starts over when it empties or its taken half is large, so it never grows without bound.
 */
export class InOrderQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  get first(): T | undefined {
    return this.items[this.head];
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Empties the queue, returning what it held in order. */
  takeAll(): T[] {
    const all = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return all;
  }
}

/** Taken slots an InOrderQueue carries at most before it copies its waiting items to a new array. */
const COMPACT_AFTER = 1024;

/** Splits a connection's bytes into Kafka answers, each sent after its length (4 bytes). */
export class AnswerFrames {
  private buffered: Buffer | undefined;

  /** The answers `chunk` completes, in order; the bytes of an unfinished one are kept. */
  push(chunk: Buffer): Buffer[] {
    let data = this.buffered ? Buffer.concat([this.buffered, chunk]) : chunk;
    const answers: Buffer[] = [];
    while (data.length >= 4) {
      const size = data.readInt32BE(0);
      if (size < 0) throw new Error(`Kafka answer of negative length ${size}`);
      if (data.length < 4 + size) break;
      answers.push(data.subarray(4, 4 + size));
      data = data.subarray(4 + size);
    }
    this.buffered = data.length ? data : undefined;
    return answers;
  }
}

/** The first partition error of a Produce v3 response (after its correlation id), if any. */
export function produceRefusal(response: Buffer): KafkaProduceRefused | undefined {
  let at = 4;
  const topics = response.readInt32BE(at);
  at += 4;
  for (let t = 0; t < topics; t++) {
    const nameLength = response.readInt16BE(at);
    const topic = response.toString('utf8', at + 2, at + 2 + nameLength);
    at += 2 + nameLength;
    const partitions = response.readInt32BE(at);
    at += 4;
    for (let p = 0; p < partitions; p++) {
      const partition = response.readInt32BE(at);
      const errorCode = response.readInt16BE(at + 4);
      if (errorCode !== 0) return new KafkaProduceRefused(errorCode, topic, partition);
      at += 4 + 2 + 8 + 8; // partition, error code, base offset, log append time
    }
  }
  return undefined;
}
