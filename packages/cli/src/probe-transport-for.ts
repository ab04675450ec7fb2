/**
 * @module probe-transport-for
 * The transport `probe` calls through: the card's interface of the chosen binding, or a clear
 * error naming the bindings the card has.
 */

import { CliError } from './cli-error.js';
import { CARD_BINDING_NAMES, type CliBinding } from './cli-options.js';
import { type CardReading, joinBasePath } from './probe-card.js';
import { grpcProbeTransport } from './probe-grpc-transport.js';
import { httpProbeTransport, type ProbeTransport } from './probe-transport.js';

/**
 * The transport for `options.binding` to the interface the card lists for it (gRPC: `grpcTarget`,
 * else the base URL's address); a `CliError` when the card lists none.
 *
 * @example
 * ```ts
 * const transport = probeTransportFor({ binding: 'rest' }, { base, card, timeoutMs: 5_000, grpcTarget: undefined });
 * ```
 */
export function probeTransportFor(
  options: {
    readonly binding: CliBinding;
    readonly callerToken?: string;
    readonly fetch?: typeof fetch;
  },
  at: {
    readonly base: URL;
    readonly card: CardReading;
    readonly timeoutMs: number;
    readonly grpcTarget: string | undefined;
  },
): ProbeTransport {
  const { base, card, timeoutMs, grpcTarget } = at;
  const wanted = CARD_BINDING_NAMES[options.binding];
  const found = card.interfaces.find((i) => i.protocolBinding.toUpperCase() === wanted);
  if (found === undefined) {
    const has = [...new Set(card.interfaces.map((i) => i.protocolBinding))].join(', ');
    const names = Object.entries(CARD_BINDING_NAMES)
      .filter(([, name]) => card.interfaces.some((i) => i.protocolBinding.toUpperCase() === name))
      .map(([flag]) => flag);
    throw new CliError(
      `the agent card lists no ${wanted} interface (it has: ${has})${names.length > 0 ? `; try --binding ${names[0]}` : ''}`,
    );
  }
  const token = options.callerToken === undefined ? {} : { callerToken: options.callerToken };
  if (options.binding === 'grpc') {
    const target =
      grpcTarget ?? `${base.hostname}:${base.port || (base.protocol === 'https:' ? '443' : '80')}`;
    return grpcProbeTransport({
      endpoint: target,
      timeoutMs,
      tls: base.protocol === 'https:',
      unreachableHint:
        grpcTarget === undefined
          ? ` (the base URL's own address; the card's gRPC interface is ${found.url}: pass the gateway's gRPC listener with --grpc-target host:port)`
          : '',
      ...token,
    });
  }
  let path: string;
  try {
    path = new URL(found.url).pathname;
  } catch {
    throw new CliError(`the agent card's ${wanted} interface URL "${found.url}" is not a URL`);
  }
  return httpProbeTransport({
    binding: options.binding,
    endpoint: joinBasePath(base, path),
    timeoutMs,
    ...token,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
}
