import type { Database } from '../db/index.js';
import { ListTotalReader, readPage } from '../list-pages/index.js';
import { Invoice, jsonWriter, type PaginationQuery } from '../schemas/index.js';
import {
  hostedLinksOf,
  type InvoiceFilter,
  invoiceList,
  invoicesWithVersions,
  toPublicInvoice,
} from './invoices.js';

interface Rendering {
  version: number;
  /** The base of the links written into it (hosted_url): requests may reach us under other names. */
  baseUrl: string;
  /** UTF-8: a page is then one Buffer.concat, with nothing to encode or measure again per request. */
  json: Buffer;
  /** Read since the eviction pass last went by (see evict). */
  used: boolean;
}

/**
 * Pages of invoices as their public JSON text, for the list route. Each invoice's JSON is kept
 * in memory under its id and `version` (moved by every change to the invoice or its items,
 * migration 004), so a page reads only 100 (id, version) pairs from the list index and writes
 * the stored texts; the invoices not held, or held at another version, are read in full (one
 * snapshot) and written by the Invoice schema's jsonWriter. A rendering is served only for the
 * version the page just read, so it never outlives its data. Once the text held passes
 * `maxBytes`, renderings not read lately go first.
 */
export class RenderedInvoicePages {
  private readonly renderings = new Map<string, Rendering>();
  private heldBytes = 0;
  private readonly writeInvoice = jsonWriter(Invoice);
  private readonly totals: ListTotalReader;

  constructor(
    private readonly db: Database,
    private readonly maxBytes: number,
  ) {
    this.totals = new ListTotalReader(db);
  }

  async list(
    orgId: number,
    filter: InvoiceFilter,
    page: PaginationQuery,
    baseUrl: string,
  ): Promise<{ items: Buffer[]; total: number }> {
    // created_at only orders the page (readPage may re-sort it): as epoch seconds, a numeric that
    // sorts the same and costs no Date per row.
    const columns = 'i.id, i.version, extract(epoch FROM i.created_at) AS created_at';
    const source = invoiceList(this.db, orgId, filter, columns, this.totals);
    const { rows, total } = await readPage<{ id: string; version: number }>(this.db, source, page);
    const items: (Buffer | undefined)[] = rows.map((row) => this.held(row.id, row.version, baseUrl));
    const missing = rows.filter((_, i) => items[i] === undefined).map((row) => row.id);
    if (missing.length > 0) {
      // the links in the snapshot the invoices are read in: a rendering of a version carries that version's link
      const [read, links] = await this.db.transaction(
        (tx) => Promise.all([invoicesWithVersions(tx, orgId, missing), hostedLinksOf(tx, orgId, missing)]),
        { readOnly: true, isolation: 'repeatable read' },
      );
      const written = new Map(
        read.map(({ invoice, version }) => [
          invoice.id,
          this.hold(toPublicInvoice(invoice, baseUrl, links), version, baseUrl),
        ]),
      );
      rows.forEach((row, i) => {
        items[i] ??= written.get(row.id);
      });
    }
    // An invoice deleted between the two reads is left out, as a page read a moment later would.
    return { items: items.filter((json): json is Buffer => json !== undefined), total: await total };
  }

  /** The held JSON of invoice `id` at `version`, marked as used since the last eviction pass. */
  private held(id: string, version: number, baseUrl: string): Buffer | undefined {
    const rendering = this.renderings.get(id);
    if (rendering?.version !== version || rendering.baseUrl !== baseUrl) return undefined;
    rendering.used = true;
    return rendering.json;
  }

  private hold(invoice: Invoice, version: number, baseUrl: string): Buffer {
    const json = Buffer.from(this.writeInvoice(invoice));
    const previous = this.renderings.get(invoice.id);
    // a slower request read an older version than one already held: serve it, keep the newer
    if (previous && previous.version > version) return json;
    if (previous) {
      this.heldBytes -= sizeOf(previous);
      this.renderings.delete(invoice.id);
    }
    const rendering = { version, baseUrl, json, used: false };
    this.renderings.set(invoice.id, rendering);
    this.heldBytes += sizeOf(rendering);
    this.evict();
    return json;
  }

  /**
   * Second chance (CLOCK): from the oldest, a rendering used since it was last passed over moves
   * to the back once, an unused one goes. A hit then only sets a flag, where a strict LRU would
   * move the entry in the map on every read, a cost list pages pay on every item.
   */
  private evict(): void {
    for (const [id, rendering] of this.renderings) {
      if (this.heldBytes <= this.maxBytes) return;
      this.renderings.delete(id);
      if (rendering.used) {
        rendering.used = false;
        this.renderings.set(id, rendering);
      } else {
        this.heldBytes -= sizeOf(rendering);
      }
    }
  }

  /** Whether a rendering of invoice `id` is held (at any version), for tests. */
  holds(id: string): boolean {
    return this.renderings.has(id);
  }

  /** Renderings held and their size, for tests and metrics. */
  get stats(): { invoices: number; bytes: number } {
    return { invoices: this.renderings.size, bytes: this.heldBytes };
  }
}

/** Bytes a rendering holds: its text, plus the map entry. */
function sizeOf(rendering: Rendering): number {
  return rendering.json.length + 100;
}
