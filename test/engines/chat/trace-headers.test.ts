import { describe, expect, it } from 'vitest';
import { traceHeaders } from '../../../engines/chat/model-stream.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceHeaders', () => {
  it('sends a well-formed traceparent, with its tracestate', () => {
    expect(traceHeaders({ traceparent: PARENT })).toEqual({ traceparent: PARENT });
    expect(traceHeaders({ traceparent: PARENT, tracestate: 'a=1,b=2' })).toEqual({ traceparent: PARENT, tracestate: 'a=1,b=2' });
  });

  it('sends nothing for none, a malformed traceparent, or a tracestate alone; drops a tracestate a header cannot carry', () => {
    expect(traceHeaders(undefined)).toEqual({});
    expect(traceHeaders({ tracestate: 'a=1' })).toEqual({});
    for (const bad of ['', 'x', PARENT.toUpperCase(), `ff${PARENT.slice(2)}`, `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`, `${PARENT}\r\nx: 1`])
      expect(traceHeaders({ traceparent: bad })).toEqual({});
    expect(traceHeaders({ traceparent: PARENT, tracestate: 'a=1\r\nx: 1' })).toEqual({ traceparent: PARENT });
    expect(traceHeaders({ traceparent: PARENT, tracestate: 'a'.repeat(513) })).toEqual({ traceparent: PARENT });
  });
});
