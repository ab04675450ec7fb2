/**
 * @module gateway-grpc-listener
 * `gateway --grpc-port`: the HTTP/2 listener for the gateway's gRPC relay, its address and the
 * target the card advertises.
 */

import type { Server } from 'node:http';
import { createServer, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Gateway } from 'a2a-ratelimit-gateway';
import { CliError } from './cli-error.js';
import { parseOptionalString, parsePort } from './cli-options.js';

/** A listening gRPC listener. */
export interface GrpcListener {
  /** Where it listens, `host:port`. */
  readonly target: string;
  /** Stops accepting new connections (calls in flight go on). */
  stopAccepting(): void;
  /** Cuts every connection left. */
  close(): void;
}

/**
 * Listens for gRPC on `host:port` (0 = any) and relays every call through `gateway`.
 *
 * @example
 * ```ts
 * const grpc = await listenGrpc(gateway, '127.0.0.1', 50051);
 * ```
 */
export async function listenGrpc(
  gateway: Gateway,
  host: string,
  port: number,
): Promise<GrpcListener> {
  const server = createServer();
  const sessions = new Set<ServerHttp2Session>();
  server.on('stream', gateway.grpcHandler);
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  const bound = await new Promise<number>((resolve, reject) => {
    server.once('error', (error) =>
      reject(new CliError(`cannot listen for gRPC on ${host}:${port}: ${error.message}`)),
    );
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
  return {
    target: `${host.includes(':') ? `[${host}]` : host}:${bound}`,
    stopAccepting: () => void (server as unknown as Server).close(),
    close() {
      for (const session of sessions) session.destroy();
    },
  };
}

/**
 * The gRPC target the card advertises: `--public-grpc-target`, else the public URL's host with
 * the gRPC port, else where the listener listens.
 *
 * @example
 * ```ts
 * advertisedGrpcTarget(undefined, 'https://agent.example', '0.0.0.0:50051'); // 'agent.example:50051'
 * ```
 */
export function advertisedGrpcTarget(
  publicGrpcTarget: string | undefined,
  publicUrl: string | undefined,
  listening: string,
): string {
  if (publicGrpcTarget !== undefined) return publicGrpcTarget;
  if (publicUrl === undefined) return listening;
  const port = listening.slice(listening.lastIndexOf(':') + 1);
  return `${new URL(publicUrl).hostname}:${port}`;
}

/** A gRPC target as the flags take it: `host:port`, or `http://` / `https://host:port`. */
const GRPC_TARGET = /^((https?|grpcs?):\/\/)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}\/?$/;

/** The gRPC flags of `gateway`, parsed. */
export interface GrpcFlags {
  /** Port of the gRPC (HTTP/2, h2c) listener; absent: gRPC is not relayed. */
  readonly grpcPort?: number;
  /** The upstream's gRPC target when the card's gRPC interface is not reachable as written. */
  readonly upstreamGrpc?: string;
  /** The gRPC target the card advertises (default: the public URL's host and the gRPC port). */
  readonly publicGrpcTarget?: string;
}

/**
 * Parses `--grpc-port`, `--upstream-grpc` and `--public-grpc-target` (the last two need the
 * first; targets are `host:port` or `http://` / `https://host:port`).
 *
 * @example
 * ```ts
 * parseGrpcFlags({ grpcPort: '50051' }); // { grpcPort: 50051 }
 * ```
 */
export function parseGrpcFlags(flags: Record<string, unknown>): GrpcFlags {
  const grpcPort =
    flags.grpcPort === undefined ? undefined : parsePort(flags.grpcPort, '--grpc-port', 0);
  const upstreamGrpc = parseOptionalString(flags.upstreamGrpc, '--upstream-grpc');
  const publicGrpcTarget = parseOptionalString(flags.publicGrpcTarget, '--public-grpc-target');
  for (const [flag, value] of [
    ['--upstream-grpc', upstreamGrpc],
    ['--public-grpc-target', publicGrpcTarget],
  ] as const) {
    if (value === undefined) continue;
    if (!GRPC_TARGET.test(value)) {
      throw new CliError(
        `${flag} must be host:port (or http:// / https://host:port), got "${value}"`,
      );
    }
    if (grpcPort === undefined) throw new CliError(`${flag} needs --grpc-port <port>`);
  }
  return {
    ...(grpcPort === undefined ? {} : { grpcPort }),
    ...(upstreamGrpc === undefined ? {} : { upstreamGrpc }),
    ...(publicGrpcTarget === undefined ? {} : { publicGrpcTarget }),
  };
}
