// Test helper: listens on the Unix socket path in argv[2] and says "ready"; the test SIGKILLs it so
// the socket file stays behind with no one serving it.
import net from 'node:net';

const server = net.createServer((socket) => socket.on('error', () => {}));
server.listen(process.argv[2], () => process.stdout.write('ready\n'));
