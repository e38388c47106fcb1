import { createHmac } from 'node:crypto';
import { equalInConstantTime } from '../bytes/index.js';

/*
 * A hosted invoice link names one invoice and proves it was made by its organization:
 * `hinv_` + base64url(invoice id (16 bytes) || HMAC-SHA256(organization's hosted_link_key, id and
 * the invoice's link generation)). It is derived, never stored, so every read of an invoice can
 * carry it (hosted_url). Rotating the link moves the generation (migration 013), so every earlier
 * link fails its signature. 48 bytes make exactly 64 base64url characters, none with spare bits:
 * every character counts, so changing any one of them names another invoice or breaks the signature.
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

/** What signs one invoice's hosted link: its organization's key and the invoice's link generation. */
export interface HostedLinkSigning {
  key: Buffer;
  /** 0 until the link is first rotated: generation 0 signs the id alone, as links always were. */
  generation: number;
}

function signatureOf(invoiceId: Buffer, { key, generation }: HostedLinkSigning): Buffer {
  const hmac = createHmac('sha256', key).update('hosted-invoice\0').update(invoiceId);
  if (generation > 0) hmac.update(`\0${generation}`);
  return hmac.digest();
}

export function hostedInvoiceToken(invoiceId: string, signing: HostedLinkSigning): string {
  const id = uuidBytes(invoiceId);
  return PREFIX + Buffer.concat([id, signatureOf(id, signing)]).toString('base64url');
}

/** `base` (scheme://host[/path], no trailing slash) + the invoice's hosted page. */
export function hostedInvoiceUrl(base: string, invoiceId: string, signing: HostedLinkSigning): string {
  return `${base}${HOSTED_INVOICE_PATH}/${hostedInvoiceToken(invoiceId, signing)}`;
}

/** The invoice id a well-formed token names (its signature still to be checked), else undefined. */
export function invoiceIdOfHostedToken(token: string): string | undefined {
  if (!TOKEN.test(token)) return undefined;
  const hex = Buffer.from(token.slice(PREFIX.length), 'base64url').subarray(0, ID_BYTES).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether `token` is exactly the one `signing` makes for its invoice now (constant time). */
export function isHostedTokenOf(token: string, signing: HostedLinkSigning): boolean {
  const invoiceId = invoiceIdOfHostedToken(token);
  if (!invoiceId) return false;
  return equalInConstantTime(token, hostedInvoiceToken(invoiceId, signing));
}

export const HOSTED_TOKEN_BYTES = ID_BYTES + MAC_BYTES;
