// BullMQ side of the work buffer comparison (test/load_buffer_bullmq_test.go):
// add N no-op jobs in bulks of 1000 while one Worker with the given
// concurrency processes them; prints one JSON line.
//   bench.mjs <redis-url> <jobs> <concurrency> [mixed|prefilled]
// prefilled adds the N jobs first, then starts the Worker and times the
// processing only (processMs, rate = N / processMs), with the CPU per job
// of this process and of redis-server (INFO cpu) while processing.
import { Queue, Worker } from 'bullmq';

const [redisUrl, nStr, concStr, mode = 'mixed'] = process.argv.slice(2);
const u = new URL(redisUrl);
const connection = {
  host: u.hostname, port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
  password: u.password || undefined, maxRetriesPerRequest: null,
};
const n = Number(nStr), concurrency = Number(concStr);
const name = 'flowgate-bench';
const queue = new Queue(name, { connection });
await queue.obliterate({ force: true }).catch(() => {});

const addAll = async () => {
  for (let i = 0; i < n; i += 1000) {
    const k = Math.min(1000, n - i);
    await queue.addBulk(Array.from({ length: k }, (_, j) => ({
      name: 'noop', data: { i: i + j }, opts: { removeOnComplete: { age: 86400 } },
    })));
  }
};

let done = 0;
let worker;
const startWorker = () => new Promise((resolve) => {
  worker = new Worker(name, async () => {}, { connection, concurrency });
  worker.on('completed', () => { if (++done === n) resolve(); });
});
// redisCPU is redis-server's used_cpu_sys + used_cpu_user in seconds.
const redisCPU = async () => {
  const info = await (await queue.client).info('cpu');
  const f = (k) => Number((info.match(new RegExp(`^${k}:([0-9.]+)`, 'm')) || [])[1] || 0);
  return f('used_cpu_sys') + f('used_cpu_user');
};
if (mode === 'prefilled') {
  const t0 = performance.now();
  await addAll();
  const tAdd = performance.now();
  const [cpu0, r0] = [process.cpuUsage(), await redisCPU()];
  await startWorker();
  const t1 = performance.now();
  const cpu = process.cpuUsage(cpu0), r1 = await redisCPU();
  console.log(JSON.stringify({ n, concurrency, mode, addMs: tAdd - t0, processMs: t1 - tAdd, totalMs: t1 - t0, rate: n / ((t1 - tAdd) / 1000),
    nodeCpuUsPerJob: (cpu.user + cpu.system) / n, redisCpuUsPerJob: 1e6 * (r1 - r0) / n }));
} else {
  const t0 = performance.now();
  const finished = startWorker();
  await addAll();
  const tAdd = performance.now();
  await finished;
  const t1 = performance.now();
  console.log(JSON.stringify({ n, concurrency, mode, addMs: tAdd - t0, totalMs: t1 - t0, rate: n / ((t1 - t0) / 1000) }));
}
await worker.close();
await queue.obliterate({ force: true });
await queue.close();
process.exit(0);
