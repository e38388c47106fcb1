import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  displayAmount,
  displayDate,
  displayMoney,
  displayQuantity,
  displayShortDate,
} from '../i18n/index.js';
import type { InvoiceRecord as Invoice } from '../schemas/index.js';
import { sampleCreditNote, sampleInvoice } from './document-fixtures.js';
import { countryName } from './format.js';
import { escapeHtml, renderCreditNoteHtml, renderInvoiceHtml } from './html.js';
import { renderInvoicePdf, toDejaVu, toNotoSansSc, toWinAnsi } from './pdf.js';
import { creditNotePdfFilename, taxNameOf } from './printable-credit-note.js';
import {
  addressLines,
  amountDueOf,
  invoicePdfFilename,
  type PrintableInvoice,
  taxLinesOf,
} from './printable-invoice.js';

function printable(overrides: Partial<Invoice> = {}): PrintableInvoice {
  const invoice = sampleInvoice(overrides);
  return {
    locale: 'en',
    invoice,
    seller: {
      name: 'Seller & Co',
      contactName: null,
      addressLines: ['1 Main St'],
      email: null,
      taxId: 'T-1',
    },
    customer: {
      name: 'Amélie Côté',
      contactName: null,
      addressLines: ['Montréal'],
      email: null,
      taxId: null,
    },
    subtotal: '49.99000000',
    taxLines: [],
    overdue: false,
    amountDue: amountDueOf(invoice),
  };
}

describe('amount formatting', () => {
  it('keeps every significant digit, at least two decimals, grouped thousands', () => {
    expect(displayAmount('49.99000000', 'en')).toBe('49.99');
    expect(displayAmount('0.00125000', 'en')).toBe('0.00125');
    expect(displayAmount('1234567.50000000', 'en')).toBe('1,234,567.50');
    expect(displayAmount('-12.00000000', 'en')).toBe('-12.00');
    expect(displayAmount('0.00000000', 'en')).toBe('0.00');
    expect(displayQuantity('2.0000', 'en')).toBe('2');
    expect(displayQuantity('12345.5000', 'en')).toBe('12,345.5');
  });

  it('writes Canadian French as Quebec does, exactly, with no-break spaces', () => {
    const spaced = (text: string) => text.replace(/\u00a0/g, ' ');
    expect(spaced(displayMoney('1234.56000000', 'CAD', 'fr-CA'))).toBe('1 234,56 $');
    expect(spaced(displayMoney('1234.56000000', 'USD', 'fr-CA'))).toBe('1 234,56 $ US');
    expect(spaced(displayMoney('999999999999.99999999', 'CAD', 'fr-CA'))).toBe('999 999 999 999,99999999 $');
    expect(spaced(displayMoney('0.00125000', 'CAD', 'fr-CA'))).toBe('0,00125 $');
    expect(spaced(displayMoney('-12.00000000', 'CAD', 'fr-CA'))).toBe('-12,00 $');
    expect(displayMoney('1234.56000000', 'CAD', 'en')).toBe('1,234.56 CAD');
    expect(spaced(displayQuantity('12345.5000', 'fr-CA'))).toBe('12 345,5');
    expect(displayDate('2026-03-01', 'fr-CA')).toBe('1 mars 2026');
    expect(displayDate('2026-03-01', 'en')).toBe('March 1, 2026');
  });

  it("prints money to its currency's minor unit, and cents for a code it does not know", () => {
    // docs/architecture.md "Money": payable amounts are whole minor units ("1,200" yen)
    expect(displayMoney('1200.00000000', 'JPY', 'en')).toBe('1,200 JPY');
    expect(displayMoney('1.50000000', 'BHD', 'en')).toBe('1.500 BHD');
    expect(displayMoney('5.00000000', 'XTS', 'en')).toBe('5.00 XTS');
    expect(displayMoney('0.00125000', 'JPY', 'en')).toBe('0.00125 JPY');
  });

  it('writes a code Intl refuses after the number in French too, and short dates in each language', () => {
    expect(displayMoney('5.00000000', 'AB1', 'fr-CA').replace(/\u00a0/g, ' ')).toBe('5,00 AB1');
    expect(displayShortDate('2026-03-01', 'en')).toBe('Mar 1');
    expect(displayShortDate('2026-03-01T23:59:59Z', 'fr-CA')).toBe('1 mars');
  });
});

