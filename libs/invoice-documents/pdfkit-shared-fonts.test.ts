import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Font, create as parseFont } from 'fontkit';
import { describe, expect, it } from 'vitest';
import { documentWithSharedFonts, PDFKIT_VERSION, type SharedFontSource } from './pdfkit-shared-fonts.js';

/**
 * The guard of the one adapter that reaches into pdfkit: if pdfkit changes under it (another
 * version, a renamed field), this fails loudly, before any document does.
 */
const require = createRequire(import.meta.url);

describe('pdfkit shared fonts adapter', () => {
  it('is used with the exact pdfkit version it was written for, pinned in package.json', () => {
    expect(require('pdfkit/package.json').version).toBe(PDFKIT_VERSION);
    expect(require('../../package.json').dependencies.pdfkit).toBe(PDFKIT_VERSION);
  });

  it('lends one parsed font to each document as a font of its own', async () => {
    const bytes = readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf'));
    const fonts: Record<string, SharedFontSource> = {
      Body: { standard: 'Helvetica' },
      Wide: { embedded: parseFont(bytes) as Font, bytes },
    };
    const documents = [documentWithSharedFonts({}, fonts), documentWithSharedFonts({}, fonts)];
    const seen: { id: string; name: string; font: unknown }[] = [];
    for (const doc of documents) {
      for (const name of ['Body', 'Wide']) {
        doc.font(name).text(`${name} Ελλάδα`);
        const font = (
          doc as unknown as { _font: { id: string; name: string; document: unknown; font: unknown } }
        )._font;
        expect(font.document).toBe(doc);
        seen.push({ id: font.id, name: font.name, font: font.font });
      }
      const ended = new Promise((resolve) => doc.on('end', resolve));
      doc.resume();
      doc.end();
      await ended;
    }
    expect(seen.map((font) => font.name)).toEqual(['Helvetica', 'DejaVuSans', 'Helvetica', 'DejaVuSans']);
    // the parsed metrics are the same objects in both documents: parsed once
    expect(seen[0]!.font).toBe(seen[2]!.font);
    expect(seen[1]!.font).toBe(seen[3]!.font);
  });
});
