import PDFDocument from 'pdfkit';
import { parseMoney } from '../money/index.js';
import { formatAmount, formatQuantity } from './format.js';
import type { InvoiceParty, PrintableInvoice } from './printable-invoice.js';

/*
 * The PDF uses the built-in Helvetica, which needs no font file per request and prints with
 * WinAnsi (Windows-1252) encoding: Latin-1 plus a few typographic characters. That covers French
 * and the other Western European names our customers have (Amélie, Montréal, Côté). Anything
 * else is reduced to its unaccented letter where Unicode gives one (Łódź -> ?od?, Ş -> S) and
 * to "?" otherwise, so an unexpected name never breaks or garbles the document.
 */

/** Characters Windows-1252 has beyond Latin-1's printable ranges (0x80-0x9F). */
const WIN_ANSI_EXTRAS = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

function isWinAnsi(char: string): boolean {
  const code = char.codePointAt(0)!;
  return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRAS.has(char);
}

/** Text the standard PDF fonts can print, character for character where possible. */
export function toWinAnsi(text: string): string {
  let result = '';
  for (const char of text.replace(/[\t\r\n\f\v]+/g, ' ')) {
    if (isWinAnsi(char)) {
      result += char;
      continue;
    }
    // Compatibility decomposition splits "ő" into "o" + a combining mark, "ﬁ" into "fi".
    const base = char.normalize('NFKD').replace(/\p{M}/gu, '').split('').filter(isWinAnsi).join('');
    result += base || (/\p{C}/u.test(char) ? '' : '?');
  }
  return result;
}

const PAGE_MARGIN = 50;
const FONT = 'Helvetica';
const BOLD = 'Helvetica-Bold';
const MUTED = '#555555';

interface Column {
  title: string;
  width: number;
  align: 'left' | 'right';
}

const COLUMNS: Column[] = [
  { title: 'Description', width: 182, align: 'left' },
  { title: 'Quantity', width: 52, align: 'right' },
  { title: 'Unit price', width: 78, align: 'right' },
  { title: 'Tax type', width: 58, align: 'left' },
  { title: 'Tax', width: 64, align: 'right' },
  { title: 'Amount', width: 78, align: 'right' },
];
const CELL_GAP = 6;

/**
 * pdfkit parses a standard font's metrics file (AFM, ~2,500 lines) for every document that uses
 * it, which costs more than drawing the whole invoice. The parsed metrics never change, so each
 * font is parsed once per process and lent to every document, bound to that document. This leans
 * on pdfkit internals (0.17: `_fontFamilies`, `_fontCount`, the StandardFont fields); should they
 * change, `lendParsedFonts` throws and the document loads its fonts the ordinary way.
 */
const parsedFonts = new Map<string, object>();

interface FontInternals {
  _font: object | null;
  _fontFamilies: Record<string, object>;
  _fontCount: number;
}

function parsedFont(name: string): object {
  const cached = parsedFonts.get(name);
  if (cached) return cached;
  const font = (new PDFDocument({ font: name }) as unknown as FontInternals)._font;
  if (!font || !('font' in font) || !('name' in font)) throw new Error('unexpected pdfkit font internals');
  parsedFonts.set(name, font);
  return font;
}

/** Exported for its unit test, which fails if pdfkit's internals moved and documents fell back. */
export function lendParsedFonts(doc: PDFKit.PDFDocument): void {
  const internals = doc as unknown as FontInternals;
  if (typeof internals._fontCount !== 'number' || typeof internals._fontFamilies !== 'object') {
    throw new Error('unexpected pdfkit font internals');
  }
  for (const name of [FONT, BOLD]) {
    const parsed = parsedFont(name);
    // a per-document copy: its own id and PDF object, the shared read-only metrics
    const font = Object.assign(Object.create(Object.getPrototypeOf(parsed)), parsed, {
      document: doc,
      id: `F${++internals._fontCount}`,
      dictionary: null,
      embedded: false,
    });
    internals._fontFamilies[name] = font;
  }
  doc.font(FONT);
}

