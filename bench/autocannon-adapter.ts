import { createRequire } from 'node:module';

/*
 * The one place that reaches into autocannon's internals; nothing else in the project does.
 *
 * What it replaces: every public way autocannon offers to vary a request (`setupRequest`,
 * `Client#setRequest` and its siblings, `idReplacement`) rebuilds the whole request through its
 * request builder for each request sent: the client's options merged into a new object, header
 * objects, strings joined, then buffers. That nearly doubles autocannon's CPU per request
 * (bench/RESULTS.md, "The instrument"), CPU that the 2-core machine then takes from the server
 * under test. No option hands autocannon bytes built in advance; the nearest upstream request
 * (unique bytes per POST without rebuilding, https://github.com/mcollina/autocannon/issues/251)
 * is open. So a request entry made by `prebuiltRequest` carries `nextBuffer`, and autocannon's
 * per-request rebuild of such an entry returns `nextBuffer()` instead: the bytes on the wire are
 * those the benchmark built (support.ts builds them as autocannon would). Entries without
 * `nextBuffer` are built by autocannon as it ships.
 *
 * What it relies on, in autocannon 8.0.0 (pinned exactly in package.json): `lib/requestIterator.js`
 * exports the iterator whose `nextRequest` calls `this.rebuildRequest()` for an entry with a
 * `setupRequest` function (and `setRequests` for the first entry), and the client writes
 * `requestIterator.currentRequest.requestBuffer` to the socket (`Client#getRequestBuffer`).
 * autocannon-adapter.test.ts fails as soon as any of it changes, and loading this module throws
 * on another version: there is no silent fallback to autocannon's slower path.
 */

export const AUTOCANNON_VERSION = '8.0.0';

const require = createRequire(import.meta.url);

/** A request entry of autocannon's `requests` option whose bytes come from `nextBuffer`. */
export interface PrebuiltRequestEntry {
  /** Present so that autocannon rebuilds the entry before each request, through the hook below. */
  setupRequest: <T>(request: T) => T;
  nextBuffer: () => Buffer;
}

interface IteratorState {
  resetted: boolean;
  currentRequest?: Partial<PrebuiltRequestEntry> & { requestBuffer?: Buffer };
}

interface RequestIteratorClass {
  prototype: { rebuildRequest(this: IteratorState): unknown };
}

/** Throws unless the installed autocannon is the one this adapter was written for. */
export function checkAutocannonVersion(): void {
  const { version } = require('autocannon/package.json') as { version: string };
  if (version !== AUTOCANNON_VERSION) {
    throw new Error(
      `autocannon ${version} is installed; bench/autocannon-adapter.ts was written for ${AUTOCANNON_VERSION}. ` +
        'Check its internals (autocannon-adapter.test.ts), then move the pin.',
    );
  }
}

checkAutocannonVersion();

let installed = false;

/** Lets an entry with `nextBuffer` hand autocannon its bytes (idempotent). */
function installPrebuiltRequests(): void {
  if (installed) return;
  installed = true;
  const RequestIterator = require('autocannon/lib/requestIterator') as RequestIteratorClass;
  const rebuild = RequestIterator.prototype.rebuildRequest;
  RequestIterator.prototype.rebuildRequest = function rebuildRequest(this: IteratorState) {
    const request = this.currentRequest;
    if (!request?.nextBuffer) return rebuild.call(this);
    this.resetted = false;
    request.requestBuffer = request.nextBuffer();
    return request.requestBuffer;
  };
}

/** An entry of autocannon's `requests` that sends the bytes `next()` returns, a call per request. */
export function prebuiltRequest(next: () => Buffer): PrebuiltRequestEntry {
  installPrebuiltRequests();
  return { setupRequest: (request) => request, nextBuffer: next };
}
