import http from 'node:http';
import https from 'node:https';
import {
  AddressRefusedError,
  guardedLookup,
  type HostResolver,
  literalAddressOf,
  refusalFor,
  systemResolver,
} from './ssrf-guard.js';

/** How one HTTP attempt ended, in the terms of the metrics and of the spec's response codes. */
export type AttemptResult = 'success' | 'failure' | 'timeout' | 'connection_error' | 'refused';

export interface AttemptOutcome {
  result: AttemptResult;
  /** The HTTP status; 408 for a timeout; 0 for a connection error or a refused address. */
  responseCode: number;
  /** The last RESPONSE_BODY_CHARACTERS characters of the body, or what went wrong. */
  responseBody: string | null;
  durationMs: number;
}

export const RESPONSE_BODY_CHARACTERS = 1000;
/** Bytes kept from the end of a body: enough for 1000 characters of up to 4 bytes, plus a cut one. */
const TAIL_BYTES = RESPONSE_BODY_CHARACTERS * 4 + 4;

export interface WebhookSenderOptions {
  timeoutMs: number;
  allowLocalhost: boolean;
  resolveHost?: HostResolver;
  /** Sockets per receiver host; keep-alive sockets are reused across deliveries. */
  maxSocketsPerHost?: number;
}

/**
 * Sends one signed POST and reports how it ended. Never throws: every failure is an outcome.
 * Redirects are not followed (a 3xx is a failure), the whole exchange (connect, response, body)
 * is bounded by the timeout, and the address connected to passes the SSRF guard first.
 */
export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly resolveHost: HostResolver;

  constructor(private readonly options: WebhookSenderOptions) {
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSocketsPerHost ?? 64,
      scheduling: 'lifo' as const,
    };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.resolveHost = options.resolveHost ?? systemResolver;
  }

  send(request: { url: string; body: string; headers: Record<string, string> }): Promise<AttemptOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return Promise.resolve(connectionError('Connection error: the endpoint URL is invalid.', elapsed()));
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      return Promise.resolve(
        connectionError(`Connection error: unsupported scheme ${url.protocol}`, elapsed()),
      );
    }
    const literal = literalAddressOf(url);
    const refusal = literal ? refusalFor(url, literal, this.options.allowLocalhost) : undefined;
    if (refusal) return Promise.resolve(refused(refusal, elapsed()));

    const body = Buffer.from(request.body, 'utf8');
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise<AttemptOutcome>((resolve) => {
      let done = false;
      const finish = (outcome: AttemptOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const req = transport.request(url, {
        method: 'POST',
        agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
        headers: { ...request.headers, 'content-length': String(body.length) },
        lookup: guardedLookup(url, this.options.allowLocalhost, this.resolveHost),
      });
      const timer = setTimeout(() => {
        finish({
          result: 'timeout',
          responseCode: 408,
          responseBody: `Timed out: no complete response within ${this.options.timeoutMs} ms.`,
          durationMs: elapsed(),
        });
        req.destroy();
      }, this.options.timeoutMs);

      req.once('response', (response) => {
        const tail = new ResponseTail();
        response.on('data', (chunk: Buffer) => tail.push(chunk));
        response.once('end', () => {
          const status = response.statusCode ?? 0;
          finish({
            result: status >= 200 && status < 300 ? 'success' : 'failure',
            responseCode: status,
            responseBody: tail.text(),
            durationMs: elapsed(),
          });
        });
        response.once('error', (error) => finish(connectionError(describe(error), elapsed())));
        response.once('close', () =>
          finish(connectionError('Connection error: the response was cut off.', elapsed())),
        );
      });
      // The last resort that gives every attempt an outcome: the socket went away without an answer.
      req.once('close', () =>
        setImmediate(() =>
          finish(connectionError('Connection error: closed without a response.', elapsed())),
        ),
      );
      req.once('error', (error) => {
        if (error instanceof AddressRefusedError) finish(refused(error, elapsed()));
        else finish(connectionError(describe(error), elapsed()));
      });
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** Keeps only the end of a response body, however long the body is. */
class ResponseTail {
  private chunks: Buffer[] = [];
  private size = 0;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= TAIL_BYTES) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  text(): string {
    const bytes = Buffer.concat(this.chunks);
    const decoded = bytes.subarray(Math.max(0, bytes.length - TAIL_BYTES)).toString('utf8');
    // Postgres text cannot hold NUL; code points, not UTF-16 units, so no character is cut in half.
    return lastCharacters(decoded.replaceAll('\u0000', ''), RESPONSE_BODY_CHARACTERS);
  }
}

export function lastCharacters(text: string, count: number): string {
  if (text.length <= count) return text;
  const codePoints = Array.from(text.slice(-2 * count));
  return codePoints.slice(-count).join('');
}

function connectionError(message: string, durationMs: number): AttemptOutcome {
  return { result: 'connection_error', responseCode: 0, responseBody: message, durationMs };
}

function refused(error: AddressRefusedError, durationMs: number): AttemptOutcome {
  return { result: 'refused', responseCode: 0, responseBody: error.message, durationMs };
}

function describe(error: NodeJS.ErrnoException): string {
  return error.code
    ? `Connection error (${error.code}): ${error.message}`
    : `Connection error: ${error.message}`;
}