function newDocument(options: PDFKit.PDFDocumentOptions): PDFKit.PDFDocument {
  try {
    // font: null keeps pdfkit from parsing Helvetica itself before the parsed fonts are lent
    const doc = new PDFDocument({ ...options, font: null as unknown as string });
    lendParsedFonts(doc);
    return doc;
  } catch {
    return new PDFDocument(options);
  }
}

/** The printable invoice as a PDF document (the same content as the HTML one). */
export function renderInvoicePdf(printable: PrintableInvoice): Promise<Buffer> {
  const { invoice } = printable;
  const doc = newDocument({
    size: 'LETTER',
    margin: PAGE_MARGIN,
    info: {
      Title: toWinAnsi(`Invoice ${invoice.invoice_number}`),
      Author: toWinAnsi(printable.seller.name),
      Subject: toWinAnsi(`Invoice ${invoice.invoice_number} for ${printable.customer.name}`),
    },
  });
  const done = new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  drawDocument(doc, printable);
  doc.end();
  return done;
}

function drawDocument(doc: PDFKit.PDFDocument, printable: PrintableInvoice): void {
  const { invoice, seller, customer, subtotal, overdue } = printable;
  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;
  const text = (value: string) => toWinAnsi(value);

  // Heading: seller on the left, the document's title and number on the right.
  const top = doc.y;
  doc.font(BOLD).fontSize(22).text('INVOICE', left, top, { width, align: 'right' });
  doc.font(FONT).fontSize(11).text(text(invoice.invoice_number), left, doc.y, { width, align: 'right' });
  doc
    .font(BOLD)
    .fontSize(16)
    .text(text(seller.name), left, top, { width: width * 0.6 });
  doc.y = Math.max(doc.y, top + 44) + 16;

  // Seller above customer on the left, the invoice's particulars on the right.
  const blockTop = doc.y;
  const detailsWidth = 240;
  const partyWidth = width - detailsWidth - 24;
  const sellerBottom = drawParty(doc, 'From', seller, left, blockTop, partyWidth);
  const customerBottom = drawParty(doc, 'Bill to', customer, left, sellerBottom + 14, partyWidth);
  const detailsBottom = drawDetails(
    doc,
    [
      ['Invoice number', invoice.invoice_number],
      ['Invoice date', invoice.invoice_date],
      ['Due date', invoice.due_date],
      ['Period', `${invoice.period_start} to ${invoice.period_end}`],
      ['Status', overdue ? `${invoice.status} (OVERDUE)` : invoice.status],
      ['Currency', invoice.currency],
    ],
    left + width - detailsWidth,
    blockTop,
    detailsWidth,
  );
  doc.y = Math.max(customerBottom, detailsBottom) + 24;

  drawItems(doc, printable);

  // Totals, right-aligned under the amount columns.
  const currency = invoice.currency;
  const totals: [string, string, boolean][] = [
    ['Subtotal', subtotal, false],
    ['Tax', invoice.tax_amount, false],
    ['Total', invoice.total, true],
    ['Paid', invoice.amount_paid, false],
    ...(parseMoney(invoice.amount_refunded) !== 0n
      ? [['Refunded', invoice.amount_refunded, false] as [string, string, boolean]]
      : []),
    ['Balance due', invoice.balance, true],
  ];
  const labelX = left + width - 240;
  doc.y += 10;
  for (const [label, amount, strong] of totals) {
    ensureRoom(doc, 18);
    const y = doc.y;
    doc.font(strong ? BOLD : FONT).fontSize(10);
    doc.text(label, labelX, y, { width: 100 });
    doc.text(`${formatAmount(amount)} ${text(currency)}`, labelX + 100, y, { width: 140, align: 'right' });
    doc.y = y + 16;
  }

  ensureRoom(doc, 40);
  doc
    .font(FONT)
    .fontSize(8)
    .fillColor(MUTED)
    .text(
      text(
        `Amounts in ${currency}. Line amounts are before tax. The balance is the total less the amount paid.`,
      ),
      left,
      doc.y + 24,
      { width },
    )
    .fillColor('black');
}

