// The part of node:async_hooks the Worker uses (objects/request-context.ts), provided by workerd
// under nodejs_compat. The Worker's tsconfig carries no Node types, so it is declared here.
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    run<R>(store: T, callback: () => R): R;
    getStore(): T | undefined;
  }
}