describe('taxLinesOf', () => {
  const item = (taxType: Invoice['items'][number]['tax_type'], tax: string) => ({
    id: 1,
    product_id: 2,
    description: 'Seats',
    quantity: '1.0000',
    unit_price: '100.00000000',
    line_total_pre_tax: '100.00000000',
    tax_amount: tax,
    tax_type: taxType,
  });
  const lines = (items: Invoice['items']) => taxLinesOf(printable({ items }).invoice);

  it('splits GST from the provincial part, named for its province, GST first', () => {
    expect(lines([item('GST_QST', '14.98000000')])).toEqual([
      { name: 'GST', amount: '5.00000000' },
      { name: 'QST', amount: '9.98000000' },
    ]);
    expect(lines([item('GST_PST', '12.00000000')])).toEqual([
      { name: 'GST', amount: '5.00000000' },
      { name: 'PST', amount: '7.00000000' },
    ]);
  });

  it("keeps every item's tax on an invoice mixing split and single taxes, in the fixed order", () => {
    expect(lines([item('GST_QST', '14.98000000'), { ...item('HST', '13.00000000'), id: 2 }])).toEqual([
      { name: 'GST', amount: '5.00000000' },
      { name: 'HST', amount: '13.00000000' },
      { name: 'QST', amount: '9.98000000' },
    ]);
    expect(lines([item('GST_PST', '12.00000000'), { ...item('GST', '5.00000000'), id: 2 }])).toEqual([
      { name: 'GST', amount: '10.00000000' },
      { name: 'PST', amount: '7.00000000' },
    ]);
  });

  it('leaves out a component that levies nothing', () => {
    expect(lines([item('GST', '0.00000000'), { ...item('EXEMPT', '0.00000000'), id: 2 }])).toEqual([]);
    expect(lines([item('HST', '0.00000000'), { ...item('GST', '5.00000000'), id: 2 }])).toEqual([
      { name: 'GST', amount: '5.00000000' },
    ]);
  });

  it('splits an older invoice, whose tax is not in cents, line by line as it was computed', () => {
    // three lines of 0.10: GST 0.005 each, 0.015 in all; on the subtotal it would round to 0.02
    const small = (id: number) => ({
      ...item('GST_QST', '0.01497500'),
      id,
      unit_price: '0.10000000',
      line_total_pre_tax: '0.10000000',
    });
    expect(lines([small(1), small(2), small(3)])).toEqual([
      { name: 'GST', amount: '0.01500000' },
      { name: 'QST', amount: '0.02992500' },
    ]);
  });
});

describe('taxNameOf', () => {
  it("names a credit note's tax components as the invoice's tax lines do", () => {
    expect(taxNameOf('STATE_SALES_TAX')).toBe('Sales tax');
    expect(taxNameOf('TAX')).toBe('Tax');
    expect(taxNameOf('GST')).toBe('GST');
    expect(taxNameOf('QST')).toBe('QST');
  });
});

describe('amountDueOf', () => {
  it('is the balance while a payment can settle the invoice, and nothing once it is closed', () => {
    const balance = '57.49000000';
    expect(amountDueOf({ status: 'POSTED', balance })).toBe(balance);
    expect(amountDueOf({ status: 'PARTIALLY_PAID', balance: '7.49000000' })).toBe('7.49000000');
    // withdrawn (from a draft or after posting) and draft invoices keep a balance nobody owes
    for (const status of ['WITHDRAWN', 'DRAFT'] as const) {
      expect(amountDueOf({ status, balance }), status).toBe('0.00000000');
    }
    // a refund never cancels what is owed: a refunded invoice with a balance can still be paid
    for (const status of ['REFUNDED', 'PARTIALLY_REFUNDED'] as const) {
      expect(amountDueOf({ status, balance }), status).toBe(balance);
    }
    expect(amountDueOf({ status: 'POSTED', balance: '0.00000000' })).toBe('0.00000000');
  });

  it('is what the printable documents print as the balance due', () => {
    const withdrawn = printable({ status: 'WITHDRAWN' });
    expect(withdrawn.amountDue).toBe('0.00000000');
    const html = renderInvoiceHtml(withdrawn);
    expect(html).toContain('Balance due</td><td class="num">0.00 CAD</td>');
  });
});

