/**
 * What the ingest server needs of an HTTP server, in uWebSockets.js' shape: uWS' own objects have
 * it, and `node-http.ts` gives Node's HTTP server the same shape. Names and fixed values may be
 * passed as Buffers (see bytesOf in http.ts).
 */
export type Text = string | Buffer;

export interface HttpRequest {
  /** The first value of a header by its lower-case name; '' when absent. */
  getHeader(lowerCaseName: Text): string;
  /** The method in lower case. */
  getMethod(): string;
  /** The path, without the query. */
  getUrl(): string;
}

export interface HttpResponse {
  /** Called once if the client goes away before the response ends. */
  onAborted(handler: () => void): unknown;
  /** Body chunks, the last one flagged; a chunk is reused after the call (copy what you keep). */
  onData(handler: (chunk: ArrayBuffer | Buffer, isLast: boolean) => void): unknown;
  cork(write: () => void): unknown;
  /** `201 Created`. */
  writeStatus(statusLine: Text): unknown;
  writeHeader(name: Text, value: Text): unknown;
  end(body?: Text, closeConnection?: boolean): unknown;
}

export type RouteHandler = (res: HttpResponse, req: HttpRequest) => void;

export interface HttpApp {
  get(path: string, handler: RouteHandler): unknown;
  post(path: string, handler: RouteHandler): unknown;
  /** Every method; `/*` matches every path no other route took. */
  any(path: string, handler: RouteHandler): unknown;
}

export interface Listening {
  port: number;
  /** Stops accepting connections; requests on open ones are still answered. */
  stopAccepting(): void;
}

/** An HTTP server the ingest server runs on: routes first, then `listen`. */
export interface HttpTransport {
  /** Which server it is, for the start-up log and /readyz. */
  readonly name: 'uws' | 'node-http';
  readonly app: HttpApp;
  /** Listens alone on the port: a second process on a taken port fails to start. */
  listen(host: string, port: number): Promise<Listening>;
}
