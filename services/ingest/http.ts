import { JSON_CONTENT_TYPE } from '../../libs/schemas/index.js';
import type { HttpResponse } from './transport.js';

/**
 * The fixed strings of a response (status lines, header names, media types) as bytes: uWS reads a
 * JS string through v8::String::Utf8Value, a malloc'd copy made on every call, and a response
 * writes a dozen of them, on every response of the hot path. A Buffer it
 * reads in place. Only strings from this code are kept, so the cache stays small.
 */
const fixedBytes = new Map<string, Buffer>();
export function bytesOf(fixed: string): Buffer {
  let bytes = fixedBytes.get(fixed);
  if (!bytes) {
    bytes = Buffer.from(fixed);
    fixedBytes.set(fixed, bytes);
  }
  return bytes;
}

const STATUS_LINES = new Map(
  Object.entries({
    200: '200 OK',
    201: '201 Created',
    400: '400 Bad Request',
    401: '401 Unauthorized',
    404: '404 Not Found',
    405: '405 Method Not Allowed',
    409: '409 Conflict',
    413: '413 Payload Too Large',
    415: '415 Unsupported Media Type',
    422: '422 Unprocessable Entity',
    429: '429 Too Many Requests',
    500: '500 Internal Server Error',
    503: '503 Service Unavailable',
  }).map(([status, line]) => [Number(status), bytesOf(line)]),
);
const CONTENT_TYPE = bytesOf('content-type');
const REQUEST_ID = bytesOf('X-Request-ID');

/**
 * The life of one uWS response: it may be written once, and never after the client went away
 * (uWS forbids touching an aborted response).
 */
export class Exchange {
  aborted = false;
  answered = false;
  status = 0;
  /** Sent back as X-Request-ID with the answer, when set. */
  requestId = '';
  /** Called once if the client goes away before the answer. */
  onAbort: (() => void) | undefined;

  private readonly bodiless: boolean;
  private readonly closing: () => boolean;

  constructor(
    readonly res: HttpResponse,
    options: {
      /**
       * An answer to HEAD: it carries the headers only, since a client reads no body after it and
       * would take those bytes for the start of the next response on the connection.
       */
      bodiless?: boolean;
      /** True once the server drains: every answer then closes its connection (no next request on it). */
      closing?: () => boolean;
    } = {},
  ) {
    this.bodiless = options.bodiless ?? false;
    this.closing = options.closing ?? (() => false);
    // The JS fallback also calls this after a normal end; `answered` tells the two apart.
    res.onAborted(() => {
      if (this.answered || this.aborted) return;
      this.aborted = true;
      this.onAbort?.();
    });
  }

  get open(): boolean {
    return !this.aborted && !this.answered;
  }

  send(
    status: number,
    headers: Record<string, string>,
    body: string | Buffer,
    {
      contentType = JSON_CONTENT_TYPE,
      closeConnection = false,
    }: { contentType?: string; closeConnection?: boolean } = {},
  ): void {
    if (!this.open) return;
    this.answered = true;
    this.status = status;
    this.res.cork(() => {
      this.res.writeStatus(STATUS_LINES.get(status) ?? String(status));
      this.res.writeHeader(CONTENT_TYPE, bytesOf(contentType));
      if (this.requestId) this.res.writeHeader(REQUEST_ID, this.requestId);
      for (const name in headers) this.res.writeHeader(bytesOf(name), headers[name]!);
      this.res.end(this.bodiless ? '' : body, closeConnection || this.closing());
    });
  }
}

/**
 * Collects the request body. uWS hands chunks it reuses after the callback, so each is copied
 * (a body in one chunk, the usual case, once). Beyond `limit` bytes the rest is drained unread and
 * `tooLarge` is reported. Bytes, not text: the parser refuses a body that is not UTF-8.
 */
export function readBody(
  res: HttpResponse,
  limit: number,
  done: (body: Buffer, tooLarge: boolean) => void,
): void {
  let chunks: Buffer[] | undefined;
  let size = 0;
  let tooLarge = false;
  res.onData((chunk, isLast) => {
    if (!tooLarge) {
      const view = Buffer.from(chunk as ArrayBuffer);
      size += view.byteLength;
      if (size > limit) {
        tooLarge = true;
        chunks = undefined;
      } else if (isLast && !chunks) {
        return done(Buffer.from(view), false);
      } else if (view.byteLength) {
        chunks ??= [];
        chunks.push(Buffer.from(view));
      }
    }
    if (isLast) done(tooLarge || !chunks ? EMPTY : Buffer.concat(chunks), tooLarge);
  });
}

const EMPTY = Buffer.alloc(0);
