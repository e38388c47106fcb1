import { describe, expect, it } from 'vitest';
import type { InvoiceRecord as Invoice } from '../schemas/index.js';
import { sampleCreditNote, sampleInvoice, sampleItem } from './document-fixtures.js';
import { INVOICE_HTML_HEADERS, renderCreditNoteHtml, renderInvoiceHtml } from './html.js';
import type { PrintableInvoice } from './printable-invoice.js';

/*
 * What the printable documents print, row by row: the PDF is drawn from the same PrintableInvoice
 * and PrintableCreditNote, so these pin the content both carry (docs/architecture.md, "Money":
 * amounts to the currency's minor unit).
 */

function invoiceDocument(
  overrides: Partial<Invoice> = {},
  rest: Partial<PrintableInvoice> = {},
): PrintableInvoice {
  const invoice = sampleInvoice({
    items: [sampleItem({ quantity: '2.5000', unit_price: '19.99600000', tax_type: null })],
    ...overrides,
  });
  return {
    locale: 'en',
    invoice,
    seller: { name: 'Seller & Co', contactName: null, addressLines: [], email: null, taxId: null },
    customer: { name: 'Buyer Inc', contactName: null, addressLines: [], email: null, taxId: null },
    subtotal: '49.99000000',
    taxLines: [],
    overdue: false,
    amountDue: invoice.balance,
    ...rest,
  };
}

describe('the printable invoice', () => {
  it('heads the page with its title, the seller, the number and its details', () => {
    const html = renderInvoiceHtml(invoiceDocument());
    expect(html).toContain('<title>Invoice INV-000042</title>');
    expect(html).toContain(
      '<header>\n    <div>\n      <p class="name">Seller &amp; Co</p>\n    </div>\n    <div>\n      <h1>INVOICE</h1>\n      <p class="num">INV-000042</p>',
    );
    expect(html).toContain('<h2>Invoice details</h2>');
    expect(html).toContain('<dt>Invoice number</dt><dd>INV-000042</dd>');
    expect(html).toContain('<dt>Status</dt><dd>Posted</dd>');
    expect(html).toContain('<dt>Currency</dt><dd>CAD</dd>');
    expect(html).not.toContain('class="overdue"');
  });

  it('marks the status overdue, in the words of its language', () => {
    const en = renderInvoiceHtml(invoiceDocument({}, { overdue: true }));
    expect(en).toContain('<dt>Status</dt><dd>Posted <span class="overdue">OVERDUE</span></dd>');
    const fr = renderInvoiceHtml(invoiceDocument({}, { overdue: true, locale: 'fr-CA' }));
    expect(fr).toContain('<dt>Statut</dt><dd>Émise <span class="overdue">EN RETARD</span></dd>');
  });

  it('prints an item row: quantity as a quantity, a dash for no tax type, amounts in cents', () => {
    const html = renderInvoiceHtml(invoiceDocument());
    expect(html).toContain(
      '<td>Seats</td>\n          <td class="num">2.5</td>\n          <td class="num">19.996</td>\n          <td>—</td>\n          <td class="num">7.50</td>\n          <td class="num">49.99</td>',
    );
    const typed = invoiceDocument();
    typed.invoice.items = [{ ...typed.invoice.items[0]!, tax_type: 'HST', quantity: '1234.0000' }];
    expect(renderInvoiceHtml({ ...typed, locale: 'fr-CA' })).toContain(
      '<td class="num">1\u00a0234</td>\n          <td class="num">19,996</td>\n          <td>HST</td>',
    );
  });

  it('names the tax total "Total tax" under its components, "Tax" alone, and bolds the total', () => {
    const split = renderInvoiceHtml(
      invoiceDocument(
        {},
        {
          taxLines: [
            { name: 'GST', amount: '2.50000000' },
            { name: 'QST', amount: '5.00000000' },
          ],
        },
      ),
    );
    expect(split).toContain(
      '<tr><td>GST</td><td class="num">2.50 CAD</td></tr>\n    <tr><td>QST</td><td class="num">5.00 CAD</td></tr>\n    <tr><td>Total tax</td><td class="num">7.50 CAD</td></tr>\n    <tr class="grand"><td>Total</td><td class="num">57.49 CAD</td></tr>',
    );
    const alone = renderInvoiceHtml(invoiceDocument());
    expect(alone).toContain('<tr><td>Tax</td><td class="num">7.50 CAD</td></tr>');
    expect(alone).not.toContain('Total tax');
  });

  it('lists every credit note, oldest first', () => {
    const html = renderInvoiceHtml(
      invoiceDocument(
        {},
        {
          creditNotes: [
            { id: 'n1', number: 'CN-000001', date: '2026-03-20', total: '11.50000000' },
            { id: 'n2', number: 'CN-000002', date: '2026-03-22', total: '1.25000000' },
          ],
        },
      ),
    );
    expect(html).toContain(
      '<tr><td>CN-000001</td><td>March 20, 2026</td><td class="num">11.50 CAD</td></tr>\n        <tr><td>CN-000002</td><td>March 22, 2026</td><td class="num">1.25 CAD</td></tr>',
    );
  });

  it('ends with the footnote naming its currency, in its language', () => {
    expect(renderInvoiceHtml(invoiceDocument({ currency: 'JPY' }))).toContain(
      '<footer>\n    <p>Amounts in JPY. Line amounts are before tax. The balance due is the total less the amount paid, while the invoice is open for payment.</p>\n  </footer>',
    );
    expect(renderInvoiceHtml(invoiceDocument({}, { locale: 'fr-CA' }))).toContain(
      '<p>Montants en CAD. Les montants des lignes sont avant taxes.',
    );
  });

  it('is served under a policy that forbids scripts, remote resources and framing', () => {
    expect(INVOICE_HTML_HEADERS).toEqual({
      'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'private, no-store',
    });
  });
});

