import { z } from 'zod';
import type { Queryable } from '../../../libs/db/index.js';
import { LOCALES, type Locale } from '../../../libs/i18n/index.js';
import { INVOICE_HTML_HEADERS } from '../../../libs/invoice-documents/index.js';
import { uuidPathId } from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { type ApiInstance, orgIdOf } from '../types.js';

const DocumentQuery = z.object({
  locale: z
    .enum(LOCALES)
    .default('en')
    .meta({ description: 'The language of the document: labels, dates and number formats.' }),
});
/** Sent as raw bytes: Fastify never serializes a Buffer. */
const PdfBytes = z
  .custom<Buffer>((value) => Buffer.isBuffer(value))
  .meta({ type: 'string', format: 'binary' });

/** What a document route reads off its request: the organization, the id and the language. */
type DocumentRequest = Parameters<typeof orgIdOf>[0] & {
  params: Record<string, string>;
  query: { locale: Locale };
};

/** A billing document that prints: an invoice or a credit note (libs/invoice-documents renders both). */
export interface PrintableDocument<Printable> {
  /** The collection's path and the id parameter its other routes name: `/invoices/:invoice_id`. */
  collection: string;
  idParam: string;
  /** Its name in operation ids (`getInvoiceHtml`) and, lower case, in summaries. */
  operationName: string;
  noun: string;
  tags: string[];
  /** How the OpenAPI document names the PDF's file: `<invoice_number>.pdf`. */
  fileShown: string;
  load(db: Queryable, orgId: number, id: string, options: { locale: Locale }): Promise<Printable>;
  renderHtml(printable: Printable): string;
  renderPdf(printable: Printable): Promise<Buffer>;
  pdfFilename(printable: Printable): string;
}

/**
 * GET <collection>/:id/html and /pdf: the same loaded document, in the language asked, as a
 * self-contained HTML page or a PDF attachment; neither is cached by anyone between.
 */
export function printableDocumentRoutes<Printable>(
  app: ApiInstance,
  db: Queryable,
  document: PrintableDocument<Printable>,
): void {
  const { collection, idParam, operationName, noun, tags } = document;
  const params = z.object({ [idParam]: uuidPathId });
  const errors = errorResponses(...AUTHENTICATED_ERRORS, 404, 422);
  const load = (request: DocumentRequest) =>
    document.load(db, orgIdOf(request), request.params[idParam]!, { locale: request.query.locale });

  app.get(
    `${collection}/:${idParam}/html`,
    {
      schema: {
        operationId: `get${operationName}Html`,
        tags,
        summary: `The printable ${noun} as an HTML document`,
        params,
        querystring: DocumentQuery,
        response: {
          200: {
            description: `A self-contained printable ${noun} (no script, inline styles).`,
            content: { 'text/html': { schema: z.string() } },
          },
          ...errors,
        },
      },
    },
    async (request, reply) =>
      reply
        .headers(INVOICE_HTML_HEADERS)
        .type('text/html; charset=utf-8')
        .send(document.renderHtml(await load(request))),
  );

  app.get(
    `${collection}/:${idParam}/pdf`,
    {
      schema: {
        operationId: `get${operationName}Pdf`,
        tags,
        summary: `The printable ${noun} as a PDF`,
        description: `Content-Disposition names the file \`${document.fileShown}\`.`,
        params,
        querystring: DocumentQuery,
        response: {
          200: {
            description: `The ${noun} as a PDF document.`,
            headers: {
              'Content-Disposition': {
                type: 'string',
                description: `attachment; filename="${document.fileShown}"`,
              },
            },
            content: { 'application/pdf': { schema: PdfBytes } },
          },
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const printable = await load(request);
      const pdf = await document.renderPdf(printable);
      return reply
        .header('Cache-Control', 'private, no-store')
        .header('Content-Disposition', `attachment; filename="${document.pdfFilename(printable)}"`)
        .type('application/pdf')
        .send(pdf);
    },
  );
}
