// The daemon's read of one long answer, alone: streamChatCompletion (engines/chat/model-stream.ts)
// against the generating fake model server (model-gen.ts) in another process, warm, with nothing
// else in this process. Per answer: the CPU this process spent reading it (user + system), and the
// time to encode the answer's text the way chat-engine.ts accumulates it (`text += part.text`, then
// packed as message.completed is: that is where V8 flattens the string).
//   node dist/bench/chat/stream-alone.js [tokens=50000] [answers=12] [warmup=3] [dist root]
// The last argument runs another build's model-stream.js (A/B: copy dist/ aside, run both in turn).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Packr } from 'msgpackr';
import { DIST, median } from '../lib.js';

const tokens = Number(process.argv[2] ?? 50_000);
const answers = Number(process.argv[3] ?? 12);
const warmup = Number(process.argv[4] ?? 3);
const root = process.argv[5] ? path.resolve(process.argv[5]) : DIST;
const { streamChatCompletion } = (await import(pathToFileURL(path.join(root, 'engines/chat/model-stream.js')).href)) as typeof import('../../engines/chat/model-stream.js');

const server = spawn(process.execPath, [path.join(DIST, 'bench/chat/model-gen.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
try {
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('stream-alone: model-gen.js did not start within 15 s')), 15_000);
    server.stdout!.once('data', (b: Buffer) => {
      clearTimeout(timer);
      resolve((JSON.parse(b.toString('utf8').split('\n')[0]!) as { baseUrl: string }).baseUrl);
    });
  });
  const packr = new Packr({ useRecords: false, variableMapSize: true, encodeUndefinedAsNil: true });
  const cpu: number[] = [];
  const sys: number[] = [];
  const encode: number[] = [];
  const reads: number[] = [];
  for (let i = 0; i < warmup + answers; i++) {
    const signal = new AbortController().signal;
    const before = process.cpuUsage();
    let text = '';
    let n = 0;
    for await (const part of streamChatCompletion({ baseUrl, model: 'bench', messages: [{ role: 'user', content: `tokens=${tokens}` }], signal, stallMs: 30_000, maxRetryAfterMs: 0, maxAttempts: 1 })) {
      if (part.type === 'text') {
        text += part.text;
        n++;
      }
    }
    const used = process.cpuUsage(before);
    const t0 = performance.now();
    packr.pack({ turnId: 't', text, finishReason: 'stop' });
    const t1 = performance.now();
    if (text.length !== tokens * 4) throw new Error(`stream-alone: ${text.length} characters read, ${tokens * 4} expected`);
    if (i < warmup) continue;
    cpu.push((used.user + used.system) / 1000);
    sys.push(used.system / 1000);
    encode.push(t1 - t0);
    reads.push(n);
  }
  const r = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  process.stdout.write(
    `stream-alone ${root}: ${tokens} tokens × ${answers} answers: CPU ms/answer ${r(cpu)}, of which system ${r(sys)}; encode of the text ms ${r(encode)}; text parts ${r(reads)}\n`,
  );
} finally {
  server.kill('SIGTERM');
}
