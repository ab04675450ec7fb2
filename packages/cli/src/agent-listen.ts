/**
 * @module agent-listen
 * Binding the research agent's ports (HTTP `listen`, gRPC `bindAsync`); a failed bind is a
 * `CliError` naming the option to change.
 */

import type { Server as HttpServer } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import type express from 'express';
import { CliError } from './cli-error.js';

export function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]' || host === '';
}

export function urlHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export function listenHttp(app: express.Express, host: string, port: number): Promise<HttpServer> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    const onError = (error: NodeJS.ErrnoException): void => {
      server.close();
      reject(
        new CliError(
          error.code === 'EADDRINUSE'
            ? `HTTP port ${port} on ${host} is already in use (choose another with --port, or 0 for any free port)`
            : `cannot listen on ${host}:${port}: ${error.message}`,
          { cause: error },
        ),
      );
    };
    server.once('error', onError);
    server.once('listening', () => {
      server.off('error', onError);
      resolve(server);
    });
  });
}

export function bindGrpc(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(
      `${urlHost(host)}:${port}`,
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => {
        if (error) {
          reject(
            new CliError(
              /in use|EADDRINUSE/i.test(error.message)
                ? `gRPC port ${port} on ${host} is already in use (choose another with --grpc-port, or 0 for any free port)`
                : `cannot listen for gRPC on ${host}:${port}: ${error.message}`,
              { cause: error },
            ),
          );
        } else resolve(bound);
      },
    );
  });
}
