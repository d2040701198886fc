/** Types of scripts/dev-vars.mjs (plain JavaScript so `npm start` needs no TypeScript loader). */
export declare function parseDevVars(text: string): Record<string, string>;
export declare function encodeEnvFile(vars: Record<string, string>): string;
