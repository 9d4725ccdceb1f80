// Reading streamChatCompletion to its end in the model client's tests: every part, or the ModelError it ends with.
import { ModelError, streamChatCompletion, type ModelRequest, type ModelStreamPart } from '../../../engines/chat/index.js';

export async function collect(req: ModelRequest): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const p of streamChatCompletion(req)) parts.push(p);
  return parts;
}

export async function fault(req: ModelRequest): Promise<ModelError> {
  try {
    await collect(req);
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw e;
  }
  throw new Error('the stream finished; a ModelError was expected');
}
