/**
 * @module synchronous-store
 * `synchronousStore`: whether a store has the in-process capability, by its methods, never by
 * class.
 */

import type { Store, SynchronousStore } from './store.js';

const SYNCHRONOUS_METHODS = [
  'decideSync',
  'releaseSync',
  'renewSync',
  'peekMessageKeySync',
  'rememberMessageKeySync',
  'forgetMessageKeySync',
  'recordMessageTaskKeySync',
] as const satisfies readonly (keyof SynchronousStore)[];

/**
 * The store itself when it has every synchronous method (the in-process path), else undefined
 * (the shared path). A store with only some of them is refused: half a protocol would mix the two.
 *
 * @example
 * ```ts
 * const sync = synchronousStore(store);
 * const decision = sync !== undefined ? sync.decideSync(input) : await store.decide(input);
 * ```
 */
export function synchronousStore(store: Store): (Store & SynchronousStore) | undefined {
  const present = SYNCHRONOUS_METHODS.filter((m) => typeof store[m] === 'function');
  if (present.length === 0) return undefined;
  if (present.length < SYNCHRONOUS_METHODS.length) {
    const missing = SYNCHRONOUS_METHODS.filter((m) => typeof store[m] !== 'function');
    throw new TypeError(
      `store: has ${present.join(', ')} but not ${missing.join(', ')}: an in-process store needs every synchronous method, a shared one none`,
    );
  }
  return store as Store & SynchronousStore;
}
