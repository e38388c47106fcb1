import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * A hosted invoice link names one invoice and proves it was made by its organization:
 * `hinv_` + base64url(invoice id (16 bytes) || HMAC-SHA256(organization's hosted_link_key, id)).
 * It is derived, never stored, so every read of an invoice can carry it (hosted_url). 48 bytes
 * make exactly 64 base64url characters, none with spare bits: every character counts, so
 * changing any one of them names another invoice or breaks the signature.
 */

const PREFIX = 'hinv_';
const ID_BYTES = 16;
const MAC_BYTES = 32;
const TOKEN = /^hinv_[A-Za-z0-9_-]{64}$/;
/** Where hosted invoice pages are served, below PUBLIC_URL. */
export const HOSTED_INVOICE_PATH = '/portal/invoice';

function uuidBytes(invoiceId: string): Buffer {
  return Buffer.from(invoiceId.replace(/-/g, ''), 'hex');
}

function signatureOf(invoiceId: Buffer, key: Buffer): Buffer {
  return createHmac('sha256', key).update('hosted-invoice\0').update(invoiceId).digest();
}

export function hostedInvoiceToken(invoiceId: string, key: Buffer): string {
  const id = uuidBytes(invoiceId);
  return PREFIX + Buffer.concat([id, signatureOf(id, key)]).toString('base64url');
}

/** `base` (scheme://host[/path], no trailing slash) + the invoice's hosted page. */
export function hostedInvoiceUrl(base: string, invoiceId: string, key: Buffer): string {
  return `${base}${HOSTED_INVOICE_PATH}/${hostedInvoiceToken(invoiceId, key)}`;
}

/** The invoice id a well-formed token names (its signature still to be checked), else undefined. */
export function invoiceIdOfHostedToken(token: string): string | undefined {
  if (!TOKEN.test(token)) return undefined;
  const hex = Buffer.from(token.slice(PREFIX.length), 'base64url').subarray(0, ID_BYTES).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether `token` is exactly the one `key` makes for its invoice (constant time). */
export function isHostedTokenOf(token: string, key: Buffer): boolean {
  const invoiceId = invoiceIdOfHostedToken(token);
  if (!invoiceId) return false;
  const expected = Buffer.from(hostedInvoiceToken(invoiceId, key));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export const HOSTED_TOKEN_BYTES = ID_BYTES + MAC_BYTES;
