import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Font, create as parseFont } from 'fontkit';
import PDFDocument from 'pdfkit';
import { parseMoney } from '../money/index.js';
import { formatAmount, formatQuantity } from './format.js';
import type { InvoiceParty, PrintableInvoice } from './printable-invoice.js';

/*
 * Two typefaces. A document whose text fits WinAnsi (Windows-1252: Latin-1 and a few typographic
 * characters: English, French, German, Spanish, the Nordic languages) prints in the built-in
 * Helvetica, which needs no font file and is the cheap common case. Any other document (Łódź,
 * Ελλάδα, Москва, Tiếng Việt) embeds a subset of DejaVu Sans, which covers Latin, Greek, Cyrillic
 * and more. A character neither can print is reduced to its unaccented letter where Unicode gives
 * one and to "?" otherwise (CJK, emoji), so an unexpected name never breaks or garbles the
 * document.
 */

/** Characters Windows-1252 has beyond Latin-1's printable ranges (0x80-0x9F). */
const WIN_ANSI_EXTRAS = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

function isWinAnsi(char: string): boolean {
  const code = char.codePointAt(0)!;
  return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRAS.has(char);
}

/**
 * `text` as a font that prints the characters `canPrint` accepts can show it: whitespace runs
 * become one space, control characters go, others lose their accent or become "?".
 */
function printableWith(text: string, canPrint: (char: string) => boolean): string {
  let result = '';
  for (const char of text.replace(/[\t\r\n\f\v]+/g, ' ')) {
    if (canPrint(char)) {
      result += char;
      continue;
    }
    // Compatibility decomposition splits "ő" into "o" + a combining mark, "ﬁ" into "fi".
    const base = char.normalize('NFKD').replace(/\p{M}/gu, '').split('').filter(canPrint).join('');
    result += base || (/\p{C}/u.test(char) ? '' : '?');
  }
  return result;
}

/** Whether Helvetica prints every visible character of `text` as it is. */
function fitsWinAnsi(text: string): boolean {
  for (const char of text) if (!isWinAnsi(char) && !/\p{C}/u.test(char)) return false;
  return true;
}

/** Text the standard PDF fonts can print, character for character where possible. */
export function toWinAnsi(text: string): string {
  return printableWith(text, isWinAnsi);
}

const PAGE_MARGIN = 50;
/** The document's font names; each document binds them to one of the two typefaces. */
const FONT = 'Body';
const BOLD = 'Body-Bold';
type FontName = typeof FONT | typeof BOLD;
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
/** The description column keeps at least this width; the figures' columns shrink their font instead. */
const MIN_DESCRIPTION_WIDTH = 140;
const ITEM_FONT_SIZE = 9;

/**
 * The item table's columns for these rows: each figure's column widens to its widest cell, so an
 * amount is never wrapped mid-number, and the description takes what is left. When the figures
 * would leave the description too little, the table's font shrinks until they fit.
 */
function itemColumns(doc: PDFKit.PDFDocument, rows: string[][]): { columns: Column[]; fontSize: number } {
  const tableWidth = COLUMNS.reduce((sum, column) => sum + column.width, 0);
  const natural = COLUMNS.map((column, i) => {
    doc.font(BOLD).fontSize(8);
    let widest = doc.widthOfString(column.title.toUpperCase());
    doc.font(FONT).fontSize(ITEM_FONT_SIZE);
    for (const row of rows) widest = Math.max(widest, doc.widthOfString(row[i]!));
    // a little slack: pdfkit wraps text that fills its width exactly
    return Math.ceil(widest) + 1 + CELL_GAP;
  });
  const figures = COLUMNS.slice(1).map((column, i) => Math.max(column.width, natural[i + 1]!));
  const figuresWidth = figures.reduce((sum, width) => sum + width, 0);
  const room = tableWidth - MIN_DESCRIPTION_WIDTH;
  const scale = figuresWidth > room ? room / figuresWidth : 1;
  const widths = figures.map((width) => Math.floor(width * scale));
  return {
    columns: [
      { ...COLUMNS[0]!, width: tableWidth - widths.reduce((sum, width) => sum + width, 0) },
      ...COLUMNS.slice(1).map((column, i) => ({ ...column, width: widths[i]! })),
    ],
    // widths scale with the font size; the fixed gap makes this slightly conservative
    fontSize: scale < 1 ? Math.floor(ITEM_FONT_SIZE * scale * 0.95 * 10) / 10 : ITEM_FONT_SIZE,
  };
}

