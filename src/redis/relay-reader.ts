/**
 * @module relay-reader
 * The task-event relay's one blocking reader per replica: its cancel inbox and the streams of the
 * remote tasks it watches, read in one `XREAD`.
 */

import type { Redis } from 'ioredis';
import { decode, idAfter, type RelayEntry, type RelayedEvent } from './relay-events.js';

/** A watch on one remote task's stream, from {@link RelayReader.watch}. */
export interface RelayWatch {
  /**
   * The next entry after the watch's start, or undefined once the watch is closed, the reader is
   * closed, or the task's owner key has lapsed with nothing more to read (the owner died).
   */
  next(): Promise<RelayEntry | undefined>;
  /** Stops watching. */
  close(): void;
}

/** What the reader is given by its relay. */
export interface RelayReaderOptions {
  /** The relay's connection; the reader blocks on its own `duplicate()`. */
  readonly client: Redis;
  /** Key prefix of the relay's keys. */
  readonly prefix: string;
  /** This replica's inbox stream. */
  readonly inbox: string;
  /** A task's event stream key. */
  readonly streamKey: (taskId: string) => string;
  /** A task's owner key (checked when a watched stream is quiet). */
  readonly ownerKey: (taskId: string) => string;
  /** A cancel request for `taskId` arrived in the inbox. */
  readonly onCancelRequest: (taskId: string) => void;
}

interface Watcher {
  lastId: string;
  readonly push: (entry: RelayEntry, id: string) => void;
}

/** How long a watch waits for an entry before it asks whether the owner is alive, ms. */
const QUIET_CHECK_MS = 2_000;

/** A stream entry as the relay wrote it (`e` an event, `f` the end of the flow). */
function entryOf(fields: readonly string[]): RelayEntry {
  return fields[0] === 'e'
    ? { kind: 'event', event: decode(fields[1] ?? '{}') as RelayedEvent }
    : { kind: 'finished' };
}

/**
 * Reads one replica's inbox and its watched streams on one blocking connection, until closed.
 */
export class RelayReader {
  private readonly reader: Redis;
  private readonly watchers = new Map<string, Set<Watcher>>();
  private inboxLastId = '0-0';
  private woken = false;
  private closed = false;
  private readonly loop: Promise<void>;

  constructor(private readonly options: RelayReaderOptions) {
    this.reader = options.client.duplicate();
    this.reader.on('error', () => undefined);
    this.loop = this.run();
  }

  /** The id of the last entry in a task's stream ('0-0' when empty), and its recent tail. */
  async tailOf(taskId: string): Promise<{ lastId: string; tail: RelayEntry[] }> {
    const entries = (await this.options.client.xrevrange(
      this.options.streamKey(taskId),
      '+',
      '-',
      'COUNT',
      20,
    )) as [string, string[]][];
    return {
      lastId: entries[0]?.[0] ?? '0-0',
      tail: entries.map(([, fields]) => entryOf(fields)),
    };
  }

  /** Starts watching a remote task's stream after `fromId` (exclusive), now. */
  watch(taskId: string, fromId: string): RelayWatch {
    const queue: RelayEntry[] = [];
    let notify: (() => void) | undefined;
    let stopped = false;
    const watcher: Watcher = {
      lastId: fromId,
      push: (entry, id) => {
        if (!idAfter(id, fromId)) return;
        queue.push(entry);
        notify?.();
      },
    };
    let set = this.watchers.get(taskId);
    if (set === undefined) {
      set = new Set();
      this.watchers.set(taskId, set);
    }
    const watching = set;
    watching.add(watcher);
    this.wake();
    const arrival = (ms: number): Promise<boolean> =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          notify = undefined;
          resolve(false);
        }, ms);
        notify = () => {
          clearTimeout(timer);
          notify = undefined;
          resolve(true);
        };
      });
    return {
      next: async () => {
        for (;;) {
          const entry = queue.shift();
          if (entry !== undefined) return entry;
          if (this.closed || stopped) return undefined;
          if (await arrival(QUIET_CHECK_MS)) continue;
          const alive = await this.options.client
            .exists(this.options.ownerKey(taskId))
            .catch(() => 1);
          if (alive === 0 && queue.length === 0) return undefined;
        }
      },
      close: () => {
        stopped = true;
        notify?.();
        watching.delete(watcher);
        if (watching.size === 0 && this.watchers.get(taskId) === watching) {
          this.watchers.delete(taskId);
        }
      },
    };
  }

  /** Stops reading and drops the blocking connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reader.disconnect();
    await this.loop.catch(() => undefined);
  }

  /** Ends the current `XREAD` early (a new stream to read): one entry in this replica's inbox. */
  private wake(): void {
    if (this.woken) return;
    this.woken = true;
    this.options.client
      .xadd(this.options.inbox, 'MAXLEN', '~', '100', '*', 'w', '1')
      .catch(() => undefined);
  }

  private async run(): Promise<void> {
    const { client, inbox, prefix } = this.options;
    try {
      const last = (await client.xrevrange(inbox, '+', '-', 'COUNT', 1)) as [string, string[]][];
      this.inboxLastId = last[0]?.[0] ?? '0-0';
      await client.pexpire(inbox, 86_400_000).catch(() => undefined);
    } catch {
      // Redis unreachable at start: read the inbox from its beginning once it is back.
    }
    while (!this.closed) {
      const keys = [inbox];
      const ids = [this.inboxLastId];
      for (const [taskId, set] of this.watchers) {
        const first = set.values().next().value as Watcher | undefined;
        if (first === undefined) continue;
        keys.push(this.options.streamKey(taskId));
        ids.push(first.lastId);
      }
      this.woken = false;
      let reply: [string, [string, string[]][]][] | null;
      try {
        reply = (await this.reader.xread(
          'COUNT',
          100,
          'BLOCK',
          1000,
          'STREAMS',
          ...keys,
          ...ids,
        )) as typeof reply;
      } catch {
        if (this.closed) return;
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      for (const [key, entries] of reply ?? []) {
        if (key === inbox) {
          for (const [id, fields] of entries) {
            this.inboxLastId = id;
            if (fields[0] === 't' && fields[1] !== undefined) {
              this.options.onCancelRequest(fields[1]);
            }
          }
          continue;
        }
        const taskId = key.slice(`${prefix}re{`.length, -1);
        for (const [id, fields] of entries) {
          const entry = entryOf(fields);
          for (const w of this.watchers.get(taskId) ?? []) {
            w.lastId = id;
            w.push(entry, id);
          }
        }
      }
    }
  }
}