describe('invoice HTML', () => {
  it('escapes the five HTML metacharacters', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });

  it('escapes database text wherever it is printed', () => {
    const document = printable({ invoice_number: '<i>INV</i>' });
    document.customer.name = '<script>alert(1)</script>';
    const html = renderInvoiceHtml(document);
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<i>INV</i>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('Seller &amp; Co');
  });

  it('prints each total row with its own amount', () => {
    const html = renderInvoiceHtml(
      printable({ status: 'PARTIALLY_PAID', amount_paid: '20.00000000', balance: '37.49000000' }),
    );
    expect(html).toContain('Subtotal</td><td class="num">49.99 CAD</td>');
    expect(html).toContain('Tax</td><td class="num">7.50 CAD</td>');
    expect(html).toContain('Total</td><td class="num">57.49 CAD</td>');
    expect(html).toContain('Paid</td><td class="num">20.00 CAD</td>');
    expect(html).not.toContain('Refunded');
    expect(html).toContain('Balance due</td><td class="num">37.49 CAD</td>');
    const refunded = renderInvoiceHtml(
      printable({
        status: 'PAID',
        amount_paid: '57.49000000',
        amount_refunded: '7.49000000',
        balance: '0.00000000',
      }),
    );
    expect(refunded).toContain('Refunded</td><td class="num">7.49 CAD</td>');
  });
});

describe('invoice HTML details', () => {
  it('prints each date in its own row: invoice date, due date, then the period from start to end', () => {
    const html = renderInvoiceHtml(
      printable({
        invoice_date: '2026-04-01',
        due_date: '2026-05-15',
        period_start: '2026-03-01',
        period_end: '2026-03-31',
      }),
    );
    expect(html).toContain('<dt>Invoice date</dt><dd>April 1, 2026</dd>');
    expect(html).toContain('<dt>Due date</dt><dd>May 15, 2026</dd>');
    expect(html).toContain('<dt>Period</dt><dd>March 1, 2026 to March 31, 2026</dd>');
  });

  it('lists the credit notes with their own date and total', () => {
    const html = renderInvoiceHtml({
      ...printable(),
      creditNotes: [{ id: 'n1', number: 'CN-000001', date: '2026-03-20', total: '11.50000000' }],
    });
    expect(html).toContain(
      '<tr><td>CN-000001</td><td>March 20, 2026</td><td class="num">11.50 CAD</td></tr>',
    );
    expect(renderInvoiceHtml(printable())).not.toContain('CN-');
  });

  it('prints a party with its contact, e-mail and tax id, and no line for what it lacks', () => {
    const document = printable();
    document.customer = {
      name: 'Buyer',
      contactName: 'Jo Ng',
      addressLines: ['2 Side St'],
      email: 'ap@buyer.example',
      taxId: 'QC-99',
    };
    const html = renderInvoiceHtml(document);
    for (const line of ['Attn: Jo Ng', '2 Side St', 'ap@buyer.example', 'Tax ID: QC-99', 'Tax ID: T-1']) {
      expect(html).toContain(`<p>${line}</p>`);
    }
    expect(html).not.toContain('<p>null</p>');
    expect(html).not.toContain('Attn: null');
    expect(html.match(/Tax ID:/g)).toHaveLength(2);
  });

  it('names each tax component in French as Quebec does: TPS, then TVQ', () => {
    const html = renderInvoiceHtml({
      ...printable(),
      locale: 'fr-CA',
      taxLines: [
        { name: 'GST', amount: '2.50000000' },
        { name: 'QST', amount: '4.99000000' },
      ],
    });
    const spaced = html.replace(/\u00a0/g, ' ');
    expect(spaced).toContain('<tr><td>TPS</td><td class="num">2,50 $</td></tr>');
    expect(spaced).toContain('<tr><td>TVQ</td><td class="num">4,99 $</td></tr>');
    expect(spaced.indexOf('TPS')).toBeLessThan(spaced.indexOf('TVQ'));
  });

  it("prints the totals to the currency's minor unit: no decimals in yen, three in dinars", () => {
    const yen = renderInvoiceHtml({
      ...printable({
        currency: 'JPY',
        total: '1200.00000000',
        balance: '1200.00000000',
        tax_amount: '0.00000000',
      }),
      subtotal: '1200.00000000',
    });
    expect(yen).toContain('Total</td><td class="num">1,200 JPY</td>');
    expect(yen).toContain('Subtotal</td><td class="num">1,200 JPY</td>');
    const dinars = renderInvoiceHtml({
      ...printable({
        currency: 'KWD',
        total: '12.34500000',
        balance: '12.34500000',
        tax_amount: '0.00000000',
      }),
      subtotal: '12.34500000',
    });
    expect(dinars).toContain('Total</td><td class="num">12.345 KWD</td>');
    expect(dinars).toContain('Paid</td><td class="num">0.000 KWD</td>');
  });
});

