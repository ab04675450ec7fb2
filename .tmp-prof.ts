import { MemoryStore } from './src/store/memory-store.js';
const huge = 1_000_000_000;
const s = new MemoryStore({ policies: [{ name: 'open', kind: 'rate', limit: huge, windowSeconds: 1000, burst: huge }], maxKeys: 1_000_000 });
const input = { caller: 'hot', method: 'SendMessage' } as const;
let n = 0;
const t0 = performance.now();
while (performance.now() - t0 < 4000) { for (let i = 0; i < 10000; i++) s.decideSync(input); n += 10000; }
console.log((n / 4).toFixed(0), 'per s');