/*
 * Fonts are parsed once per process and lent to each document. pdfkit would parse Helvetica's
 * metrics file (AFM, ~2,500 lines) for every document, which costs more than drawing the whole
 * invoice, and DejaVu Sans (750 KB, its layout tables decoded on first use) for every document,
 * which costs ~60 ms. The parsed font is shared; what belongs to one document (its PDF object id,
 * the subset of glyphs it embeds) is made per document. This leans on pdfkit internals (0.17:
 * `_fontFamilies`, `_fontCount`, the StandardFont fields, the EmbeddedFont constructor); should
 * they change, lending throws and the document loads its fonts the ordinary, slower way.
 */
interface FontInternals {
  _font: object | null;
  _fontFamilies: Record<string, object>;
  _fontCount: number;
}

/** A typeface: what text it prints, and how one document gets its own copy of each font. */
interface Typeface {
  print: (text: string) => string;
  /** The ordinary pdfkit source of each font. */
  sources: Record<FontName, string | Buffer>;
  /** A per-document font made from the shared parsed one; undefined if pdfkit's internals moved. */
  lend: ((doc: PDFKit.PDFDocument, name: FontName, id: string) => object) | undefined;
}

function lendFonts(doc: PDFKit.PDFDocument, typeface: Typeface): void {
  const internals = doc as unknown as FontInternals;
  const { lend } = typeface;
  if (!lend || typeof internals._fontCount !== 'number' || typeof internals._fontFamilies !== 'object') {
    throw new Error('unexpected pdfkit font internals');
  }
  for (const name of [FONT, BOLD] as const) {
    internals._fontFamilies[name] = lend(doc, name, `F${++internals._fontCount}`);
  }
  doc.font(FONT);
}

/** The font pdfkit makes for `source` in a document of its own (an instance to copy or to learn from). */
function pdfkitFont(source: string | Buffer): object {
  const doc = new PDFDocument({ font: null as unknown as string });
  doc.registerFont('probe', source);
  const font = (doc.font('probe') as unknown as FontInternals)._font;
  if (!font || !('name' in font)) throw new Error('unexpected pdfkit font internals');
  return font;
}

/** `make()`, or undefined when it throws (pdfkit internals not as expected). */
function attempt<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}

let helvetica: Typeface | undefined;

function standardTypeface(): Typeface {
  if (helvetica) return helvetica;
  const sources = { [FONT]: 'Helvetica', [BOLD]: 'Helvetica-Bold' };
  const lend = attempt(() => {
    const parsed = { [FONT]: pdfkitFont(sources[FONT]), [BOLD]: pdfkitFont(sources[BOLD]) };
    if (!('font' in parsed[FONT])) throw new Error('unexpected pdfkit font internals');
    // a per-document copy: its own id and PDF object, the shared read-only metrics
    return (doc: PDFKit.PDFDocument, name: FontName, id: string) =>
      Object.assign(Object.create(Object.getPrototypeOf(parsed[name])), parsed[name], {
        document: doc,
        id,
        dictionary: null,
        embedded: false,
      });
  });
  helvetica = { print: toWinAnsi, sources, lend };
  return helvetica;
}

let dejaVu: Typeface | undefined;

