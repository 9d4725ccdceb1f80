// One ACP agent process and the SDK's client connection to it over its stdio: spawn in the session's
// cwd, `initialize` (advertising what Astra serves: fs read and write, confined to the cwd — agent-fs.ts;
// no terminal), `session/new` or `session/load`, requests bounded by a timeout and by the process
// exiting. The agent's `session/update`s and `session/request_permission`s go to whoever holds the
// link's `turn` (the running turn); the updates `session/load` replays go nowhere.
import { spawn, type ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { AstraError } from '../../protocol/index.js';
import { readTextFile, writeTextFile } from './agent-fs.js';
import { agentLabel, findProgram, type AcpEngineConfig, type AcpSessionOptions } from './options.js';

/** What the running turn gives the link: where updates and permission requests go. */
export interface LinkTurn {
  /** May return a promise (the journal is behind): reading on from the agent waits for it. */
  update(u: unknown): void | Promise<void>;
  /** The agent wrote `path` through fs/write_text_file: journal it as a diff. */
  wrote(path: string, oldText: string | null, newText: string): void;
  requestPermission(params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse>;
}

export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class AgentLink {
  readonly label: string;
  acpSessionId: string | undefined;
  loadSession = false;
  turn: LinkTurn | undefined;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<AgentExit>;
  exit: AgentExit | undefined;
  private readonly child: ChildProcess;
  private readonly conn: acp.ClientConnection;
  private stderr: string[] = [];
  /** Set while the journal is behind: reading the agent's output waits for it. */
  private gate: Promise<void> | undefined;
  private stderrPartial = '';

  private constructor(
    opts: AcpSessionOptions,
    cwd: string,
    private readonly cfg: AcpEngineConfig,
  ) {
    this.label = agentLabel(opts);
    const env = { ...process.env, ...opts.env };
    const program = findProgram(opts.command, cwd, env.PATH);
    if (!program) throw new AstraError('invalid_params', `The agent command ${this.label} cannot start: ${opts.command} is not a program on PATH (or a path to one) that can be run.`, { field: 'engineOptions.command', command: opts.command });
    // Its own process group, so that stopping it stops what it started (tools, servers) too.
    this.child = spawn(program, opts.args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.exited = new Promise((resolve) => {
      this.child.once('error', (e) => {
        this.stderrLine(`spawn failed: ${e.message}`);
        if (!this.exit) resolve((this.exit = { code: null, signal: null }));
      });
      this.child.once('exit', (code, signal) => resolve((this.exit = this.exit ?? { code, signal })));
    });
    this.child.stderr!.setEncoding('utf8').on('data', (s: string) => this.takeStderr(s));
    this.child.stdin!.on('error', () => {}); // a write after the agent exited: the exit is what is reported
    // Backpressure: while the journal is behind (`gate`), the agent's output is not read on, so its
    // pipe fills and the agent waits (the SDK itself reads on regardless of its handlers).
    const fromAgent = (Readable.toWeb(this.child.stdout!) as ReadableStream<Uint8Array>).pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: async (chunk, c) => {
          if (this.gate) await this.gate;
          c.enqueue(chunk);
        },
      }),
    );
    const wire = acp.ndJsonStream(Writable.toWeb(this.child.stdin!) as WritableStream<Uint8Array>, fromAgent, { maxMessageBytes: cfg.maxMessageBytes });
    // Every session/update is read by Astra (update-map.ts), not checked against the SDK's schema,
    // which refuses an update of a kind it does not know: they arrive under a method of Astra's own.
    const stream = { writable: wire.writable, readable: wire.readable.pipeThrough(new TransformStream<acp.AnyMessage, acp.AnyMessage>({ transform: (m, c) => c.enqueue(renameUpdate(m)) })) };
    const app = acp.client({ name: 'astra' })
      .onNotification(RAW_UPDATE, (p: unknown) => p, ({ params }) => {
        // A notification without an update is kept whole (as a malformed update).
        const p = params as { update?: unknown } | undefined;
        const behind = this.turn?.update(p !== null && typeof p === 'object' && 'update' in p ? p.update : params);
        if (behind) {
          const gate: Promise<void> = behind
            .catch(() => {})
            .then(() => {
              if (this.gate === gate) this.gate = undefined;
            });
          this.gate = gate;
        }
      })
      .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
        this.duringTurn('fs/read_text_file');
        return readTextFile(cwd, params);
      })
      .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
        const turn = this.duringTurn('fs/write_text_file');
        const { oldText } = writeTextFile(cwd, params);
        turn.wrote(params.path, oldText, params.content);
        return {};
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => this.turn?.requestPermission(params) ?? { outcome: { outcome: 'cancelled' } });
    this.conn = app.connect(stream);
  }

  /** Spawns the agent and initializes it; throws AstraError naming the command with its stderr's last lines. */
  static async start(opts: AcpSessionOptions, cwd: string, cfg: AcpEngineConfig): Promise<AgentLink> {
    const link = new AgentLink(opts, cwd, cfg);
    try {
      const init = await link.call('initialize', () =>
        link.conn.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } }, clientInfo: { name: 'astra', version: '1' } }),
      );
      if (init.protocolVersion !== acp.PROTOCOL_VERSION)
        throw link.failure(`answered initialize with protocol version ${JSON.stringify(init.protocolVersion)}; Astra speaks ACP version ${acp.PROTOCOL_VERSION}`);
      link.loadSession = init.agentCapabilities?.loadSession === true;
      return link;
    } catch (e) {
      link.kill();
      throw e;
    }
  }

  /** The running turn; the agent hears an error when none is (its files are served only while a prompt runs). */
  private duringTurn(what: string): LinkTurn {
    if (!this.turn) throw acp.RequestError.invalidRequest(undefined, `${what} is served only while a prompt runs`);
    return this.turn;
  }

  /** A new ACP session in `cwd`. */
  async newSession(cwd: string): Promise<string> {
    const r = await this.call('session/new', () => this.conn.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }));
    this.acpSessionId = r.sessionId;
    return r.sessionId;
  }

  /** Loads a kept ACP session; the updates it replays are not passed on (they are journaled already). */
  async loadSessionById(id: string, cwd: string): Promise<void> {
    const turn = this.turn;
    this.turn = undefined;
    try {
      await this.call('session/load', () => this.conn.agent.request(acp.methods.agent.session.load, { sessionId: id, cwd, mcpServers: [] }));
      this.acpSessionId = id;
    } finally {
      this.turn = turn;
    }
  }

  /** session/prompt with the turn's text; resolves with ACP's answer, rejects when the agent exits first. */
  prompt(text: string): Promise<acp.PromptResponse> {
    const req = this.conn.agent.request(acp.methods.agent.session.prompt, { sessionId: this.acpSessionId!, prompt: [{ type: 'text', text }] }).catch(async (e: unknown) => {
      // A closed connection is most often the agent exiting: wait a moment for its exit status.
      await Promise.race([this.exited, delay(200)]);
      if (this.exit) return new Promise<never>(() => {}); // the exit below answers, with the stderr tail
      throw e;
    });
    // Its last stderr lines may still be in the pipe when it exits: give them a moment.
    const exited = this.exited.then(async (x) => {
      await delay(50);
      throw new AgentExited(x, this.stderrTail());
    });
    return Promise.race([req, exited]);
  }

  /** The agent exited or its connection closed: the next turn needs a new one. */
  get broken(): boolean {
    return this.exit !== undefined || this.conn.signal.aborted;
  }

  cancel(): void {
    if (this.acpSessionId && !this.exit) void this.conn.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.acpSessionId }).catch(() => {});
  }

  kill(): void {
    this.conn.close();
    if (this.exit || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      this.child.kill('SIGKILL');
    }
  }

  stderrTail(): string {
    const lines = [...this.stderr, ...(this.stderrPartial ? [this.stderrPartial] : [])];
    return lines.slice(-this.cfg.stderrLines).join('\n');
  }

  /** An AstraError for a start that failed: names the command, quotes stderr's last lines. */
  failure(why: string): AstraError {
    const tail = this.stderrTail();
    return new AstraError('invalid_params', `The agent ${this.label} ${why}.${tail ? ` Its stderr's last lines:\n${tail}` : ' It wrote nothing to stderr.'}`, {
      field: 'engineOptions.command',
      command: this.label,
      stderr: tail,
    });
  }

  /** A start request bounded by startTimeoutMs and by the agent exiting. */
  private async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.failure(`did not answer ${what} within ${Math.round(this.cfg.startTimeoutMs / 1000)} s`)), this.cfg.startTimeoutMs);
    });
    const exited = this.exited.then((x) => {
      // Its last stderr lines may still be in the pipe: give them a moment.
      return new Promise<never>((_, reject) => setTimeout(() => reject(this.failure(`exited before answering ${what} (${describeExit(x)})`)), 50));
    });
    try {
      return await Promise.race([
        send().catch(async (e: unknown) => {
          // A closed connection is most often the agent exiting: wait a moment for its exit status.
          await Promise.race([this.exited, new Promise((r) => setTimeout(r, 200))]);
          throw this.exit ? this.failure(`exited before answering ${what} (${describeExit(this.exit)})`) : this.failure(`refused ${what}: ${(e as Error).message}`);
        }),
        timeout,
        exited,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private takeStderr(s: string): void {
    const parts = (this.stderrPartial + s).split('\n');
    this.stderrPartial = parts.pop()!.slice(-4096);
    for (const p of parts) this.stderrLine(p);
  }

  private stderrLine(line: string): void {
    this.stderr.push(line.slice(0, 4096));
    if (this.stderr.length > this.cfg.stderrLines) this.stderr.shift();
  }
}

const RAW_UPDATE = '_astra/session_update';
function renameUpdate(m: acp.AnyMessage): acp.AnyMessage {
  return 'method' in m && m.method === 'session/update' && !('id' in m && m.id !== undefined) ? { ...m, method: RAW_UPDATE } : m;
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function describeExit(x: AgentExit): string {
  return x.signal ? `killed by ${x.signal}` : x.code === null ? 'it could not be run' : `exit status ${x.code}`;
}

/** The agent process ended while a prompt waited for its answer. */
export class AgentExited extends Error {
  constructor(
    readonly exit: AgentExit,
    readonly stderr: string,
  ) {
    super(`the agent exited mid-turn (${describeExit(exit)})${stderr ? `; its stderr's last lines:\n${stderr}` : ''}`);
  }
}
