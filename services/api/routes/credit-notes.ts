import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getCreditNote, issueCreditNote, listCreditNotes } from '../../../libs/billing/index.js';
import { afterCreditsMoved } from '../../../libs/guardrails/index.js';
import {
  creditNotePdfFilename,
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
import { printableDocumentRoutes } from './printable-documents.js';

/**
 * Credit notes (docs/decisions.md, "Credit notes"): issued against an invoice's lines, tax
 * reversed per component, applied as a credit memo up to the balance and a credit grant for the
 * rest. Thin: libs/billing does the work; the documents are libs/invoice-documents'.
 */

const tags = ['Credit notes'];
const InvoicePath = z.object({ invoice_id: uuidPathId });
const NotePath = z.object({ credit_note_id: uuidPathId });

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

  printableDocumentRoutes(app, db, {
    collection: '/credit-notes',
    idParam: 'credit_note_id',
    operationName: 'CreditNote',
    noun: 'credit note',
    tags,
    fileShown: '<number>.pdf',
    load: loadPrintableCreditNote,
    renderHtml: renderCreditNoteHtml,
    renderPdf: renderCreditNotePdf,
    pdfFilename: (printable) => creditNotePdfFilename(printable.note.number),
  });
};