describe('item tables', () => {
  const item = {
    id: 1,
    product_id: 2,
    description: 'Seats',
    quantity: '2.0000',
    tax_type: null,
  } as const;

  it("print line amounts to the currency's minor unit, as the totals beside them", () => {
    // docs/decisions.md: documents print at least the minor unit's digits
    const yen = renderInvoiceHtml(
      printable({
        currency: 'JPY',
        items: [
          {
            ...item,
            unit_price: '600.00000000',
            line_total_pre_tax: '1200.00000000',
            tax_amount: '0.00000000',
          },
        ],
      }),
    );
    expect(yen).toContain('<td class="num">600</td>');
    expect(yen).toContain('<td class="num">1,200</td>');
    expect(yen).not.toContain('1,200.00');
    const dinars = renderInvoiceHtml({
      ...printable({
        currency: 'KWD',
        items: [
          {
            ...item,
            unit_price: '6.15000000',
            line_total_pre_tax: '12.30000000',
            tax_amount: '0.61500000',
          },
        ],
      }),
      locale: 'fr-CA',
    });
    expect(dinars).toContain('<td class="num">6,150</td>');
    expect(dinars).toContain('<td class="num">12,300</td>');
    expect(dinars).toContain('<td class="num">0,615</td>');
    // a unit price keeps its precision beyond the minor unit
    const subYen = renderInvoiceHtml(
      printable({
        currency: 'JPY',
        items: [
          { ...item, unit_price: '0.12500000', line_total_pre_tax: '0.00000000', tax_amount: '0.00000000' },
        ],
      }),
    );
    expect(subYen).toContain('<td class="num">0.125</td>');
  });

  it("writes a bare amount in cents, or to a given currency's minor unit", () => {
    expect(displayAmount('12.30000000', 'en')).toBe('12.30');
    expect(displayAmount('12.30000000', 'en', 'KWD')).toBe('12.300');
    expect(displayAmount('1200.00000000', 'en', 'JPY')).toBe('1,200');
    expect(displayAmount('5.00000000', 'en', 'XTS')).toBe('5.00');
  });
});

describe('credit note HTML', () => {
  const note = sampleCreditNote({
    currency: 'BHD',
    reason: 'duplicate',
    applied_to_invoice: '4.25000000',
    credited_to_customer: '6.25000000',
  });

  it("prints its own date, the credited invoice's number and date, and the reason in words", () => {
    const html = renderCreditNoteHtml(note);
    expect(html).toContain('<dt>Date</dt><dd>April 9, 2026</dd>');
    expect(html).toContain('<dt>Invoice</dt><dd>INV-000042 (March 1, 2026)</dd>');
    expect(html).toContain('<dt>Reason</dt><dd>Duplicate charge</dd>');
    expect(html).not.toContain('class="memo"');
  });

  it("splits the total between the invoice and the customer's account, each to the currency's minor unit", () => {
    const html = renderCreditNoteHtml(note);
    expect(html).toContain('<td>Sales tax</td><td class="num">0.500 BHD</td>');
    expect(html).toContain('Total tax</td><td class="num">0.500 BHD</td>');
    expect(html).toContain('Total credited</td><td class="num">10.500 BHD</td>');
    expect(html).toContain('Applied to the invoice</td><td class="num">4.250 BHD</td>');
    expect(html).toContain('Credited to your account</td><td class="num">6.250 BHD</td>');
    expect(html).toContain(
      '<td>Seats</td>\n          <td class="num">0.500</td>\n          <td class="num">10.000</td>',
    );
  });

  it('escapes its memo and line descriptions, text a person typed', () => {
    const html = renderCreditNoteHtml({
      ...note,
      note: {
        ...note.note,
        memo: '<script>alert(1)</script> & co',
        lines: [{ ...note.note.lines[0]!, description: '<b>Seats</b> & <img src=x>' }],
      },
    });
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>Seats</b>');
    expect(html).not.toContain('<img');
    expect(html).toContain('</strong> &lt;script&gt;alert(1)&lt;/script&gt; &amp; co</p>');
    expect(html).toContain('<td>&lt;b&gt;Seats&lt;/b&gt; &amp; &lt;img src=x&gt;</td>');
  });
});

