#!/usr/bin/env node
/**
 * @module main
 * The `a2a-ratelimit` executable: `runCli` on `process.argv`, exiting with its code (shortly after,
 * even if a library keeps a handle open).
 */

import { runCli } from './cli-app.js';

const code = await runCli(process.argv);
process.exitCode = code;
setTimeout(() => process.exit(code), 500).unref();
