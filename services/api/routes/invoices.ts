import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { LOCALES } from '../../../libs/i18n/index.js';
import {
  INVOICE_HTML_HEADERS,
  invoicePdfFilename,
  loadPrintableInvoice,
  renderInvoiceHtml,
  renderInvoicePdf,
} from '../../../libs/invoice-documents/index.js';
import {
  getPublicInvoice,
  listInvoiceTransactions,
  RenderedInvoicePages,
  rotateHostedLink,
} from '../../../libs/invoices/index.js';
import {
  INVOICE_STATUSES,
  Invoice,
  InvoiceTransaction,
  integerIdQuery,
  JSON_CONTENT_TYPE,
  listBodyJson,
  listOf,
  paginationOf,
  paginationQuery,
  single,
  uuidPathId,
} from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { pagesBaseUrlOf } from '../public-url.js';
import { orgIdOf } from '../types.js';

const InvoiceListQuery = paginationQuery.extend({
  customer_id: integerIdQuery.optional().meta({ description: "Only this customer's invoices." }),
  status: z
    .enum(INVOICE_STATUSES)
    .optional()
    .meta({ description: 'Only invoices in this status (uppercase).' }),
});
const InvoicePath = z.object({ invoice_id: uuidPathId });
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

const documentErrors = errorResponses(...AUTHENTICATED_ERRORS, 404, 422);

export const invoiceRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const renderedPages = new RenderedInvoicePages(db, app.deps.invoiceCacheBytes);

  app.get(
    '/invoices',
    {
      schema: {
        operationId: 'listInvoices',
        tags: ['Invoices'],
        summary: 'List invoices with their items, newest first',
        querystring: InvoiceListQuery,
        response: { 200: listOf(Invoice), ...errorResponses(...AUTHENTICATED_ERRORS, 422) },
      },
    },
    async (request, reply) => {
      const { customer_id, status, ...page } = request.query;
      const filter = { customerId: customer_id, status };
      const { items, total } = await renderedPages.list(
        orgIdOf(request),
        filter,
        page,
        pagesBaseUrlOf(request),
      );
      // Already JSON, written by the route's own schemas: Fastify sends a Buffer as it is (the
      // reply's type, bound to the schema's object shape, is set aside for this one send).
      return (reply as FastifyReply)
        .type(JSON_CONTENT_TYPE)
        .send(listBodyJson(items, paginationOf(page, total)));
    },
  );

  app.get(
    '/invoices/:invoice_id',
    {
      schema: {
        operationId: 'getInvoice',
        tags: ['Invoices'],
        summary: 'Retrieve an invoice with its items',
        params: InvoicePath,
        response: { 200: single(Invoice), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({
      data: await getPublicInvoice(db, orgIdOf(request), request.params.invoice_id, pagesBaseUrlOf(request)),
    }),
  );

  app.post(
    '/invoices/:invoice_id/rotate-hosted-url',
    {
      schema: {
        operationId: 'rotateInvoiceHostedUrl',
        tags: ['Invoices'],
        summary: "Replace the invoice's hosted link: the earlier one opens nothing",
        description:
          'Answers the invoice with its new `hosted_url`. Every earlier link of this invoice then answers 404 ' +
          "with a page that shows no data; the organization's other links are untouched. No body.",
        params: InvoicePath,
        response: { 200: single(Invoice), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({
      data: await rotateHostedLink(db, orgIdOf(request), request.params.invoice_id, pagesBaseUrlOf(request)),
    }),
  );

  app.get(
    '/invoices/:invoice_id/html',
    {
      schema: {
        operationId: 'getInvoiceHtml',
        tags: ['Invoices'],
        summary: 'The printable invoice as an HTML document',
        params: InvoicePath,
        querystring: DocumentQuery,
        response: {
          200: {
            description: 'A self-contained printable invoice (no script, inline styles).',
            content: { 'text/html': { schema: z.string() } },
          },
          ...documentErrors,
        },
      },
    },
    async (request, reply) => {
      const printable = await loadPrintableInvoice(db, orgIdOf(request), request.params.invoice_id, {
        locale: request.query.locale,
      });
      return reply
        .headers(INVOICE_HTML_HEADERS)
        .type('text/html; charset=utf-8')
        .send(renderInvoiceHtml(printable));
    },
  );

  app.get(
    '/invoices/:invoice_id/pdf',
    {
      schema: {
        operationId: 'getInvoicePdf',
        tags: ['Invoices'],
        summary: 'The printable invoice as a PDF',
        description: 'Content-Disposition names the file `<invoice_number>.pdf`.',
        params: InvoicePath,
        querystring: DocumentQuery,
        response: {
          200: {
            description: 'The invoice as a PDF document.',
            headers: {
              'Content-Disposition': {
                type: 'string',
                description: 'attachment; filename="<invoice_number>.pdf"',
              },
            },
            content: { 'application/pdf': { schema: PdfBytes } },
          },
          ...documentErrors,
        },
      },
    },
    async (request, reply) => {
      const printable = await loadPrintableInvoice(db, orgIdOf(request), request.params.invoice_id, {
        locale: request.query.locale,
      });
      const pdf = await renderInvoicePdf(printable);
      return reply
        .header('Cache-Control', 'private, no-store')
        .header(
          'Content-Disposition',
          `attachment; filename="${invoicePdfFilename(printable.invoice.invoice_number)}"`,
        )
        .type('application/pdf')
        .send(pdf);
    },
  );

  app.get(
    '/invoices/:invoice_id/transactions',
    {
      schema: {
        operationId: 'listInvoiceTransactions',
        tags: ['Invoices'],
        summary: "The invoice's payments, credit memos and refunds, newest first",
        params: InvoicePath,
        querystring: paginationQuery,
        response: {
          200: listOf(InvoiceTransaction),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422),
        },
      },
    },
    async (request) => {
      const page = request.query;
      const { data, total } = await listInvoiceTransactions(
        db,
        orgIdOf(request),
        request.params.invoice_id,
        page,
      );
      return { data, pagination: paginationOf(page, total) };
    },
  );
};
