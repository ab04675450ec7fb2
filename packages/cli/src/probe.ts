/**
 * @module probe
 * `runProbe`: one rejection sent end to end through whatever fronts an agent, graded, and the same
 * call re-sent after its delay.
 */

import { extractRetryHint } from 'a2a-ratelimit';
import { CliError } from './cli-error.js';
import type { CliBinding } from './cli-options.js';
import { type CardReading, grpcTargetOf, readCard } from './probe-card.js';
import type { ProbeCheck } from './probe-check.js';
import { checkRejection } from './probe-checks.js';
import type { ProbeMethod } from './probe-methods.js';
import { type LossOrigin, originsOf } from './probe-origins.js';
import { summarizeResponse } from './probe-response.js';
import type { CapturedResponse, ProbeTransport } from './probe-transport.js';
import { probeTransportFor } from './probe-transport-for.js';
import { realSleep } from './scaled-time.js';
import type { StatusLine } from './status-line.js';

/**
 * Options of {@link runProbe}.
 */
export interface ProbeOptions {
  /** The agent's base URL as callers reach it (the gateway's). */
  readonly baseUrl: string;
  readonly binding: CliBinding;
  readonly method: ProbeMethod;
  /**
   * Requests sent at most to each URL (the setup SendMessage of GetTask, the calls until one is
   * refused, the retry); all admitted without a refusal means "no limiter found".
   */
  readonly maxRequests: number;
  /**
   * The agent's own base URL, reached directly (not through the gateway): the same calls are sent
   * there after the probe through `baseUrl`, so that what did not arrive can be told apart —
   * never sent by the agent, or lost between the agent and the caller.
   */
  readonly direct?: string;
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
  /** Told, before the first call to each URL, how many requests go there and what they start. */
  readonly announce?: (line: string) => void;
}

/** What a refusal looked like. */
export interface ProbeRejection {
  readonly summary: string;
  readonly kind?: 'quota' | 'overload';
  readonly policy?: string;
  /** The delay a client would read from the response (any field), seconds. */
  readonly delaySeconds?: number;
}

/**
 * The probe's verdict.
 *
 * @example
 * ```ts
 * const report = await runProbe(options);
 * if (!report.passed) console.log(report.failed); // ['body', 'reason', …]
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
  /** Requests sent in all to `endpoint` (setup, calls, retry). */
  readonly requestsSent: number;
  readonly rejection: ProbeRejection;
  readonly checks: readonly ProbeCheck[];
  /** No required check failed (warnings do not count). */
  readonly passed: boolean;
  /** Names of the failed required checks. */
  readonly failed: readonly string[];
  /** Names of the recommended checks that were not met. */
  readonly warnings: readonly string[];
  /** With `direct`: the same probe against the agent's own URL (no retry there). */
  readonly direct?: {
    readonly baseUrl: string;
    readonly endpoint: string;
    readonly rejection: ProbeRejection;
    readonly checks: readonly ProbeCheck[];
  };
  /** With `direct`: of each failed or warned check, where it went. */
  readonly origins?: Readonly<Record<string, LossOrigin>>;
}

