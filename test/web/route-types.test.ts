// The gateway's routes are typed from the contract's table (web/gateway/contract.ts): these are
// compile-time checks, made by `npm run typecheck` (tsc -p test/tsconfig.json); at run time they pass.
import { describe, expectTypeOf, it } from 'vitest';
import type { AuthRoute, PathParams, RequestOf, ResponseOf } from '../../web/gateway/contract.js';
import type { Handlers } from '../../web/gateway/routes.js';

describe('the HTTP contract as types', () => {
  it('gives each route its path parameters, its body and its answer', () => {
    expectTypeOf<PathParams<'POST /v1/approvals/{id}'>>().toEqualTypeOf<{ id: string }>();
    expectTypeOf<PathParams<'GET /v1/me'>>().toEqualTypeOf<{}>();
    expectTypeOf<RequestOf<'POST /v1/sessions/{id}/messages'>>().toEqualTypeOf<{ text: string; idempotencyKey: string }>();
    expectTypeOf<RequestOf<'GET /v1/sessions'>>().toEqualTypeOf<undefined>();
    expectTypeOf<ResponseOf<'POST /v1/sessions/{id}/messages'>>().toEqualTypeOf<{ turnId: string; idempotencyKey: string }>();
    expectTypeOf<ResponseOf<'GET /v1/sessions/{id}/events'>>().toEqualTypeOf<undefined>();
  });

  it('has the router serve exactly the routes behind the cookie', () => {
    expectTypeOf<'POST /v1/pair' extends AuthRoute ? true : false>().toEqualTypeOf<false>();
    expectTypeOf<'GET /v1/health' extends AuthRoute ? true : false>().toEqualTypeOf<false>();
    expectTypeOf<keyof Handlers>().toEqualTypeOf<AuthRoute>();
  });

  it('makes a missing or mistyped handler a compile error', () => {
    // @ts-expect-error every route behind the cookie needs its handler
    const none: Handlers = {};
    type MessagesHandler = Handlers['POST /v1/sessions/{id}/messages'];
    // @ts-expect-error the answer lacks idempotencyKey
    const short: MessagesHandler = async () => ({ turnId: 't' });
    // @ts-expect-error the body has no field "input"
    const wrongBody: MessagesHandler = async (_ctx, { body }) => ({ turnId: body.input, idempotencyKey: body.idempotencyKey });
    expectTypeOf(none).toEqualTypeOf<Handlers>();
    expectTypeOf(short).toEqualTypeOf<MessagesHandler>();
    expectTypeOf(wrongBody).toEqualTypeOf<MessagesHandler>();
  });
});
