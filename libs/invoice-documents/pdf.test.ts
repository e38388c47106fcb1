import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { InvoiceRecord as Invoice } from '../schemas/index.js';
import { sampleCreditNote, sampleInvoice } from './document-fixtures.js';
import { renderCreditNotePdf, renderInvoicePdf, toDejaVu, toWinAnsi } from './pdf.js';
import type { PrintableCreditNote } from './printable-credit-note.js';
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

describe('the invoice PDF status and tax rows', () => {
  /** The shown lines of a posted invoice's PDF with `rest` applied to its printable. */
  const linesOf = async (rest: Partial<PrintableInvoice>) => {
    const document = printable({ status: 'POSTED', amount_paid: '0.00000000', balance: '57.49000000' });
    return shownText(await renderInvoicePdf({ ...document, ...rest })).split('\n');
  };

  it('marks the status overdue, in the words of its language, and only when it is', async () => {
    expect(await linesOf({ overdue: true })).toContain('Posted (OVERDUE)');
    expect(await linesOf({ overdue: true, locale: 'fr-CA' })).toContain('Émise (EN RETARD)');
    const onTime = await linesOf({ overdue: false });
    expect(onTime).toContain('Posted');
    expect(onTime.join('\n')).not.toContain('OVERDUE');
  });

  it('names the tax total "Total tax" under its components, named in its language, and "Tax" alone', async () => {
    const taxLines = [
      { name: 'GST', amount: '2.50000000' },
      { name: 'QST', amount: '5.00000000' },
    ];
    const split = await linesOf({ taxLines });
    expect(split).toEqual(
      expect.arrayContaining(['GST', '2.50 CAD', 'QST', '5.00 CAD', 'Total tax', '7.50 CAD']),
    );
    expect(split.indexOf('Total tax')).toBeGreaterThan(split.indexOf('QST'));
    const french = await linesOf({ taxLines, locale: 'fr-CA' });
    expect(french).toEqual(expect.arrayContaining(['TPS', 'TVQ', 'Total des taxes']));
    const alone = await linesOf({});
    expect(alone).toContain('Tax');
    expect(alone).not.toContain('Total tax');
  });
});

describe('the credit note PDF', () => {
  const linesOf = async (document: PrintableCreditNote) =>
    shownText(await renderCreditNotePdf(document)).split('\n');
  /** The shown text right after `label`: the amount printed on its row. */
  const amountAfter = (lines: string[], label: string) => lines[lines.indexOf(label) + 1];

  it("splits the total between the invoice and the customer's account, each to the currency's minor unit", async () => {
    const lines = await linesOf(
      sampleCreditNote({
        currency: 'BHD',
        applied_to_invoice: '4.25000000',
        credited_to_customer: '6.25000000',
      }),
    );
    expect(amountAfter(lines, 'Total credited')).toBe('10.500 BHD');
    expect(amountAfter(lines, 'Applied to the invoice')).toBe('4.250 BHD');
    expect(amountAfter(lines, 'Credited to your account')).toBe('6.250 BHD');
  });

  it("prints the credited invoice's number and date, and the memo only when there is one", async () => {
    const lines = await linesOf(sampleCreditNote({ memo: 'Two seats returned' }));
    expect(lines).toContain('INV-000042 (March 1, 2026)');
    expect(lines).toContain('Memo: Two seats returned');
    expect((await linesOf(sampleCreditNote())).join('\n')).not.toContain('Memo');
  });

  it('names each tax component in the words of its language, then the total tax', async () => {
    const english = await linesOf(sampleCreditNote());
    expect(amountAfter(english, 'Sales tax')).toBe('0.50 USD');
    expect(english.indexOf('Total tax')).toBeGreaterThan(english.indexOf('Sales tax'));
    expect(english).not.toContain('STATE_SALES_TAX');
    expect(await linesOf(sampleCreditNote({}, 'fr-CA'))).toEqual(
      expect.arrayContaining(['Taxe de vente', 'Total des taxes']),
    );
    const untyped = await linesOf(sampleCreditNote({ tax_lines: [] }));
    expect(amountAfter(untyped, 'Tax')).toBe('0.50 USD');
    expect(untyped).not.toContain('Total tax');
  });
});
