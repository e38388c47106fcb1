import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BrokerConnection } from './direct-producer.js';

/**
 * A broker that answers Produce requests with an empty Produce v3 answer, in the order `order`
 * gives for each pair of requests it receives (the real broker always answers in the order sent).
 */
async function fakeBroker(order: 'as sent' | 'reversed') {
  const server = net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    const ids: number[] = [];
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
        const size = buffered.readInt32BE(0);
        // after the size: api key (2), api version (2), correlation id (4)
        ids.push(buffered.readInt32BE(8));
        buffered = buffered.subarray(4 + size);
      }
      if (ids.length < 2) return;
      const answered = ids.splice(0, 2);
      if (order === 'reversed') answered.reverse();
      for (const id of answered) {
        const answer = Buffer.alloc(4 + 12);
        answer.writeInt32BE(12, 0); // length
        answer.writeInt32BE(id, 4); // correlation id
        answer.writeInt32BE(0, 8); // no topics
        answer.writeInt32BE(0, 12); // throttle time
        socket.write(answer);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port };
}

const servers: net.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

describe('BrokerConnection', () => {
  it('settles pipelined requests answered in the order sent, each once', async () => {
    const closed = vi.fn();
    const connection = new BrokerConnection(await fakeBroker('as sent'), Buffer.from('test'), 5000, closed);
    await expect(
      Promise.all([connection.request(Buffer.from('one')), connection.request(Buffer.from('two'))]),
    ).resolves.toEqual([undefined, undefined]);
    // a third and fourth on the same connection: the queue of requests started over correctly
    await expect(
      Promise.all([connection.request(Buffer.from('three')), connection.request(Buffer.from('four'))]),
    ).resolves.toEqual([undefined, undefined]);
    expect(closed).not.toHaveBeenCalled();
    connection.destroy(new Error('done'));
  });

  it('wraps its correlation ids from the largest int32 back to 1', async () => {
    const closed = vi.fn();
    const connection = new BrokerConnection(await fakeBroker('as sent'), Buffer.from('test'), 5000, closed);
    // as after 2^31 - 2 requests on one connection (a long-lived one at ingest's rates)
    (connection as unknown as { nextCorrelationId: number }).nextCorrelationId = 0x7fffffff;
    await expect(
      Promise.all([connection.request(Buffer.from('last')), connection.request(Buffer.from('wrapped'))]),
    ).resolves.toEqual([undefined, undefined]);
    expect((connection as unknown as { nextCorrelationId: number }).nextCorrelationId).toBe(2);
    expect(closed).not.toHaveBeenCalled();
    connection.destroy(new Error('done'));
  });

  it("fails every request, and drops the connection, when an answer is not the oldest request's", async () => {
    const closed = vi.fn();
    const connection = new BrokerConnection(await fakeBroker('reversed'), Buffer.from('test'), 5000, closed);
    const outcomes = await Promise.allSettled([
      connection.request(Buffer.from('one')),
      connection.request(Buffer.from('two')),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect((outcomes[0] as PromiseRejectedResult).reason.message).toBe(
      'Kafka broker sent an answer that could not be read',
    );
    expect(closed).toHaveBeenCalledOnce();
    await expect(connection.request(Buffer.from('after'))).rejects.toThrow('could not be read');
  });

  it('keeps its first failure, and reports its close once, when its socket closes after', async () => {
    const closed = vi.fn();
    const connection = new BrokerConnection(await fakeBroker('as sent'), Buffer.from('test'), 5000, closed);
    await expect(
      Promise.all([connection.request(Buffer.from('one')), connection.request(Buffer.from('two'))]),
    ).resolves.toEqual([undefined, undefined]);
    const socket = (connection as unknown as { socket: net.Socket }).socket;
    const socketClosed = new Promise((resolve) => socket.once('close', resolve));
    connection.destroy(new Error('first failure'));
    await socketClosed;
    expect(closed).toHaveBeenCalledOnce();
    await expect(connection.request(Buffer.from('after'))).rejects.toThrow('first failure');
  });
});
