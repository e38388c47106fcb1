import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningSecret, signStandard, type WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { PROJECT_ROOT } from '../helpers/processes.js';
import { freeTcpPort } from '../helpers/redis-server.js';
import { emit, eventually, sleep, startDispatcher, storedEvents } from './support.js';

/** The receiver the README shows, taken from the README itself, so the two cannot drift apart. */
async function readmeReceiverSource(): Promise<string> {
  const readme = await readFile(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
  const block = /readme-receiver\.test\.ts runs this block[^\n]*\n```js\n([\s\S]*?)\n```/.exec(readme);
  if (!block) throw new Error('README.md has no receiver block under the readme-receiver.test.ts marker');
  return block[1]!;
}

interface RunningReceiver {
  url: string;
  lines: () => string[];
  stop(): Promise<void>;
}

describe("the README's webhook receiver", () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher;
  // inside the project, so that the receiver's `import 'standardwebhooks'` resolves
  const directory = path.join(PROJECT_ROOT, '.cache', `readme-receiver-${process.pid}`);
  const file = path.join(directory, 'receiver.mjs');
  const running: RunningReceiver[] = [];

  beforeAll(async () => {
    api = await startTestApi();
    dispatcher = startDispatcher(api.platform.db);
    await mkdir(directory, { recursive: true });
    await writeFile(file, await readmeReceiverSource());
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(running.map((receiver) => receiver.stop()));
    await api?.close();
    await rm(directory, { recursive: true, force: true });
  });

  async function startReadmeReceiver(secret: string, scheme?: string): Promise<RunningReceiver> {
    const port = await freeTcpPort();
    const child: ChildProcess = spawn(process.execPath, [file], {
      cwd: directory,
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port), WEBHOOK_SCHEME: scheme },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (data) => (stdout += data));
    child.stderr!.on('data', (data) => (stderr += data));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await eventually(
      () =>
        new Promise<boolean>((resolve) => {
          if (child.exitCode !== null) throw new Error(`the README receiver exited: ${stderr}`);
          const socket = connect(port, '127.0.0.1', () => {
            socket.end();
            resolve(true);
          });
          socket.once('error', () => resolve(false));
        }),
      (listening) => listening,
    );
    const receiver = {
      url: `http://127.0.0.1:${port}/hooks`,
      lines: () => stdout.split('\n').filter(Boolean),
      async stop() {
        if (child.exitCode === null) child.kill('SIGTERM');
        await exited;
      },
    };
    running.push(receiver);
    return receiver;
  }

  for (const scheme of [undefined, 'x-service-signature']) {
    it(`accepts real deliveries and refuses forged ones (${scheme ?? 'standard-webhooks, the default'})`, async () => {
      const org = await createTestOrg(api.platform.db);
      const placeholder = await api.request({
        method: 'POST',
        path: '/webhook-endpoints',
        key: org.apiKey,
        payload: { url: 'https://hooks.example.com/placeholder', events: ['invoice.*', 'payment.*'] },
      });
      const endpoint = placeholder.json().data as { id: string; secret: string };
      const receiver = await startReadmeReceiver(endpoint.secret, scheme);
      await api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${endpoint.id}`,
        key: org.apiKey,
        payload: { url: receiver.url },
      });
      await emit(api.platform.db, org.orgId, 'invoice.posted');
      await emit(api.platform.db, org.orgId, 'payment.succeeded');
      const events = await eventually(
        () => storedEvents(api.platform.db, endpoint.id),
        (rows) => rows.length === 2 && rows.every((row) => row.status === 'SUCCESS'),
      );
      for (const event of events) expect(event.last_response_code).toBe(204);
      expect(receiver.lines().sort()).toEqual(events.map((e) => `${e.event_type} ${e.id}`).sort());

      // a request signed with another secret, or tampered with, is refused
      const [event] = events;
      const timestamp = Math.floor(Date.now() / 1000);
      const forged = (secret: string, body: string) =>
        fetch(receiver.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': event!.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signStandard(secret, { id: event!.id, timestamp, body }),
            'x-service-signature': `sha256=${'0'.repeat(64)}`,
          },
          body,
        });
      expect((await forged(generateSigningSecret(), event!.payload)).status).toBe(401);
      if (!scheme) {
        // correctly signed: a duplicate of a handled event is acknowledged, not processed again
        expect((await forged(endpoint.secret, event!.payload)).status).toBe(204);
        const tampered = await fetch(receiver.url, {
          method: 'POST',
          headers: {
            'webhook-id': event!.id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signStandard(endpoint.secret, {
              id: event!.id,
              timestamp,
              body: event!.payload,
            }),
          },
          body: event!.payload.replace('"type":"', '"type":"x'),
        });
        expect(tampered.status).toBe(401);
      }
      await sleep(100);
      expect(receiver.lines()).toHaveLength(2);
    });
  }
});
