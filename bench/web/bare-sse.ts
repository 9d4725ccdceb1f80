// The baseline for bench/web/sse-bench.ts: a bare node:http server that streams the same SSE frames
// (command.output events of the same size, base64 data) as fast as each socket takes them, written as
// a well-written server writes: the frames of one event-loop turn joined and written once (up to
// TURN_BYTES a turn), the next turn when the response has room again.
import http from 'node:http';

const count = Number(process.argv[2] ?? 100_000);
const size = Number(process.argv[3] ?? 200);
const data = Buffer.alloc(size, 'x').toString('base64');
/** At most this much of the stream is written in one turn (the gateway's slab is 256 KiB too). */
const TURN_BYTES = 256 * 1024;

function frame(seq: number): string {
  const event = { sessionId: 'ses_bench', seq, ts: Date.now(), type: 'command.output', data: { turnId: 'turn_bench', stream: 'stdout', data, encoding: 'base64' } };
  return `id: ${seq}\nevent: command.output\ndata: ${JSON.stringify(event)}\n\n`;
}

const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
  let seq = 0;
  const pump = (): void => {
    const frames: string[] = [];
    let bytes = 0;
    while (seq < count && bytes < TURN_BYTES) {
      const f = frame(++seq);
      frames.push(f);
      bytes += f.length;
    }
    if (seq === count) {
      frames.push(`event: turn.completed\ndata: {"seq":${count + 1}}\n\n`);
      res.end(frames.join(''));
      return;
    }
    if (res.write(frames.join(''))) setImmediate(pump);
    else res.once('drain', pump);
  };
  pump();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
