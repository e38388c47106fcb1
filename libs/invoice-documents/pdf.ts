import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Font, create as parseFont } from 'fontkit';
import {
  displayAmount,
  displayDate,
  displayMoney,
  displayQuantity,
  type Messages,
  messagesFor,
} from '../i18n/index.js';
import { parseMoney } from '../money/index.js';
import { documentWithSharedFonts, type SharedFontSource } from './pdfkit-shared-fonts.js';
import { type PrintableCreditNote, taxNameOf } from './printable-credit-note.js';
import type { InvoiceParty, PrintableInvoice } from './printable-invoice.js';

/*
 * Three typefaces. A document whose text fits WinAnsi (Windows-1252: Latin-1 and a few typographic
 * characters: English, French, German, Spanish, the Nordic languages) prints in the built-in
 * Helvetica, which needs no font file and is the cheap common case. Any other document (Łódź,
 * Ελλάδα, Москва, Tiếng Việt) embeds a subset of DejaVu Sans, which covers Latin, Greek, Cyrillic
 * and more. A piece of text with Chinese or Japanese in it (a name, an address line, an item)
 * prints, whole, in Noto Sans SC (npm @expo-google-fonts/noto-sans-sc: Chinese, kana, Latin,
 * Cyrillic), embedded as a subset beside the document's own typeface. A character none of them
 * prints (Hangul, emoji; in a CJK piece, the letters Noto Sans SC lacks, such as Polish Ł) is
 * reduced to its unaccented letter where Unicode gives one and to "?" otherwise, so an unexpected
 * name never breaks or garbles the document.
 */

/** Text Noto Sans SC prints in place of the document's typeface: it holds Chinese or Japanese. */
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Bopomofo}]/u;

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
/** The document's font names; each document binds them to its typeface (and Noto Sans SC when needed). */
const FONT = 'Body';
const BOLD = 'Body-Bold';
const CJK_FONT = 'Cjk';
const CJK_BOLD = 'Cjk-Bold';
type FontName = typeof FONT | typeof BOLD;
type FaceName = FontName | typeof CJK_FONT | typeof CJK_BOLD;
type Weight = 'regular' | 'bold';
const MUTED = '#555555';

interface Column {
  width: number;
  align: 'left' | 'right';
}

