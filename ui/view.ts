/** A mounted view: the router unmounts it (stopping its polling) when the address changes. */
export interface View {
  unmount(): void;
}
