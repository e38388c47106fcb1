import { createRequire } from 'node:module';
import type { Font } from 'fontkit';
import PDFDocument from 'pdfkit';

/*
 * The one place that reaches into pdfkit's internals; nothing else in the project does.
 *
 * Why: pdfkit's public API takes a font as a file name or its bytes and parses it for every
 * document (fontkit.create; the standard fonts' AFM metrics likewise). For DejaVu Sans that parse,
 * with the layout tables fontkit decodes on first use, costs several times what drawing a whole
 * invoice does. pdfkit has no public way to share a parsed font between documents (upstream:
 * https://github.com/foliojs/pdfkit/issues/1094 asks for cheaper custom fonts; #1527 is about the
 * per-font layout cache). So each document gets its own font objects (its own PDF object id and
 * glyph subset) made from the one parsed font, and registered where `doc.font(name)` looks them up.
 *
 * What it relies on, in pdfkit 0.17.2 (pinned exactly in package.json): `doc._fontFamilies` (name
 * -> font object), `doc._fontCount` (the F<n> ids), the StandardFont fields (`document`, `id`,
 * `dictionary`, `embedded`, `font`) and the EmbeddedFont constructor `(document, fontkitFont, id)`.
 * pdfkit-shared-fonts.test.ts fails as soon as any of it changes, and so does this module at the
 * first document: there is no silent fallback to a slower path.
 */

export const PDFKIT_VERSION = '0.17.2';

/** A font parsed once per process and lent to every document. */
export type SharedFontSource =
  | { standard: 'Helvetica' | 'Helvetica-Bold' }
  /** `embedded` parsed from `bytes` (fontkit.create), once. */
  | { embedded: Font; bytes: Uint8Array };

interface FontInternals {
  _font: object | null;
  _fontFamilies: Record<string, object>;
  _fontCount: number;
}

type FontMaker = (doc: PDFKit.PDFDocument, id: string) => object;

let installed: string | undefined;

function installedVersion(): string {
  installed ??= (createRequire(import.meta.url)('pdfkit/package.json') as { version: string }).version;
  return installed;
}

function internalsChanged(what: string): Error {
  return new Error(
    `pdfkit ${installedVersion()} does not have the internals libs/invoice-documents/pdfkit-shared-fonts.ts ` +
      `was written for (pdfkit ${PDFKIT_VERSION}): ${what}. Update the adapter, or pin pdfkit back.`,
  );
}

/** The font object pdfkit makes for `source` in a throwaway document: an instance to learn from. */
function probeFont(source: string | Uint8Array): object {
  const doc = new PDFDocument({ font: null as unknown as string });
  doc.registerFont('probe', source as string);
  const font = (doc.font('probe') as unknown as FontInternals)._font;
  if (!font || !('name' in font)) throw internalsChanged('doc.font() no longer sets doc._font');
  return font;
}

let embeddedFontClass: (new (doc: PDFKit.PDFDocument, font: Font, id: string) => object) | undefined;

function makerOf(source: SharedFontSource): FontMaker {
  if ('standard' in source) {
    const parsed = probeFont(source.standard);
    for (const field of ['document', 'id', 'font'])
      if (!(field in parsed)) throw internalsChanged(`StandardFont has no '${field}'`);
    // a per-document copy: its own id and PDF object, the shared read-only metrics
    return (doc, id) =>
      Object.assign(Object.create(Object.getPrototypeOf(parsed)), parsed, {
        document: doc,
        id,
        dictionary: null,
        embedded: false,
      });
  }
  if (!embeddedFontClass) {
    const instance = probeFont(source.bytes);
    if (!('subset' in instance) || !('layoutCache' in instance))
      throw internalsChanged('EmbeddedFont has no subset or layoutCache');
    embeddedFontClass = instance.constructor as unknown as typeof embeddedFontClass;
  }
  const EmbeddedFont = embeddedFontClass!;
  return (doc, id) => new EmbeddedFont(doc, source.embedded, id);
}

const makers = new WeakMap<SharedFontSource, FontMaker>();

/**
 * A new document in which `doc.font(name)` selects the shared font given under each name (the
 * first name is the current font). The sources must be long-lived objects: their makers are kept.
 */
export function documentWithSharedFonts(
  options: PDFKit.PDFDocumentOptions,
  fonts: Record<string, SharedFontSource>,
): PDFKit.PDFDocument {
  if (installedVersion() !== PDFKIT_VERSION) throw internalsChanged('another version is installed');
  // font: null keeps pdfkit from loading Helvetica itself before the shared fonts are in place
  const doc = new PDFDocument({ ...options, font: null as unknown as string });
  const internals = doc as unknown as FontInternals;
  if (typeof internals._fontCount !== 'number' || typeof internals._fontFamilies !== 'object')
    throw internalsChanged('no _fontFamilies or _fontCount on the document');
  for (const [name, source] of Object.entries(fonts)) {
    let make = makers.get(source);
    if (!make) {
      make = makerOf(source);
      makers.set(source, make);
    }
    internals._fontFamilies[name] = make(doc, `F${++internals._fontCount}`);
  }
  const first = Object.keys(fonts)[0];
  if (first) doc.font(first);
  return doc;
}
