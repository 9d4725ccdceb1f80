// The page: pairing, the session list, and a session view whose renderers (one module per kind of
// event) draw what the stream delivers. State shown about control always comes from the gateway.
import { api, controlledBeforeReload, releaseOnPageHide, RequestFailed, type Me, type PageEvent, type SessionView } from './api.js';
import { SessionStream, type StreamNotice, type StreamState } from './stream.js';
import { TerminalRenderer } from './render/terminal.js';
import { MessageRenderer } from './render/messages.js';
import { ApprovalRenderer } from './render/approvals.js';
import { ToolCardRenderer } from './render/tool-cards.js';
import { AgentRenderer } from './render/agent.js';

interface Renderer {
  handles(type: string): boolean;
  /** true: the event is drawn and the renderers after this one skip it (a tool card took its approval). */
  render(e: PageEvent): boolean | void;
}

/** What tests read: every seq rendered, in order, and the terminal's text. */
interface PageProbe {
  seqs: number[];
  /** For each event rendered live: ms from the daemon's timestamp to the end of its rendering. */
  latencies: number[];
  terminalText(): string;
  /** The terminal's lines as it shows them (xterm's buffer, scrollback included). */
  terminalLines(): string[];
  /** The rows the terminal panel shows now (its viewport, not the scrollback above it). */
  terminalVisible(): string[];
  /** The xterm.js Terminal, for tests that look at cells (colours). */
  terminal?: unknown;
  streamState: StreamState | 'idle';
  /** The last 100 states the status bar showed, with their detail ("reconnecting: the daemon …"). */
  streamStates: string[];
  /** The notice the status bar shows (a full disk), if any. */
  notice?: string | undefined;
}
const probe: PageProbe = { seqs: [], latencies: [], terminalText: () => '', terminalLines: () => [], terminalVisible: () => [], streamState: 'idle', streamStates: [] };
(window as unknown as { astra: PageProbe }).astra = probe;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
let me: Me | undefined;
let eventTypes: string[] = [];
let current: { stream: SessionStream; timer?: number } | undefined;
let listTimer: number | undefined;
/** The session this tab controls, as the gateway last said (for the release on pagehide). */
let controlling: string | undefined;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
}

function notice(text: string, isError = false): void {
  $('main').replaceChildren(el('p', { id: 'notice', className: isError ? 'error' : '', textContent: text }));
}

/** The status bar's notice: what the daemon said about the session that no event carries (a full disk), until it says otherwise. */
function setNotice(n: StreamNotice | undefined): void {
  const box = $('status-notice');
  if (n?.reason === 'disk_ok' || n === undefined) {
    probe.notice = undefined;
    box.hidden = true;
    box.textContent = '';
    return;
  }
  if (n.reason !== 'disk_full') return; // an unknown reason is ignored
  const text = `disk full: the session's events cannot be saved — free space on ${n.path ?? 'the disk of the daemon\'s data directory'}; nothing is lost, it resumes by itself`;
  probe.notice = text;
  box.textContent = text;
  box.hidden = false;
}

function setStream(state: StreamState | 'idle', detail?: string): void {
  probe.streamState = state;
  probe.streamStates.push(detail ? `${state}: ${detail}` : state);
  if (probe.streamStates.length > 100) probe.streamStates.shift();
  $('status').dataset.stream = state;
  const words: Record<string, string> = { idle: '', connecting: 'connecting…', 'catching-up': 'catching up…', live: 'live', reconnecting: 'reconnecting…', ended: 'ended' };
  $('status-stream').textContent = `${words[state] ?? state}${detail ? ` (${detail})` : ''}`;
}

