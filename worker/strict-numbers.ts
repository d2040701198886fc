/**
 * The router's check of every request message's numbers against the rules in proto/numbers.ts
 * (docs/security.md "Strict numbers"): a value a rule does not allow is INVALID_ARGUMENT, naming
 * the field and the range, before any implementation reads it. The JSON forms are checked earlier,
 * on the raw body (worker/request-check.ts).
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { numberViolation } from "../proto/numbers.js";

export const strictNumbers: Interceptor = (next) => async (req) => {
  const check = (m: object) => {
    const bad = numberViolation(req.method.input as DescMessage, m);
    if (bad) throw new ConnectError(`${bad}; nothing was done`, Code.InvalidArgument);
  };
  if (!req.stream) {
    check(req.message);
    return next(req);
  }
  const messages = req.message;
  return next({
    ...req,
    message: (async function* () {
      for await (const m of messages) {
        check(m);
        yield m;
      }
    })(),
  });
};