/** DejaVu Sans from its npm package, read and parsed on first need. */
function dejaVuTypeface(): Typeface {
  if (dejaVu) return dejaVu;
  const fontDirectory = createRequire(import.meta.url)
    .resolve('dejavu-fonts-ttf/package.json')
    .replace(/package\.json$/, 'ttf/');
  const sources = {
    [FONT]: readFileSync(`${fontDirectory}DejaVuSans.ttf`),
    [BOLD]: readFileSync(`${fontDirectory}DejaVuSans-Bold.ttf`),
  };
  const faces = { [FONT]: parseFont(sources[FONT]) as Font, [BOLD]: parseFont(sources[BOLD]) as Font };
  const covers = (char: string) =>
    !/\p{C}/u.test(char) &&
    faces[FONT].hasGlyphForCodePoint(char.codePointAt(0)!) &&
    faces[BOLD].hasGlyphForCodePoint(char.codePointAt(0)!);
  const lend = attempt(() => {
    // pdfkit's EmbeddedFont, learnt from an instance: (document, fontkit font, id), its own subset
    const embedded = pdfkitFont(sources[FONT]);
    if (!('subset' in embedded) || !('layoutCache' in embedded))
      throw new Error('unexpected pdfkit font internals');
    const EmbeddedFont = embedded.constructor as new (
      doc: PDFKit.PDFDocument,
      font: Font,
      id: string,
    ) => object;
    return (doc: PDFKit.PDFDocument, name: FontName, id: string) => new EmbeddedFont(doc, faces[name], id);
  });
  dejaVu = { print: (text) => printableWith(text, covers), sources, lend };
  return dejaVu;
}

/** Text in DejaVu Sans, character for character where it has the glyph (it has no CJK). */
export function toDejaVu(text: string): string {
  return dejaVuTypeface().print(text);
}

/** A document with its fonts: Helvetica when every text fits WinAnsi, else DejaVu Sans. */
function newDocument(
  options: PDFKit.PDFDocumentOptions,
  texts: readonly string[],
): { doc: PDFKit.PDFDocument; print: (text: string) => string } {
  const typeface = texts.every(fitsWinAnsi) ? standardTypeface() : dejaVuTypeface();
  if (typeface.lend) {
    // font: null keeps pdfkit from loading Helvetica itself before the lent fonts are in place
    const doc = new PDFDocument({ ...options, font: null as unknown as string });
    lendFonts(doc, typeface);
    return { doc, print: typeface.print };
  }
  const doc = new PDFDocument(options);
  doc.registerFont(FONT, typeface.sources[FONT]);
  doc.registerFont(BOLD, typeface.sources[BOLD]);
  doc.font(FONT);
  return { doc, print: typeface.print };
}

/** Exported for its unit test, which fails if pdfkit's internals moved and documents fell back. */
export function lendParsedFonts(doc: PDFKit.PDFDocument, wide = false): void {
  lendFonts(doc, wide ? dejaVuTypeface() : standardTypeface());
}

/** Every piece of database text the document prints, to choose its typeface. */
function textsOf({ invoice, seller, customer }: PrintableInvoice): string[] {
  const party = (who: InvoiceParty) => [
    who.name,
    who.contactName ?? '',
    ...who.addressLines,
    who.email ?? '',
    who.taxId ?? '',
  ];
  return [
    invoice.invoice_number,
    invoice.currency,
    ...party(seller),
    ...party(customer),
    ...invoice.items.flatMap((item) => [item.description, item.tax_type ?? '']),
  ];
}

/** The printable invoice as a PDF document (the same content as the HTML one). */
export function renderInvoicePdf(printable: PrintableInvoice): Promise<Buffer> {
  const { invoice } = printable;
  const plain = (text: string) => text.replace(/\p{C}+/gu, ' ');
  const { doc, print } = newDocument(
    {
      size: 'LETTER',
      margin: PAGE_MARGIN,
      // document properties are Unicode strings in any PDF, whatever the fonts
      info: {
        Title: plain(`Invoice ${invoice.invoice_number}`),
        Author: plain(printable.seller.name),
        Subject: plain(`Invoice ${invoice.invoice_number} for ${printable.customer.name}`),
      },
    },
    textsOf(printable),
  );
  const done = new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  drawDocument(doc, printable, print);
  doc.end();
  return done;
}

