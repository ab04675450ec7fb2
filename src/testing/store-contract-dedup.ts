/**
 * @module store-contract-dedup
 * The deduplication cases of the store contract.
 */

import { strict as assert } from 'node:assert';
import { messageRecordKey } from '../store/message-records.js';
import { synchronousStore } from '../store/synchronous-store.js';
import {
  at,
  PER_CALLER,
  rejected,
  type StoreContractCase,
  send,
  setup,
} from './store-contract-kit.js';

/** Store contract cases of deduplication records: set-if-absent per (caller, messageId), the recorded task (an opaque value), expiry, concurrent copies; and, for a store with the in-process capability, its synchronous records (the path the limiter takes for it). */
export const DEDUP_CONTRACT: readonly StoreContractCase[] = [
  {
    name: 'deduplication: set-if-absent per (caller, messageId), task id recorded, records expire',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: true });
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: false });
      assert.deepEqual(
        await store.rememberMessage('b', 'm1', 60_000),
        { fresh: true },
        'another caller with the same messageId is a different message',
      );
      await store.recordMessageTask('a', 'm1', 'task-1', 60_000);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), {
        fresh: false,
        taskId: 'task-1',
      });
      at(clock, 59_999);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), {
        fresh: false,
        taskId: 'task-1',
      });
      at(clock, 60_000); // recorded at 0 with a 60 s TTL: gone now
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: true });
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: false });
      await store.close();
    },
  },
  {
    name: 'deduplication: concurrent copies of one message get exactly one fresh answer',
    async run(factory) {
      const { store } = await setup(factory, [PER_CALLER]);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => store.rememberMessage('a', 'same', 60_000)),
      );
      assert.equal(answers.filter((a) => a.fresh).length, 1);
      await store.close();
    },
  },
  {
    name: 'deduplication: the recorded outcome is opaque (a Message answer: 16 KiB, spaces, NUL, newlines, any script) and comes back as is',
    async run(factory) {
      const { store } = await setup(factory, [PER_CALLER]);
      const answer = `\u0000answer:${JSON.stringify({ t: '', o: 'a b', m: { text: 'é 漢 🙂\n\u0000'.repeat(1400) } })}`;
      assert.ok(answer.length > 16_000);
      await store.rememberMessage('a', 'm1', 60_000);
      await store.recordMessageTask('a', 'm1', answer, 60_000);
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), {
        fresh: false,
        taskId: answer,
      });
      await store.close();
    },
  },
  {
    name: 'in-process capability: every synchronous method or none; its records and decisions are those of the async contract',
    async run(factory) {
      const { clock, store } = await setup(factory, [PER_CALLER]);
      const local = synchronousStore(store); // throws for a store with only some of them
      if (local === undefined) {
        await store.close();
        return; // a shared store: the limiter takes the pending-record protocol
      }
      const key = messageRecordKey('a', 'm1');
      assert.equal(local.peekMessageKeySync(key), undefined);
      assert.equal(local.peekMessageKeySync(key), undefined, 'a peek writes no record');
      assert.deepEqual(local.rememberMessageKeySync(key, 60_000), { fresh: true });
      assert.deepEqual(local.rememberMessageKeySync(key, 60_000), { fresh: false });
      assert.deepEqual(local.peekMessageKeySync(key), { fresh: false });
      assert.deepEqual(
        await store.rememberMessage('a', 'm1', 60_000),
        { fresh: false },
        'the async contract sees a record written synchronously',
      );
      local.recordMessageTaskKeySync(key, 'task-1', 60_000);
      assert.deepEqual(local.peekMessageKeySync(key), { fresh: false, taskId: 'task-1' });
      local.forgetMessageKeySync(key);
      assert.equal(local.peekMessageKeySync(key), undefined, 'forgotten: the next copy is fresh');
      assert.deepEqual(await store.rememberMessage('a', 'm1', 60_000), { fresh: true });
      at(clock, 60_000);
      assert.equal(local.peekMessageKeySync(key), undefined, 'records expire');
      // One decision, whichever way it is asked for.
      for (let i = 0; i < 10; i++) assert.ok(local.decideSync(send('b')).admitted, `burst ${i}`);
      const sync = rejected(local.decideSync(send('b')), 'sync 11th');
      const async = rejected(await store.decide(send('b')), 'async 12th');
      assert.equal(async.retryAfterMs, sync.retryAfterMs);
      await store.close();
    },
  },
];
