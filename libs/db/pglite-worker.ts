/**
 * The embedded database's own thread (started by embedded.ts): PGlite, its socket server and the
 * queue of its one backend live here, so the WASM backend executes statements while the process's
 * main thread serves HTTP, instead of holding that thread for every statement
 * (docs/decisions.md, "The embedded database runs on a thread of its own").
 *
 * Messages from the main thread: `query` (one autocommit statement of the process itself, the
 * direct path of pglite-socket-adapter.ts) and `stop`. Each query is answered with its rows, or
 * with its error's fields; a reply is posted only after PGlite has committed the statement.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { servePglite } from './pglite-socket-adapter.js';

export interface PgliteWorkerData {
  directory: string;
  host: string;
  port: number;
  maxConnections: number;
}

export type ToWorker =
  | { type: 'query'; id: number; text: string; values: unknown[] | undefined }
  | { type: 'stop' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'failed'; error: ErrorFields }
  | { type: 'result'; id: number; rows: unknown[]; rowCount: number }
  | { type: 'error'; id: number; error: ErrorFields }
  | { type: 'stopped'; error?: ErrorFields };

/** An error's message and own fields (a database error's code, detail, constraint...). */
export type ErrorFields = { message: string } & Record<string, unknown>;

export function errorFields(error: unknown): ErrorFields {
  if (!(error instanceof Error)) return { message: String(error) };
  const fields: ErrorFields = { message: error.message };
  for (const [key, value] of Object.entries(error)) {
    if (value === undefined || typeof value === 'function' || typeof value === 'object') continue;
    fields[key] = value;
  }
  return fields;
}

if (parentPort) {
  const port = parentPort;
  const post = (message: FromWorker) => port.postMessage(message);
  const { directory, host, port: listenPort, maxConnections } = workerData as PgliteWorkerData;
  try {
    const db = await PGlite.create({ dataDir: directory });
    const server = await servePglite(db, { host, port: listenPort, maxConnections });
    port.on('message', (message: ToWorker) => {
      if (message.type === 'query') {
        server.direct.query(message.text, message.values).then(
          (result) =>
            post({ type: 'result', id: message.id, rows: result.rows, rowCount: result.rowCount ?? 0 }),
          (error: unknown) => post({ type: 'error', id: message.id, error: errorFields(error) }),
        );
      } else if (message.type === 'stop') {
        void (async () => {
          try {
            await server.stop();
            await db.close();
            post({ type: 'stopped' });
          } catch (error) {
            post({ type: 'stopped', error: errorFields(error) });
          }
          port.close();
        })();
      }
    });
    post({ type: 'ready' });
  } catch (error) {
    post({ type: 'failed', error: errorFields(error) });
    port.close();
  }
}