function ago(ts: number): string {
  const s = Math.max(0, Math.round((Date.now() - ts) / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

async function boot(): Promise<void> {
  const pair = /^#pair=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (pair) {
    history.replaceState(null, '', '/#/');
    try {
      await api('POST /v1/pair', { body: { code: pair[1]! } });
    } catch (e) {
      notice(`Pairing failed: ${(e as Error).message}`, true);
      return;
    }
  }
  try {
    me = await api('GET /v1/me');
    eventTypes = (await api('GET /v1/capabilities')).eventTypes;
  } catch (e) {
    if (e instanceof RequestFailed && e.status === 401) notice('This browser is not paired. Run `astra web pair` and open the link it prints.', true);
    else notice(`The gateway did not answer: ${(e as Error).message}. Reload when \`astra web\` runs.`, true);
    return;
  }
  $('who').textContent = me.readOnly ? 'read-only (observer)' : me.clientName;
  releaseOnPageHide(() => (controlling ? [controlling] : []));
  window.addEventListener('hashchange', route);
  route();
}

function route(): void {
  controlling = undefined;
  current?.stream.close();
  if (current?.timer) clearInterval(current.timer);
  current = undefined;
  if (listTimer) clearInterval(listTimer);
  listTimer = undefined;
  $('main').classList.remove('session');
  setStream('idle');
  const m = /^#\/s\/(.+)$/.exec(location.hash);
  if (m) showSession(decodeURIComponent(m[1]!));
  else void showList();
}

async function showList(): Promise<void> {
  const table = el('table', { id: 'sessions' });
  const title = el('input', { type: 'text', placeholder: 'title of a new session', id: 'new-title' });
  const engine = el('select', { id: 'new-engine' }, el('option', { value: 'shell', textContent: 'shell' }), el('option', { value: 'chat', textContent: 'chat (a model)' }));
  const model = el('input', { type: 'text', placeholder: 'model (chat)', id: 'new-model', hidden: true });
  engine.addEventListener('change', () => (model.hidden = engine.value !== 'chat'));
  const create = el('button', { id: 'new-session', textContent: 'New session', disabled: me?.readOnly ?? true });
  create.addEventListener('click', () => {
    const chat = engine.value === 'chat' ? { engine: 'chat', ...(model.value ? { engineOptions: { model: model.value } } : {}) } : {};
    void api('POST /v1/sessions', { body: { title: title.value || 'web session', approvalPolicy: 'ask', ...chat, idempotencyKey: crypto.randomUUID() } }).then(
      ({ session }) => (location.hash = `#/s/${encodeURIComponent(session.id)}`),
      (e: Error) => notice(`Could not create a session: ${e.message}`, true),
    );
  });
  $('main').replaceChildren(el('div', { className: 'bar' }, title, engine, model, create), table);
  $('status-control').textContent = '';
  setNotice(undefined);
  const refresh = async (): Promise<void> => {
    try {
      const { sessions } = await api('GET /v1/sessions');
      const head = el('tr', {}, ...['title', 'state', 'controller', 'observers', 'last activity'].map((h) => el('th', { textContent: h })));
      table.replaceChildren(
        head,
        ...sessions.map((s) =>
          el(
            'tr',
            { className: 'session' },
            el('td', {}, el('a', { href: `#/s/${encodeURIComponent(s.id)}`, textContent: s.title || s.id })),
            el('td', { textContent: s.state }),
            el('td', { textContent: s.controlledByMe ? 'this tab' : (s.controller?.clientName ?? '—') }),
            el('td', { textContent: String(s.observers) }),
            el('td', { textContent: ago(s.updatedAt) }),
          ),
        ),
      );
    } catch (e) {
      setStream('reconnecting', (e as Error).message);
    }
  };
  await refresh();
  listTimer = window.setInterval(() => void refresh(), 3_000);
}

function showSession(id: string): void {
  setNotice(undefined);
  const heading = el('h2', { id: 'session-title', textContent: id });
  const messages = el('div', { className: 'messages', id: 'messages' });
  const cards = el('div', { id: 'approvals' });
  const termBox = el('div', { className: 'terminal', id: 'terminal' });
  const termCaption = el('div', { className: 'terminal-caption', id: 'terminal-caption' });
  const input = el('input', { type: 'text', id: 'input', placeholder: 'a command to run' });
  const send = el('button', { id: 'send', textContent: 'Send' });
  const cancel = el('button', { id: 'cancel', textContent: 'Cancel' });
  const take = el('button', { id: 'take', textContent: 'Take control' });
  const release = el('button', { id: 'release', textContent: 'Release' });
  const problem = el('p', { id: 'problem', className: 'error' });
  const history = el('div', { className: 'history', id: 'history' }, cards, messages);
  $('main').classList.add('session');
  $('main').replaceChildren(heading, el('div', { className: 'bar' }, input, send, cancel, take, release), problem, history, el('div', { className: 'terminal-panel' }, termCaption, termBox));

  const terminal = new TerminalRenderer(termBox, termCaption);
  const approvals = new ApprovalRenderer(cards);
  const tools = new ToolCardRenderer(messages);
  // Tool cards first: they take the approvals of the chat engine's tool calls.
  const renderers: Renderer[] = [tools, terminal, new MessageRenderer(messages), new AgentRenderer(messages), approvals];
  probe.seqs = [];
  probe.latencies = [];
  probe.terminalText = () => terminal.text;
  probe.terminalLines = () => terminal.lines();
  probe.terminalVisible = () => terminal.visibleRows();
  probe.terminal = terminal.term;
  let controlled = false;

  const showControl = (s: SessionView): void => {
    controlled = s.controlledByMe;
    controlling = controlled ? id : undefined;
    heading.textContent = s.title || s.id;
    const holder = s.controlledByMe ? 'this tab' : (s.controller?.clientName ?? 'nobody');
    $('status-control').textContent = `controller: ${holder}${s.controller?.graceUntil ? ' (in grace)' : ''} · ${s.observers} observer(s) · ${s.state}`;
    $('status-control').dataset.controlled = String(s.controlledByMe);
    const ro = me?.readOnly ?? true;
    for (const b of [send, cancel, release]) b.disabled = ro || !controlled;
    take.disabled = ro || controlled;
    input.disabled = ro;
    input.placeholder = s.engine === 'chat' ? 'a message to the model' : s.engine === 'acp' ? 'a prompt to the agent' : 'a command to run';
    const control = { canDecide: !ro && controlled, holderName: holder };
    approvals.setControl(control);
    tools.setControl(control);
    keepInView(atBottom());
  };
  /** The history follows what is new while the user has not scrolled up; a prompt waiting for this tab's answer is always shown whole. */
  const atBottom = (): boolean => history.scrollHeight - history.scrollTop - history.clientHeight < 24;
  /** A prompt was brought into view: once it is answered, the history goes back to following what is new. */
  let showingPrompt = false;
  const keepInView = (follow: boolean): void => {
    const waiting = history.querySelector('.approval-actions button')?.closest('.card');
    if (waiting) {
      waiting.scrollIntoView({ block: 'nearest' });
      showingPrompt = true;
    } else if (follow || showingPrompt) {
      history.scrollTop = history.scrollHeight;
      showingPrompt = false;
    }
  };
  const refreshControl = async (): Promise<void> => {
    try {
      showControl((await api('GET /v1/sessions/{id}', { params: { id }, query: { limit: 1 } })).session);
    } catch {
      // the stream's state says what is wrong
    }
  };
  const act = (fn: () => Promise<unknown>): void => {
    problem.textContent = '';
    void fn().then(refreshControl, (e: Error) => {
      problem.textContent = e.message;
    });
  };

  send.addEventListener('click', () =>
    act(async () => {
      const text = input.value;
      if (!text) return;
      const idempotencyKey = crypto.randomUUID();
      // A retryable failure (the daemon restarting) is retried with the same key: it never runs twice.
      for (let attempt = 0; ; attempt++) {
        try {
          await api('POST /v1/sessions/{id}/messages', { params: { id }, body: { text, idempotencyKey } });
          input.value = '';
          return;
        } catch (e) {
          if (!(e instanceof RequestFailed) || !e.error.retryable || attempt >= 5) throw e;
          await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
        }
      }
    }),
  );
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !send.disabled) send.click();
  });
  cancel.addEventListener('click', () => act(() => api('POST /v1/sessions/{id}/cancel', { params: { id }, body: {} })));
  take.addEventListener('click', () => act(() => api('POST /v1/sessions/{id}/lease', { params: { id }, body: { takeover: true } })));
  release.addEventListener('click', () => act(() => api('DELETE /v1/sessions/{id}/lease', { params: { id } })));

  const stream = new SessionStream(id, eventTypes, {
    onEvent: (e) => {
      probe.seqs.push(e.seq);
      const follow = atBottom();
      for (const r of renderers) if (r.handles(e.type) && r.render(e) === true) break;
      keepInView(follow);
      if (probe.streamState === 'live') probe.latencies.push(Date.now() - e.ts);
      if (e.type === 'lease.changed' || e.type === 'turn.completed' || e.type === 'turn.started') void refreshControl();
    },
    onState: (s, detail) => setStream(s, detail),
    onOpen: () => void refreshControl(),
    onNotice: (n) => setNotice(n),
  });
  current = { stream, timer: window.setInterval(() => void refreshControl(), 5_000) };
  stream.start();
  // After a reload: control this tab gave up as the old page went away, taken again if nobody took it meanwhile.
  if (!(me?.readOnly ?? true) && controlledBeforeReload(id)) void api('POST /v1/sessions/{id}/lease', { params: { id }, body: {} }).then(refreshControl, refreshControl);
  else void refreshControl();
}

void boot();
