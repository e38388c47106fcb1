import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { InvoiceRecord as Invoice } from '../schemas/index.js';
import { sampleInvoice } from './document-fixtures.js';
import { renderInvoicePdf, toDejaVu, toWinAnsi } from './pdf.js';
import type { PrintableInvoice } from './printable-invoice.js';

function printable(overrides: Partial<Invoice> = {}): PrintableInvoice {
  const invoice = sampleInvoice({
    status: 'PAID',
    amount_paid: '57.49000000',
    balance: '0.00000000',
    ...overrides,
  });
  return {
    locale: 'en',
    invoice,
    seller: { name: 'Seller Co', contactName: null, addressLines: [], email: null, taxId: null },
    customer: { name: 'Buyer Inc', contactName: null, addressLines: [], email: null, taxId: null },
    subtotal: '49.99000000',
    taxLines: [],
    overdue: false,
    amountDue: '0.00000000',
  };
}

/** The text a Helvetica PDF shows: the hex strings of its (deflated) content streams' TJ operators. */
function shownText(pdf: Buffer): string {
  const shown: string[] = [];
  for (const match of pdf.toString('latin1').matchAll(/stream\r?\n([\s\S]*?)\r?\nendstream/g)) {
    let body: string;
    try {
      body = inflateSync(Buffer.from(match[1]!, 'latin1')).toString('latin1');
    } catch {
      continue;
    }
    for (const [, array] of body.matchAll(/\[([^\]]*)\]\s*TJ/g)) {
      shown.push(
        [...array!.matchAll(/<([0-9a-f]*)>/gi)]
          .map(([, hex]) => Buffer.from(hex!, 'hex').toString('latin1'))
          .join(''),
      );
    }
  }
  return shown.join('\n');
}

describe('WinAnsi text', () => {
  it('keeps both ends of the Latin-1 range and drops DEL, a control character', () => {
    expect(toWinAnsi(' ~\u00a0ÿ')).toBe(' ~\u00a0ÿ');
    expect(toWinAnsi('a\u007fb')).toBe('ab');
  });

  it('makes a run of line breaks and tabs one space', () => {
    expect(toWinAnsi('1 Main St\r\n\tSuite 2')).toBe('1 Main St Suite 2');
  });

  it('drops an invisible format character DejaVu Sans would otherwise print', () => {
    expect(toDejaVu('Łódź co\u00adop')).toBe('Łódź coop');
  });
});

describe('the invoice PDF', () => {
  it('prints a Refunded row only when something was refunded', async () => {
    const none = shownText(await renderInvoicePdf(printable()));
    expect(none).toContain('Paid');
    expect(none).not.toContain('Refunded');
    const refunded = shownText(await renderInvoicePdf(printable({ amount_refunded: '7.49000000' })));
    expect(refunded).toContain('Refunded');
    expect(refunded).toContain('7.49 CAD');
  });

  it('names the customer in its Subject property', async () => {
    const pdf = (await renderInvoicePdf(printable())).toString('latin1');
    expect(pdf).toContain('(Invoice INV-000042 for Buyer Inc)');
  });

  it('stays in Helvetica for a name whose only odd character is a control character', async () => {
    const document = printable();
    document.customer = { ...document.customer, name: 'Buyer\u0007 Inc' };
    const pdf = (await renderInvoicePdf(document)).toString('latin1');
    expect(pdf).toMatch(/\/BaseFont \/Helvetica-Bold/);
    expect(pdf).not.toMatch(/DejaVu/);
  });

  it('prints a name in hiragana alone in Noto Sans SC', async () => {
    const document = printable();
    document.customer = { ...document.customer, name: 'やまだ' };
    const pdf = (await renderInvoicePdf(document)).toString('latin1');
    expect(pdf).toMatch(/\/BaseFont \/[A-Z]{6}\+NotoSansSC-Bold/);
  });
});
