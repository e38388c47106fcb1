/**
 * A load at a fixed rate, paced evenly: request k is due at start + k / rate, whatever the answers
 * (an open model, as wrk2 runs it). autocannon's own `overallRate` lets each connection send as
 * fast as it can until it has made its share of the second, then wait for the next second: at
 * 2,000 requests/s over 50 connections that is a burst at full speed at the top of each second and
 * silence after, which is a saturated server with pauses, not the thin event-loop turns of clients
 * that send a little apart. Here a 1 ms ticker sends what has come due on idle keep-alive
 * connections (HTTP/1.1, no pipelining), and a request's latency counts from when it was due, so a
 * server that falls behind is charged for the wait (no coordinated omission).
 * Bench only.
 */
import { connect, type Socket } from 'node:net';
import { LatencyTimeline, type SecondOfLoad } from '../support.js';

export interface PacedLoadResult {
  /** Requests answered, by status code (0: the connection failed). */
  statuses: Record<number, number>;
  answered: number;
  /** Requests that were due but never sent before the end (no idle connection in time). */
  unsent: number;
  /** Seconds from the first due request to the last answer. */
  seconds: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** Per second of the run, by when each request was due. */
  timeline: SecondOfLoad[];
}

interface Connection {
  socket: Socket;
  busy: boolean;
  /** When the request on it was due (performance.now()). */
  dueAt: number;
  pending: Buffer;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/**
 * Sends `rate` requests a second for `seconds` to 127.0.0.1:`port` over `connections` connections,
 * each request's bytes from `next()`, then waits (at most `drainMs`) for the answers in flight.
 */
export async function pacedLoad(options: {
  port: number;
  rate: number;
  seconds: number;
  connections: number;
  next: () => Buffer;
  drainMs?: number;
}): Promise<PacedLoadResult> {
  const { rate, seconds } = options;
  const total = Math.max(1, Math.round(rate * seconds));
  const statuses: Record<number, number> = {};
  const latencies: number[] = [];
  const timeline = new LatencyTimeline();
  let started = 0;
  let answered = 0;
  let lastAnswerAt = 0;
  const idle: Connection[] = [];
  const connections: Connection[] = [];
  let wakeDrain: (() => void) | undefined;

  const finish = (connection: Connection, status: number) => {
    const now = performance.now();
    latencies.push(now - connection.dueAt);
    timeline.add(connection.dueAt - started, now - connection.dueAt);
    statuses[status] = (statuses[status] ?? 0) + 1;
    answered++;
    lastAnswerAt = now;
    connection.busy = false;
    idle.push(connection);
    if (answered >= total) wakeDrain?.();
  };

  for (let i = 0; i < options.connections; i++) {
    const socket = connect({ host: '127.0.0.1', port: options.port, noDelay: true });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const connection: Connection = { socket, busy: false, dueAt: 0, pending: Buffer.alloc(0) };
    socket.on('data', (chunk: Buffer) => {
      connection.pending = connection.pending.length ? Buffer.concat([connection.pending, chunk]) : chunk;
      const status = completeResponse(connection.pending);
      if (status === undefined) return;
      connection.pending = Buffer.alloc(0);
      finish(connection, status);
    });
    socket.on('error', () => {
      if (connection.busy) finish(connection, 0);
    });
    connections.push(connection);
    idle.push(connection);
  }

  started = performance.now();
  let sent = 0;
  let unsent = 0;
  await new Promise<void>((resolve) => {
    const ticker = setInterval(() => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - started) / 1000) * rate) + 1);
      while (sent < due && idle.length) {
        const connection = idle.pop()!;
        connection.busy = true;
        // due time of this request, not now: waiting for a free connection counts as latency
        connection.dueAt = started + (sent / rate) * 1000;
        sent++;
        connection.socket.write(options.next());
      }
      if (sent >= total || now - started > seconds * 1000 + 1000) {
        clearInterval(ticker);
        unsent = total - sent;
        resolve();
      }
    }, 1);
  });
  if (answered < sent) {
    await new Promise<void>((resolve) => {
      wakeDrain = resolve;
      setTimeout(resolve, options.drainMs ?? 30_000);
      if (answered >= sent) resolve();
    });
  }
  for (const connection of connections) connection.socket.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies.length
      ? round(latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]!)
      : 0;
  return {
    statuses,
    answered,
    unsent,
    seconds: round(((lastAnswerAt || performance.now()) - started) / 1000),
    latencyMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
    timeline: timeline.summary(),
  };
}

/** The status of the response `bytes` hold whole (status line, headers, Content-Length body), or undefined. */
function completeResponse(bytes: Buffer): number | undefined {
  const headerEnd = bytes.indexOf(HEADER_END);
  if (headerEnd < 0) return undefined;
  const head = bytes.toString('latin1', 0, headerEnd);
  const status = Number(head.slice(9, 12));
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!length) throw new Error(`a response without Content-Length: ${head.split('\r\n')[0]}`);
  return bytes.length >= headerEnd + 4 + Number(length[1]) ? status : undefined;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
