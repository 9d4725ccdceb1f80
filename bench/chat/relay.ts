// A bare relay for the chat long-answer row (chat-bench.ts): Astra's chat engine with a plain
// fan-out in place of the daemon — no journal, no protocol, no hub, no MessagePack, no spread. The
// engine runs in this process against an in-memory context, and each message.delta's text goes to
// every reader process at once as a length-prefixed frame: the least a design with 16 reader
// processes does (read the model's stream, wake each reader with the text every delta interval),
// done plainly. Its slowest reader beside the direct reader is what those 16 processes cost on this
// machine; the daemon's slowest observer beside it is what the daemon adds, or saves.
//   relay <baseUrl> <tokens> <socketPath> <n>
//       waits for n readers; then per stdin line `go K` runs one chat turn (K earlier long answers
//       in its history, so the request is the daemon's), sends its text, then an end frame, and
//       tells {sent}
//   relay-reader <socketPath>
//       per answer: its end's wall time and the tokens it counted
// Frames: u32 BE length, then that many bytes of UTF-8 text; the length 0xfffffffe starts an answer
// (before its request goes: the observers' turn.started), 0xffffffff ends it.
import fs from 'node:fs';
import net from 'node:net';
import { createInterface } from 'node:readline';
import type { EngineContext } from '../../runtime/engine.js';
import { createChatEngine } from '../../engines/chat/chat-engine.js';
import type { ChatEngineContext } from '../../engines/chat/context.js';
import { parseChatOptions } from '../../engines/chat/options.js';
import { tell, wallMs } from '../lib.js';
import { AnswerReport, earlierLongAnswers } from './conversation.js';
import { TOKEN } from './model-gen.js';

const END = 0xffffffff;
/** Sent before the turn runs, as the daemon's observers get turn.started. */
const START = 0xfffffffe;

async function relay(baseUrl: string, tokens: number, socketPath: string, n: number): Promise<void> {
  fs.rmSync(socketPath, { force: true });
  const readers: net.Socket[] = [];
  const all = new Promise<void>((resolve) => {
    const server = net.createServer((s) => {
      readers.push(s);
      if (readers.length === n) {
        server.close();
        resolve();
      }
    });
    server.listen(socketPath, () => tell({ listening: true }));
  });
  await all;
  const send = (frame: Buffer) => {
    for (const s of readers) s.write(frame);
  };
  const engine = createChatEngine();
  const engineOptions = parseChatOptions({ model: 'bench', baseUrl }, {});
  tell({ ready: true });
  const start = Buffer.alloc(4);
  start.writeUInt32BE(START, 0);
  let turn = 0;
  for await (const line of createInterface({ input: process.stdin })) {
    const earlier = Number(/^go (\d+)$/.exec(line)?.[1] ?? 0);
    send(start);
    const ctx: ChatEngineContext = {
      sessionId: 'relay',
      turnId: `turn_${++turn}`,
      cwd: process.cwd(),
      input: { text: `tokens=${tokens}` },
      approvalPolicy: 'auto',
      engineOptions,
      signal: new AbortController().signal,
      emit: ((type: string, data: { text?: string }) => {
        if (type === 'message.delta' && data.text) {
          const body = Buffer.from(data.text, 'utf8');
          const frame = Buffer.allocUnsafe(4 + body.length);
          frame.writeUInt32BE(body.length, 0);
          body.copy(frame, 4);
          send(frame);
        } else if (type === 'message.completed') {
          const frame = Buffer.allocUnsafe(4);
          frame.writeUInt32BE(END, 0);
          send(frame);
        }
        return true;
      }) as EngineContext['emit'],
      drained: async () => {},
      requestApproval: async () => 'deny',
      history: async () => earlierLongAnswers(earlier, tokens),
      runCommand: async () => {
        throw new Error('the relay runs no tools');
      },
    };
    const result = await engine.runTurn(ctx);
    if (result.status !== 'completed') throw new Error(`the relay's turn ended ${result.status}: ${result.error ?? ''}`);
    tell({ sent: true });
  }
}

function reader(socketPath: string): void {
  const s = net.connect(socketPath);
  let held: Buffer | undefined;
  let chars = 0;
  const report = new AnswerReport<{ endMs: number; tokens: number }>(tell);
  s.on('data', (b: Buffer) => {
    let buf = held ? Buffer.concat([held, b]) : b;
    held = undefined;
    while (buf.length >= 4) {
      const len = buf.readUInt32BE(0);
      if (len === START || len === END) {
        // Reported as the daemon's observers report (AnswerReport).
        if (len === START) report.start();
        else report.end({ endMs: wallMs(), tokens: chars / TOKEN.length });
        chars = 0;
        buf = buf.subarray(4);
        continue;
      }
      if (buf.length < 4 + len) break;
      chars += buf.toString('utf8', 4, 4 + len).length;
      buf = buf.subarray(4 + len);
    }
    if (buf.length > 0) held = Buffer.from(buf);
  });
  s.once('connect', () => tell({ ready: true }));
}

const [role, ...args] = process.argv.slice(2);
if (role === 'relay') await relay(args[0]!, Number(args[1]), args[2]!, Number(args[3]));
else if (role === 'relay-reader') reader(args[0]!);
else {
  process.stderr.write('usage: relay.js relay <baseUrl> <tokens> <socketPath> <n> | relay-reader <socketPath>\n');
  process.exit(2);
}
