/**
 * Command-line helpers shared by the backends' main.ts (`npm run pod`, `npm run substrate`).
 * @internal
 */

/** An integer flag in min..max; throws a message fit for the command line. */
export function integerFlag(name: string, v: string | undefined, min: number, max: number): number {
  const n = Number(v);
  if (!/^\d+$/.test(v ?? "") || n < min || n > max) throw new Error(`--${name} must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
  return n;
}
