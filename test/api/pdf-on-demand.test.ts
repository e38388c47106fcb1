import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/*
 * What a fresh api process holds: pdfkit and fontkit (the PDF drawing) are loaded by the first PDF
 * it renders, not at start, so the many api processes that never render one keep neither in the
 * old generation (libs/invoice-documents/index.ts). Checked in a process of its own: this worker's
 * modules are shared with other files, which render PDFs.
 */
const PROBE = `
import { createRequire } from 'node:module';
const loaded = () =>
  Object.keys(createRequire(import.meta.url).cache)
    .map((file) => /node_modules\\/(pdfkit|fontkit)\\//.exec(file)?.[1])
    .filter(Boolean);
await import('./services/api/app.ts');
const atStart = [...new Set(loaded())];
const { amountDueOf, renderInvoicePdf } = await import('./libs/invoice-documents/index.ts');
const { sampleInvoice } = await import('./libs/invoice-documents/document-fixtures.ts');
const invoice = sampleInvoice();
const party = { name: 'Seller', contactName: null, addressLines: [], email: null, taxId: null };
const pdf = await renderInvoicePdf({
  locale: 'en', invoice, seller: party, customer: party, subtotal: '49.99000000', taxLines: [],
  overdue: false, amountDue: amountDueOf(invoice),
});
console.log(JSON.stringify({ atStart, afterPdf: [...new Set(loaded())].sort(), head: pdf.subarray(0, 5).toString('latin1') }));
`;

describe('the api process and the PDF libraries', () => {
  it('loads pdfkit and fontkit with its first PDF, not at start', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', PROBE],
      { cwd: ROOT, timeout: 30_000 },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      atStart: [],
      afterPdf: ['fontkit', 'pdfkit'],
      head: '%PDF-',
    });
  });
});
