// The daemon's approval requests (session/approval) as the client answers them: through the one
// handler the application set with AstraClient.onApproval.
import { AstraError, checkServerRequestParams } from '../protocol/index.js';
import type { ApprovalHandler, ApprovalRequest } from './options.js';

export class ApprovalAnswers {
  private handler: ApprovalHandler | undefined;

  constructor(private readonly clientName: string) {}

  /** Sets the handler; returns a function that removes it (if it is still the one set). */
  set(handler: ApprovalHandler): () => void {
    this.handler = handler;
    return () => {
      if (this.handler === handler) this.handler = undefined;
    };
  }

  /** The answer to a request from the daemon: method_not_found without a handler, invalid_params for a bad decision. */
  async answer(method: string, params: unknown): Promise<unknown> {
    checkServerRequestParams(method, params);
    const handler = this.handler;
    if (!handler) {
      throw new AstraError('method_not_found', `client "${this.clientName}" has no approval handler (client.onApproval); the approval stays pending`);
    }
    const answer = await handler(params as ApprovalRequest);
    const decision = typeof answer === 'string' ? answer : answer?.decision;
    if (decision !== 'approve' && decision !== 'deny')
      throw new AstraError('invalid_params', `the approval handler answered ${JSON.stringify(answer)}; it must return 'approve' or 'deny'`);
    const optionId = typeof answer === 'object' ? answer.optionId : undefined;
    return optionId === undefined ? { decision } : { decision, optionId };
  }
}
