import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getCreditNote, issueCreditNote, listCreditNotes } from '../../../libs/billing/index.js';
import { afterCreditsMoved } from '../../../libs/guardrails/index.js';
import { LOCALES } from '../../../libs/i18n/index.js';
import {
  creditNotePdfFilename,
  INVOICE_HTML_HEADERS,
  loadPrintableCreditNote,
  renderCreditNoteHtml,
  renderCreditNotePdf,
} from '../../../libs/invoice-documents/index.js';
import { parseMoney } from '../../../libs/money/index.js';
import {
  CreateCreditNote,
  CreditNote,
  listOf,
  paginationOf,
  paginationQuery,
  single,
  uuidPathId,
} from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

/**
 * Credit notes (docs/decisions.md, "Credit notes"): issued against an invoice's lines, tax
 * reversed per component, applied as a credit memo up to the balance and a credit grant for the
 * rest. Thin: libs/billing does the work; the documents are libs/invoice-documents'.
 */

const tags = ['Credit notes'];
const InvoicePath = z.object({ invoice_id: uuidPathId });
const NotePath = z.object({ credit_note_id: uuidPathId });
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

export const creditNoteRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const stores = app.deps.usageRead;

  app.post(
    '/invoices/:invoice_id/credit-notes',
    {
      schema: {
        operationId: 'createCreditNote',
        tags,
        summary: 'Issue a credit note against an invoice',
        description:
          "Credits amounts (before tax) of the invoice's lines; the invoice's tax is reversed per component on the " +
          "note's subtotal. Up to the invoice's balance the note is a CREDIT_MEMO on it; the rest (already paid) " +
          'becomes a promotional credit grant named after the note. A line is never credited beyond its amount, ' +
          'earlier notes counted (422 on `lines.<i>.amount`). Only POSTED, PARTIALLY_PAID, PAID or PARTIALLY_REFUNDED ' +
          'invoices (else 409). Numbers run CN-000001, CN-000002, ... per organization, without gaps.',
        params: InvoicePath,
        body: CreateCreditNote,
        response: {
          201: single(CreditNote),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const orgId = orgIdOf(request);
      // concurrent requests share statements and a commit (group commit), each answered on its own
      const note = await issueCreditNote(db, {
        orgId,
        invoiceId: request.params.invoice_id,
        input: request.body,
      });
      // a grant moved what the customer can spend: its automatic top-up, then its alerts
      if (parseMoney(note.credited_to_customer) > 0n) {
        await afterCreditsMoved(db, stores, [{ orgId, customerId: note.customer_id }]);
      }
      return reply.code(201).send({ data: note });
    },
  );

  app.get(
    '/invoices/:invoice_id/credit-notes',
    {
      schema: {
        operationId: 'listInvoiceCreditNotes',
        tags,
        summary: "An invoice's credit notes, newest first",
        params: InvoicePath,
        querystring: paginationQuery,
        response: { 200: listOf(CreditNote), ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422) },
      },
    },
    async (request) => {
      const { data, total } = await listCreditNotes(
        db,
        orgIdOf(request),
        { invoiceId: request.params.invoice_id },
        request.query,
      );
      return { data, pagination: paginationOf(request.query, total) };
    },
  );

  app.get(
    '/credit-notes/:credit_note_id',
    {
      schema: {
        operationId: 'getCreditNote',
        tags,
        summary: 'Retrieve a credit note',
        params: NotePath,
        response: { 200: single(CreditNote), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({ data: await getCreditNote(db, orgIdOf(request), request.params.credit_note_id) }),
  );

  app.get(
    '/credit-notes/:credit_note_id/html',
    {
      schema: {
        operationId: 'getCreditNoteHtml',
        tags,
        summary: 'The printable credit note as an HTML document',
        params: NotePath,
        querystring: DocumentQuery,
        response: {
          200: {
            description: 'A self-contained printable credit note (no script, inline styles).',
            content: { 'text/html': { schema: z.string() } },
          },
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422),
        },
      },
    },
    async (request, reply) => {
      const printable = await loadPrintableCreditNote(db, orgIdOf(request), request.params.credit_note_id, {
        locale: request.query.locale,
      });
      return reply
        .headers(INVOICE_HTML_HEADERS)
        .type('text/html; charset=utf-8')
        .send(renderCreditNoteHtml(printable));
    },
  );

  app.get(
    '/credit-notes/:credit_note_id/pdf',
    {
      schema: {
        operationId: 'getCreditNotePdf',
        tags,
        summary: 'The printable credit note as a PDF',
        description: 'Content-Disposition names the file `<number>.pdf`.',
        params: NotePath,
        querystring: DocumentQuery,
        response: {
          200: {
            description: 'The credit note as a PDF document.',
            headers: {
              'Content-Disposition': { type: 'string', description: 'attachment; filename="<number>.pdf"' },
            },
            content: { 'application/pdf': { schema: PdfBytes } },
          },
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422),
        },
      },
    },
    async (request, reply) => {
      const printable = await loadPrintableCreditNote(db, orgIdOf(request), request.params.credit_note_id, {
        locale: request.query.locale,
      });
      const pdf = await renderCreditNotePdf(printable);
      return reply
        .header('Cache-Control', 'private, no-store')
        .header(
          'Content-Disposition',
          `attachment; filename="${creditNotePdfFilename(printable.note.number)}"`,
        )
        .type('application/pdf')
        .send(pdf);
    },
  );
};
