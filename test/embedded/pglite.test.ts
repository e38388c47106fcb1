import { chmod, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database, MIGRATIONS_DIR, migrate, startEmbeddedPostgres } from '../../libs/db/index.js';
import { createOrganization } from '../../libs/organizations/index.js';
import { changeSubscription } from '../../libs/subscriptions/index.js';
import { claimDueDeliveries } from '../../libs/webhooks/delivery.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { freePort } from '../helpers/processes.js';
import { roundTripEveryTable } from '../helpers/round-trip.js';

/** The embedded database (PGlite served on a loopback socket) runs the same migrations as Postgres. */
describe('embedded PGlite', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('apply on embedded PGlite through the socket, and every table round-trips', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-'));
    const port = freePort();
    const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port });
    const db = new Database(server.url, { poolSize: 3 });
    cleanups.push(async () => {
      await db.close();
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    const versions = (await readdir(MIGRATIONS_DIR))
      .filter((file) => file.endsWith('.sql'))
      .sort()
      .map((file) => file.replace(/\.sql$/, ''));
    expect(await migrate(db)).toEqual(versions);
    expect(await migrate(db)).toEqual([]);
    const counts = await roundTripEveryTable(db);
    expect(Object.values(counts).every((n) => n === 1)).toBe(true);
    // The dispatcher's claim (per-endpoint turns: LATERAL, FOR UPDATE SKIP LOCKED) runs here too.
    const { rows } = await db.query<{ endpoint_id: string }>(
      'UPDATE webhook_events SET next_attempt_at = now() RETURNING endpoint_id',
    );
    const busy = new Map([[rows[0]!.endpoint_id, 1]]);
    expect(await claimDueDeliveries(db, 10, 60_000, { perEndpoint: 1, busy })).toEqual([]);
    expect(await claimDueDeliveries(db, 10, 60_000, { perEndpoint: 2, busy })).toHaveLength(1);
  });

  it('changes subscriptions on PGlite: shared statements, the version condition, a preview', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-'));
    const port = freePort();
    const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port });
    const db = new Database(server.url, { poolSize: 3 });
    cleanups.push(async () => {
      await db.close();
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    await migrate(db);
    const { id: orgId } = await createOrganization(db, { name: 'Embedded Co' });
    const { seats } = await basicCatalog(db, orgId);
    const customerId = await customerIn(db, orgId);
    const start = new Date('2026-03-01T00:00:00Z');
    const subscriptions = await Promise.all(
      [0, 1, 2].map(() =>
        subscribe(
          db,
          orgId,
          { customer_id: customerId, items: [{ product_id: seats, quantity: 2 }], start_date: start },
          start,
        ),
      ),
    );
    const now = new Date('2026-03-11T00:00:00Z');
    const change = (subscription: (typeof subscriptions)[number], quantity: number, preview = false) =>
      changeSubscription(db, {
        subscriptionId: subscription.id,
        orgId,
        change: { items: [{ id: subscription.items[0]!.id, quantity }], preview },
        now,
      });
    const [first] = subscriptions;
    const preview = await change(first!, 9, true);
    const results = await Promise.all([...subscriptions.map((s, n) => change(s, 3 + n)), change(first!, 7)]);
    expect(results.map((result) => result.subscription.items[0]!.quantity)).toEqual([3, 4, 5, 7]);
    expect(preview.proration_lines.map((line) => line.quantity)).toEqual(['2.0000', '9.0000']);
    const { rows } = await db.query<{ quantity: string }>(
      'SELECT quantity FROM subscription_proration_lines WHERE subscription_id = $1 ORDER BY id',
      [first!.id],
    );
    expect(rows.map((row) => row.quantity)).toEqual(['2.0000', '3.0000', '3.0000', '7.0000']);
  });

  it('refuses a second process on the same embedded data directory', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-'));
    const port = freePort();
    // one made by an older version, open to everyone: closed to others on start
    await mkdir(path.join(dataDir, 'pgdata'));
    await chmod(path.join(dataDir, 'pgdata'), 0o777);
    const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port });
    // secrets and customers' data live in there: owner only
    expect((await stat(path.join(dataDir, 'pgdata'))).mode & 0o777).toBe(0o700);
    cleanups.push(async () => {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    // the lock names this process as the owner; a second server on the directory must refuse
    await expect(startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port: port + 1 })).rejects.toThrow(
      /served by process/,
    );
  });

  it("holds other connections off between one connection's Parse and its Sync", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-'));
    const port = freePort();
    const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port });
    const a = await WireClient.connect(port);
    const b = await WireClient.connect(port);
    cleanups.push(async () => {
      a.close();
      b.close();
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    // A parses a 2-parameter statement; B runs a whole 4-parameter query before A binds. PGlite
    // is one backend: without the hold, A's Bind would meet B's unnamed statement ("bind message
    // supplies 2 parameters, but prepared statement "" requires 4").
    a.send(parse('SELECT $1::int + $2::int AS n'));
    await sleep(50);
    const bDone = b.until('Z');
    b.send(parse('SELECT $1::text || $2::text || $3::text || $4::text AS s'));
    b.send(bind(['a', 'b', 'c', 'd']), execute(), sync());
    await sleep(50);
    const aDone = a.until('Z');
    a.send(bind(['40', '2']), execute(), sync());
    const [fromA, fromB] = await Promise.all([aDone, bDone]);
    expect(fromA.filter((m) => m.type === 'E').map((m) => m.text)).toEqual([]);
    expect(fromB.filter((m) => m.type === 'E').map((m) => m.text)).toEqual([]);
    expect(fromA.find((m) => m.type === 'D')?.text).toContain('42');
    expect(fromB.find((m) => m.type === 'D')?.text).toContain('abcd');
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The frontend protocol's extended-query messages, written by hand to control their timing. */
function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}
const cstring = (text: string) => Buffer.from(`${text}\0`);
const int16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const parse = (sql: string) => message('P', Buffer.concat([cstring(''), cstring(sql), int16(0)]));
const bind = (values: string[]) =>
  message(
    'B',
    Buffer.concat([
      cstring(''),
      cstring(''),
      int16(0),
      int16(values.length),
      ...values.flatMap((value) => {
        const length = Buffer.alloc(4);
        length.writeInt32BE(Buffer.byteLength(value));
        return [length, Buffer.from(value)];
      }),
      int16(0),
    ]),
  );
const execute = () => message('E', Buffer.concat([cstring(''), Buffer.alloc(4)]));
const sync = () => message('S', Buffer.alloc(0));

/** A raw protocol connection: startup (trust), then messages in and backend messages out. */
class WireClient {
  private buffered = Buffer.alloc(0);
  private received: { type: string; text: string }[] = [];
  private waiting:
    | { type: string; resolve: (messages: { type: string; text: string }[]) => void }
    | undefined;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= 5) {
        const length = this.buffered.readInt32BE(1);
        if (this.buffered.length < length + 1) break;
        const type = String.fromCharCode(this.buffered[0]!);
        this.received.push({ type, text: this.buffered.subarray(5, length + 1).toString('latin1') });
        this.buffered = this.buffered.subarray(length + 1);
        if (this.waiting && type === this.waiting.type) {
          const { resolve } = this.waiting;
          this.waiting = undefined;
          resolve(this.received.splice(0));
        }
      }
    });
  }

  static async connect(port: number): Promise<WireClient> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const connection = createConnection({ host: '127.0.0.1', port }, () => resolve(connection));
      connection.once('error', reject);
    });
    const client = new WireClient(socket);
    const ready = client.until('Z');
    const parameters = Buffer.concat([
      cstring('user'),
      cstring('postgres'),
      cstring('database'),
      cstring('postgres'),
      cstring(''),
    ]);
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(parameters.length + 8, 0);
    startup.writeInt32BE(196608, 4);
    socket.write(Buffer.concat([startup, parameters]));
    await ready;
    return client;
  }

  /** Every backend message up to and including the next one of `type`. */
  until(type: string): Promise<{ type: string; text: string }[]> {
    return new Promise((resolve) => {
      this.waiting = { type, resolve };
    });
  }

  send(...messages: Buffer[]): void {
    this.socket.write(Buffer.concat(messages));
  }

  close(): void {
    this.socket.destroy();
  }
}
