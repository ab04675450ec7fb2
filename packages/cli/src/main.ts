#!/usr/bin/env node
/**
 * @module main
 * The `a2a-ratelimit` executable: runs the program on `process.argv` and exits with its code
 * (commands: `demo`, `serve`, `simulate`, `probe`; see `a2a-ratelimit --help`). If a library
 * keeps a handle open after the command finished, the process still exits shortly after.
 */

import { runCli } from './cli-app.js';

const code = await runCli(process.argv);
process.exitCode = code;
setTimeout(() => process.exit(code), 500).unref();
