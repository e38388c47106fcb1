import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

export const KAFKA_TEST_BROKER_BINARY = path.resolve(import.meta.dirname, '../../.cache/kafka-test-broker');

/**
 * A Kafka test broker of one's own (librdkafka's mock cluster in a child process, see
 * deploy/dev-services/kafka-test-broker.c), for tests that stop and start it or inject errors.
 * It keeps its data while down. Topics are also auto-created (4 partitions) on first use.
 */
export interface KafkaTestBroker {
  brokers: string[];
  createTopic(name: string, partitions: number): Promise<void>;
  /** Every broker stops answering (connections refused); data is kept. */
  setDown(): Promise<void>;
  setUp(): Promise<void>;
  /** The next `count` requests with Kafka API key `apiKey` fail with error code `errorCode`. */
  injectErrors(apiKey: number, errorCode: number, count: number): Promise<void>;
  /** Moves the leadership of a partition to broker `brokerId` (numbered from 1). */
  moveLeader(topic: string, partition: number, brokerId: number): Promise<void>;
  /**
   * Freezes the broker (SIGSTOP): connections stay open and nothing answers, until `resume`.
   * Resolves once the process is stopped (the signal is delivered asynchronously).
   */
  pause(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
}

/** Whether the process is stopped by a signal (state T in /proc, Linux). */
function stopped(pid: number | undefined): boolean {
  try {
    return / T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

export async function startKafkaTestBroker(brokerCount = 1): Promise<KafkaTestBroker> {
  const child: ChildProcess = spawn(KAFKA_TEST_BROKER_BINARY, [String(brokerCount)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const nextLine = () => new Promise<string>((resolve) => waiting.push(resolve));

  const first = await Promise.race([
    nextLine(),
    new Promise<string>((_, reject) =>
      child.once('error', (error) =>
        reject(new Error(`cannot start the Kafka test broker (${error.message}); npm test compiles it`)),
      ),
    ),
  ]);
  const bootstrap = /^BOOTSTRAP (\S+)/.exec(first)?.[1];
  if (!bootstrap) throw new Error(`unexpected Kafka test broker output: ${first}`);

  let queue = Promise.resolve();
  const command = (text: string) => {
    const run = queue.then(async () => {
      const answer = nextLine();
      child.stdin!.write(`${text}\n`);
      const line = await answer;
      if (line !== 'OK') throw new Error(`Kafka test broker: ${text}: ${line}`);
    });
    queue = run.catch(() => {});
    return run;
  };

  return {
    brokers: bootstrap.split(','),
    createTopic: (name, partitions) => command(`topic ${name} ${partitions}`),
    setDown: () => command('down'),
    setUp: () => command('up'),
    injectErrors: (apiKey, errorCode, count) => command(`error ${apiKey} ${errorCode} ${count}`),
    moveLeader: (topic, partition, brokerId) => command(`leader ${topic} ${partition} ${brokerId}`),
    async pause() {
      child.kill('SIGSTOP');
      for (let waited = 0; waited < 2000 && !stopped(child.pid); waited += 5) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    resume: () => child.kill('SIGCONT'),
    async stop() {
      child.kill('SIGCONT');
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end('quit\n');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      child.kill('SIGKILL');
    },
  };
}
