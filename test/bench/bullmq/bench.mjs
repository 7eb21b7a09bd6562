// BullMQ side of the work buffer comparison (test/load_buffer_bullmq_test.go):
// add N no-op jobs in bulks of 1000 while one Worker with the given
// concurrency processes them; prints one JSON line.
import { Queue, Worker } from 'bullmq';

const [redisUrl, nStr, concStr] = process.argv.slice(2);
const u = new URL(redisUrl);
const connection = {
  host: u.hostname, port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
  password: u.password || undefined, maxRetriesPerRequest: null,
};
const n = Number(nStr), concurrency = Number(concStr);
const name = 'flowgate-bench';
const queue = new Queue(name, { connection });
await queue.obliterate({ force: true }).catch(() => {});

let done = 0;
let worker;
const t0 = performance.now();
const finished = new Promise((resolve) => {
  worker = new Worker(name, async () => {}, { connection, concurrency });
  worker.on('completed', () => { if (++done === n) resolve(); });
});
for (let i = 0; i < n; i += 1000) {
  const k = Math.min(1000, n - i);
  await queue.addBulk(Array.from({ length: k }, (_, j) => ({
    name: 'noop', data: { i: i + j }, opts: { removeOnComplete: { age: 86400 } },
  })));
}
const tAdd = performance.now();
await finished;
const t1 = performance.now();
console.log(JSON.stringify({ n, concurrency, addMs: tAdd - t0, totalMs: t1 - t0, rate: n / ((t1 - t0) / 1000) }));
await worker.close();
await queue.obliterate({ force: true });
await queue.close();
process.exit(0);
