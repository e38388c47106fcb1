import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError, toErrorBody } from '../../libs/errors/index.js';
import { JSON_CONTENT_TYPE, newRequestId } from '../../libs/schemas/index.js';
import type {
  HttpApp,
  HttpRequest,
  HttpResponse,
  HttpTransport,
  Listening,
  RouteHandler,
  Text,
} from './transport.js';

/**
 * Node's HTTP server in the shape the ingest server uses (transport.ts). Node's parser reads
 * header values byte for byte (as Latin-1 text: `é` sent as UTF-8 arrives as `Ã©`, which every
 * header rule refuses) and trims only spaces and tabs, so no key is ever changed; a malformed
 * request (a control character in a header value, a space in a header name) is answered 400 with
 * the error body and its connection closed at once.
 */
export function nodeHttpTransport(): HttpTransport {
  const routes = new Map<string, RouteHandler>();
  const app: HttpApp = {
    get: (path, handler) => routes.set(`get ${path}`, handler),
    post: (path, handler) => routes.set(`post ${path}`, handler),
    any: (path, handler) => routes.set(`* ${path}`, handler),
  };
  const server = createServer((request, response) => {
    const method = (request.method ?? '').toLowerCase();
    const target = request.url ?? '/';
    const query = target.indexOf('?');
    const path = query < 0 ? target : target.slice(0, query);
    const handler =
      routes.get(`${method} ${path}`) ?? routes.get(`* ${path}`) ?? routes.get('* /*') ?? notFound;
    handler(new NodeHttpResponse(request, response), new NodeHttpRequest(request, method, path));
  });
  server.on('clientError', answerMalformed);
  return {
    name: 'node-http',
    app,
    listen(host, port) {
      return new Promise<Listening>((resolve, reject) => {
        server.once('error', (error) =>
          reject(new Error(`the ingest service cannot listen on ${host}:${port} (${error.message})`)),
        );
        // Node never sets SO_REUSEPORT: a second process on a taken port fails with EADDRINUSE.
        server.listen({ host, port, exclusive: true }, () => {
          const address = server.address();
          resolve({
            port: typeof address === 'object' && address ? address.port : port,
            stopAccepting: () => server.close(),
          });
        });
      });
    },
  };
}

class NodeHttpRequest implements HttpRequest {
  constructor(
    private readonly request: IncomingMessage,
    private readonly method: string,
    private readonly path: string,
  ) {}

  /** The first of repeated headers, as uWS reads it (Node would join them with ", "). */
  getHeader(lowerCaseName: Text): string {
    const wanted = typeof lowerCaseName === 'string' ? lowerCaseName : lowerCaseName.toString('latin1');
    const raw = this.request.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      if (raw[i]!.length === wanted.length && raw[i]!.toLowerCase() === wanted) return raw[i + 1]!;
    }
    return '';
  }

  getMethod(): string {
    return this.method;
  }

  getUrl(): string {
    return this.path;
  }
}

class NodeHttpResponse implements HttpResponse {
  private statusCode = 200;

  constructor(
    private readonly request: IncomingMessage,
    private readonly response: ServerResponse,
  ) {}

  onAborted(handler: () => void): void {
    this.response.once('close', () => {
      if (!this.response.writableFinished) handler();
    });
  }

  onData(handler: (chunk: Buffer, isLast: boolean) => void): void {
    this.request.on('data', (chunk: Buffer) => handler(chunk, false));
    this.request.once('end', () => handler(EMPTY, true));
  }

  cork(write: () => void): void {
    this.response.cork();
    try {
      write();
    } finally {
      this.response.uncork();
    }
  }

  writeStatus(statusLine: Text): void {
    this.statusCode = Number.parseInt(String(statusLine), 10);
  }

  writeHeader(name: Text, value: Text): void {
    this.response.setHeader(String(name), String(value));
  }

  end(body: Text = '', closeConnection = false): void {
    if (closeConnection) this.response.shouldKeepAlive = false;
    this.response.statusCode = this.statusCode;
    this.response.setHeader('content-length', Buffer.byteLength(body));
    this.response.end(body);
  }
}

const EMPTY = Buffer.alloc(0);

const notFound: RouteHandler = (res) => {
  res.writeStatus('404 Not Found');
  res.end('');
};

/**
 * Node's parser refused the request (or the connection failed): 400 with the error body, the
 * connection closed, as the api service answers. Nothing is written to a socket already gone.
 */
function answerMalformed(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const requestId = newRequestId();
  const { body } = toErrorBody(ApiError.badRequest('The request is not valid HTTP.'), requestId);
  const text = JSON.stringify(body);
  socket.end(
    'HTTP/1.1 400 Bad Request\r\n' +
      `content-type: ${JSON_CONTENT_TYPE}\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\n` +
      `X-Request-ID: ${requestId}\r\n` +
      'connection: close\r\n\r\n' +
      text,
  );
}