function drawDocument(
  doc: PDFKit.PDFDocument,
  printable: PrintableInvoice,
  text: (value: string) => string,
): void {
  const { invoice, seller, customer, subtotal, taxLines, overdue } = printable;
  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;

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
  const sellerBottom = drawParty(doc, text, 'From', seller, left, blockTop, partyWidth);
  const customerBottom = drawParty(doc, text, 'Bill to', customer, left, sellerBottom + 14, partyWidth);
  const detailsBottom = drawDetails(
    doc,
    text,
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

  drawItems(doc, text, printable);

  // Totals, right-aligned under the amount columns.
  const currency = invoice.currency;
  const totals: [string, string, boolean][] = [
    ['Subtotal', subtotal, false],
    ...taxLines.map((line): [string, string, boolean] => [line.name, line.amount, false]),
    [taxLines.length > 0 ? 'Total tax' : 'Tax', invoice.tax_amount, false],
    ['Total', invoice.total, true],
    ['Paid', invoice.amount_paid, false],
    ...(parseMoney(invoice.amount_refunded) !== 0n
      ? [['Refunded', invoice.amount_refunded, false] as [string, string, boolean]]
      : []),
    ['Balance due', invoice.balance, true],
  ];
  // room for the largest amount stored (999,999,999,999.99999999) and its currency on one line
  const labelX = left + width - 300;
  doc.y += 10;
  for (const [label, amount, strong] of totals) {
    ensureRoom(doc, 18);
    const y = doc.y;
    doc.font(strong ? BOLD : FONT).fontSize(10);
    doc.text(label, labelX, y, { width: 90 });
    doc.text(`${formatAmount(amount)} ${text(currency)}`, labelX + 90, y, { width: 210, align: 'right' });
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
  print: (text: string) => string,
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
    .text(print(who.name), x, doc.y + 2, { width });
  const lines = [
    who.contactName ? `Attn: ${who.contactName}` : null,
    ...who.addressLines,
    who.email,
    who.taxId ? `Tax ID: ${who.taxId}` : null,
  ].filter((line): line is string => Boolean(line));
  doc.font(FONT).fontSize(9);
  for (const line of lines) doc.text(print(line), x, doc.y, { width });
  return doc.y;
}

function drawDetails(
  doc: PDFKit.PDFDocument,
  print: (text: string) => string,
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
      .text(print(value), x + width * 0.45, rowY, { width: width * 0.55, align: 'right' });
    rowY = Math.max(doc.y, rowY + 12);
  }
  return rowY;
}

function drawItems(
  doc: PDFKit.PDFDocument,
  print: (text: string) => string,
  { invoice }: PrintableInvoice,
): void {
  const left = PAGE_MARGIN;
  const rows = invoice.items.map((item) => [
    print(item.description),
    formatQuantity(item.quantity),
    formatAmount(item.unit_price),
    item.tax_type ?? '—',
    formatAmount(item.tax_amount),
    formatAmount(item.line_total_pre_tax),
  ]);
  const { columns, fontSize } = itemColumns(doc, rows);
  const header = () => {
    const y = doc.y;
    doc.font(BOLD).fontSize(8);
    let x = left;
    for (const column of columns) {
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
  doc.font(FONT).fontSize(fontSize);
  for (const cells of rows) {
    const height = Math.max(
      ...cells.map((cell, i) => doc.heightOfString(cell, { width: columns[i]!.width - CELL_GAP })),
    );
    if (ensureRoom(doc, height + 8)) {
      header();
      doc.font(FONT).fontSize(fontSize);
    }
    const y = doc.y;
    let x = left;
    cells.forEach((cell, i) => {
      const column = columns[i]!;
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
