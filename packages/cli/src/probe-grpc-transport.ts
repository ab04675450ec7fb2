/**
 * @module probe-grpc-transport
 * `probe`'s gRPC transport: a plain grpc-js client capturing status, message, headers and trailers
 * as they arrived.
 */

import { GetTaskRequest, ListTasksRequest, SendMessageRequest } from '@a2a-js/sdk';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { CliError } from './cli-error.js';
import type { ProbeMethod } from './probe-methods.js';
import {
  buildCall,
  type CapturedResponse,
  type ProbeCall,
  type ProbeTransport,
  type ProbeTransportOptions,
} from './probe-transport.js';

type GrpcMethodDefinition = grpc.MethodDefinition<unknown, unknown>;

function metadataText(
  md: grpc.Metadata | undefined,
  into: Record<string, string>,
): Uint8Array | undefined {
  let details: Uint8Array | undefined;
  if (md === undefined) return undefined;
  for (const [name, value] of Object.entries(md.getMap())) {
    if (name === 'grpc-status-details-bin') {
      details = typeof value === 'string' ? Buffer.from(value, 'base64') : new Uint8Array(value);
      into[name] = Buffer.from(details).toString('base64');
    } else {
      into[name] = typeof value === 'string' ? value : Buffer.from(value).toString('base64');
    }
  }
  return details;
}

/**
 * The gRPC transport: a plain grpc-js client on the `lf.a2a.v1.A2AService` methods, insecure
 * (h2c) to `host:port`.
 *
 * @example
 * ```ts
 * const t = grpcProbeTransport({ endpoint: '127.0.0.1:50051', timeoutMs: 10_000 });
 * const r = await t.send(t.build('SendMessage'));
 * ```
 */
export function grpcProbeTransport(
  options: ProbeTransportOptions & {
    /** Use TLS (for an `https://` gateway); default plaintext h2c. */
    readonly tls?: boolean;
    /** Appended to the "cannot reach" message. */
    readonly unreachableHint?: string;
  },
): ProbeTransport {
  const client = new grpc.Client(
    options.endpoint,
    options.tls === true ? grpc.credentials.createSsl() : grpc.credentials.createInsecure(),
  );
  const definitions: Readonly<Record<ProbeMethod, GrpcMethodDefinition>> = {
    SendMessage: A2AService.sendMessage as GrpcMethodDefinition,
    SendStreamingMessage: A2AService.sendStreamingMessage as GrpcMethodDefinition,
    GetTask: A2AService.getTask as GrpcMethodDefinition,
    ListTasks: A2AService.listTasks as GrpcMethodDefinition,
  };
  const decode = (call: ProbeCall): unknown => {
    switch (call.method) {
      case 'GetTask':
        return GetTaskRequest.fromJSON(call.json);
      case 'ListTasks':
        return ListTasksRequest.fromJSON(call.json);
      default:
        return SendMessageRequest.fromJSON(call.json);
    }
  };
  let ready: Promise<void> | undefined;
  const waitReady = (): Promise<void> =>
    (ready ??= new Promise<void>((resolve, reject) => {
      client.waitForReady(Date.now() + Math.min(options.timeoutMs, 5_000), (error) => {
        if (error) {
          ready = undefined;
          reject(
            new CliError(
              `cannot reach gRPC target ${options.endpoint}: ${error.message}${options.unreachableHint ?? ''}`,
              { cause: error },
            ),
          );
        } else resolve();
      });
    }));
  return {
    binding: 'grpc',
    endpoint: options.endpoint,
    build: buildCall,
    connect: waitReady,
    async send(call) {
      await waitReady();
      const definition = definitions[call.method];
      const metadata = new grpc.Metadata();
      if (options.callerToken !== undefined)
        metadata.set('authorization', `Bearer ${options.callerToken}`);
      metadata.set('a2a-version', '1.0');
      const callOptions = { deadline: Date.now() + options.timeoutMs };
      return new Promise<CapturedResponse>((resolve) => {
        const headers: Record<string, string> = {};
        let taskId: string | undefined;
        const onMessage = (message: unknown): void => {
          const payload = (message as { payload?: { $case?: string; value?: { id?: unknown } } })
            .payload;
          if (payload?.$case === 'task' && typeof payload.value?.id === 'string')
            taskId ??= payload.value.id;
        };
        const onStatus = (status: grpc.StatusObject): void => {
          const statusDetails = metadataText(status.metadata, headers);
          resolve({
            binding: 'grpc',
            ok: status.code === grpc.status.OK,
            status: status.code,
            headers,
            body: status.details,
            ...(statusDetails === undefined ? {} : { statusDetails }),
            ...(/^Received HTTP status code \d+/.test(status.details) ? { synthesized: true } : {}),
            ...(taskId === undefined ? {} : { taskId }),
          });
        };
        if (definition.responseStream) {
          const stream = client.makeServerStreamRequest(
            definition.path,
            definition.requestSerialize,
            definition.responseDeserialize,
            decode(call),
            metadata,
            callOptions,
          );
          stream.on('metadata', (md: grpc.Metadata) => metadataText(md, headers));
          stream.on('data', (message: unknown) => {
            onMessage(message);
            // An admitted stream runs as long as its task: its first event says enough.
            resolve({
              binding: 'grpc',
              ok: true,
              status: grpc.status.OK,
              headers,
              body: '',
              ...(taskId === undefined ? {} : { taskId }),
            });
            stream.cancel();
          });
          stream.on('error', () => {});
          stream.on('status', onStatus);
        } else {
          const unary = client.makeUnaryRequest(
            definition.path,
            definition.requestSerialize,
            definition.responseDeserialize,
            decode(call),
            metadata,
            callOptions,
            (_error, value) => {
              if (value !== undefined) onMessage(value);
            },
          );
          unary.on('metadata', (md: grpc.Metadata) => metadataText(md, headers));
          unary.on('status', onStatus);
        }
      });
    },
    close() {
      client.close();
    },
  };
}
