/**
 * Starts the Python standard-library A2A agent (test/fixtures/python-agent/agent.py) as a real
 * foreign upstream: spawns python3, reads its ready line, reads its counters, kills it on stop.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

const SCRIPT = resolve(import.meta.dirname, 'fixtures/python-agent/agent.py');

/** How the agent behaves; each maps to one of its command-line flags. */
export interface PythonAgentOptions {
  /** Seconds a task stays WORKING before COMPLETED (`--task-seconds`; 0 = completed at once). */
  readonly taskSeconds?: number;
  /**
   * Answer SendMessage with a Task (default) or a Message, or by its text (`by-text`: `hold` stays
   * WORKING until `releaseHeld`, `task` completed at once, else a Message) (`--answer`).
   */
  readonly answer?: 'task' | 'message' | 'by-text';
  /** `metadata.usage.totalTokens` of a completed task and its final stream event (`--usage-tokens`). */
  readonly usageTokens?: number;
  /** Answer every A2A call with a plain 429 and this `Retry-After` in seconds (`--reject-429`). */
  readonly reject429RetryAfterSeconds?: number;
  /** Answer every A2A call with a plain 503 and this `Retry-After` in seconds (`--reject-503`). */
  readonly reject503RetryAfterSeconds?: number;
  /** Serve `lf.a2a.v1.A2AService` over gRPC too (`--grpc`; needs Debian's python3-grpcio). */
  readonly grpc?: boolean;
  /** A WORKING status update on open streams this often (`--update-seconds`, default 1). */
  readonly updateSeconds?: number;
  /** SendMessage waits for the terminal state unless `returnImmediately` (`--blocking`). */
  readonly blocking?: boolean;
  /** Wait this long before answering each A2A call, a slow upstream (`--delay-seconds`). */
  readonly delaySeconds?: number;
}

/** What the agent received since it started or was last reset (`GET /_test/counts`). */
export interface PythonAgentCounts {
  /** A2A calls on every binding (card reads and /_test/ excluded). */
  readonly requests: number;
  /** Calls by A2A method name (`(unknown)` for unrouted paths, `(invalid)` for bad JSON-RPC). */
  readonly byMethod: Record<string, number>;
  /** Calls by binding: `JSONRPC`, `HTTP+JSON`, `GRPC`, `NONE`. */
  readonly byBinding: Record<string, number>;
  /** Calls by the Authorization (or X-API-Key) value they carried; `(none)` without one. */
  readonly byAuthorization: Record<string, number>;
  /** Calls by the path they arrived on (HTTP request target with its query; gRPC method path). */
  readonly byPath: Record<string, number>;
  /** Messages the agent acted on (SendMessage or SendStreamingMessage), by messageId. */
  readonly runsByMessageId: Record<string, number>;
  /** The sum of `runsByMessageId`. */
  readonly runs: number;
  /** Reads of `/.well-known/agent-card.json`. */
  readonly cardReads: number;
  /** Calls answered with the configured 429/503. */
  readonly rejected: number;
  /** Streams started, streams the caller closed before their end, streams open now. */
  readonly streamsOpened: number;
  readonly streamsClosedByClient: number;
  readonly openStreams: number;
  /** Push deliveries answered 2xx, failed ones, and deliveries by webhook URL. */
  readonly pushesSent: number;
  readonly pushFailures: number;
  readonly pushUrls: Record<string, number>;
  /** gRPC calls that arrived with a deadline (`grpc-timeout`). */
  readonly grpcCallsWithDeadline: number;
  /** Blocking SendMessage calls whose caller left before the task ended (cancel, deadline). */
  readonly callsClosedByClient: number;
}

/** One call as the agent received it (`GET /_test/requests`, the last 500). */
export interface PythonAgentRequest {
  readonly binding: 'JSONRPC' | 'HTTP+JSON' | 'GRPC' | 'NONE';
  /** The A2A method, or `(unknown)` / `(invalid)`. */
  readonly method: string;
  /** HTTP method (absent on gRPC). */
  readonly httpMethod?: string;
  /** The request target as sent, or the gRPC method path. */
  readonly path: string;
  /** Header names in lower case (gRPC: the text metadata). */
  readonly headers: Record<string, string>;
  /** The HTTP body as text. */
  readonly body?: string;
  /** The gRPC request message, base64. */
  readonly bodyBase64?: string;
}

/** A change of behaviour at run time (`POST /_test/mode`). */
export interface PythonAgentMode {
  /** 429 or 503 answers every call from now on; null stops rejecting. */
  readonly reject?: 429 | 503 | null;
  readonly retryAfter?: number;
  readonly taskSeconds?: number;
  readonly answer?: 'task' | 'message' | 'by-text';
  readonly usageTokens?: number | null;
  readonly delaySeconds?: number;
}

