/**
 * @module gateway-bench-proxy
 * The gateway of `bench/gateway.bench.ts`, a child process of its own started as the
 * `a2a-ratelimit gateway` command starts it (`startGateway`: the config's policies and identity,
 * metrics when prom-client is installed): `node gateway-bench-proxy.ts <upstream> <config.yaml |
 * none>`, `none` being no policy at all. Reports its URL over IPC; on `{ op: 'heap' }` answers
 * its `heapUsed` after two full collections (run it with `--expose-gc`); with
 * `BENCH_SNAPSHOT_DIR` set, `{ op: 'snapshot' }` writes a heap snapshot there (to see what an open
 * stream holds) and answers its file.
 */

import { writeHeapSnapshot } from 'node:v8';
import { parseGatewayOptions, startGateway } from '../packages/cli/src/gateway-command.js';
import { loadGatewayConfig } from '../packages/cli/src/gateway-config.js';

const [upstream = '', configFile = 'none'] = process.argv.slice(2);
const options = parseGatewayOptions({
  upstream,
  port: '0',
  ...(configFile === 'none' ? {} : { config: configFile }),
});
const config = configFile === 'none' ? { policies: [] } : await loadGatewayConfig(configFile);
const running = await startGateway(options, config);
if (!running.gateway.isReady()) throw new Error(`no card: ${running.gateway.cardError()}`);

const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (raw) => {
  const message = raw as { op: string };
  if (message.op === 'snapshot' && process.env.BENCH_SNAPSHOT_DIR !== undefined) {
    // Diagnosis only (BENCH_SNAPSHOT_DIR set): a heap snapshot of this process.
    const file = writeHeapSnapshot(
      `${process.env.BENCH_SNAPSHOT_DIR}/gateway-${Date.now()}.heapsnapshot`,
    );
    process.send?.({ re: 'snapshot', file });
  }
  if (message.op === 'heap') {
    gc?.();
    gc?.();
    process.send?.({
      re: 'heap',
      heapUsed: process.memoryUsage().heapUsed,
      inFlight: running.gateway.inFlight(),
      gc: gc !== undefined,
    });
  }
});
process.on('disconnect', () => process.exit(0));
process.send?.({ ready: true, url: running.url });
