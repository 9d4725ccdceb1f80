// The baseline for bench/web/sse-bench.ts: a bare node:http server that streams the same SSE frames
// (command.output events of the same size, base64 data) as fast as each socket takes them.
import http from 'node:http';

const count = Number(process.argv[2] ?? 100_000);
const size = Number(process.argv[3] ?? 200);
const data = Buffer.alloc(size, 'x').toString('base64');

function frame(seq: number): string {
  const event = { sessionId: 'ses_bench', seq, ts: Date.now(), type: 'command.output', data: { turnId: 'turn_bench', stream: 'stdout', data, encoding: 'base64' } };
  return `id: ${seq}\nevent: command.output\ndata: ${JSON.stringify(event)}\n\n`;
}

const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
  let seq = 0;
  const pump = (): void => {
    while (seq < count) {
      if (!res.write(frame(++seq))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(`event: turn.completed\ndata: {"seq":${count + 1}}\n\n`);
  };
  pump();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
