// `astra web` (docs/http.md): the browser gateway in the foreground, and `astra web pair`, which asks
// the running gateway (found through web.json in the runtime directory) for a fresh pairing link.
import http from 'node:http';
import { Option, type Command } from 'commander';
import { AstraError } from '../protocol/index.js';
import { isProcessAlive } from '../discovery/index.js';

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new AstraError('invalid_params', `--port must be an integer from 0 to 65535, got "${v}"`);
  return n;
}

export function registerWebCommands(program: Command, env: NodeJS.ProcessEnv, setExit: (code: number) => void): void {
  const web = program
    .command('web')
    .description('serve the browser page on 127.0.0.1 and print a pairing link; each tab is a client of the daemon (Ctrl-C stops it)')
    .addOption(new Option('--port <n>', 'the port (default: the last one used here, else any free one)').argParser(parsePort))
    .option('--host <address>', 'only 127.0.0.1 or localhost is accepted', '127.0.0.1')
    .option('--observe', 'print a read-only link: that browser can watch but not write')
    .action(async (o: { port?: number; host: string; observe?: boolean }) => {
      const { startGateway } = await import('../web/gateway/server.js');
      const gateway = await startGateway({ env, port: o.port ?? 0, host: o.host, log: (line) => process.stderr.write(`astra web: ${line}\n`) });
      process.stdout.write(`Open this link in your browser (single use, valid for a few minutes; \`astra web pair\` prints another):\n${gateway.pairLink(Boolean(o.observe))}\n`);
      // The listeners stay until the process exits: proper-lockfile's signal-exit re-raises a signal
      // that no other listener handles, which would kill the gateway in the middle of closing.
      let stopping = false;
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          if (stopping) process.exit(130); // a second Ctrl-C: do not wait for the tabs
          stopping = true;
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      process.stderr.write('astra web: stopping\n');
      await gateway.close();
      setExit(0);
      // Whatever a browser still holds open must not keep the process alive.
      setTimeout(() => process.exit(process.exitCode ?? 0), 2_000).unref();
    });

  web
    .command('pair')
    .description('print a fresh single-use pairing link for the running `astra web` (one per device)')
    .option('--observe', 'a read-only link: that browser can watch but not write')
    .action(async (o: { observe?: boolean }) => {
      const { readWebRecord } = await import('../web/gateway/record.js');
      const record = readWebRecord(env);
      if (!record || !isProcessAlive(record.pid)) throw new AstraError('daemon_not_running', 'no `astra web` is running for this user; start one with `astra web`');
      // `web` has an --observe of its own, which commander may hand the flag to.
      const body = JSON.stringify({ observe: Boolean(o.observe || (web.opts() as { observe?: boolean }).observe) });
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: record.port,
            path: '/v1/admin/pair',
            method: 'POST',
            headers: { Host: `127.0.0.1:${record.port}`, Authorization: `Bearer ${record.adminSecret}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
            timeout: 5_000,
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('timeout', () => req.destroy(new Error(`the gateway on port ${record.port} did not answer within 5 s; restart \`astra web\``)));
        req.on('error', (e) => reject(new AstraError('daemon_not_running', `the gateway on port ${record.port} did not answer (${e.message}); restart \`astra web\``)));
        req.end(body);
      });
      if (answer.status !== 200) throw new AstraError('internal_error', `the gateway refused to pair (HTTP ${answer.status}): ${answer.text.slice(0, 300)}`);
      process.stdout.write(`${(JSON.parse(answer.text) as { url: string }).url}\n`);
      setExit(0);
    });
}
