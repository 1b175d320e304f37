/**
 * A stand-in for a model provider's HTTP API (node:http, on 127.0.0.1): it records every
 * request exactly as it arrived and answers with the next of its canned replies. The
 * examples point the official SDK clients at it (`baseURL`), so the requests they send are
 * the SDKs' own serialisation of what prompt-host prepared.
 */

import { createServer, type IncomingHttpHeaders, type Server } from "node:http";

/** One request as the provider received it. */
export interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body's bytes, as sent. */
  body: Buffer;
}

/** A canned answer: a JSON body, with an HTTP status (200 unless given). */
export interface Canned {
  status?: number;
  body: unknown;
}

export class FakeProvider {
  readonly requests: Recorded[] = [];
  private readonly replies: Canned[];
  private readonly server: Server;

  constructor(replies: Canned[]) {
    this.replies = [...replies];
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        this.requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
        const next = this.replies.shift() ?? { status: 500, body: { error: { type: "fake_provider", message: "no canned reply left" } } };
        const text = JSON.stringify(next.body);
        res.writeHead(next.status ?? 200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
        res.end(text);
      });
    });
  }

  /** Start listening; resolves with the server's origin (`http://127.0.0.1:PORT`). */
  listen(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => {
        const address = this.server.address();
        if (address === null || typeof address === "string") reject(new Error(`not listening on a TCP port: ${address}`));
        else resolve(`http://127.0.0.1:${address.port}`);
      });
    });
  }

  /** How many canned replies are still unused. */
  get left(): number {
    return this.replies.length;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}