/** Description, quantity, unit price, tax type, tax, amount. */
const COLUMNS: Column[] = [
  { width: 182, align: 'left' },
  { width: 52, align: 'right' },
  { width: 78, align: 'right' },
  { width: 58, align: 'left' },
  { width: 64, align: 'right' },
  { width: 78, align: 'right' },
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
function itemColumns(
  doc: PDFKit.PDFDocument,
  rows: string[][],
  titles: string[],
): { columns: Column[]; fontSize: number } {
  const tableWidth = COLUMNS.reduce((sum, column) => sum + column.width, 0);
  const natural = COLUMNS.map((_, i) => {
    doc.font(BOLD).fontSize(8);
    let widest = doc.widthOfString(titles[i]!);
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

/**
 * A typeface: what text it prints, and its two fonts, parsed once per process and shared by every
 * document (pdfkit-shared-fonts.ts says why and how).
 */
interface Typeface {
  print: (text: string) => string;
  fonts: Record<FontName, SharedFontSource>;
}

let helvetica: Typeface | undefined;

function standardTypeface(): Typeface {
  helvetica ??= {
    print: toWinAnsi,
    fonts: { [FONT]: { standard: 'Helvetica' }, [BOLD]: { standard: 'Helvetica-Bold' } },
  };
  return helvetica;
}

/** A typeface of two font files (regular, bold), read and parsed once; it prints what both have glyphs for. */
function embeddedTypeface(files: Record<FontName, string>): Typeface {
  const bytes = { [FONT]: readFileSync(files[FONT]), [BOLD]: readFileSync(files[BOLD]) };
  const faces = { [FONT]: parseFont(bytes[FONT]) as Font, [BOLD]: parseFont(bytes[BOLD]) as Font };
  const covers = (char: string) =>
    !/\p{C}/u.test(char) &&
    faces[FONT].hasGlyphForCodePoint(char.codePointAt(0)!) &&
    faces[BOLD].hasGlyphForCodePoint(char.codePointAt(0)!);
  return {
    print: (text) => printableWith(text, covers),
    fonts: {
      [FONT]: { embedded: faces[FONT], bytes: bytes[FONT] },
      [BOLD]: { embedded: faces[BOLD], bytes: bytes[BOLD] },
    },
  };
}

/** The folder of an npm package's files. */
function packageDirectory(name: string): string {
  return createRequire(import.meta.url)
    .resolve(`${name}/package.json`)
    .replace(/package\.json$/, '');
}

let dejaVu: Typeface | undefined;

/** DejaVu Sans from its npm package, read and parsed on first need. */
function dejaVuTypeface(): Typeface {
  const directory = `${packageDirectory('dejavu-fonts-ttf')}ttf/`;
  dejaVu ??= embeddedTypeface({
    [FONT]: `${directory}DejaVuSans.ttf`,
    [BOLD]: `${directory}DejaVuSans-Bold.ttf`,
  });
  return dejaVu;
}

/** Text in DejaVu Sans, character for character where it has the glyph (it has no CJK). */
export function toDejaVu(text: string): string {
  return dejaVuTypeface().print(text);
}

let notoSansSc: Typeface | undefined;

/** Noto Sans SC from its npm package, read and parsed on the first document with Chinese or Japanese. */
function cjkTypeface(): Typeface {
  const directory = packageDirectory('@expo-google-fonts/noto-sans-sc');
  notoSansSc ??= embeddedTypeface({
    [FONT]: `${directory}400Regular/NotoSansSC_400Regular.ttf`,
    [BOLD]: `${directory}700Bold/NotoSansSC_700Bold.ttf`,
  });
  return notoSansSc;
}

/** Text in Noto Sans SC, character for character where it has the glyph (Chinese, kana; not Hangul). */
export function toNotoSansSc(text: string): string {
  return cjkTypeface().print(text);
}

/**
 * How one document prints a piece of text: which of its faces, and the text that face can show.
 * `set` selects that face on the document and returns the text, for `doc.text(set(...))`.
 */
interface Typesetter {
  faceFor(text: string, weight: Weight): FaceName;
  print(text: string, face: FaceName): string;
  set(text: string, weight: Weight): string;
}

/**
 * A document with its fonts: Helvetica when every text fits WinAnsi, else DejaVu Sans; and Noto
 * Sans SC beside it when some text holds Chinese or Japanese.
 */
function newDocument(
  options: PDFKit.PDFDocumentOptions,
  texts: readonly string[],
): { doc: PDFKit.PDFDocument; typesetter: Typesetter } {
  const cjkTexts = texts.some((text) => CJK.test(text));
  const others = cjkTexts ? texts.filter((text) => !CJK.test(text)) : texts;
  const typeface = others.every(fitsWinAnsi) ? standardTypeface() : dejaVuTypeface();
  const cjk = cjkTexts ? cjkTypeface() : undefined;
  const doc = documentWithSharedFonts(options, {
    ...typeface.fonts,
    ...(cjk ? { [CJK_FONT]: cjk.fonts[FONT], [CJK_BOLD]: cjk.fonts[BOLD] } : {}),
  });
  const typesetter: Typesetter = {
    faceFor: (text, weight) =>
      cjk && CJK.test(text) ? (weight === 'bold' ? CJK_BOLD : CJK_FONT) : weight === 'bold' ? BOLD : FONT,
    print: (text, face) =>
      cjk && (face === CJK_FONT || face === CJK_BOLD) ? cjk.print(text) : typeface.print(text),
    set(text, weight) {
      const face = typesetter.faceFor(text, weight);
      doc.font(face);
      return typesetter.print(text, face);
    },
  };
  return { doc, typesetter };
}

/** Every piece of database text the document prints, to choose its typeface. */
function textsOf({ locale, invoice, seller, customer }: PrintableInvoice, m: Messages): string[] {
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
    // the locale's own words and figures (French dates and amounts are WinAnsi; another locale may not be)
    m.invoiceTitle,
    m.documentFootnote(invoice.currency),
    m.invoiceStatus[invoice.status],
    m.dueDate,
    displayMoney(invoice.total, invoice.currency, locale),
    displayDate(invoice.due_date, locale),
  ];
}

/** The printable invoice as a PDF document (the same content as the HTML one). */
export function renderInvoicePdf(printable: PrintableInvoice): Promise<Buffer> {
  const { invoice } = printable;
  const m = messagesFor(printable.locale);
  const plain = (text: string) => text.replace(/\p{C}+/gu, ' ');
  const { doc, typesetter } = newDocument(
    {
      size: 'LETTER',
      margin: PAGE_MARGIN,
      // document properties are Unicode strings in any PDF, whatever the fonts
      info: {
        Title: plain(m.documentTitle(invoice.invoice_number)),
        Author: plain(printable.seller.name),
        Subject: plain(m.documentSubject(invoice.invoice_number, printable.customer.name)),
      },
      lang: printable.locale,
    },
    textsOf(printable, m),
  );
  const done = collected(doc);
  drawDocument(doc, printable, m, typesetter);
  doc.end();
  return done;
}

/** The document's bytes, once it has ended. */
function collected(doc: PDFKit.PDFDocument): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
}

/**
 * The top of a printable document, the same for an invoice and a credit note: the seller on the
 * left and the title and number on the right, then seller above customer on the left and the
 * document's particulars on the right. Leaves doc.y below them.
 */
function drawOpening(
  doc: PDFKit.PDFDocument,
  ts: Typesetter,
  m: Messages,
  document: {
    heading: string;
    number: string;
    seller: InvoiceParty;
    customer: InvoiceParty;
    detailsHeading: string;
    details: [string, string][];
  },
): void {
  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;
  const top = doc.y;
  doc.font(BOLD).fontSize(22).text(ts.print(document.heading, FONT), left, top, { width, align: 'right' });
  doc.fontSize(11).text(ts.set(document.number, 'regular'), left, doc.y, { width, align: 'right' });
  doc
    .font(BOLD)
    .fontSize(16)
    .text(ts.set(document.seller.name, 'bold'), left, top, { width: width * 0.6 });
  doc.y = Math.max(doc.y, top + 44) + 16;

  const blockTop = doc.y;
  const detailsWidth = 240;
  const partyWidth = width - detailsWidth - 24;
  const sellerBottom = drawParty(doc, ts, m, m.from, document.seller, left, blockTop, partyWidth);
  const customerBottom = drawParty(
    doc,
    ts,
    m,
    m.billTo,
    document.customer,
    left,
    sellerBottom + 14,
    partyWidth,
  );
  const detailsBottom = drawDetails(
    doc,
    ts,
    document.detailsHeading,
    document.details,
    left + width - detailsWidth,
    blockTop,
    detailsWidth,
  );
  doc.y = Math.max(customerBottom, detailsBottom) + 24;
}

function drawDocument(
  doc: PDFKit.PDFDocument,
  printable: PrintableInvoice,
  m: Messages,
  ts: Typesetter,
): void {
  /** Words and figures of our own, in the document's typeface (whatever font is selected). */
  const text = (value: string) => ts.print(value, FONT);
  const { locale, invoice, seller, customer, subtotal, taxLines, overdue, amountDue } = printable;
  const date = (value: string) => displayDate(value, locale);
  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;

  const status = m.invoiceStatus[invoice.status];
  drawOpening(doc, ts, m, {
    heading: m.invoiceTitle,
    number: invoice.invoice_number,
    seller,
    customer,
    detailsHeading: m.invoiceDetails,
    details: [
      [m.invoiceNumber, invoice.invoice_number],
      [m.invoiceDate, date(invoice.invoice_date)],
      [m.dueDate, date(invoice.due_date)],
      [m.period, m.periodRange(date(invoice.period_start), date(invoice.period_end))],
      [m.status, overdue ? `${status} (${m.overdue})` : status],
      [m.currency, invoice.currency],
    ],
  });

  drawItems(doc, ts, m, printable);

  // Totals, right-aligned under the amount columns.
  const currency = invoice.currency;
  type TotalLine = { label: string; amount: string; strong?: boolean };
  const totals: TotalLine[] = [
    { label: m.subtotal, amount: subtotal },
    ...taxLines.map(
      (line): TotalLine => ({ label: m.taxNames[line.name] ?? line.name, amount: line.amount }),
    ),
    { label: taxLines.length > 0 ? m.totalTax : m.tax, amount: invoice.tax_amount },
    { label: m.total, amount: invoice.total, strong: true },
    { label: m.paid, amount: invoice.amount_paid },
    ...(parseMoney(invoice.amount_refunded) !== 0n
      ? [{ label: m.refunded, amount: invoice.amount_refunded }]
      : []),
    { label: m.balanceDue, amount: amountDue, strong: true },
  ];
  // room for the largest amount stored (999,999,999,999.99999999) and its currency on one line
  const labelX = left + width - 300;
  doc.y += 10;
  for (const { label, amount, strong } of totals) {
    ensureRoom(doc, 18);
    const y = doc.y;
    doc.font(strong ? BOLD : FONT).fontSize(10);
    doc.text(text(label), labelX, y, { width: 110 });
    doc.text(text(displayMoney(amount, currency, locale)), labelX + 110, y, { width: 190, align: 'right' });
    doc.y = y + 16;
  }

  const notes = printable.creditNotes ?? [];
  if (notes.length > 0) {
    doc.y += 12;
    drawSimpleTable(
      doc,
      ts,
      m.creditNotes,
      [m.creditNoteNumber, m.creditNoteDate, m.totalCredited],
      notes.map((note) => [note.number, date(note.date), displayMoney(note.total, currency, locale)]),
    );
  }

  ensureRoom(doc, 40);
  doc
    .font(FONT)
    .fontSize(8)
    .fillColor(MUTED)
    .text(text(m.documentFootnote(currency)), left, doc.y + 24, { width })
    .fillColor('black');
}

/**
 * A titled table of a few columns (the first left-aligned and wide, the others right-aligned):
 * the credit notes an invoice lists, the lines of a credit note.
 */
function drawSimpleTable(
  doc: PDFKit.PDFDocument,
  ts: Typesetter,
  title: string,
  titles: string[],
  rows: string[][],
): void {
  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;
  const rest = Math.min(130, Math.floor((width * 0.5) / (titles.length - 1)));
  const widths = [width - rest * (titles.length - 1), ...titles.slice(1).map(() => rest)];
  ensureRoom(doc, 40);
  doc
    .font(BOLD)
    .fontSize(8)
    .fillColor(MUTED)
    .text(ts.print(title.toUpperCase(), BOLD), left, doc.y, { width });
  doc.fillColor('black');
  const header = () => {
    const y = doc.y + 4;
    let x = left;
    doc.font(BOLD).fontSize(8);
    titles.forEach((cell, i) => {
      doc.text(ts.print(cell.toUpperCase(), BOLD), x, y, {
        width: widths[i]! - CELL_GAP,
        align: i === 0 ? 'left' : 'right',
      });
      x += widths[i]!;
    });
    doc
      .moveTo(left, y + 12)
      .lineTo(left + width, y + 12)
      .lineWidth(1)
      .stroke();
    doc.y = y + 17;
  };
  header();
  for (const cells of rows) {
    doc.fontSize(ITEM_FONT_SIZE);
    const height = Math.max(
      ...cells.map((cell, i) =>
        doc.font(ts.faceFor(cell, 'regular')).heightOfString(ts.print(cell, ts.faceFor(cell, 'regular')), {
          width: widths[i]! - CELL_GAP,
        }),
      ),
    );
    if (ensureRoom(doc, height + 8)) header();
    const y = doc.y;
    let x = left;
    cells.forEach((cell, i) => {
      doc.fontSize(ITEM_FONT_SIZE).text(ts.set(cell, 'regular'), x, y, {
        width: widths[i]! - CELL_GAP,
        align: i === 0 ? 'left' : 'right',
      });
      x += widths[i]!;
    });
    const lineY = y + height + 3;
    doc
      .moveTo(left, lineY)
      .lineTo(left + width, lineY)
      .lineWidth(0.5)
      .strokeColor('#cccccc')
      .stroke()
      .strokeColor('black');
    doc.y = lineY + 5;
  }
}

/** The printable credit note as a PDF document (the same content as its HTML). */
export function renderCreditNotePdf(printable: PrintableCreditNote): Promise<Buffer> {
  const { note, invoice, seller, customer, locale } = printable;
  const m = messagesFor(locale);
  const plain = (value: string) => value.replace(/\p{C}+/gu, ' ');
  const party = (who: InvoiceParty) => [
    who.name,
    who.contactName ?? '',
    ...who.addressLines,
    who.email ?? '',
    who.taxId ?? '',
  ];
  const { doc, typesetter: ts } = newDocument(
    {
      size: 'LETTER',
      margin: PAGE_MARGIN,
      info: {
        Title: plain(m.creditNoteDocumentTitle(note.number)),
        Author: plain(seller.name),
        Subject: plain(m.creditNoteSubject(note.number, invoice.invoice_number, customer.name)),
      },
      lang: locale,
    },
    [
      note.number,
      invoice.invoice_number,
      note.currency,
      note.memo ?? '',
      ...party(seller),
      ...party(customer),
      ...note.lines.map((line) => line.description),
      m.creditNoteTitle,
      m.creditNoteFootnote(note.currency),
      m.creditNoteReasons[note.reason] ?? note.reason,
      displayMoney(note.total, note.currency, locale),
      displayDate(note.created_at.slice(0, 10), locale),
    ],
  );
  const done = collected(doc);
  const text = (value: string) => ts.print(value, FONT);
  const date = (value: string) => displayDate(value, locale);
  const money = (value: string) => displayMoney(value, note.currency, locale);
  const left = PAGE_MARGIN;
  const width = doc.page.width - 2 * PAGE_MARGIN;

  drawOpening(doc, ts, m, {
    heading: m.creditNoteTitle,
    number: note.number,
    seller,
    customer,
    detailsHeading: m.creditNoteDetails,
    details: [
      [m.creditNoteNumber, note.number],
      [m.creditNoteDate, date(note.created_at.slice(0, 10))],
      [m.creditedInvoice, `${invoice.invoice_number} (${date(invoice.invoice_date)})`],
      [m.reason, m.creditNoteReasons[note.reason] ?? note.reason],
      [m.currency, note.currency],
    ],
  });
  if (note.memo) {
    doc.fontSize(9).text(ts.set(`${m.memo}: ${note.memo}`, 'regular'), left, doc.y, { width });
    doc.y += 10;
  }

  drawSimpleTable(
    doc,
    ts,
    m.lines,
    [m.description, m.tax, m.amount],
    note.lines.map((line) => [
      line.description,
      displayAmount(line.tax_amount, locale, note.currency),
      displayAmount(line.amount, locale, note.currency),
    ]),
  );

  type TotalLine = { label: string; amount: string; strong?: boolean };
  const totals: TotalLine[] = [
    { label: m.subtotal, amount: note.subtotal },
    ...note.tax_lines.map((line): TotalLine => {
      const name = taxNameOf(line.name);
      return { label: m.taxNames[name] ?? name, amount: line.amount };
    }),
    { label: note.tax_lines.length > 0 ? m.totalTax : m.tax, amount: note.tax },
    { label: m.totalCredited, amount: note.total, strong: true },
    { label: m.appliedToInvoice, amount: note.applied_to_invoice },
    { label: m.creditedToAccount, amount: note.credited_to_customer },
  ];
  const labelX = left + width - 360;
  doc.y += 10;
  for (const { label, amount, strong } of totals) {
    ensureRoom(doc, 18);
    const y = doc.y;
    doc.font(strong ? BOLD : FONT).fontSize(10);
    doc.text(text(label), labelX, y, { width: 190 });
    doc.text(text(money(amount)), labelX + 190, y, { width: 170, align: 'right' });
    doc.y = y + 16;
  }
  ensureRoom(doc, 40);
  doc
    .font(FONT)
    .fontSize(8)
    .fillColor(MUTED)
    .text(text(m.creditNoteFootnote(note.currency)), left, doc.y + 24, { width })
    .fillColor('black');
  doc.end();
  return done;
}

function drawParty(
  doc: PDFKit.PDFDocument,
  ts: Typesetter,
  m: Messages,
  title: string,
  who: InvoiceParty,
  x: number,
  y: number,
  width: number,
): number {
  doc.font(BOLD).fontSize(8).fillColor(MUTED).text(ts.print(title.toUpperCase(), BOLD), x, y, { width });
  doc
    .fillColor('black')
    .fontSize(11)
    .text(ts.set(who.name, 'bold'), x, doc.y + 2, { width });
  const lines = [
    who.contactName ? m.attention(who.contactName) : null,
    ...who.addressLines,
    who.email,
    who.taxId ? m.taxId(who.taxId) : null,
  ].filter((line): line is string => Boolean(line));
  doc.fontSize(9);
  for (const line of lines) doc.text(ts.set(line, 'regular'), x, doc.y, { width });
  return doc.y;
}

function drawDetails(
  doc: PDFKit.PDFDocument,
  ts: Typesetter,
  title: string,
  rows: [string, string][],
  x: number,
  y: number,
  width: number,
): number {
  doc.font(BOLD).fontSize(8).fillColor(MUTED).text(ts.print(title.toUpperCase(), BOLD), x, y, { width });
  doc.fillColor('black').fontSize(9);
  let rowY = doc.y + 2;
  for (const [label, value] of rows) {
    doc
      .font(FONT)
      .fillColor(MUTED)
      .text(ts.print(label, FONT), x, rowY, { width: width * 0.45 });
    doc
      .fillColor('black')
      .text(ts.set(value, 'regular'), x + width * 0.45, rowY, { width: width * 0.55, align: 'right' });
    rowY = Math.max(doc.y, rowY + 12);
  }
  return rowY;
}

function drawItems(
  doc: PDFKit.PDFDocument,
  ts: Typesetter,
  m: Messages,
  { locale, invoice }: PrintableInvoice,
): void {
  const left = PAGE_MARGIN;
  // a description may need Noto Sans SC; every other cell is ours, in the document's typeface
  const descriptionFaces = invoice.items.map((item) => ts.faceFor(item.description, 'regular'));
  const rows = invoice.items.map((item, r) => [
    ts.print(item.description, descriptionFaces[r]!),
    displayQuantity(item.quantity, locale),
    displayAmount(item.unit_price, locale, invoice.currency),
    item.tax_type ?? '—',
    displayAmount(item.tax_amount, locale, invoice.currency),
    displayAmount(item.line_total_pre_tax, locale, invoice.currency),
  ]);
  const titles = [m.description, m.quantity, m.unitPrice, m.taxType, m.tax, m.amount].map((title) =>
    ts.print(title.toUpperCase(), BOLD),
  );
  const faceOf = (r: number, column: number) => (column === 0 ? descriptionFaces[r]! : FONT);
  const { columns, fontSize } = itemColumns(doc, rows, titles);
  const header = () => {
    const y = doc.y;
    doc.font(BOLD).fontSize(8);
    let x = left;
    columns.forEach((column, i) => {
      doc.text(titles[i]!, x, y, { width: column.width - CELL_GAP, align: column.align });
      x += column.width;
    });
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
  rows.forEach((cells, r) => {
    const height = Math.max(
      ...cells.map((cell, i) =>
        doc.font(faceOf(r, i)).heightOfString(cell, { width: columns[i]!.width - CELL_GAP }),
      ),
    );
    if (ensureRoom(doc, height + 8)) {
      header();
      doc.font(FONT).fontSize(fontSize);
    }
    const y = doc.y;
    let x = left;
    cells.forEach((cell, i) => {
      const column = columns[i]!;
      doc.font(faceOf(r, i)).text(cell, x, y, { width: column.width - CELL_GAP, align: column.align });
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
  });
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
