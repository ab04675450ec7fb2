/**
 * @module probe
 * `runProbe`: sends one rejection end to end through whatever sits in front of an agent and
 * reports what survived. It talks only to the base URL it was given (and `--grpc-target`), taking
 * only PATHS from the agent card, so every call goes through the gateway, not around it. It sends
 * calls until one is refused, checks that refusal (probe-checks.ts), waits the delay a client
 * would read from it (plus a small margin) and re-sends the identical call, which must then be
 * admitted. Problems a user can act on — nothing answers, no such binding, an agent that never
 * rejects — are `CliError`s.
 */

import { extractRetryHint, type RetrySource } from 'a2a-ratelimit';
import { systemSleep } from 'a2a-ratelimit/client';
import { RATE_LIMIT_EXTENSION_URI } from 'a2a-ratelimit/server';
import { CliError } from './cli-error.js';
import { CARD_BINDING_NAMES, type CliBinding } from './cli-options.js';
import { checkRejection, type ProbeCheck, summarizeResponse } from './probe-checks.js';
import type { ProbeMethod } from './probe-methods.js';
import {
  type CapturedResponse,
  grpcProbeTransport,
  httpProbeTransport,
  networkReason,
  type ProbeTransport,
} from './probe-transport.js';
import type { StatusLine } from './status-line.js';

/**
 * Options of {@link runProbe}.
 */
export interface ProbeOptions {
  /** The agent's base URL as callers reach it (the gateway's). */
  readonly baseUrl: string;
  readonly binding: CliBinding;
  readonly method: ProbeMethod;
  /** Calls sent at most before giving up with "the agent never rejected". */
  readonly burst: number;
  /** Sent as `authorization: Bearer <token>` (demo agents take it as the caller's name). */
  readonly callerToken?: string;
  /** gRPC `host:port` to send to (a gateway's gRPC listener); default the base URL's host and port. */
  readonly grpcTarget?: string;
  /** Longest wait for one response, ms; default 10,000. */
  readonly timeoutMs?: number;
  /** Added to the hinted delay before the retry, ms; default 500. */
  readonly retryMarginMs?: number;
  /** A hinted delay longer than this is not waited out (the retry check is skipped), s; default 65. */
  readonly maxWaitSeconds?: number;
  /** The fetch used for the HTTP bindings and the card; default global fetch. */
  readonly fetch?: typeof fetch;
  /** Waits before the retry; default real timers. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Shows the wait for the retry slot (a countdown in a terminal, a plain line otherwise). */
  readonly status?: StatusLine;
}

/**
 * The probe's verdict.
 *
 * @example
 * ```ts
 * const report = await runProbe(options);
 * if (!report.passed) console.log(report.lost); // ['body', 'reason', …]
 * ```
 */
export interface ProbeReport {
  readonly baseUrl: string;
  readonly binding: CliBinding;
  readonly method: ProbeMethod;
  /** Where the calls went. */
  readonly endpoint: string;
  readonly cardUrl: string;
  /** Calls sent up to and including the refused one. */
  readonly calls: number;
  /** Calls admitted before the refusal. */
  readonly admittedBefore: number;
  /** What the refusal looked like. */
  readonly rejection: {
    readonly summary: string;
    readonly kind?: 'quota' | 'overload';
    readonly policy?: string;
    /** The delay a client would read from the response (any field), seconds. */
    readonly delaySeconds?: number;
  };
  readonly checks: readonly ProbeCheck[];
  /** No check failed. */
  readonly passed: boolean;
  /** Names of the failed checks. */
  readonly lost: readonly string[];
}

/**
 * The URL of a path on the base URL: `base path + path` (so a base with a prefix keeps it).
 *
 * @example
 * ```ts
 * joinBasePath(new URL('http://gw/agents/research'), '/a2a/rest'); // 'http://gw/agents/research/a2a/rest'
 * ```
 */
export function joinBasePath(base: URL, path: string): string {
  const prefix = base.pathname.replace(/\/+$/, '');
  const suffix = path.startsWith('/') ? path : `/${path}`;
  return `${base.origin}${prefix}${suffix}`;
}

interface CardInterface {
  readonly url: string;
  readonly protocolBinding: string;
}

