import { describe, expect, it } from 'vitest';
import { type Admin, createKafka, type Kafka } from '../../libs/kafka/index.js';
import { encodeLogMessages, KafkaSinkRunner, type UsageSink } from '../../libs/usage/index.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { assignmentListener, eventually } from './support.js';

/*
 * A sink runner given no admin client (KafkaSinkOptions.admin) reads the topic's partitions through
 * one of its own: made and connected once, at the first assignment that needs it, used for every
 * later one, and disconnected when the runner stops. A sink that is not told its assignment needs
 * none. Real broker; the Kafka client is the real one, its admin() calls noted.
 */

interface NotedAdmin {
  admin: Admin;
  connects: number;
  disconnects: number;
}

/** The real client of the shared test broker, noting each admin client made through it. */
function notingAdmins(clientId: string): { kafka: Kafka; admins: NotedAdmin[] } {
  const real = createKafka({ brokers: testServices().kafkaBrokers, clientId }, runLogger('sinks'), 'patient');
  const admins: NotedAdmin[] = [];
  const kafka = new Proxy(real, {
    get(target, property, receiver) {
      if (property !== 'admin') return Reflect.get(target, property, receiver);
      return (...args: Parameters<Kafka['admin']>) => {
        const noted: NotedAdmin = { admin: target.admin(...args), connects: 0, disconnects: 0 };
        noted.admin.on(noted.admin.events.CONNECT, () => noted.connects++);
        noted.admin.on(noted.admin.events.DISCONNECT, () => noted.disconnects++);
        admins.push(noted);
        return noted.admin;
      };
    },
  });
  return { kafka, admins };
}

async function produceOne(topic: string, key: string): Promise<void> {
  const producer = createKafka({
    brokers: testServices().kafkaBrokers,
    clientId: 'own-admin-test',
  }).producer();
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: encodeLogMessages([
        {
          id: crypto.randomUUID(),
          orgId: 1,
          subscriptionItemId: 10,
          idempotencyKey: key,
          quantity: '1',
          occurredAtMs: Date.UTC(2026, 9, 15),
          recordedAtMs: Date.UTC(2026, 9, 15),
        },
      ]),
    });
  } finally {
    await producer.disconnect();
  }
}

function runner(
  kafka: Kafka,
  topic: string,
  groupId: string,
  sink: UsageSink,
  admin?: Admin,
): KafkaSinkRunner {
  return new KafkaSinkRunner({
    kafka,
    topic,
    groupId,
    sink,
    batchSize: 100,
    flushMs: 50,
    log: runLogger('sinks'),
    ...(admin ? { admin } : {}),
  });
}

describe('KafkaSinkRunner without a shared admin client', () => {
  it('makes one admin client of its own, connected, for every assignment, and disconnects it at stop', {
    timeout: 90_000,
  }, async () => {
    const topic = uniqueName('usage_own_admin');
    const groupId = `${topic}-listener`;
    await produceOne(topic, 'own-admin-1');
    const { kafka, admins } = notingAdmins('own-admin-test');
    const first = assignmentListener();
    const one = runner(kafka, topic, groupId, first.sink);
    // the second member reads the partitions through a client of the test's, not noted
    const shared = createKafka({ brokers: testServices().kafkaBrokers, clientId: 'own-admin-test' }).admin();
    await shared.connect();
    const second = assignmentListener();
    const two = runner(kafka, topic, groupId, second.sink, shared);
    try {
      await one.start();
      await eventually(async () => expect(first.calls.at(-1)).toBe(true), 20_000);
      expect(admins).toHaveLength(1);
      expect(admins[0]!.connects).toBe(1);
      // a second member joins and leaves: two more assignments, the last one the whole log again
      await two.start();
      await eventually(async () => expect(first.calls.at(-1)).toBe(false), 30_000);
      await two.stop();
      await eventually(async () => expect(first.calls.at(-1)).toBe(true), 30_000);
      expect(admins).toHaveLength(1);
      expect(admins[0]!).toMatchObject({ connects: 1, disconnects: 0 });
      await one.stop();
      expect(admins[0]!).toMatchObject({ connects: 1, disconnects: 1 });
    } finally {
      await two.stop();
      await one.stop();
      await shared.disconnect();
    }
  });

  it('a sink not told its assignment needs no admin client: the runner makes none', {
    timeout: 60_000,
  }, async () => {
    const topic = uniqueName('usage_no_admin');
    await produceOne(topic, 'no-admin-1');
    const { kafka, admins } = notingAdmins('own-admin-test');
    const written: string[] = [];
    const one = runner(kafka, topic, `${topic}-writer`, {
      name: 'writer',
      write: async (events) => {
        written.push(...events.map((event) => event.idempotencyKey));
      },
      writeVoids: async () => {},
    });
    try {
      await one.start();
      await eventually(async () => expect(written).toEqual(['no-admin-1']), 20_000);
    } finally {
      await one.stop();
    }
    expect(admins).toHaveLength(0);
  });
});
