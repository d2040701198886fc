/**
 * The error a call was expected to fail with: `await rejection(p)` resolves with the ConnectError
 * `p` rejected with, and fails the test when `p` resolved or rejected with anything else.
 */
import { ConnectError } from "@connectrpc/connect";

export async function rejection(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(e instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(e)}`);
  return e;
}