interface CardReading {
  readonly cardUrl: string;
  readonly interfaces: readonly CardInterface[];
  readonly errorDomain?: string;
}

async function readCard(base: URL, doFetch: typeof fetch, timeoutMs: number): Promise<CardReading> {
  const cardUrl = joinBasePath(base, '/.well-known/agent-card.json');
  let response: Response;
  let text: string;
  try {
    response = await doFetch(cardUrl, {
      headers: { accept: 'application/json', 'a2a-version': '1.0' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : networkReason(error);
    throw new CliError(`cannot reach the agent at ${base.href}: ${reason}`, { cause: error });
  }
  if (!response.ok) {
    throw new CliError(
      `no agent card at ${cardUrl} (HTTP ${response.status}): is ${base.href} an A2A agent's base URL?`,
    );
  }
  let card: unknown;
  try {
    card = JSON.parse(text);
  } catch {
    throw new CliError(
      `${cardUrl} is not JSON (${response.headers.get('content-type') ?? 'no Content-Type'}): is ${base.href} an A2A agent's base URL?`,
    );
  }
  const c = card as {
    supportedInterfaces?: unknown;
    capabilities?: { extensions?: { uri?: unknown; params?: { errorDomain?: unknown } }[] };
  };
  const interfaces = Array.isArray(c.supportedInterfaces)
    ? c.supportedInterfaces.filter(
        (i): i is CardInterface =>
          typeof (i as CardInterface)?.url === 'string' &&
          typeof (i as CardInterface)?.protocolBinding === 'string',
      )
    : [];
  if (interfaces.length === 0) {
    throw new CliError(
      `the agent card at ${cardUrl} lists no supportedInterfaces (an A2A 1.0 card is needed)`,
    );
  }
  const extension = Array.isArray(c.capabilities?.extensions)
    ? c.capabilities.extensions.find((e) => e?.uri === RATE_LIMIT_EXTENSION_URI)
    : undefined;
  const errorDomain = extension?.params?.errorDomain;
  return {
    cardUrl,
    interfaces,
    ...(typeof errorDomain === 'string' ? { errorDomain } : {}),
  };
}

function transportFor(
  options: ProbeOptions,
  base: URL,
  card: CardReading,
  timeoutMs: number,
): ProbeTransport {
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
      options.grpcTarget ??
      `${base.hostname}:${base.port || (base.protocol === 'https:' ? '443' : '80')}`;
    return grpcProbeTransport({
      endpoint: target,
      timeoutMs,
      tls: base.protocol === 'https:',
      unreachableHint:
        options.grpcTarget === undefined
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

function retrySourceOf(response: CapturedResponse): RetrySource {
  if (response.binding === 'grpc') {
    const metadata: Record<string, string | Uint8Array> = { ...response.headers };
    if (response.statusDetails !== undefined)
      metadata['grpc-status-details-bin'] = response.statusDetails;
    return { kind: 'grpc', code: response.status, message: response.body, metadata };
  }
  return { kind: 'http', status: response.status, headers: response.headers, body: response.body };
}

function firstFailure(
  options: ProbeOptions,
  transport: ProbeTransport,
  response: CapturedResponse,
  card: CardReading,
): CliError {
  const where = `${options.method} over ${options.binding} at ${transport.endpoint}`;
  const summary = summarizeResponse(response);
  let hint = '';
  if (response.binding === 'grpc' && response.synthesized === true) {
    const grpcCard = card.interfaces.find((i) => i.protocolBinding.toUpperCase() === 'GRPC');
    hint = `; is there a gRPC listener there? The card's gRPC interface is ${grpcCard?.url ?? 'unknown'}; pass --grpc-target host:port`;
  } else if (response.status === 404 || response.status === 405 || response.status === 12) {
    hint = '; wrong binding or path?';
  } else if (
    response.status === 401 ||
    response.status === 403 ||
    response.status === 16 ||
    response.status === 7
  ) {
    hint = '; try --caller-token';
  }
  return new CliError(`${where} failed before any call was admitted: ${summary}${hint}`);
}

/**
 * Runs the probe. Resolves with a report (passed or not); rejects with a `CliError` when the
 * probe cannot do its job (no card, no such binding, nothing answers, never rejected).
 *
 * @example
 * ```ts
 * const report = await runProbe({ baseUrl: 'http://127.0.0.1:9090', binding: 'rest', method: 'SendMessage', burst: 100, callerToken: 'probe-1' });
 * console.log(report.passed, report.lost);
 * ```
 */
export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const base = new URL(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const sleep = options.sleep ?? ((ms: number) => systemSleep(ms));
  const card = await readCard(base, options.fetch ?? globalThis.fetch, timeoutMs);
  const transport = transportFor(options, base, card, timeoutMs);
  try {
    let taskId: string | undefined;
    if (options.method === 'GetTask') {
      const setup = await transport.send(transport.build('SendMessage'));
      if (!setup.ok || setup.taskId === undefined) {
        throw new CliError(
          `GetTask needs a task: the SendMessage that should create one got ${summarizeResponse(setup)}`,
        );
      }
      taskId = setup.taskId;
    }
    let admitted = 0;
    for (let calls = 1; calls <= options.burst; calls++) {
      const call = transport.build(options.method, taskId);
      const response = await transport.send(call);
      if (response.ok) {
        admitted++;
        continue;
      }
      const hint = extractRetryHint(retrySourceOf(response), Date.now());
      // A gateway's page in place of a refusal is checked (and fails), never "failed before".
      const gatewayPage = response.notA2A !== undefined;
      if (admitted === 0 && !gatewayPage && hint.kind !== 'quota' && hint.kind !== 'overload') {
        throw firstFailure(options, transport, response, card);
      }
      const checked = checkRejection(response, {
        nowMs: Date.now(),
        ...(card.errorDomain === undefined ? {} : { expectedDomain: card.errorDomain }),
      });
      const checks = [...checked.checks];
      const delayMs = hint.delayMs;
      const marginMs = options.retryMarginMs ?? 500;
      const maxWaitMs = (options.maxWaitSeconds ?? 65) * 1000;
      if (delayMs === undefined) {
        checks.push({
          name: 'retry',
          status: 'skip',
          detail: 'no delay survived anywhere in the response, so there is nothing to wait for',
        });
      } else if (delayMs > maxWaitMs) {
        checks.push({
          name: 'retry',
          status: 'skip',
          detail: `the hinted ${Math.ceil(delayMs / 1000)} s is longer than --max-wait ${maxWaitMs / 1000} s`,
        });
      } else {
        const waited = `${(delayMs / 1000).toFixed(delayMs % 1000 === 0 ? 0 : 1)} s + ${marginMs} ms`;
        const same = call.messageId === undefined ? 'the same request' : 'the same messageId';
        if (options.status === undefined) await sleep(delayMs + marginMs);
        else {
          await options.status.wait(
            `refused on call ${calls}; waiting for the retry slot (${waited}), then re-sending ${same}`,
            delayMs + marginMs,
            sleep,
          );
          options.status.done();
        }
        const again = await transport.send(call);
        checks.push(
          again.ok
            ? {
                name: 'retry',
                status: 'pass',
                detail: `admitted after waiting ${waited} (${same})`,
              }
            : {
                name: 'retry',
                status: 'fail',
                detail: `refused again after waiting ${waited} (${same}): ${summarizeResponse(again)}`,
              },
        );
      }
      const lost = checks.filter((c) => c.status === 'fail').map((c) => c.name);
      const delaySeconds = delayMs === undefined ? undefined : Math.ceil(delayMs / 1000);
      return {
        baseUrl: base.href,
        binding: options.binding,
        method: options.method,
        endpoint: transport.endpoint,
        cardUrl: card.cardUrl,
        calls,
        admittedBefore: admitted,
        rejection: {
          summary: summarizeResponse(response),
          ...(checked.kind === undefined ? {} : { kind: checked.kind }),
          ...(checked.policy === undefined ? {} : { policy: checked.policy }),
          ...(delaySeconds === undefined ? {} : { delaySeconds }),
        },
        checks,
        passed: lost.length === 0,
        lost,
      };
    }
    throw new CliError(
      `the agent never rejected: all ${options.burst} ${options.method} calls over ${options.binding} were admitted (raise --burst, or check that a policy limits ${options.method} for this caller)`,
    );
  } finally {
    transport.close();
  }
}