/** A running Python agent. */
export interface PythonAgent {
  /** Its base URL; the card is at `${url}/.well-known/agent-card.json`. */
  readonly url: string;
  /** The JSON-RPC endpoint its card lists. */
  readonly jsonRpcUrl: string;
  /** The HTTP+JSON base its card lists. */
  readonly restUrl: string;
  /** `127.0.0.1:port` of its gRPC service, when started with `grpc: true`. */
  readonly grpcTarget?: string;
  counts(): Promise<PythonAgentCounts>;
  /** The last 500 calls, oldest first. */
  requests(): Promise<PythonAgentRequest[]>;
  reset(): Promise<void>;
  /** Completes every task held WORKING by a `hold` message (`POST /_test/release`). */
  releaseHeld(): Promise<void>;
  setMode(mode: PythonAgentMode): Promise<void>;
  /** SIGTERM, then SIGKILL if it has not exited within 3 s. */
  stop(): Promise<void>;
  /** SIGKILL at once: the upstream dies mid-task, its connections cut. */
  kill(): Promise<void>;
}

/** Whether a python3 able to run the agent is here (and which one), or why not. */
export interface PythonAgentSupport {
  readonly available: boolean;
  readonly python?: string;
  readonly reason: string;
}

const cache = new Map<boolean, PythonAgentSupport>();

/**
 * Finds a python3 for the agent: the first on PATH, else Debian's /usr/bin/python3 (where
 * python3-grpcio installs when another python3 shadows it); with `grpc`, one that imports grpc.
 */
export function pythonAgentSupport(grpc = false): PythonAgentSupport {
  const known = cache.get(grpc);
  if (known !== undefined) return known;
  let found: PythonAgentSupport = {
    available: false,
    reason: grpc
      ? 'no python3 with grpc here (Debian: apt-get install python3-grpcio)'
      : 'no python3 here (Debian: apt-get install python3)',
  };
  for (const python of ['python3', '/usr/bin/python3']) {
    const check = grpc ? ['-c', 'import grpc'] : ['--version'];
    if (spawnSync(python, check, { stdio: 'ignore' }).status === 0) {
      found = { available: true, python, reason: `${python}${grpc ? ' with grpc' : ''}` };
      break;
    }
  }
  cache.set(grpc, found);
  return found;
}

/** True under CI=true, where a missing python3 (or grpc) fails instead of skipping. */
export const pythonAgentRequired = process.env.CI === 'true';

function flags(options: PythonAgentOptions): string[] {
  const args = ['--port', '0'];
  if (options.taskSeconds !== undefined) args.push('--task-seconds', String(options.taskSeconds));
  if (options.answer !== undefined) args.push('--answer', options.answer);
  if (options.usageTokens !== undefined) args.push('--usage-tokens', String(options.usageTokens));
  if (options.reject429RetryAfterSeconds !== undefined) {
    args.push('--reject-429', String(options.reject429RetryAfterSeconds));
  }
  if (options.reject503RetryAfterSeconds !== undefined) {
    args.push('--reject-503', String(options.reject503RetryAfterSeconds));
  }
  if (options.updateSeconds !== undefined) {
    args.push('--update-seconds', String(options.updateSeconds));
  }
  if (options.blocking === true) args.push('--blocking');
  if (options.delaySeconds !== undefined) {
    args.push('--delay-seconds', String(options.delaySeconds));
  }
  if (options.grpc === true) args.push('--grpc');
  return args;
}

function readyLine(child: ChildProcess, stderr: () => string): Promise<string> {
  return new Promise((resolveLine, reject) => {
    if (child.stdout === null) return reject(new Error('python agent: no stdout'));
    const lines = createInterface({ input: child.stdout });
    const onExit = (code: number | null) =>
      reject(new Error(`python agent exited (${code}) before ready: ${stderr()}`));
    child.once('exit', onExit);
    child.once('error', reject);
    lines.once('line', (line) => {
      child.off('exit', onExit);
      lines.close();
      resolveLine(line);
    });
  });
}

/** Starts the agent on loopback (ports picked by the OS) and waits for its ready line. */
export async function startPythonAgent(options: PythonAgentOptions = {}): Promise<PythonAgent> {
  const support = pythonAgentSupport(options.grpc === true);
  if (!support.available || support.python === undefined) {
    throw new Error(`cannot start the Python agent: ${support.reason}`);
  }
  const child = spawn(support.python, [SCRIPT, ...flags(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const line = await readyLine(child, () => stderr);
  const ready = JSON.parse(line) as { http: number; grpc: number | null };
  const url = `http://127.0.0.1:${ready.http}`;
  const exited = new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done();
    else child.once('exit', () => done());
  });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, { method: 'POST', body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`python agent ${path}: ${res.status}`);
    await res.body?.cancel();
  };
  return {
    url,
    jsonRpcUrl: `${url}/a2a/jsonrpc`,
    restUrl: `${url}/a2a/rest`,
    ...(ready.grpc === null ? {} : { grpcTarget: `127.0.0.1:${ready.grpc}` }),
    async counts() {
      const res = await fetch(`${url}/_test/counts`);
      return (await res.json()) as PythonAgentCounts;
    },
    async requests() {
      const res = await fetch(`${url}/_test/requests`);
      return ((await res.json()) as { requests: PythonAgentRequest[] }).requests;
    },
    reset: () => post('/_test/reset', {}),
    releaseHeld: () => post('/_test/release', {}),
    setMode: (mode) => post('/_test/mode', mode),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