describe('addresses and countries', () => {
  const address = {
    address_line1: '1 Main St',
    address_line2: null,
    city: 'Ottawa',
    state_province: 'ON',
    postal_code: 'K1A 0B1',
    country: 'CA',
  };

  it('writes the city, then region and postal code two spaces apart, then the country by name', () => {
    expect(addressLines(address, 'en')).toEqual(['1 Main St', 'Ottawa, ON  K1A 0B1', 'Canada']);
    expect(addressLines({ ...address, city: null }, 'en')).toEqual(['1 Main St', 'ON  K1A 0B1', 'Canada']);
    expect(addressLines({ ...address, state_province: null }, 'en')).toEqual([
      '1 Main St',
      'Ottawa, K1A 0B1',
      'Canada',
    ]);
  });

  it('leaves out blank lines and a missing country', () => {
    expect(addressLines({ ...address, address_line2: '   ', country: null }, 'en')).toEqual([
      '1 Main St',
      'Ottawa, ON  K1A 0B1',
    ]);
    expect(
      addressLines(
        {
          address_line1: null,
          address_line2: null,
          city: null,
          state_province: null,
          postal_code: null,
          country: null,
        },
        'en',
      ),
    ).toEqual([]);
  });

  it("names a country in the document's language, whatever the code's case; an unknown code prints as itself", () => {
    expect(countryName('US', 'en')).toBe('United States');
    expect(countryName('US', 'fr-CA')).toBe('États-Unis');
    expect(countryName(' de ', 'en')).toBe('Germany');
    expect(countryName('1x', 'en')).toBe('1x');
  });
});

