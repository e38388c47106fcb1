import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/*
 * What a fresh api process loads: the PDF drawing (pdfkit, fontkit) comes with the first PDF it
 * renders (libs/invoice-documents/index.ts) and the embedded database (PGlite) with an embedded
 * start (libs/db/embedded.ts), so an api on Postgres that renders no PDF neither loads nor holds
 * them (docs/decisions.md). Checked in a process of its own, whose module resolution
 * a hook records: this worker's modules are shared with other files, which load both.
 */
const PROBE = `
import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const { port1, port2 } = new MessageChannel();
const resolved = new Set();
port1.on('message', (url) => resolved.add(url));
port1.unref();
const hooks = \`let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  port.postMessage(found.url);
  return found;
}\`;
register('data:text/javascript,' + encodeURIComponent(hooks), { data: { port: port2 }, transferList: [port2] });
const settled = () => new Promise((resolve) => setTimeout(resolve, 200));
const loaded = () =>
  [...new Set([...resolved].map((url) => /node_modules\\/(@electric-sql\\/pglite|pdfkit|fontkit)\\//.exec(url)?.[1]))]
    .filter(Boolean)
    .sort();
await import('./services/api/app.ts');
await settled();
const atStart = loaded();
const { amountDueOf, renderInvoicePdf } = await import('./libs/invoice-documents/index.ts');
const { sampleInvoice } = await import('./libs/invoice-documents/document-fixtures.ts');
const invoice = sampleInvoice();
const party = { name: 'Seller', contactName: null, addressLines: [], email: null, taxId: null };
const pdf = await renderInvoicePdf({
  locale: 'en', invoice, seller: party, customer: party, subtotal: '49.99000000', taxLines: [],
  overdue: false, amountDue: amountDueOf(invoice),
});
await settled();
console.log(JSON.stringify({ atStart, afterPdf: loaded(), head: pdf.subarray(0, 5).toString('latin1'), resolved: resolved.size }));
`;

describe('the api process and its heavy libraries', () => {
  it('loads neither PGlite nor the PDF libraries at start; pdfkit and fontkit with its first PDF', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', PROBE],
      { cwd: ROOT, timeout: 30_000 },
    );
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!);
    // the hook saw the app's modules resolve at all
    expect(seen.resolved).toBeGreaterThan(100);
    expect(seen).toMatchObject({ atStart: [], afterPdf: ['fontkit', 'pdfkit'], head: '%PDF-' });
  });
});
