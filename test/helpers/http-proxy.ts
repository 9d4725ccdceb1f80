// A small real HTTP proxy on 127.0.0.1 for tests: forward requests (an absolute URI, as clients send
// http:// through a proxy) are sent on to their server and the answer piped back; CONNECT opens a
// tunnel. Every request it got is recorded. `credentials` ("user:password"): anything without that
// Proxy-Authorization gets 407.
import http from 'node:http';
import net from 'node:net';

export interface ProxySeen {
  method: string;
  /** The absolute URI of a forward request, host:port of a CONNECT. */
  target: string;
  proxyAuthorization?: string;
}

export interface TestProxy {
  url: string;
  port: number;
  seen: ProxySeen[];
  close(): Promise<void>;
}

export async function startTestProxy(opts: { credentials?: string } = {}): Promise<TestProxy> {
  const seen: ProxySeen[] = [];
  const sockets = new Set<net.Socket>();
  const authorized = (h: string | undefined) => !opts.credentials || h === `Basic ${Buffer.from(opts.credentials).toString('base64')}`;
  const server = http.createServer((req, res) => {
    const auth = req.headers['proxy-authorization'];
    seen.push({ method: req.method ?? '', target: req.url ?? '', ...(auth ? { proxyAuthorization: auth } : {}) });
    if (!authorized(auth)) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' }).end();
      return;
    }
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('a proxy request needs an absolute URI');
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const up = http.request({ host: target.hostname, port: target.port || 80, method: req.method, path: target.pathname + target.search, headers }, (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const auth = req.headers['proxy-authorization'];
    seen.push({ method: 'CONNECT', target: req.url ?? '', ...(auth ? { proxyAuthorization: auth } : {}) });
    if (!authorized(auth)) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm="test"\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const [host, port] = (req.url ?? '').split(/:(?=\d+$)/);
    const up = net.connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client).pipe(up);
    });
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
    client.on('close', () => up.destroy());
  });
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