function drawParty(
  doc: PDFKit.PDFDocument,
  title: string,
  who: InvoiceParty,
  x: number,
  y: number,
  width: number,
): number {
  doc.font(BOLD).fontSize(8).fillColor(MUTED).text(title.toUpperCase(), x, y, { width });
  doc
    .fillColor('black')
    .font(BOLD)
    .fontSize(11)
    .text(toWinAnsi(who.name), x, doc.y + 2, { width });
  const lines = [
    who.contactName ? `Attn: ${who.contactName}` : null,
    ...who.addressLines,
    who.email,
    who.taxId ? `Tax ID: ${who.taxId}` : null,
  ].filter((line): line is string => Boolean(line));
  doc.font(FONT).fontSize(9);
  for (const line of lines) doc.text(toWinAnsi(line), x, doc.y, { width });
  return doc.y;
}

function drawDetails(
  doc: PDFKit.PDFDocument,
  rows: [string, string][],
  x: number,
  y: number,
  width: number,
): number {
  doc.font(BOLD).fontSize(8).fillColor(MUTED).text('INVOICE DETAILS', x, y, { width });
  doc.fillColor('black').fontSize(9);
  let rowY = doc.y + 2;
  for (const [label, value] of rows) {
    doc
      .font(FONT)
      .fillColor(MUTED)
      .text(label, x, rowY, { width: width * 0.45 });
    doc
      .fillColor('black')
      .text(toWinAnsi(value), x + width * 0.45, rowY, { width: width * 0.55, align: 'right' });
    rowY = Math.max(doc.y, rowY + 12);
  }
  return rowY;
}

function drawItems(doc: PDFKit.PDFDocument, { invoice }: PrintableInvoice): void {
  const left = PAGE_MARGIN;
  const header = () => {
    const y = doc.y;
    doc.font(BOLD).fontSize(8);
    let x = left;
    for (const column of COLUMNS) {
      doc.text(column.title.toUpperCase(), x, y, { width: column.width - CELL_GAP, align: column.align });
      x += column.width;
    }
    const lineY = y + 12;
    doc
      .moveTo(left, lineY)
      .lineTo(left + totalWidth(), lineY)
      .lineWidth(1)
      .stroke();
    doc.y = lineY + 5;
  };
  header();
  doc.font(FONT).fontSize(9);
  for (const item of invoice.items) {
    const cells = [
      toWinAnsi(item.description),
      formatQuantity(item.quantity),
      formatAmount(item.unit_price),
      item.tax_type ?? '—',
      formatAmount(item.tax_amount),
      formatAmount(item.line_total_pre_tax),
    ];
    const height = Math.max(
      ...cells.map((cell, i) => doc.heightOfString(cell, { width: COLUMNS[i]!.width - CELL_GAP })),
    );
    if (ensureRoom(doc, height + 8)) {
      header();
      doc.font(FONT).fontSize(9);
    }
    const y = doc.y;
    let x = left;
    cells.forEach((cell, i) => {
      const column = COLUMNS[i]!;
      doc.text(cell, x, y, { width: column.width - CELL_GAP, align: column.align });
      x += column.width;
    });
    const lineY = y + height + 3;
    doc
      .moveTo(left, lineY)
      .lineTo(left + totalWidth(), lineY)
      .lineWidth(0.5)
      .strokeColor('#cccccc')
      .stroke()
      .strokeColor('black');
    doc.y = lineY + 5;
  }
}

function totalWidth(): number {
  return COLUMNS.reduce((sum, column) => sum + column.width, 0);
}

/** Starts a new page when fewer than `height` points are left; true when it did. */
function ensureRoom(doc: PDFKit.PDFDocument, height: number): boolean {
  if (doc.y + height <= doc.page.height - PAGE_MARGIN) return false;
  doc.addPage();
  return true;
}

/**
 * `<invoice_number>.pdf`, safe inside a quoted Content-Disposition filename whatever the number
 * holds (numbers are INV-000001 today; nothing else may reach the header).
 */
export function invoicePdfFilename(invoiceNumber: string): string {
  const safe = invoiceNumber.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '');
  return `${safe || 'invoice'}.pdf`;
}
