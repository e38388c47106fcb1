import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
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
import { printableDocumentRoutes } from './printable-documents.js';

const InvoiceListQuery = paginationQuery.extend({
  customer_id: integerIdQuery.optional().meta({ description: "Only this customer's invoices." }),
  status: z
    .enum(INVOICE_STATUSES)
    .optional()
    .meta({ description: 'Only invoices in this status (uppercase).' }),
});
const InvoicePath = z.object({ invoice_id: uuidPathId });

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

  printableDocumentRoutes(app, db, {
    collection: '/invoices',
    idParam: 'invoice_id',
    operationName: 'Invoice',
    noun: 'invoice',
    tags: ['Invoices'],
    fileShown: '<invoice_number>.pdf',
    load: loadPrintableInvoice,
    renderHtml: renderInvoiceHtml,
    renderPdf: renderInvoicePdf,
    pdfFilename: (printable) => invoicePdfFilename(printable.invoice.invoice_number),
  });

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