describe('invoice PDF', () => {
  it('maps text to what WinAnsi Helvetica can print', () => {
    expect(toWinAnsi('Amélie Côté, Montréal — 5 €')).toBe('Amélie Côté, Montréal — 5 €');
    expect(toWinAnsi('Łódź Żółć ő ﬁle')).toBe('?ódz Zó?c o file');
    expect(toWinAnsi('李小龍 😀')).toBe('??? ?');
    expect(toWinAnsi('tab\there\nnew line\u0007')).toBe('tab here new line');
  });

  it('renders a PDF', async () => {
    const pdf = await renderInvoicePdf(printable());
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(pdf.toString('latin1')).toMatch(/\/BaseFont \/Helvetica-Bold/);
  });

  it('writes the French document in French, in WinAnsi Helvetica', async () => {
    const french = { ...printable(), locale: 'fr-CA' as const };
    const html = renderInvoiceHtml(french);
    expect(html).toContain('<html lang="fr-CA">');
    expect(html).toContain('FACTURE');
    expect(html).toContain('Solde dû');
    expect(html).toContain('1 mars 2026');
    expect(html).toContain('57,49\u00a0$');
    const pdf = (await renderInvoicePdf(french)).toString('latin1');
    expect(pdf).toMatch(/\/BaseFont \/Helvetica-Bold/);
    expect(pdf).toContain('/Lang (fr-CA)');
  });

  it('maps text to what DejaVu Sans can print: Latin, Greek, Cyrillic, not CJK', () => {
    expect(toDejaVu('Łódź Żółć, Ελλάδα, Москва, Tiếng Việt')).toBe('Łódź Żółć, Ελλάδα, Москва, Tiếng Việt');
    expect(toDejaVu('李小龍 ﬁle')).toBe('??? ﬁle');
    expect(toDejaVu('tab\there\u0007')).toBe('tab here');
  });

  it('prints names beyond WinAnsi in embedded DejaVu Sans, and WinAnsi ones in Helvetica', async () => {
    const western = (await renderInvoicePdf(printable())).toString('latin1');
    expect(western).toMatch(/\/BaseFont \/Helvetica-Bold/);
    expect(western).not.toMatch(/DejaVu|FontFile2/);

    const polish = printable();
    polish.customer = {
      ...polish.customer,
      name: 'Łódź Żółć sp. z o.o.',
      addressLines: ['ul. Piotrkowska 1'],
    };
    polish.invoice = {
      ...polish.invoice,
      items: [{ ...polish.invoice.items[0]!, description: 'Подписка Ελλάδα' }],
    };
    const pdf = await renderInvoicePdf(polish);
    const text = pdf.toString('latin1');
    expect(text).toMatch(/\/BaseFont \/[A-Z]{6}\+DejaVuSans-Bold/);
    expect(text).toMatch(/\/BaseFont \/[A-Z]{6}\+DejaVuSans\b/);
    expect(text).not.toMatch(/\/BaseFont \/Helvetica/);
    // The glyphs map back to the characters (ToUnicode): the text is there, not "?".
    const mapped = new Set<string>();
    for (const match of text.matchAll(/stream\r?\n([\s\S]*?)\r?\nendstream/g)) {
      let body: string;
      try {
        body = inflateSync(Buffer.from(match[1]!, 'latin1')).toString('latin1');
      } catch {
        continue;
      }
      if (!body.includes('begincmap')) continue;
      for (const [, hex] of body.matchAll(/<([0-9a-f]{4})>/gi)) {
        mapped.add(String.fromCharCode(Number.parseInt(hex!, 16)));
      }
    }
    // Ł Ż ł ź (Polish), П д (Cyrillic), Ε λ (Greek)
    for (const char of '\u0141\u017b\u0142\u017a\u041f\u0434\u0395\u03bb') expect(mapped).toContain(char);
  });

  it('maps text to what Noto Sans SC can print: Chinese and kana, not Hangul', () => {
    expect(toNotoSansSc('李小龍 山田たろう カタカナ Москва')).toBe('李小龍 山田たろう カタカナ Москва');
    expect(toNotoSansSc('김민준')).toBe('???');
  });

  it('prints a Chinese or Japanese piece of text in embedded Noto Sans SC, the rest in Helvetica', async () => {
    const document = printable();
    document.customer = { ...document.customer, name: '株式会社 山田商事' };
    const pdf = (await renderInvoicePdf(document)).toString('latin1');
    expect(pdf).toMatch(/\/BaseFont \/[A-Z]{6}\+NotoSansSC-Bold/);
    expect(pdf).toMatch(/\/BaseFont \/Helvetica-Bold/);
    expect(pdf).not.toMatch(/DejaVu/);
  });

  it('names the file after the invoice number and keeps the header safe', () => {
    expect(invoicePdfFilename('INV-000042')).toBe('INV-000042.pdf');
    expect(invoicePdfFilename('INV "1"\r\n/..')).toBe('INV_1_...pdf');
    expect(invoicePdfFilename('')).toBe('invoice.pdf');
  });

  it('never names a hidden file or one that climbs out: leading dots and underscores go', () => {
    expect(invoicePdfFilename('../INV-1')).toBe('INV-1.pdf');
    expect(invoicePdfFilename('._.')).toBe('invoice.pdf');
    expect(creditNotePdfFilename('CN-000007')).toBe('CN-000007.pdf');
    expect(creditNotePdfFilename('CN "7"\r\n')).toBe('CN_7_.pdf');
    expect(creditNotePdfFilename('../CN-7')).toBe('CN-7.pdf');
    expect(creditNotePdfFilename('..')).toBe('credit-note.pdf');
  });
});
