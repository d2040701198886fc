// The part of node:timers the Worker uses (objects/exec-frames.ts), provided by workerd under
// nodejs_compat. The Worker's tsconfig carries no Node types, so it is declared here.
declare module "node:timers" {
  export type Immediate = { readonly __immediate: unique symbol };
  export function setImmediate(callback: () => void): Immediate;
  export function clearImmediate(immediate: Immediate | undefined): void;
}