function retrySourceOf(response: CapturedResponse): Parameters<typeof extractRetryHint>[0] {
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
 * What the probe will send to one URL, said before it sends it: how many requests at most and
 * how many of them may start real tasks on the agent.
 *
 * @example
 * ```ts
 * probeNotice('SendMessage', 100, 'http://127.0.0.1:8080/a2a/jsonrpc');
 * // 'probe: at most 100 requests to http://…: SendMessage until one is refused, …'
 * ```
 */
export function probeNotice(method: ProbeMethod, maxRequests: number, endpoint: string): string {
  const sends = method === 'SendMessage' || method === 'SendStreamingMessage';
  const tasks = sends
    ? `each ${method} the agent admits runs a real task there (up to ${maxRequests})`
    : method === 'GetTask'
      ? 'one SendMessage first, to have a task to get: it runs a real task there'
      : 'reads only: no task is started';
  return `probe: at most ${maxRequests} requests to ${endpoint}: ${method} until one is refused, then that call once more after its delay; ${tasks}. Cap with --max-requests N.`;
}

interface OneRun {
  readonly endpoint: string;
  readonly cardUrl: string;
  readonly calls: number;
  readonly admittedBefore: number;
  readonly requestsSent: number;
  readonly rejection: ProbeRejection;
  readonly checks: readonly ProbeCheck[];
}

async function probeOnce(
  options: ProbeOptions,
  baseUrl: string,
  grpcTarget: string | undefined,
  retry: boolean,
  label: string,
): Promise<OneRun> {
  const base = new URL(baseUrl);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const sleep = options.sleep ?? ((ms: number) => realSleep(ms));
  const card = await readCard(base, options.fetch ?? globalThis.fetch, timeoutMs);
  const target =
    grpcTarget ??
    (label === 'direct'
      ? grpcTargetOf(
          card.interfaces.find((i) => i.protocolBinding.toUpperCase() === 'GRPC')?.url ?? '',
        )
      : undefined);
  const transport = probeTransportFor(options, { base, card, timeoutMs, grpcTarget: target });
  let sent = 0;
  const send = (call: ReturnType<ProbeTransport['build']>): Promise<CapturedResponse> => {
    sent++;
    return transport.send(call);
  };
  try {
    await transport.connect();
    options.announce?.(probeNotice(options.method, options.maxRequests, transport.endpoint));
    let taskId: string | undefined;
    if (options.method === 'GetTask') {
      const setup = await send(transport.build('SendMessage'));
      if (!setup.ok || setup.taskId === undefined) {
        throw new CliError(
          `GetTask needs a task: the SendMessage that should create one got ${summarizeResponse(setup)}`,
        );
      }
      taskId = setup.taskId;
    }
    let admitted = 0;
    for (let calls = 1; sent < options.maxRequests; calls++) {
      const call = transport.build(options.method, taskId);
      const response = await send(call);
      if (response.ok) {
        admitted++;
        continue;
      }
      const hint = extractRetryHint(retrySourceOf(response), Date.now());
      // An answer that is no A2A answer in place of a refusal is checked (and fails), never
      // "failed before".
      const notA2A = response.notA2A !== undefined;
      if (admitted === 0 && !notA2A && hint.kind !== 'quota' && hint.kind !== 'overload') {
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
      if (!retry) {
        // The direct run compares what arrived; the retry was checked through the gateway.
      } else if (delayMs === undefined) {
        checks.push({
          name: 'retry',
          status: 'skip',
          detail: 'no delay received anywhere in the response, so there is nothing to wait for',
        });
      } else if (delayMs > maxWaitMs) {
        checks.push({
          name: 'retry',
          status: 'skip',
          detail: `the hinted ${Math.ceil(delayMs / 1000)} s is longer than --max-wait ${maxWaitMs / 1000} s`,
        });
      } else if (sent >= options.maxRequests) {
        checks.push({
          name: 'retry',
          status: 'skip',
          detail: `--max-requests ${options.maxRequests} reached: no request left for the retry`,
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
        const again = await send(call);
        checks.push(
          again.ok
            ? {
                name: 'retry',
                status: 'pass',
                level: 'required',
                detail: `admitted after waiting ${waited} (${same})`,
              }
            : {
                name: 'retry',
                status: 'fail',
                level: 'required',
                detail: `refused again after waiting ${waited} (${same}): ${summarizeResponse(again)}`,
              },
        );
      }
      const delaySeconds = delayMs === undefined ? undefined : Math.ceil(delayMs / 1000);
      return {
        endpoint: transport.endpoint,
        cardUrl: card.cardUrl,
        calls,
        admittedBefore: admitted,
        requestsSent: sent,
        rejection: {
          summary: summarizeResponse(response),
          ...(checked.kind === undefined ? {} : { kind: checked.kind }),
          ...(checked.policy === undefined ? {} : { policy: checked.policy }),
          ...(delaySeconds === undefined ? {} : { delaySeconds }),
        },
        checks,
      };
    }
    const where = label === 'direct' ? ` (--direct ${base.href})` : '';
    throw new CliError(
      `no limiter found${where}: all ${admitted} ${options.method} calls over ${options.binding} were admitted and none was refused, so there is no rejection to check (raise --max-requests, or check that a policy limits ${options.method} for this caller)`,
    );
  } finally {
    transport.close();
  }
}

/**
 * Runs the probe: sends calls until one is refused, checks that refusal, waits the delay a client
 * would read from it (plus a small margin) and re-sends the identical call, which must then be
 * admitted. It talks only to `baseUrl` (and `grpcTarget`), taking only paths from the agent card,
 * so every call goes through whatever fronts the agent; at most `maxRequests` requests. With
 * `direct` it runs the same calls on the agent itself, to say where each missing part was lost.
 * Resolves with a report (passed or not); rejects with a `CliError` when the probe cannot do its
 * job (no card, no such binding, nothing answers, no limiter found).
 *
 * @example
 * ```ts
 * const report = await runProbe({ baseUrl: 'http://127.0.0.1:9090', binding: 'rest', method: 'SendMessage', maxRequests: 100, callerToken: 'probe-1' });
 * console.log(report.passed, report.failed, report.warnings);
 * ```
 */
export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const base = new URL(options.baseUrl);
  const run = await probeOnce(options, base.href, options.grpcTarget, true, 'through');
  const failed = run.checks.filter((c) => c.status === 'fail').map((c) => c.name);
  const warnings = run.checks.filter((c) => c.status === 'warn').map((c) => c.name);
  let direct: ProbeReport['direct'];
  let origins: ProbeReport['origins'];
  if (options.direct !== undefined) {
    const directRun = await probeOnce(options, options.direct, undefined, false, 'direct');
    direct = {
      baseUrl: new URL(options.direct).href,
      endpoint: directRun.endpoint,
      rejection: directRun.rejection,
      checks: directRun.checks,
    };
    origins = originsOf(run.checks, directRun.checks);
  }
  return {
    baseUrl: base.href,
    binding: options.binding,
    method: options.method,
    endpoint: run.endpoint,
    cardUrl: run.cardUrl,
    calls: run.calls,
    admittedBefore: run.admittedBefore,
    requestsSent: run.requestsSent,
    rejection: run.rejection,
    checks: run.checks,
    passed: failed.length === 0,
    failed,
    warnings,
    ...(direct === undefined ? {} : { direct }),
    ...(origins === undefined ? {} : { origins }),
  };
}