describe('the printable credit note', () => {
  const note = sampleCreditNote;

  it('heads the page as a credit note, with its number and currency', () => {
    const html = renderCreditNoteHtml(note());
    expect(html).toContain('<title>Credit note CN-000003</title>');
    expect(html).toContain('<h1>CREDIT NOTE</h1>\n      <p class="num">CN-000003</p>');
    expect(html).toContain('<h2>Credit note details</h2>');
    expect(html).toContain('<dt>Credit note number</dt><dd>CN-000003</dd>');
    expect(html).toContain('<dt>Reason</dt><dd>Order change</dd>');
    expect(html).toContain('<dt>Currency</dt><dd>USD</dd>');
    expect(html).not.toContain('INVOICE<');
  });

  it('prints the subtotal, each tax component by its name in the language, then the total tax', () => {
    const html = renderCreditNoteHtml(note({}, 'fr-CA')).replace(/\u00a0/g, ' ');
    expect(html).toContain(
      '<tr><td>Sous-total</td><td class="num">10,00 $ US</td></tr>\n    <tr><td>Taxe de vente</td><td class="num">0,50 $ US</td></tr>\n    <tr><td>Total des taxes</td><td class="num">0,50 $ US</td></tr>',
    );
    expect(html).toContain('<dt>Motif</dt><dd>Modification de commande</dd>');
    expect(html).toContain('<p>Montants en USD. Les montants des lignes sont avant taxes;');
  });

  it('names a tax without components "Tax", and a reason it does not know as stored', () => {
    const html = renderCreditNoteHtml(note({ tax_lines: [], reason: 'goodwill' as never }));
    expect(html).toContain('<tr><td>Tax</td><td class="num">0.50 USD</td></tr>');
    expect(html).not.toContain('Total tax');
    expect(html).toContain('<dt>Reason</dt><dd>goodwill</dd>');
    expect(html).toContain(
      '<footer>\n    <p>Amounts in USD. Line amounts are before tax; the tax is given back component by component, as the invoice charged it.</p>',
    );
  });
});
